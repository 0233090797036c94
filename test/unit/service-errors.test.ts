// ServiceError construction: problem details folded into the message, codes per status, secrets scrubbed.
import { describe, expect, it } from 'vitest';
import { COMMIT_REQUEST } from '../../src/service/client.js';
import { errorFromResponse, networkError, parseProblem, scrubText, ServiceError } from '../../src/service/errors.js';
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
    expect(mk(502).message).toBe('GET /binders failed with HTTP 502: Bad gateway');
    expect(mk(429)).toMatchObject({ code: 'SERVICE_RATE_LIMITED', retryable: true });
    expect(mk(404)).toMatchObject({ code: 'SERVICE_NOT_FOUND', retryable: false });
    expect(mk(404).hint).toBeUndefined();
    expect(mk(403)).toMatchObject({ code: 'SERVICE_FORBIDDEN', retryable: false });
    expect(mk(401)).toMatchObject({ code: 'SERVICE_UNAUTHORIZED', retryable: false });
  });

  it("a 404 of a request that names only the binder hints at the pair's binderId; a document's 404 does not", () => {
    const at = (request: string) => errorFromResponse({ request, status: 404, bodyText: 'binder not found', headers: {}, secrets: [] }).hint;
    for (const request of ['GET /binders/{id}/metadataelements', 'GET /documents/drives/{domain}/{id}']) expect(at(request)).toMatch(/check the pair's binderId; `binder-sync check` lists the binders/);
    for (const request of ['GET /documents/{documentId}', 'GET /documents/drives/{domain}/{id}/{folderId}/documents']) expect(at(request)).toBeUndefined();
  });

  it('a 403 hints at write access only for the requests that write (an upload slot, a commit)', () => {
    const at = (request: string) => errorFromResponse({ request, status: 403, bodyText: 'forbidden', headers: {}, secrets: [] }).hint;
    for (const request of ['GET /documents/uploads/personalstorage/presignedupload', COMMIT_REQUEST]) expect(at(request), request).toMatch(/read\/write access for uploads/);
    for (const request of ['GET /binders', 'POST /documents', 'GET /binders/{id}/metadataelements']) {
      expect(at(request), request).toBe("check tenantId, and that the API client has access to the service's binders");
    }
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

describe('error bodies of any shape', () => {
  const REQ = 'POST /documents/drives/{domain}/{id}/{folderId}/upload';
  const mk = (body: unknown, secrets: string[] = [], headers: Record<string, string> = {}) =>
    errorFromResponse({ request: REQ, status: 400, bodyText: typeof body === 'string' ? body : JSON.stringify(body), headers, secrets });

  it('reads message, error objects and error strings one field at a time', () => {
    expect(mk({ message: 'fileName contains a backslash' }).message).toBe(`${REQ} failed with HTTP 400: fileName contains a backslash`);
    const azure = mk({ error: { code: 'InvalidFileName', message: 'the name may not contain \\', details: [{ target: 'fileName', message: 'bad character' }] } });
    expect(azure.message).toBe(`${REQ} failed with HTTP 400: InvalidFileName - the name may not contain \\ - fileName: bad character`);
    expect(azure.problem).toEqual({ title: 'InvalidFileName', detail: 'the name may not contain \\', errors: { fileName: ['bad character'] } });
    expect(mk({ error: 'invalid_request', error_description: 'missing uploadId' }).message).toContain('invalid_request - missing uploadId');
    expect(mk({ error: 'only an error string' }).problem).toEqual({ title: 'only an error string' });
    // Fields of the wrong type are skipped, not fatal to the rest (the old schema dropped everything).
    expect(mk({ title: 42, detail: 'still read', status: 'four hundred', errors: 'nonsense' }).message).toBe(`${REQ} failed with HTTP 400: 42 - still read`);
    expect(mk({ detail: { nested: true }, message: 'from message' }).problem).toEqual({ detail: 'from message' });
  });

  it('reads errors as a record of strings or objects, or as an array', () => {
    expect(mk({ errors: { fileName: [{ message: 'too long' }, 'bad char'], label: { message: 'taken' } } }).problem?.errors).toEqual({ fileName: ['too long', 'bad char'], label: ['taken'] });
    const arr = mk({ errors: ['first problem', { field: 'fileName', message: 'bad' }, { propertyName: 'uploadId', errorMessage: 'unknown' }, { code: 'E42' }] });
    expect(arr.problem?.errors).toEqual({ '': ['first problem', 'E42'], fileName: ['bad'], uploadId: ['unknown'] });
    expect(arr.message).toBe(`${REQ} failed with HTTP 400: first problem, E42; fileName: bad; uploadId: unknown`);
    expect(mk(['a bare', 'array']).message).toBe(`${REQ} failed with HTTP 400: a bare, array`);
    expect(mk(JSON.stringify('a JSON string')).message).toBe(`${REQ} failed with HTTP 400: a JSON string`);
  });

  it('keeps a one-line snippet of at most 200 characters of a non-JSON body', () => {
    const text = mk('Bad Request:\n  the file name\tmay not contain a backslash');
    expect(text.message).toBe(`${REQ} failed with HTTP 400: Bad Request: the file name may not contain a backslash`);
    expect(text.problem).toEqual({ detail: 'Bad Request: the file name may not contain a backslash' });
    const long = mk(`reason ${'x'.repeat(1000)}`);
    expect(long.problem!.detail!.length).toBeLessThanOrEqual(200);
    expect(long.message).not.toContain('\n');
    const html = mk('<!DOCTYPE html><html><head><title>400 Bad Request</title><style>body{color:red}</style></head><body><h1>Request refused</h1><script>var x=1</script><p>name &amp; label</p></body></html>');
    expect(html.problem?.detail).toBe('400 Bad Request Request refused name & label');
    expect(mk('   ').message).toBe(`${REQ} failed with HTTP 400`);
    expect(parseProblem('')).toBeUndefined();
  });

  it('never keeps tokens, secrets or signatures from any body shape, even cut short', () => {
    const secret = 'the-client-s3cret';
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjbGllbnQifQ.c2lnbmF0dXJlLXBhcnQ';
    const bodies = [
      { message: `secret ${secret} refused`, error: { code: 'x', message: `token ${jwt}` } },
      { errors: [{ field: 'uploadUrl', message: 'expired: https://storage.example/u/1?sv=1&sig=SIGNATURE123&se=2' }] },
      `upstream said: access_token=${jwt}&client_secret=${secret} Authorization: Bearer abc.def.ghi sig=SIGNATURE123`,
      `${'y'.repeat(190)} ${secret} ${'z'.repeat(50)}`,
      `<html><body>{"access_token":"TOKENVALUE77","password":"pw"} https://s/x?sig=SIGNATURE123</body></html>`,
    ];
    for (const body of bodies) {
      const e = mk(body, [secret]);
      const all = [e.message, e.describe(), JSON.stringify(e.problem), JSON.stringify(e.context)].join('\n');
      for (const bad of [secret, secret.slice(0, 8), jwt.slice(0, 30), 'SIGNATURE123', 'abc.def', 'TOKENVALUE77', '"pw"']) expect(all, JSON.stringify(body)).not.toContain(bad);
    }
  });
});

describe('networkError hints', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' });

  it('names the URL that failed and its setting, without credentials or query string, and promises no retry', () => {
    const e = networkError('POST /connect/token', refused, ['s3cret'], undefined, { url: 'https://user:pw@id.example.com/auth/connect/token?x=s3cret', setting: 'service.authUrl' });
    expect(e.hint).toBe('check the network, and that https://id.example.com/auth/connect/token (service.authUrl) is right and reachable');
    expect(e.retryable).toBe(true);
  });

  it('a presigned storage URL (context.url) is named as such; without any URL both settings are named', () => {
    const storage = networkError('GET storage', refused, [], { url: 'https://blob.example.com/c/1?[redacted]' });
    expect(storage.hint).toBe('check the network, and that https://blob.example.com/c/1 (a presigned storage URL from the service) is right and reachable');
    expect(networkError('GET /binders', refused, []).hint).toBe('check the network, service.baseUrl and service.authUrl');
    for (const e of [storage, networkError('GET /binders', refused, [])]) expect(e.hint).not.toMatch(/try again later/);
  });

  it('a 5xx hint does not promise that a one-shot sync retries', () => {
    const e = errorFromResponse({ request: 'GET /binders', status: 503, bodyText: '', headers: {}, secrets: [] });
    expect(e.hint).toMatch(/the daemon retries with back-off, a one-shot sync can be run again later/);
  });
});
