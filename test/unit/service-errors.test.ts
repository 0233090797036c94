// ServiceError construction: problem details folded into the message, codes per status, secrets scrubbed.
import { describe, expect, it } from 'vitest';
import { errorFromResponse, scrubText, ServiceError } from '../../src/service/errors.js';
import { BinderSyncError } from '../../src/errors.js';

describe('errorFromResponse', () => {
  it('folds RFC 7807 problem details and traceId into the message', () => {
    const body = JSON.stringify({ type: 'about:blank', title: 'Validation failed', status: 400, detail: 'bad body', traceId: '00-abc', errors: { fileName: ['required'], version: 'unknown' } });
    const e = errorFromResponse({ request: 'POST /documents', status: 400, bodyText: body, headers: {}, secrets: [] });
    expect(e).toBeInstanceOf(ServiceError);
    expect(e).toBeInstanceOf(BinderSyncError);
    expect(e.code).toBe('SERVICE_BAD_REQUEST');
    expect(e.retryable).toBe(false);
    expect(e.traceId).toBe('00-abc');
    expect(e.message).toBe('POST /documents failed with HTTP 400: Validation failed - bad body - fileName: required; version: unknown (traceId 00-abc)');
    expect(e.problem).toEqual({ title: 'Validation failed', detail: 'bad body', errors: { fileName: ['required'], version: ['unknown'] } });
    expect(e.context).toMatchObject({ request: 'POST /documents', status: 400 });
  });

  it('maps statuses to codes and retryability; tolerates HTML bodies', () => {
    const mk = (status: number) => errorFromResponse({ request: 'GET /binders', status, bodyText: '<html>Bad gateway</html>', headers: {}, secrets: [] });
    expect(mk(502)).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true, status: 502 });
    expect(mk(502).message).toBe('GET /binders failed with HTTP 502');
    expect(mk(429)).toMatchObject({ code: 'SERVICE_RATE_LIMITED', retryable: true });
    expect(mk(404)).toMatchObject({ code: 'SERVICE_NOT_FOUND', retryable: false });
    expect(mk(403)).toMatchObject({ code: 'SERVICE_FORBIDDEN', retryable: false });
    expect(mk(401)).toMatchObject({ code: 'SERVICE_UNAUTHORIZED', retryable: false });
  });

  it('never repeats a secret or a presigned query string echoed by the server', () => {
    const body = JSON.stringify({ title: 'bad secret s3cr3t-value', detail: 'see http://storage/x?sig=abcdef&exp=1', traceId: 't' });
    const e = errorFromResponse({ request: 'POST /connect/token', status: 401, bodyText: body, headers: {}, secrets: ['s3cr3t-value'] });
    expect(e.message).not.toContain('s3cr3t-value');
    expect(e.message).not.toContain('sig=');
    expect(JSON.stringify(e.problem)).not.toContain('s3cr3t-value');
    expect(scrubText('Bearer abc.def', [])).toBe('Bearer [redacted]');
  });
});
