// The service client against small node:http stubs on 127.0.0.1, for edge cases a strict emulator does not
// produce: HTML 502s, Retry-After dates, invalid JSON, walkthrough-only commits, 409 commits, odd token answers.
import { createHash } from 'node:crypto';
import http, { type ServerResponse } from 'node:http';
import { Readable, Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { ServiceError, type ServiceSettings } from '../../src/service/index.js';
import { STUB_SECRET, stub, stubClient, type Answer, type Seen } from './stub-server.js';

const SECRET = STUB_SECRET;
const undef = undefined as unknown as Answer;

function client(origin: string, extra: Partial<ServiceSettings> = {}, logger?: pino.Logger) {
  return stubClient(origin, extra, logger ? { logger } : {});
}

const doc = (id: string) => ({ id, fileName: `${id}.txt`, folderId: 'f1', latestVersionId: `v-${id}` });
const version = { id: 'v9', documentId: 'd1', version: '2' };

describe('token and headers', () => {
  it('sends form-encoded client credentials once, then bearer + tenant header on every call', async () => {
    const s = await stub((r) => (r.path === '/api/v1/binders' ? { status: 200, body: [{ id: 'b1', name: 'B' }] } : undef));
    const c = client(s.origin);
    await Promise.all([c.listBinders(), c.listBinders(), c.listBinders()]);
    await c.listBinders();
    expect(s.tokenCalls()).toBe(1);
    const tokenReq = s.seen.find((x) => x.path === '/auth/connect/token')!;
    expect(tokenReq.headers['content-type']).toBe('application/x-www-form-urlencoded');
    const form = new URLSearchParams(tokenReq.body.toString());
    expect(Object.fromEntries(form)).toEqual({ grant_type: 'client_credentials', client_id: 'client-1', client_secret: SECRET, scope: 'service_public' });
    for (const a of s.api()) {
      expect(a.headers.authorization).toBe('Bearer tok-1');
      expect(a.headers['x-service-tenantid']).toBe('tenant-1');
    }
  });

  it('uses a configured tenant header name and scope', async () => {
    const s = await stub((r) => (r.path === '/api/v1/binders' ? { status: 200, body: { items: [] } } : undef));
    const c = client(s.origin, { tenantHeader: 'x-acme-tenantid', scope: 'acme_public' });
    expect(await c.listBinders()).toEqual([]);
    expect(s.api()[0]!.headers['x-acme-tenantid']).toBe('tenant-1');
    expect(s.api()[0]!.headers['x-service-tenantid']).toBeUndefined();
    expect(new URLSearchParams(s.seen[0]!.body.toString()).get('scope')).toBe('acme_public');
  });

  it('a 401 from the token endpoint is a fatal AUTH_FAILED that never shows the secret', async () => {
    const s = await stub((r) => (r.path === '/auth/connect/token' ? { status: 401, body: { error: 'invalid_client', error_description: `client secret ${SECRET} is wrong` } } : undef));
    const c = client(s.origin);
    const err = await c.listBinders().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ code: 'AUTH_FAILED', retryable: false, status: 401, request: 'POST /connect/token' });
    const e = err as ServiceError;
    expect(e.message).toContain('invalid_client');
    expect(e.hint).toBe('check service.clientId and service.clientSecret, and that the API client was not deleted or rotated');
    for (const text of [e.message, e.describe(), JSON.stringify(e.context), JSON.stringify(e.problem), e.stack ?? '']) expect(text).not.toContain(SECRET);
    expect(s.tokenCalls()).toBe(1);
    expect(s.api()).toHaveLength(0);
  });

  it('the refused-credentials hint names where the secret comes from: its file, or its environment variable (black-box round 32b, F6)', async () => {
    const s = await stub((r) => (r.path === '/auth/connect/token' ? { status: 401, body: { error: 'invalid_client' } } : undef));
    for (const source of ['service.clientSecretFile (/etc/binder-sync/client-secret)', 'service.clientSecret (environment variable BINDER_SYNC_CLIENT_SECRET)']) {
      const e = (await client(s.origin, { secretSource: source }).listBinders().catch((x: unknown) => x)) as ServiceError;
      expect(e).toMatchObject({ code: 'AUTH_FAILED', status: 401 });
      expect(e.hint).toBe(`check service.clientId and ${source}, and that the API client was not deleted or rotated`);
    }
  });

  // Black-box round 41c, F9: a service that answers an expired token with 403 (RFC 6750 says 401) left the daemon
  // failing until the token's stated lifetime was over.
  it('a 403 with a token 5 s old or more gets one fresh token; a young token\'s 403 asks for none', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      let expired = false;
      const s = await stub((r) => {
        if (r.path !== '/api/v1/binders') return undef;
        if (expired && r.headers.authorization === 'Bearer tok-1') return { status: 403, body: { title: 'token expired' } };
        return { status: 200, body: [] };
      });
      const c = client(s.origin);
      expect(await c.listBinders()).toEqual([]);
      vi.setSystemTime(Date.now() + 6_000);
      expired = true;
      expect(await c.listBinders()).toEqual([]);
      expect(s.tokenCalls()).toBe(2);
      expect(s.api().map((a) => a.headers.authorization)).toEqual(['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-2']);
      // A 403 with the token just taken is about access: no token request for it.
      const denied = await stub((r) => (r.path === '/api/v1/binders' ? { status: 403, body: { title: 'no access' } } : undef));
      const d = client(denied.origin);
      const err = (await d.listBinders().catch((e: unknown) => e)) as ServiceError;
      expect(err).toMatchObject({ status: 403 });
      expect(denied.tokenCalls()).toBe(1);
      expect(denied.api()).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a refused scope (400 invalid_scope) points at service.scope, not at the credentials (black-box round 31b, F8)', async () => {
    const s = await stub((r) => (r.path === '/auth/connect/token' ? { status: 400, body: { error: 'invalid_scope', error_description: 'the scope must be service_public' } } : undef));
    const c = client(s.origin, { scope: 'wrongscope' });
    const err = await c.listBinders().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'AUTH_FAILED', retryable: false, status: 400, request: 'POST /connect/token' });
    const e = err as ServiceError;
    expect(e.message).toMatch(/^the identity provider refused the scope "wrongscope": .*invalid_scope/);
    expect(e.hint).toBe("check service.scope: the service's scope is service_public (the default: remove service.scope to use it)");
    // Any other 400 is still said as a credentials problem, and names the scope as well (black-box round 41c, F4):
    // a provider may answer a wrong scope with invalid_request.
    const other = await stub((r) => (r.path === '/auth/connect/token' ? { status: 400, body: { error: 'invalid_request' } } : undef));
    const e2 = (await client(other.origin, { scope: 'wrongscope' }).listBinders().catch((x: unknown) => x)) as ServiceError;
    expect(e2.hint).toBe('check service.clientId and service.clientSecret, and that the API client was not deleted or rotated; and service.scope ("wrongscope"; the service\'s is service_public)');
    // invalid_client names the client alone.
    const bad = await stub((r) => (r.path === '/auth/connect/token' ? { status: 400, body: { error: 'invalid_client' } } : undef));
    const e3 = (await client(bad.origin).listBinders().catch((x: unknown) => x)) as ServiceError;
    expect(e3.hint).toBe('check service.clientId and service.clientSecret, and that the API client was not deleted or rotated');
  });

  it('a token answer without expires_in is taken (RFC 6749 only recommends it): one token for many calls', async () => {
    const s = await stub((r) => {
      if (r.path === '/auth/connect/token') return { status: 200, body: { access_token: 'tok-plain', token_type: 'Bearer' } };
      return r.path === '/api/v1/binders' ? { status: 200, body: [] } : undef;
    });
    const c = client(s.origin);
    for (let i = 0; i < 3; i++) expect(await c.listBinders()).toEqual([]);
    expect(s.tokenCalls()).toBe(1);
    expect(s.api().map((a) => a.headers.authorization)).toEqual(['Bearer tok-plain', 'Bearer tok-plain', 'Bearer tok-plain']);
  });

  it('a token answer of another shape names the token request and authUrl, not baseUrl', async () => {
    const s = await stub((r) => (r.path === '/auth/connect/token' ? { status: 200, body: { access_token: 'tok-x', expires_in: -60 } } : undef));
    const err = (await client(s.origin).listBinders().catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ code: 'SERVICE_INVALID_RESPONSE', request: 'POST /connect/token' });
    expect(err.message).toMatch(/expires_in/);
    expect(err.hint).toMatch(/service\.authUrl/);
    expect(err.hint).not.toMatch(/baseUrl/);
  });

  it('retries the token endpoint on 503, then succeeds', async () => {
    let n = 0;
    const s = await stub((r) => {
      if (r.path === '/auth/connect/token' && n++ === 0) return { status: 503, body: '<html>down</html>' };
      return r.path === '/api/v1/binders' ? { status: 200, body: [] } : undef;
    });
    expect(await client(s.origin).listBinders()).toEqual([]);
    expect(s.tokenCalls()).toBe(2);
  });

  it('a 401 from the API drops the token and retries once with a fresh one; a second 401 fails', async () => {
    let apiCalls = 0;
    const s = await stub((r) => {
      if (r.path !== '/api/v1/binders') return undef;
      apiCalls++;
      return r.headers.authorization === 'Bearer tok-1' ? { status: 401, body: { title: 'token expired' } } : { status: 200, body: [] };
    });
    const c = client(s.origin);
    expect(await c.listBinders()).toEqual([]);
    expect(apiCalls).toBe(2);
    expect(s.tokenCalls()).toBe(2);

    const s2 = await stub((r) => (r.path === '/api/v1/binders' ? { status: 401, body: { title: 'nope', traceId: 'tr-1' } } : undef));
    const err = (await client(s2.origin).listBinders().catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ code: 'SERVICE_UNAUTHORIZED', retryable: false, status: 401, traceId: 'tr-1' });
    expect(s2.api()).toHaveLength(2);
    expect(err.message).not.toMatch(/tok-\d/);
  });
});

describe('retries', () => {
  it('retries HTML 502, dropped connections, truncated and unparseable bodies, then succeeds', async () => {
    const script: Answer[] = [
      { status: 502, headers: { 'content-type': 'text/html' }, body: '<html><body>Bad Gateway</body></html>' },
      'drop',
      (res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '200' });
        res.write('[{"id":"b1","na');
        setTimeout(() => res.destroy(), 5);
      },
      { status: 200, body: '[{"id": "b1", "name": ' },
      { status: 200, body: [{ id: 'b1', name: 'Atlas' }] },
    ];
    const s = await stub((r) => (r.path === '/api/v1/binders' ? script.shift()! : undef));
    const c = client(s.origin, { retry: { maxAttempts: 6, baseDelayMs: 1, maxDelayMs: 10 } });
    expect(await c.listBinders()).toEqual([{ id: 'b1', name: 'Atlas' }]);
    expect(s.api()).toHaveLength(5);
  });

  it('gives up after maxAttempts with a retryable error naming the templated request', async () => {
    const s = await stub((r) => (r.path.startsWith('/api/') ? { status: 503, body: { title: 'Service Unavailable', traceId: 'xyz' } } : undef));
    const err = (await client(s.origin).getDocument('doc-42').catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true, status: 503, request: 'GET /documents/{documentId}', traceId: 'xyz' });
    expect(err.message).toBe('GET /documents/{documentId} failed with HTTP 503: Service Unavailable (traceId xyz)');
    expect(err.context).toMatchObject({ documentId: 'doc-42' });
    expect(s.api()).toHaveLength(4);
  });

  it('does not retry other 4xx', async () => {
    const s = await stub((r) => (r.path.startsWith('/api/') ? { status: 400, body: { title: 'Bad', errors: { pageNumber: ['must be >= 1'] } } } : undef));
    const err = (await client(s.origin).searchDocuments({ pageNumber: 0 }).catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ code: 'SERVICE_BAD_REQUEST', retryable: false, problem: { errors: { pageNumber: ['must be >= 1'] } } });
    expect(s.api()).toHaveLength(1);
  });

  it('honours Retry-After (seconds and HTTP date), capped at maxDelayMs', async () => {
    const script: Answer[] = [
      { status: 429, headers: { 'retry-after': '30' }, body: { title: 'Too Many Requests' } },
      { status: 503, headers: { 'retry-after': new Date(Date.now() + 60_000).toUTCString() }, body: '' },
      { status: 200, body: [] },
    ];
    const s = await stub((r) => (r.path === '/api/v1/binders' ? script.shift()! : undef));
    const c = client(s.origin, { retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 250 } });
    const t0 = performance.now();
    await c.listBinders();
    const elapsed = performance.now() - t0;
    // Two waits of the 250 ms cap; full jitter with base 1 ms alone would be ~1 ms.
    expect(elapsed).toBeGreaterThanOrEqual(480);
    expect(elapsed).toBeLessThan(3000);
  });

  it('a Retry-After holds every API call until then, also after the call that got it was given up (black-box round 32b, F4)', async () => {
    const arrived: number[] = [];
    const s = await stub((r) => {
      if (!r.path.startsWith('/api/v1/documents/drives/')) return undef;
      arrived.push(performance.now());
      return arrived.length === 1 ? { status: 429, headers: { 'retry-after': '1' }, body: { title: 'Too Many Requests' } } : { status: 200, body: [] };
    });
    const c = client(s.origin, { retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5000 } });
    const gaveUp = new AbortController();
    const first = c.listTopFolders('b1', gaveUp.signal).catch((e: unknown) => e);
    while (arrived.length === 0) await new Promise((res) => setTimeout(res, 5));
    await new Promise((res) => setTimeout(res, 50)); // the 429 is read, its own retry waits
    gaveUp.abort();
    expect(await first).toMatchObject({ code: 'ABORTED' });
    expect(await c.listTopFolders('b1')).toEqual([]);
    expect(arrived).toHaveLength(2);
    expect(arrived[1]! - arrived[0]!).toBeGreaterThanOrEqual(950);
  });

  it('a Retry-After beyond maxDelayMs holds the other calls no longer than the cap', async () => {
    let n = 0;
    const s = await stub((r) => (r.path.startsWith('/api/v1/documents/drives/') ? (n++ === 0 ? { status: 503, headers: { 'retry-after': '3600' }, body: '' } : { status: 200, body: [] }) : undef));
    const c = client(s.origin, { retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 200 } });
    const t0 = performance.now();
    await Promise.all([c.listTopFolders('b1'), new Promise((res) => setTimeout(res, 30)).then(() => c.listTopFolders('b1'))]);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(n).toBe(3);
  });

  // Black-box round 41c, F8: under a steady rate limit, items were given up after the attempts of any failure.
  it('429s spend a budget of their own (four times the attempts); other failures the usual one', async () => {
    let n = 0;
    const s = await stub((r) => (r.path === '/api/v1/binders' ? (n++ < 10 ? { status: 429, headers: { 'retry-after': '0' }, body: '' } : { status: 200, body: [] }) : undef));
    expect(await client(s.origin, { retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 } }).listBinders()).toEqual([]);
    expect(n).toBe(11);
    let m = 0;
    const t = await stub((r) => (r.path === '/api/v1/binders' ? (m++, { status: 429, headers: { 'retry-after': '0' }, body: '' }) : undef));
    const err = (await client(t.origin, { retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 } }).listBinders().catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ status: 429 });
    expect(m).toBe(16);
    let k = 0;
    const u = await stub((r) => (r.path === '/api/v1/binders' ? (k++, { status: 502, body: '' }) : undef));
    await client(u.origin, { retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 } }).listBinders().catch(() => undefined);
    expect(k).toBe(4);
    // A 429 that says no Retry-After is no pacing to wait out: the usual budget. With four times it, a service
    // answering 429 to everything kept a one-shot sync waiting silently for over ten minutes (black-box round 42b, F2).
    let q = 0;
    const v = await stub((r) => (r.path === '/api/v1/binders' ? (q++, { status: 429, body: '' }) : undef));
    expect(await client(v.origin, { retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 } }).listBinders().catch((e: unknown) => e)).toMatchObject({ status: 429 });
    expect(q).toBe(4);
  });

  // Black-box round 43a, F5: every call answered 429 Retry-After: each waited out its own four-fold budget in turn,
  // and a one-shot sync was silent for six minutes.
  it('a service answering nothing but 429s with Retry-After is given up on after rateLimitedGiveUpMs, and said once in the log', async () => {
    let n = 0;
    // Tokens of a second, renewed meanwhile: the identity provider's answers must not count as the API answering.
    const s = await stub((r) =>
      r.path === '/api/v1/binders'
        ? (n++, { status: 429, headers: { 'retry-after': '0.05' }, body: '' })
        : r.path === '/auth/connect/token'
          ? { status: 200, body: { access_token: `tok-${n}`, expires_in: 1 } }
          : undef,
    );
    const lines: Array<{ level: number; msg: string }> = [];
    const log = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l) as { level: number; msg: string }) });
    const c = client(s.origin, { retry: { maxAttempts: 100, baseDelayMs: 1, maxDelayMs: 1000, rateLimitedGiveUpMs: 1500 } }, log);
    const t0 = performance.now();
    const err = (await c.listBinders().catch((e: unknown) => e)) as ServiceError;
    const ms = performance.now() - t0;
    expect(err).toMatchObject({ status: 429 });
    expect(ms).toBeGreaterThanOrEqual(1490);
    expect(ms).toBeLessThan(4000);
    expect(n).toBeLessThan(100); // given up long before its budget of 400 attempts
    const said = lines.filter((l) => /the service is rate limiting/.test(l.msg));
    expect(said.map((l) => [l.level, l.msg])).toEqual([[40, 'the service is rate limiting (HTTP 429, Retry-After 50ms): calls wait as it asks, and give up once it has answered nothing else for 1500ms']]);
  });

  it('a response idle past requestTimeoutMs is retried', async () => {
    let n = 0;
    const s = await stub(async (r) => {
      if (r.path !== '/api/v1/binders') return undef;
      // undici checks its timers on a ~0.5 s tick, so the stall must be well beyond that.
      if (n++ === 0) await new Promise((res) => setTimeout(res, 3000));
      return { status: 200, body: [] };
    });
    const t0 = performance.now();
    expect(await client(s.origin, { requestTimeoutMs: 200 }).listBinders()).toEqual([]);
    expect(performance.now() - t0).toBeLessThan(2500);
    expect(n).toBe(2);
  });

  // Black-box round 41c, F1: a body that keeps coming, a byte at a time, reset undici's idle timer for ever.
  it('an answer that trickles past requestTimeoutMs is cut, said as a timeout, and retried', async () => {
    let n = 0;
    const s = await stub((r) => {
      if (r.path !== '/api/v1/binders') return undef;
      if (n++ > 0) return { status: 200, body: [] };
      return async (res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        // Leading whitespace is valid JSON: a space every 100 ms, for up to 60 s.
        for (let i = 0; i < 600 && !res.destroyed && res.writable; i++) {
          res.write(' ');
          await new Promise((r2) => setTimeout(r2, 100));
        }
        res.end('[]');
      };
    });
    const c = client(s.origin, { requestTimeoutMs: 1000, retry: { maxAttempts: 1, baseDelayMs: 5, maxDelayMs: 10 } });
    const err = (await c.listBinders().catch((e: unknown) => e)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ code: 'SERVICE_NETWORK', retryable: true, request: 'GET /binders' });
    expect(err.message).toBe('GET /binders failed: ETIMEDOUT: the answer trickles: fewer than 1024 bytes in service.requestTimeout (1s)');
    expect(err.hint).toBe("the answer from service.baseUrl came too slowly (a congested link or proxy?); on a link that slow, raise service.requestTimeout, or lower the pair's pageSize");
    // Retried, the next answer is whole.
    expect(await client(s.origin, { requestTimeoutMs: 1000 }).listBinders()).toEqual([]);
    expect(n).toBe(2);
  });

  // Black-box round 43a, F4: a body moving just over the trickle mark that never ends kept a one-shot sync waiting
  // without end; it is cut after ANSWER_MAX_TIMEOUTS requestTimeouts.
  it('an answer that keeps moving but never ends is cut after ten requestTimeouts, said as such, and not asked again within the call', async () => {
    let writes = 0;
    const s = await stub((r) => {
      if (r.path !== '/api/v1/binders') return undef;
      return async (res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        while (!res.destroyed && res.writable && writes < 2000) {
          res.write(' '.repeat(2048));
          writes++;
          await new Promise((r2) => setTimeout(r2, 50));
        }
        res.end('[]');
      };
    });
    const t0 = performance.now();
    const c = client(s.origin, { requestTimeoutMs: 300, retry: { maxAttempts: 6, baseDelayMs: 5, maxDelayMs: 10 } });
    const err = (await c.listBinders().catch((e: unknown) => e)) as ServiceError;
    const ms = performance.now() - t0;
    // Not asked again within the call: each attempt would wait as long again.
    expect(ms).toBeLessThan(5500);
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ code: 'SERVICE_NETWORK', retryable: true, request: 'GET /binders' });
    expect(err.message).toBe('GET /binders failed: ETIMEDOUT: the answer did not end within 10 x service.requestTimeout (3s)');
    expect(ms).toBeGreaterThanOrEqual(2900);
    expect(writes).toBeLessThan(2000); // cut, not ended by the stub
  });

  it('an API redirect is not followed (the token stays here), and the hint says where it pointed (black-box round 41c, F4)', async () => {
    let n = 0;
    const s = await stub((r) => {
      if (r.path === '/api/v1/binders') return { status: 307, headers: { location: 'http://127.0.0.3:9/api/v1/binders?sig=abc' }, body: '' };
      if (r.path.startsWith('/elsewhere')) n++;
      return undef;
    });
    const err = (await client(s.origin).listBinders().catch((e: unknown) => e)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err.message).toMatch(/^GET \/binders failed with HTTP 307/);
    expect(err.hint).toBe('the service redirected the request to http://127.0.0.3:9/api/v1/binders; API calls are not followed to another address (they carry the token): set service.baseUrl to the address the service answers at');
    expect(n).toBe(0);
  });

  it('one malformed record in a list is named by its id and name, and the hint says it is the service\'s record (black-box round 41c, F7)', async () => {
    const s = await stub((r) => (r.path.startsWith('/api/') ? { status: 200, body: { items: [doc('d1'), { ...doc('d2'), latestVersionId: null }], totalCount: 2 } } : undef));
    const err = (await client(s.origin).searchDocuments({}).catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ code: 'SERVICE_INVALID_RESPONSE', retryable: false });
    expect(err.message).toMatch(/^POST \/documents answered with an unexpected shape: items\.1\.latestVersionId \(id d2, "d2\.txt"\): /);
    expect(err.hint).toMatch(/sent a record binder-sync cannot read \(a fault of the service, or of its data\)/);
  });

  // Black-box round 42b, F3: a big listing page on a slow link moves steadily but takes longer than requestTimeout
  // in all; cut at requestTimeout for the whole exchange, it was retried until the sync failed.
  it('an answer that keeps moving at a steady rate is read whole, however long it takes past requestTimeoutMs', async () => {
    const s = await stub((r) => {
      if (r.path !== '/api/v1/binders') return undef;
      return async (res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        // 2 KiB of whitespace every 200 ms for 2.4 s: more than 1 KiB in every requestTimeout (1 s), 2.4x it in all.
        for (let i = 0; i < 12 && !res.destroyed && res.writable; i++) {
          res.write(' '.repeat(2048));
          await new Promise((r2) => setTimeout(r2, 200));
        }
        res.end('[]');
      };
    });
    const started = performance.now();
    expect(await client(s.origin, { requestTimeoutMs: 1000, retry: { maxAttempts: 1, baseDelayMs: 5, maxDelayMs: 10 } }).listBinders()).toEqual([]);
    expect(performance.now() - started).toBeGreaterThan(2000);
  });

  it('a 2xx with the wrong shape is SERVICE_INVALID_RESPONSE, not retried, never "empty"', async () => {
    const s = await stub((r) => (r.path.startsWith('/api/') ? { status: 200, body: { items: [{ fileName: 'x' }], totalCount: 1 } } : undef));
    const err = (await client(s.origin).searchDocuments({}).catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ code: 'SERVICE_INVALID_RESPONSE', retryable: false, request: 'POST /documents' });
    expect(err.message).toContain('items.0.id');
    expect(s.api()).toHaveLength(1);
  });

  it('the client signal aborts waiting and in-flight requests with ABORTED', async () => {
    const s = await stub((r) => (r.path.startsWith('/api/') ? { status: 503, body: '' } : undef));
    const ac = new AbortController();
    const c = stubClient(s.origin, { retry: { maxAttempts: 10, baseDelayMs: 5000, maxDelayMs: 5000 } }, { signal: ac.signal });
    const p = c.listBinders().catch((e: unknown) => e);
    setTimeout(() => ac.abort(), 100);
    const t0 = performance.now();
    expect(await p).toMatchObject({ code: 'ABORTED' });
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});

describe('lifecycle', () => {
  it('close() aborts in-flight calls and later calls fail', async () => {
    const s = await stub(async (r) => {
      if (r.path.startsWith('/api/')) await new Promise((res) => setTimeout(res, 5000));
      return r.path.startsWith('/api/') ? { status: 200, body: [] } : undef;
    });
    const c = client(s.origin);
    const p = c.listBinders().catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    const t0 = performance.now();
    await c.close();
    expect(await p).toMatchObject({ code: 'ABORTED' });
    expect(performance.now() - t0).toBeLessThan(1000);
    await expect(c.listBinders()).rejects.toBeInstanceOf(ServiceError);
  });

  it('a malformed baseUrl fails at once, not after the retry budget', async () => {
    const c = stubClient('unused', { baseUrl: 'not a url', authUrl: 'not a url', retry: { maxAttempts: 6, baseDelayMs: 2000, maxDelayMs: 2000 } });
    const t0 = performance.now();
    const err = await c.listBinders().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'SERVICE_NETWORK', retryable: false });
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});

describe('endpoints', () => {
  it('search sends capitalised body keys and query params; paging falls back to the request', async () => {
    const s = await stub((r) => (r.path === '/api/v1/documents' && r.method === 'POST' ? { status: 200, body: { items: [doc('d1')], totalCount: 7 } } : undef));
    const page = await client(s.origin).searchDocuments({
      filters: [{ metadataElementId: 'GLOBAL_BinderId', valueId: 'b1' }, { metadataElementId: 'Note', value: 'free' }],
      sortBy: [{ metadataElementId: 'GLOBAL_Category', direction: 'desc' }],
      pageSize: 5,
      pageNumber: 2,
      searchTerm: 'a b',
    });
    expect(page).toEqual({ items: [doc('d1')], totalCount: 7, pageNumber: 2, pageSize: 5 });
    const req = s.api()[0]!;
    expect(Object.fromEntries(req.query)).toEqual({ pageSize: '5', pageNumber: '2', searchTerm: 'a b' });
    expect(req.headers['content-type']).toBe('application/json');
    expect(JSON.parse(req.body.toString())).toEqual({
      MetadataFilters: [{ metadataElementId: 'GLOBAL_BinderId', valueId: 'b1' }, { metadataElementId: 'Note', value: 'free' }],
      SortBy: [{ metadataElementId: 'GLOBAL_Category', direction: 'desc' }],
    });
  });

  it('searchPage skips parsing only a body identical to the one it names; any other body is validated', async () => {
    let body: unknown = { items: [doc('d1')], totalCount: 1 };
    let status = 200;
    const s = await stub((r) => (r.path === '/api/v1/documents' ? { status, body } : undef));
    const c = client(s.origin, { retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 } });
    const q = { pageSize: 5, pageNumber: 1 };
    const first = await c.searchPage(q, undefined);
    expect(first.page).toEqual({ items: [doc('d1')], totalCount: 1, pageNumber: 1, pageSize: 5 });
    expect(first.digest).toBe(createHash('sha256').update(JSON.stringify(body)).digest('base64'));
    expect(await c.searchPage(q, first.digest)).toEqual({ digest: first.digest, page: null });
    // A different body is parsed and validated as usual, even when asked with a digest...
    body = { items: [doc('d1'), doc('d2')], totalCount: 2 };
    expect((await c.searchPage(q, first.digest)).page?.items).toHaveLength(2);
    body = { items: [{ id: 'x' }], totalCount: 1 };
    await expect(c.searchPage(q, first.digest)).rejects.toMatchObject({ code: 'SERVICE_INVALID_RESPONSE' });
    // ...and the status is checked before any digest: an error page is never "the same as before".
    // A body that arrives in many chunks is hashed whole.
    body = { items: Array.from({ length: 4000 }, (_, i) => doc(`d${i}`)), totalCount: 4000 };
    const big = await c.searchPage(q, first.digest);
    expect(JSON.stringify(body).length).toBeGreaterThan(256 * 1024);
    expect(big.digest).toBe(createHash('sha256').update(JSON.stringify(body)).digest('base64'));
    expect(big.page?.items).toHaveLength(4000);
    body = { items: [doc('d1')], totalCount: 1 };
    status = 500;
    await expect(c.searchPage(q, first.digest)).rejects.toMatchObject({ status: 500 });
  });

  it('decodes a body whose multi-byte characters are split between network chunks', async () => {
    const name = 'Répertoire — 日本語 🎉.txt';
    const bytes = Buffer.from(JSON.stringify({ items: [{ ...doc('d1'), fileName: name }], totalCount: 1 }));
    const cut = bytes.indexOf(Buffer.from('🎉')) + 2; // inside the 4-byte emoji
    const s = await stub((r) =>
      r.path === '/api/v1/documents'
        ? (res: ServerResponse) => {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.write(bytes.subarray(0, cut));
            setTimeout(() => res.end(bytes.subarray(cut)), 30);
          }
        : undef,
    );
    const page = await client(s.origin).searchDocuments({ pageSize: 5, pageNumber: 1 });
    expect(page.items[0]?.fileName).toBe(name);
  });

  it('path parameters are URL-encoded and the domain is binders', async () => {
    const s = await stub((r) => (r.path.startsWith('/api/') ? { status: 200, body: [] } : undef));
    const c = client(s.origin);
    await c.listSubFolders('b1', 'a/b c');
    await c.listFolderDocuments('b1', 'f 1');
    expect(s.api().map((x) => x.path)).toEqual(['/api/v1/documents/drives/binders/b1/a%2Fb%20c', '/api/v1/documents/drives/binders/b1/f%201/documents']);
  });

  it('getDocument: null on 404 only', async () => {
    const s = await stub((r) => (r.path === '/api/v1/documents/gone' ? { status: 404, body: { title: 'Not Found' } } : r.path === '/api/v1/documents/bad' ? { status: 403, body: {} } : undef));
    const c = client(s.origin);
    expect(await c.getDocument('gone')).toBeNull();
    await expect(c.getDocument('bad')).rejects.toMatchObject({ code: 'SERVICE_FORBIDDEN', status: 403 });
  });

  it('versions: items without documentId get the one of the path; other fields are still required', async () => {
    const s = await stub((r) => {
      if (r.path === '/api/v1/documents/d7/versions') return { status: 200, body: [{ id: 'v1', version: '1' }, { id: 'v2', documentId: 'd7', version: '2' }, { id: 'v3', documentId: null }] };
      if (r.path === '/api/v1/documents/d7/versions/v1') return { status: 200, body: { id: 'v1', version: '1', status: 'active' } };
      if (r.path === '/api/v1/documents/d8/versions') return { status: 200, body: [{ version: '1' }] };
      return undef;
    });
    const c = client(s.origin);
    expect(await c.listVersions('d7')).toEqual([
      { id: 'v1', documentId: 'd7', version: '1' },
      { id: 'v2', documentId: 'd7', version: '2' },
      { id: 'v3', documentId: 'd7' },
    ]);
    expect(await c.getVersion('d7', 'v1')).toEqual({ id: 'v1', documentId: 'd7', version: '1', status: 'active' });
    await expect(c.listVersions('d8')).rejects.toMatchObject({ code: 'SERVICE_INVALID_RESPONSE' });
  });

  it('commit: the answer must still name its documentId (a new document is known only from it)', async () => {
    const s = await stub((r) => (r.path.endsWith('/upload') ? { status: 201, body: { id: 'v1', version: '1' } } : undef));
    await expect(client(s.origin).commitUpload('b1', 'f1', { fileName: 'a', versionLabel: '1', uploadId: 'u', metadata: [] })).rejects.toMatchObject({ code: 'SERVICE_INVALID_RESPONSE' });
  });

  /** A strict walkthrough-only server: any other key is a 400 naming it (ASP.NET-style validation problem). */
  const strictWalkthrough = (bodies: Record<string, unknown>[], status = 400) => (r: Seen): Answer => {
    if (!r.path.endsWith('/upload')) return undef;
    const b = JSON.parse(r.body.toString()) as Record<string, unknown>;
    bodies.push(b);
    const unknown = Object.keys(b).filter((k) => !['fileName', 'versionLabel', 'uploadId', 'metadata'].includes(k));
    if (unknown.length > 0) return { status, body: { title: 'One or more validation errors occurred.', errors: Object.fromEntries(unknown.map((k) => [k, ['unknown field']])) } };
    return { status: 201, body: version };
  };

  it('commit: one body with both spellings first; a strict walkthrough server gets the walkthrough one next, remembered', async () => {
    const bodies: Record<string, unknown>[] = [];
    const s = await stub(strictWalkthrough(bodies));
    const c = client(s.origin);
    const meta = [{ metadataElementId: 'Department', value: 'eng' }];
    expect(await c.commitUpload('b1', 'f1', { fileName: 'a.txt', versionLabel: '2', uploadId: 'u1', metadata: meta })).toEqual(version);
    expect(c.capabilities.commitSpelling).toBe('walkthrough');
    await c.commitUpload('b1', 'f1', { fileName: 'a.txt', versionLabel: '3', uploadId: 'u2', metadata: [] });
    expect(bodies).toEqual([
      { fileName: 'a.txt', version: '2', versionLabel: '2', uploadId: 'u1', additionalMetadata: [{ metadataElementId: 'Department', value: 'eng' }], metadata: [{ metadataElementId: 'Department', valueId: 'eng' }] },
      { fileName: 'a.txt', versionLabel: '2', uploadId: 'u1', metadata: [{ metadataElementId: 'Department', valueId: 'eng' }] },
      { fileName: 'a.txt', versionLabel: '3', uploadId: 'u2' },
    ]);
    expect(s.api()[0]!.path).toBe('/api/v1/documents/drives/binders/b1/f1/upload');
  });

  it('commit: without metadata the dual body sends additionalMetadata [] and no metadata; a 422 refusal falls back to reference, then walkthrough', async () => {
    const bodies: Record<string, unknown>[] = [];
    // Refusals without field names: the spelling cannot be told from them, so reference comes before walkthrough.
    const s = await stub((r) => {
      if (!r.path.endsWith('/upload')) return undef;
      const b = JSON.parse(r.body.toString()) as Record<string, unknown>;
      bodies.push(b);
      return 'version' in b ? { status: 422, body: 'Unprocessable Entity' } : { status: 201, body: version };
    });
    const c = client(s.origin);
    await c.commitUpload('b1', 'f1', { fileName: 'a.txt', versionLabel: '2', uploadId: 'u1', metadata: [] });
    expect(bodies).toEqual([
      { fileName: 'a.txt', version: '2', versionLabel: '2', uploadId: 'u1', additionalMetadata: [] },
      { fileName: 'a.txt', version: '2', uploadId: 'u1', additionalMetadata: [] },
      { fileName: 'a.txt', versionLabel: '2', uploadId: 'u1' },
    ]);
    expect(c.capabilities.commitSpelling).toBe('walkthrough');
  });

  it('commit: a server that ignores unknown keys takes the dual body at once ("both"), and keeps it', async () => {
    const bodies: Record<string, unknown>[] = [];
    const s = await stub((r) => {
      if (!r.path.endsWith('/upload')) return undef;
      bodies.push(JSON.parse(r.body.toString()) as Record<string, unknown>);
      return { status: 201, body: { ...version, version: bodies.at(-1)!.versionLabel ?? 'server default' } };
    });
    const c = client(s.origin);
    for (const id of ['u1', 'u2']) await c.commitUpload('b1', 'f1', { fileName: 'a.txt', versionLabel: '2', uploadId: id, metadata: [{ metadataElementId: 'Ref', value: 'R' }] });
    expect(c.capabilities.commitSpelling).toBe('both');
    expect(bodies).toHaveLength(2);
    for (const b of bodies) expect(b).toMatchObject({ version: '2', versionLabel: '2', additionalMetadata: [{ metadataElementId: 'Ref', value: 'R' }], metadata: [{ metadataElementId: 'Ref', valueId: 'R' }] });
  });

  it('commit: refused in every spelling, the error carries the reason that is not about the spelling fields', async () => {
    // Walkthrough-only, strict, and the file name is refused too; the refusal comes in several body shapes.
    const shapes: Array<[string, (errors: Record<string, string[]>) => Answer]> = [
      ['problem', (errors) => ({ status: 400, body: { title: 'One or more validation errors occurred.', errors } })],
      ['422 problem', (errors) => ({ status: 422, body: { title: 'One or more validation errors occurred.', errors } })],
      ['message', (errors) => ({ status: 400, body: { message: `Validation failed: ${JSON.stringify(errors)}` } })],
      ['error object', (errors) => ({ status: 400, body: { error: { code: 'BadRequest', message: Object.entries(errors).map(([k, v]) => `${k}: ${v.join()}`).join('; ') } } })],
      ['text', (errors) => ({ status: 400, headers: { 'content-type': 'text/plain' }, body: `Bad Request: ${JSON.stringify(errors)}` })],
    ];
    for (const [shape, answer] of shapes) {
      const s = await stub((r) => {
        if (!r.path.endsWith('/upload')) return undef;
        const b = JSON.parse(r.body.toString()) as Record<string, unknown>;
        const unknown = Object.keys(b).filter((k) => !['fileName', 'versionLabel', 'uploadId', 'metadata'].includes(k));
        if (unknown.length > 0) return answer(Object.fromEntries(unknown.map((k) => [k, ['Unknown field.']])));
        return answer({ fileName: [`"${b.fileName as string}" may not contain a backslash (token ${SECRET})`] });
      });
      const c = client(s.origin);
      const err = (await c.commitUpload('b1', 'f1', { fileName: 'back\\slash.txt', versionLabel: '1', uploadId: 'u', metadata: [] }).catch((e: unknown) => e)) as ServiceError;
      expect(err, shape).toBeInstanceOf(ServiceError);
      expect(err.status, shape).toBe(shape.startsWith('422') ? 422 : 400);
      expect(err.message, shape).toContain('may not contain a backslash');
      expect(err.message, shape).not.toContain('Unknown field');
      expect(err.message, shape).not.toContain(SECRET);
      expect(JSON.stringify(err.problem), shape).not.toContain(SECRET);
      expect(c.capabilities.commitSpelling, shape).toBeNull();
    }
  });

  it('commit: when every spelling gets 400 for reasons alike, the first error is thrown', async () => {
    const s = await stub((r) => (r.path.endsWith('/upload') ? { status: 400, body: { title: JSON.parse(r.body.toString()).version ? 'reference refused' : 'walkthrough refused' } } : undef));
    const c = client(s.origin);
    const err = (await c.commitUpload('b1', 'f1', { fileName: 'a', versionLabel: '1', uploadId: 'u', metadata: [] }).catch((e: unknown) => e)) as ServiceError;
    expect(err.message).toContain('reference refused');
    expect(c.capabilities.commitSpelling).toBeNull();
    expect(s.api()).toHaveLength(3);
  });

  it('commit: refused everywhere without any reason, the first error is thrown', async () => {
    const s = await stub((r) => (r.path.endsWith('/upload') ? { status: 400, body: '' } : undef));
    const c = client(s.origin);
    const err = (await c.commitUpload('b1', 'f1', { fileName: 'a', versionLabel: '1', uploadId: 'u', metadata: [] }).catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ status: 400, code: 'SERVICE_BAD_REQUEST' });
    expect(err.context).toMatchObject({ commitSpellingsTried: ['both', 'reference', 'walkthrough'] });
    expect(s.api()).toHaveLength(3);
  });

  it('commit: a known spelling refused for a reason naming no spelling field is not re-sent in the others', async () => {
    const bodies: Record<string, unknown>[] = [];
    const strict = strictWalkthrough(bodies);
    const s = await stub((r) => {
      const a = strict(r);
      if (a !== undef && typeof a === 'object' && 'status' in a && a.status === 201 && (bodies.at(-1)!.fileName as string).includes('\\')) {
        return { status: 400, body: { title: 'One or more validation errors occurred.', errors: { fileName: ['bad character'] } } };
      }
      return a;
    });
    const c = client(s.origin);
    await c.commitUpload('b1', 'f1', { fileName: 'ok.txt', versionLabel: '1', uploadId: 'u1', metadata: [] });
    expect(bodies).toHaveLength(2);
    const err = (await c.commitUpload('b1', 'f1', { fileName: 'a\\b.txt', versionLabel: '1', uploadId: 'u2', metadata: [] }).catch((e: unknown) => e)) as ServiceError;
    expect(err.message).toContain('fileName: bad character');
    expect(bodies).toHaveLength(3);
    expect(c.capabilities.commitSpelling).toBe('walkthrough');
  });

  it('commit: an answered label other than the one sent is noted at debug level, not thrown', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (l: string) => void lines.push(l) });
    const s = await stub((r) => (r.path.endsWith('/upload') ? { status: 201, body: { ...version, version: '7' } } : undef));
    const v = await client(s.origin, {}, logger).commitUpload('b1', 'f1', { fileName: 'a', versionLabel: '1', uploadId: 'u', metadata: [] });
    expect(v.version).toBe('7');
    const note = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => typeof r.msg === 'string' && r.msg.includes('another version label'));
    expect(note).toMatchObject({ level: 20, sent: '1', answered: '7', spelling: 'both' });
  });

  it('commit: a 409 is COMMIT_CONFLICT (already committed)', async () => {
    const s = await stub((r) => (r.path.endsWith('/upload') ? { status: 409, body: { title: 'Upload already committed' } } : undef));
    const err = (await client(s.origin).commitUpload('b1', 'f1', { fileName: 'a', versionLabel: '1', uploadId: 'u7', metadata: [] }).catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ code: 'COMMIT_CONFLICT', retryable: false, status: 409 });
    expect(err.context).toMatchObject({ uploadId: 'u7' });
    expect(s.api()).toHaveLength(1);
  });

  it('download link: /raw then /downloadlink on 404/405, remembered; both failing throws the first error', async () => {
    const s = await stub((r) =>
      r.path.endsWith('/raw') ? { status: 405, body: {} } : r.path.endsWith('/downloadlink') ? (r.path.includes('/missing/') ? { status: 404, body: {} } : { status: 200, body: { url: 'http://s/x?sig=1', expiresAt: '2999-01-01T00:00:00Z' } }) : undef,
    );
    const c = client(s.origin);
    expect((await c.getDownloadLink('d1', 'v1')).url).toBe('http://s/x?sig=1');
    expect(c.capabilities.downloadLinkSuffix).toBe('downloadlink');
    await c.getDownloadLink('d1', 'v2');
    expect(s.api().map((x) => x.path.split('/').pop())).toEqual(['raw', 'downloadlink', 'downloadlink']);

    const c2 = client(s.origin);
    await expect(c2.getDownloadLink('missing', 'v1')).rejects.toMatchObject({ status: 405, request: 'GET /documents/{documentId}/versions/{versionId}/raw' });
    expect(c2.capabilities.downloadLinkSuffix).toBeNull();
  });
});

describe('transfers', () => {
  it('upload: onSlot before the PUT, new slot after a burned one, storage sees no Authorization', async () => {
    const events: string[] = [];
    let slots = 0;
    let puts = 0;
    const s = await stub((r) => {
      if (r.path.endsWith('/presignedupload')) {
        slots++;
        // The query string stands in for a presigned signature.
        return { status: 200, body: { presignedUrl: `${s.origin}/storage/u${slots}?sig=secret-sig`, uploadId: `u${slots}` } };
      }
      if (r.path.startsWith('/storage/')) {
        events.push(`put:${r.path}`);
        return puts++ === 0 ? 'drop' : { status: 201 };
      }
      return undef;
    });
    const content = Buffer.from('hello storage '.repeat(1000));
    const c = client(s.origin);
    const res = await c.uploadContent(() => Readable.from([content.subarray(0, 5000), content.subarray(5000)]), content.length, {
      onSlot: async (id) => {
        events.push(`slot:${id}`);
      },
    });
    expect(res).toEqual({ uploadId: 'u2', bytes: content.length, sha256: createHash('sha256').update(content).digest('hex') });
    expect(events).toEqual(['slot:u1', 'put:/storage/u1', 'slot:u2', 'put:/storage/u2']);
    const put = s.seen.filter((x) => x.path.startsWith('/storage/'));
    expect(put[1]!.body.equals(content)).toBe(true);
    for (const p of put) {
      expect(p.headers.authorization).toBeUndefined();
      expect(p.headers['x-service-tenantid']).toBeUndefined();
      expect(p.headers['x-ms-blob-type']).toBe('BlockBlob');
      expect(p.headers['content-length']).toBe(String(content.length));
    }
  });

  it('upload: a storage slow to take the body answers after requestTimeout, and the PUT still succeeds (round 37b, F3)', async () => {
    // The storage takes nothing for 2.5 s (a slow uplink's queue), then the body, then answers. undici's headers
    // timer runs while the socket is backed up and once the whole body is handed over: at requestTimeout (200 ms)
    // every attempt failed with UND_ERR_HEADERS_TIMEOUT and started again from the first byte.
    const storage = http.createServer((req, res) => {
      req.pause();
      const later = setTimeout(() => {
        req.resume();
        req.on('end', () => res.writeHead(201).end());
      }, 2500);
      req.on('close', () => clearTimeout(later));
    });
    await new Promise<void>((r) => storage.listen(0, '127.0.0.1', r));
    try {
      const port = (storage.address() as { port: number }).port;
      let slots = 0;
      const s = await stub((r) => (r.path.endsWith('/presignedupload') ? { status: 200, body: { presignedUrl: `http://127.0.0.1:${port}/u${++slots}?sig=1`, uploadId: `u${slots}` } } : undef));
      const c = client(s.origin, { requestTimeoutMs: 200, retry: { maxAttempts: 2, baseDelayMs: 5, maxDelayMs: 10 } });
      const content = Buffer.alloc(256 * 1024, 7);
      const res = await c.uploadContent(() => Readable.from([content]), content.length);
      expect(res).toMatchObject({ uploadId: 'u1', bytes: content.length });
      expect(slots).toBe(1);
    } finally {
      storage.closeAllConnections();
      await new Promise((r) => storage.close(r));
    }
  });

  it('upload: a storage that takes a large body at once and never answers is given up after about requestTimeout (round 37c, F3)', async () => {
    // The body went out fast, so the path is fast: nothing of it can still be on its way, and no allowance for a
    // slow uplink is due (with the slow rate alone each attempt waited over a minute here).
    const storage = http.createServer((req) => req.resume());
    await new Promise<void>((r) => storage.listen(0, '127.0.0.1', r));
    try {
      const port = (storage.address() as { port: number }).port;
      const s = await stub((r) => (r.path.endsWith('/presignedupload') ? { status: 200, body: { presignedUrl: `http://127.0.0.1:${port}/u1?sig=1`, uploadId: 'u1' } } : undef));
      const c = client(s.origin, { requestTimeoutMs: 300, retry: { maxAttempts: 1, baseDelayMs: 5, maxDelayMs: 10 } });
      const content = Buffer.alloc(12 * 1024 * 1024, 7);
      const started = Date.now();
      const err = (await c.uploadContent(() => Readable.from([content]), content.length).catch((e: unknown) => e)) as ServiceError;
      expect(err).toMatchObject({ code: 'SERVICE_NETWORK', retryable: true });
      expect(err.message).toContain('UND_ERR_HEADERS_TIMEOUT');
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      storage.closeAllConnections();
      await new Promise((r) => storage.close(r));
    }
  }, 30_000);

  it('upload: a PUT whose answer body trickles is done once its status is in, the body let go after requestTimeout (black-box round 41c, F1)', async () => {
    const storage = http.createServer((req, res) => {
      req.resume();
      req.on('end', async () => {
        res.writeHead(201, { 'content-type': 'text/plain' });
        for (let i = 0; i < 600 && !res.destroyed && res.writable; i++) {
          res.write(' ');
          await new Promise((r) => setTimeout(r, 100));
        }
        res.end();
      });
    });
    await new Promise<void>((r) => storage.listen(0, '127.0.0.1', r));
    try {
      const port = (storage.address() as { port: number }).port;
      const s = await stub((r) => (r.path.endsWith('/presignedupload') ? { status: 200, body: { presignedUrl: `http://127.0.0.1:${port}/u1?sig=1`, uploadId: 'u1' } } : undef));
      const c = client(s.origin, { requestTimeoutMs: 1000 });
      const content = Buffer.alloc(1000, 7);
      expect(await c.uploadContent(() => Readable.from([content]), content.length)).toMatchObject({ uploadId: 'u1', bytes: 1000 });
    } finally {
      storage.closeAllConnections();
      await new Promise((r) => storage.close(r));
    }
  }, 30_000);

  it('upload: a failing local stream is UPLOAD_SOURCE_FAILED and takes no second slot', async () => {
    const s = await stub((r) => (r.path.endsWith('/presignedupload') ? { status: 200, body: { presignedUrl: `${s.origin}/storage/u1?sig=1`, uploadId: 'u1' } } : r.path.startsWith('/storage') ? { status: 201 } : undef));
    const c = client(s.origin);
    const open = () =>
      new Readable({
        read() {
          this.push(Buffer.alloc(10));
          this.destroy(new Error('EIO: disk went away'));
        },
      });
    const err = (await c.uploadContent(open, 100).catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ code: 'UPLOAD_SOURCE_FAILED', retryable: false });
    expect(err.message).toContain('EIO');
    expect(s.seen.filter((x) => x.path.endsWith('/presignedupload'))).toHaveLength(1);
  });

  it('upload: a file that grows while it is sent is UPLOAD_SOURCE_FAILED marked as changed (postponed), whichever side sees the length first', async () => {
    const s = await stub((r) => (r.path.endsWith('/presignedupload') ? { status: 200, body: { presignedUrl: `${s.origin}/storage/u1?sig=1`, uploadId: 'u1' } } : r.path.startsWith('/storage') ? { status: 201 } : undef));
    const c = client(s.origin);
    // Still open when undici sees the extra bytes: the pipeline destroys it with undici's length error.
    const open = () => {
      let sent = 0;
      return new Readable({
        read() {
          if (sent++ < 3) setTimeout(() => this.push(Buffer.alloc(60)), 5);
        },
      });
    };
    const err = (await c.uploadContent(open, 100).catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ code: 'UPLOAD_SOURCE_FAILED', retryable: false, context: expect.objectContaining({ fileChanged: true }) });
    expect(err.message).toContain('did not have the announced 100 bytes');
  });

  it('download: an expired link is replaced before use; a cut body is TRANSFER_INTERRUPTED and not retried', async () => {
    let links = 0;
    let gets = 0;
    const s = await stub((r) => {
      if (r.path.endsWith('/raw')) {
        links++;
        const expiresAt = links === 1 ? '2000-01-01T00:00:00Z' : '2999-01-01T00:00:00Z';
        return { status: 200, body: { url: `http://127.0.0.1:${portOf()}/storage/blob?exp=1&sig=zzz`, expiresAt } };
      }
      if (r.path === '/storage/blob') {
        gets++;
        expect(r.headers.authorization).toBeUndefined();
        return (res) => {
          res.writeHead(200, { 'content-length': '1000' });
          res.write(Buffer.alloc(400, 1));
          setTimeout(() => res.destroy(), 5);
        };
      }
      return undef;
    });
    const portOf = () => new URL(s.origin).port;
    const c = client(s.origin);
    // First download uses a link already past expiresAt: the client must fetch a fresh one first.
    const chunks: Buffer[] = [];
    const dest = new Writable({
      write(chunk: Buffer, _e, cb) {
        chunks.push(chunk);
        cb();
      },
    });
    await c.getDownloadLink('d1', 'v1'); // learns 'raw' with the stale link (links = 1)
    links = 0;
    const err = (await c.downloadVersionTo('d1', 'v1', dest).catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ code: 'TRANSFER_INTERRUPTED', retryable: true, request: 'GET storage' });
    expect(err.message).not.toContain('sig=');
    expect(JSON.stringify(err.context)).not.toContain('zzz');
    expect(gets).toBe(1);
    expect(links).toBe(2); // the first link arrived already expired and was replaced before use
    expect(dest.destroyed).toBe(true);
  });

  // Black-box round 41c, F1 (storage): a byte every 100 ms resets undici's idle timer for ever.
  it('download: a storage body that trickles is ended as interrupted, retryable, and nothing more is written', async () => {
    const s = await stub((r) => {
      if (r.path.endsWith('/raw')) return { status: 200, body: { url: `http://127.0.0.1:${new URL(s.origin).port}/storage/blob?sig=zzz`, expiresAt: '2999-01-01T00:00:00Z' } };
      if (r.path === '/storage/blob') {
        return async (res: ServerResponse) => {
          res.writeHead(200, { 'content-length': '100000' });
          for (let i = 0; i < 600 && !res.destroyed && res.writable; i++) {
            res.write('x');
            await new Promise((r2) => setTimeout(r2, 100));
          }
          res.end();
        };
      }
      return undef;
    });
    const c = client(s.origin, { requestTimeoutMs: 1000, trickleWindowMs: 1500 });
    let written = 0;
    const dest = new Writable({
      write(chunk: Buffer, _e, cb) {
        written += chunk.length;
        cb();
      },
    });
    const err = (await c.downloadVersionTo('d1', 'v1', dest).catch((e: unknown) => e)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ code: 'TRANSFER_INTERRUPTED', retryable: true });
    expect(err.message).toMatch(/fewer than 1024 bytes in 2 s: the transfer trickles/);
    expect(err.message).not.toContain('zzz');
    expect(written).toBeLessThan(100);
  });

  // Black-box round 42b, F1: under maxDownloadRate the throttle stage buffers ahead of the rate; the body it read
  // from then paused for longer than the trickle window, and every throttled download was ended and started over.
  it('download: a body held back by our own maxDownloadRate is not taken for a trickle', async () => {
    const size = 3 * 1024 * 1024;
    const s = await stub((r) => {
      if (r.path.endsWith('/raw')) return { status: 200, body: { url: `http://127.0.0.1:${new URL(s.origin).port}/storage/blob?sig=zzz`, expiresAt: '2999-01-01T00:00:00Z' } };
      if (r.path === '/storage/blob') return { status: 200, body: Buffer.alloc(size, 7) };
      return undef;
    });
    const c = client(s.origin, { requestTimeoutMs: 1000, trickleWindowMs: 400, maxDownloadBytesPerSecond: 1024 * 1024 });
    let written = 0;
    const dest = new Writable({
      write(chunk: Buffer, _e, cb) {
        written += chunk.length;
        cb();
      },
    });
    await c.downloadVersionTo('d1', 'v1', dest);
    expect(written).toBe(size);
  });

  it('download: a storage GET that stalls is tried again, and that is said at info, without the signature (black-box round 28b, F7)', async () => {
    let gets = 0;
    const s = await stub((r) => {
      if (r.path.endsWith('/raw')) return { status: 200, body: { url: `http://127.0.0.1:${new URL(s.origin).port}/storage/blob?sig=zzz`, expiresAt: '2999-01-01T00:00:00Z' } };
      if (r.path === '/storage/blob') {
        gets++;
        if (gets === 1) return () => undefined; // never answers: the request times out
        return { status: 200, body: 'the content' };
      }
      return undef;
    });
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
    const c = client(s.origin, { requestTimeoutMs: 200 }, logger);
    const chunks: Buffer[] = [];
    const dest = new Writable({
      write(chunk: Buffer, _e, cb) {
        chunks.push(chunk);
        cb();
      },
    });
    await c.downloadVersionTo('d1', 'v1', dest);
    expect(Buffer.concat(chunks).toString()).toContain('the content');
    expect(gets).toBe(2);
    const retry = lines.map((l) => JSON.parse(l) as { level: number; msg: string; request?: string }).find((l) => l.request === 'GET storage');
    expect(retry?.level).toBe(30);
    expect(retry?.msg).toMatch(/; trying again in \d+\.\d s$/);
    expect(lines.join('\n')).not.toContain('zzz');
  });

  it('download: a failing destination is LOCAL_IO, not retried', async () => {
    let gets = 0;
    const s = await stub((r) => {
      if (r.path.endsWith('/raw')) return { status: 200, body: { url: `${s.origin}/storage/blob?sig=1` } };
      if (r.path === '/storage/blob') {
        gets++;
        return { status: 200, headers: { 'content-type': 'application/octet-stream' }, body: Buffer.alloc(100_000, 7) };
      }
      return undef;
    });
    const dest = new Writable({
      write(_c, _e, cb) {
        cb(new Error('ENOSPC: no space left on device'));
      },
    });
    const err = await client(s.origin).downloadVersionTo('d1', 'v1', dest).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'LOCAL_IO', retryable: false });
    expect((err as Error).message).toContain('ENOSPC');
    expect(gets).toBe(1);
  });

  it('download: a link that is not http(s) (file:, ftp:, not a URL) fails with a clear error and writes nothing', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://127.0.0.1/x?sig=1', 'not a url']) {
      const s = await stub((r) => (r.path.endsWith('/raw') ? { status: 200, body: { url, expiresAt: '2999-01-01T00:00:00Z' } } : undef));
      let written = 0;
      const dest = new Writable({
        write(c: Buffer, _e, cb) {
          written += c.length;
          cb();
        },
      });
      const err = (await client(s.origin).downloadVersionTo('d1', 'v1', dest).catch((e: unknown) => e)) as ServiceError;
      expect(err, url).toBeInstanceOf(ServiceError);
      expect(err.message, url).toMatch(url === 'not a url' ? /Invalid URL/ : /URL must start with `http:` or `https:`/);
      expect(err.message, url).not.toContain('sig=1');
      // The URL came from the service: no config setting is blamed (black-box round 41c, F4).
      if (url !== 'not a url') expect(err.hint, url).toBe(`the service handed out a storage URL binder-sync cannot use (${url.replace(/\?.*$/, '')}): nothing was fetched or sent; a fault of the service, retried at the next pass`);
      expect(written, url).toBe(0);
    }
  });

  it('logs one debug line per request without tokens, secrets or signatures', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (l: string) => void lines.push(l) });
    const s = await stub((r) => (r.path === '/api/v1/documents/d1' ? { status: 200, body: doc('d1') } : undef));
    await client(s.origin, {}, logger).getDocument('d1');
    const recs = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const apiLine = recs.find((r) => r.path === '/documents/{documentId}');
    expect(apiLine).toMatchObject({ component: 'service', method: 'GET', status: 200, attempt: 1 });
    expect(typeof apiLine!.ms).toBe('number');
    expect(recs.find((r) => r.path === '/connect/token')).toMatchObject({ method: 'POST', status: 200 });
    const all = lines.join('\n');
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain('tok-1');
  });
});
