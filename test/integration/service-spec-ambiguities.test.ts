// The service client and the remote listing against small node:http stubs on 127.0.0.1 that answer the way an
// independent server following the service spec may, each ambiguity taken in a way the spec allows (found by a
// spec audit; each test names the spec text that allows the server's behaviour).
// Whole-CLI runs of some of these (compressed answers, deleted documents answered 400/403) are in
// test/e2e/sync-variants.test.ts.
import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { listRemote } from '../../src/remote/listing.js';
import type { ServiceSettings } from '../../src/service/index.js';
import type { BaseEntry } from '../../src/sync/model.js';
import { stub, stubClient, type Answer, type Seen } from './stub-server.js';

function client(origin: string, extra: Partial<ServiceSettings> = {}) {
  return stubClient(origin, extra);
}

/** RFC 9110 12.5.3: without Accept-Encoding any content coding is acceptable; with one, gzip only if it is listed. */
function gzipAllowed(r: Seen): boolean {
  const ae = r.headers['accept-encoding'];
  if (ae === undefined) return true;
  return /\b(gzip|\*)\b(?!\s*;\s*q=0(\.0*)?\b)/i.test(String(ae));
}

/** A JSON answer, gzip-encoded whenever the request allows it (as many reverse proxies / frameworks do). */
function jsonMaybeGzip(r: Seen, value: unknown): Answer {
  const text = JSON.stringify(value);
  if (!gzipAllowed(r)) return { status: 200, body: text };
  return { status: 200, headers: { 'content-encoding': 'gzip', vary: 'accept-encoding' }, body: gzipSync(text) };
}

/** What `p` rejects with; a test fails if it resolves. */
async function rejection<E>(p: Promise<unknown>): Promise<E> {
  return p.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (e: unknown) => e as E,
  );
}

const BINDER = 'B00000001';
const TAB = '6f1c2d3e-0000-4000-8000-000000000001';

function baseEntry(documentId: string, fileName: string): BaseEntry {
  return {
    documentId,
    versionId: `v-${documentId}`,
    versionLabel: '1',
    folderId: TAB,
    fileName,
    relPath: `Tab/${fileName}`,
    key: `Tab/${fileName}`,
    size: 1,
    mtimeMs: 0,
    inode: 1,
    sha256: 'x',
  } as BaseEntry;
}

/** A binder with one top-level tab (no sub-folders) whose search answers `items` on one page. */
function binderRoutes(r: Seen, items: unknown[]): Answer {
  if (r.path === `/api/v1/documents/drives/binders/${BINDER}`) return { status: 200, body: [{ id: TAB, name: 'Tab', type: 'tab' }] };
  if (r.path === `/api/v1/documents/drives/binders/${BINDER}/${TAB}`) return { status: 200, body: [] };
  if (r.path === `/api/v1/documents/drives/binders/${BINDER}/${TAB}/documents`) return { status: 200, body: items };
  if (r.path === '/api/v1/documents' && r.method === 'POST') {
    return { status: 200, body: { items, totalCount: items.length, pageNumber: Number(r.query.get('pageNumber') ?? 1), pageSize: Number(r.query.get('pageSize') ?? 50) } };
  }
  return undefined;
}

describe('content coding (spec 1: bodies are JSON; spec 7: nothing said about transfer details)', () => {
  // RFC 9110 12.5.3: a request without Accept-Encoding accepts any content coding, so a server (or the proxy in
  // front of it) may gzip its JSON. The client names the codings it decodes and decodes them (before, the gzip
  // bytes went to JSON.parse, were read as "cut off", retried, and the call failed).
  it('an API answer sent with Content-Encoding: gzip is read as its JSON', async () => {
    const s = await stub((r) => (r.path === '/api/v1/binders' ? jsonMaybeGzip(r, [{ id: BINDER, name: 'Binder', type: 'standard', createdAt: '2024-01-01T00:00:00Z' }]) : undefined));
    const c = client(s.origin);
    const binders = await c.listBinders();
    expect(binders.map((b) => b.id)).toEqual([BINDER]);
  });

  // Same for storage (spec 4.13: "a plain GET on url"): a storage front end may gzip the blob when the GET allows
  // any coding, and the compressed bytes were written to the local file as the content. The GET now asks for
  // `identity`.
  it('a storage download sent with Content-Encoding: gzip yields the original bytes', async () => {
    const content = Buffer.from('line of text that compresses well\n'.repeat(200));
    const s = await stub((r) => {
      if (r.path.endsWith('/raw')) return { status: 200, body: { url: `${s.origin}/storage/blob-1?sig=abc`, expiresAt: new Date(Date.now() + 600_000).toISOString() } };
      if (r.path === '/storage/blob-1') {
        if (!gzipAllowed(r)) return (res) => void res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(content.length) }).end(content);
        const gz = gzipSync(content);
        return (res) => void res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip', 'content-length': String(gz.length) }).end(gz);
      }
      return undefined;
    });
    const c = client(s.origin);
    const got: Buffer[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _e, cb) {
        got.push(chunk);
        cb();
      },
    });
    const res = await c.downloadVersionTo('d1', 'v1', sink);
    const written = Buffer.concat(got);
    expect(written.length).toBe(content.length);
    expect(written.equals(content)).toBe(true);
    expect(res.sha256).toBe(createHash('sha256').update(content).digest('hex'));
  });
});

describe('content coding: every way an API answer may be coded', () => {
  const binders = [{ id: BINDER, name: 'Binder' }];
  const coded = (encoding: string, body: Buffer, status = 200): Answer => ({ status, headers: { 'content-encoding': encoding }, body });

  it('names gzip, deflate and br in Accept-Encoding on API and token requests; asks storage for identity', async () => {
    const s = await stub((r) => {
      if (r.path === '/api/v1/binders') return { status: 200, body: binders };
      if (r.path.endsWith('/raw')) return { status: 200, body: { url: `${s.origin}/storage/b?sig=1` } };
      if (r.path === '/storage/b') return (res) => void res.writeHead(200, { 'content-length': '2' }).end('ok');
      return undefined;
    });
    const c = client(s.origin);
    await c.listBinders();
    await c.downloadVersionTo('d1', 'v1', new Writable({ write: (_ch, _e, cb) => cb() }));
    const byPath = (p: string) => s.seen.find((x) => x.path === p)?.headers['accept-encoding'];
    expect(byPath('/auth/connect/token')).toBe('gzip, deflate, br');
    expect(byPath('/api/v1/binders')).toBe('gzip, deflate, br');
    expect(byPath('/storage/b')).toBe('identity');
  });

  it.each([
    ['gzip', (b: Buffer) => gzipSync(b)],
    ['x-gzip', (b: Buffer) => gzipSync(b)],
    ['deflate', (b: Buffer) => deflateSync(b)],
    ['deflate', (b: Buffer) => deflateRawSync(b)], // raw deflate, as some servers send it
    ['br', (b: Buffer) => brotliCompressSync(b)],
    ['gzip, br', (b: Buffer) => brotliCompressSync(gzipSync(b))], // applied in order, undone last first
    ['identity', (b: Buffer) => b],
  ])('decodes Content-Encoding: %s', async (encoding, encode) => {
    const s = await stub((r) => (r.path === '/api/v1/binders' ? coded(encoding, encode(Buffer.from(JSON.stringify(binders)))) : undefined));
    expect((await client(s.origin).listBinders()).map((b) => b.id)).toEqual([BINDER]);
  });

  it('a coding it cannot decode is a clear error, not retried', async () => {
    const s = await stub((r) => (r.path === '/api/v1/binders' ? coded('zstd', Buffer.from('not really zstd')) : undefined));
    const err = await rejection<{ code: string; retryable: boolean; message: string }>(client(s.origin).listBinders());
    expect(err).toMatchObject({ code: 'SERVICE_INVALID_RESPONSE', retryable: false });
    expect(err.message).toContain('Content-Encoding zstd');
    expect(s.api().filter((x) => x.path === '/api/v1/binders')).toHaveLength(1);
  });

  it('a gzip body that does not decode is taken as cut off and retried', async () => {
    let n = 0;
    const good = gzipSync(JSON.stringify(binders));
    const s = await stub((r) => (r.path === '/api/v1/binders' ? coded('gzip', ++n === 1 ? good.subarray(0, good.length - 9) : good) : undefined));
    expect(await client(s.origin).listBinders()).toHaveLength(1);
    expect(n).toBe(2);
  });

  it('refuses an answer that unpacks past the size cap (a few KiB claiming to be 65 MiB)', async () => {
    const bomb = gzipSync(Buffer.alloc(65 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(200 * 1024);
    const s = await stub((r) => (r.path === '/api/v1/binders' ? coded('gzip', bomb) : undefined));
    const err = await rejection<{ code: string; retryable: boolean; message: string }>(client(s.origin).listBinders());
    expect(err).toMatchObject({ code: 'SERVICE_INVALID_RESPONSE', retryable: false });
    expect(err.message).toContain('too large');
  });

  it('an error answer keeps its status when its body does not decode', async () => {
    const s = await stub((r) => (r.path === '/api/v1/binders' ? coded('gzip', Buffer.from('<html>bad gateway</html>'), 403) : undefined));
    const err = await rejection<{ status: number }>(client(s.origin).listBinders());
    expect(err.status).toBe(403);
  });

  it('a compressed search page that did not change is still recognised by its digest (of the JSON, not the bytes)', async () => {
    const page = { items: [], totalCount: 0, pageNumber: 1, pageSize: 10 };
    let level = 1;
    const s = await stub((r) => (r.path === '/api/v1/documents' ? coded('gzip', gzipSync(JSON.stringify(page), { level: level++ })) : undefined));
    const c = client(s.origin);
    const q = { filters: [{ metadataElementId: 'GLOBAL_BinderId', valueId: BINDER }], pageSize: 10, pageNumber: 1 };
    const first = await c.searchPage(q, undefined);
    expect(first.page).not.toBeNull();
    const again = await c.searchPage(q, first.digest);
    expect(again.page).toBeNull();
  });
});

describe('storage objects stored with a Content-Encoding', () => {
  // Asked for identity, a storage that still answers with a Content-Encoding serves an object stored that way
  // (e.g. uploaded as .gz with that metadata): its bytes are the document's, and are kept as stored, as rclone
  // does by default for such objects. Unpacking them would change the file.
  it('keeps the stored bytes', async () => {
    const stored = gzipSync('the document is a gzip file');
    const s = await stub((r) => {
      if (r.path.endsWith('/raw')) return { status: 200, body: { url: `${s.origin}/storage/gz?sig=1` } };
      if (r.path === '/storage/gz') return (res) => void res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': String(stored.length) }).end(stored);
      return undefined;
    });
    const got: Buffer[] = [];
    const res = await client(s.origin).downloadVersionTo('d1', 'v1', new Writable({ write: (ch: Buffer, _e, cb) => (got.push(ch), cb()) }));
    expect(Buffer.concat(got).equals(stored)).toBe(true);
    expect(res.bytes).toBe(stored.length);
  });
});

describe('token lifetime (spec 5.2/5.4: expires_in gives the exact seconds; tokens expire after it)', () => {
  // The token was taken from the cache BEFORE a call waited in the rate queue, so a call that waited longer than
  // the token's remaining life was sent with an expired token; the one 401 retry took a fresh token and queued
  // again at the back, where it expired again: SERVICE_UNAUTHORIZED, the pass failed. Here: 1 s tokens,
  // 5 requests/s, 20 calls (a folder-tree level of 20 tabs walks exactly like this).
  it('calls that wait in the rate queue longer than the token lives still succeed', async () => {
    const issued = new Map<string, number>();
    let n = 0;
    const s = await stub((r) => {
      if (r.path === '/auth/connect/token') {
        const t = `tok-${++n}`;
        issued.set(t, Date.now());
        return { status: 200, body: { access_token: t, token_type: 'Bearer', expires_in: 1, scope: 'service_public' } };
      }
      const t = String(r.headers.authorization ?? '').replace(/^Bearer /, '');
      const at = issued.get(t);
      if (at === undefined || Date.now() - at > 1000) return { status: 401, body: { error: 'invalid_token' } };
      if (r.path.startsWith(`/api/v1/documents/drives/binders/${BINDER}/`)) return { status: 200, body: [] };
      return undefined;
    });
    const c = client(s.origin, { requestsPerSecond: 5, maxConcurrentRequests: 8 });
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => c.listSubFolders(BINDER, `folder-${i}`)));
    const failed = results.filter((x) => x.status === 'rejected').map((x) => (x as PromiseRejectedResult).reason as { code?: string; status?: number });
    expect(failed.map((e) => `${e.code} ${e.status}`)).toEqual([]);
  }, 30_000);
});

describe('upload slot lifetime (spec 4.7: the URL is one-shot; its lifetime is not shown)', () => {
  // Download links were fetched inside the transfer slot ("fresh when used"), but upload slots before the PUT
  // waited for a transfer slot. With more uploads than transfer slots, a slot handed out early expired while it
  // waited; the retry took a new slot and waited at the back again, until the retry budget was spent and the
  // upload failed (403, STORAGE_SLOT_EXPIRED).
  it('uploads queued behind slow transfers do not fail on slots that expired while waiting', async () => {
    const SLOT_TTL_MS = 250;
    const PUT_MS = 400;
    const issuedAt = new Map<string, number>();
    let slots = 0;
    const s = await stub(async (r) => {
      if (r.path.endsWith('/presignedupload')) {
        const id = `up-${++slots}`;
        issuedAt.set(id, Date.now());
        return { status: 200, body: { presignedUrl: `${s.origin}/storage/${id}?se=short&sig=abc`, uploadId: id } };
      }
      if (r.path.startsWith('/storage/')) {
        const id = r.path.split('/').pop()!;
        if (Date.now() - (issuedAt.get(id) ?? 0) > SLOT_TTL_MS) return { status: 403, headers: { 'content-type': 'application/xml' }, body: '<Error><Code>AuthenticationFailed</Code><Message>Signed expiry time has passed</Message></Error>' };
        await new Promise((res) => setTimeout(res, PUT_MS)); // a large file takes a while
        return { status: 201 };
      }
      return undefined;
    });
    const c = client(s.origin, { maxConcurrentTransfers: 1, retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } });
    const body = Buffer.from('x'.repeat(1000));
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => c.uploadContent(() => Readable.from([body]), body.length)));
    const failed = results.filter((x) => x.status === 'rejected').map((x) => (x as PromiseRejectedResult).reason as { code?: string; status?: number });
    expect(failed.map((e) => `${e.code} ${e.status}`)).toEqual([]);
  }, 30_000);
});

describe('remote listing against fields and errors the spec leaves open', () => {
  // Spec 2.4: fileName is a string, nothing more. The path mapper turns '' into '_' (remote/names.ts); the
  // schemas used to require min(1), so one such document failed the whole search page AND the per-folder
  // listing (SERVICE_INVALID_RESPONSE), and no pass of the binder could complete at all.
  it('one document with an empty fileName does not make the whole binder unlistable', async () => {
    const items = [
      { id: 'a0000000-0000-4000-8000-000000000001', fileName: 'report.pdf', folderId: TAB, binderId: BINDER, latestVersionId: 'v1', metadata: [] },
      { id: 'a0000000-0000-4000-8000-000000000002', fileName: '', folderId: TAB, binderId: BINDER, latestVersionId: 'v2', metadata: [] },
    ];
    const s = await stub((r) => binderRoutes(r, items));
    const c = client(s.origin);
    const listing = await listRemote(c, { binderId: BINDER, pageSize: 100, caseInsensitive: false, base: new Map() });
    expect([...listing.observation.docs.values()].map((d) => d.relPath)).toContain('Tab/report.pdf');
  });

  // Spec 7: "Error status codes, error body shapes and error codes: not shown." A server may answer GET
  // /documents/{id} of a deleted document with 400 (or 403) instead of 404. confirmGone used to take only
  // 404/410 as "gone" and throw on anything else, so once any synced document was deleted remotely every later
  // pass failed at the listing, for good. Now the document's last folder decides.
  it('a deleted document answered 400 by GET /documents/{id} (and absent from search and its folder) does not fail every listing', async () => {
    const live = { id: 'a0000000-0000-4000-8000-000000000001', fileName: 'kept.txt', folderId: TAB, binderId: BINDER, latestVersionId: 'v1' };
    const deleted = 'a0000000-0000-4000-8000-0000000000de';
    const s = await stub((r) => {
      if (r.path === `/api/v1/documents/${deleted}`) return { status: 400, body: { title: 'Bad Request', detail: 'Document does not exist' } };
      return binderRoutes(r, [live]);
    });
    const c = client(s.origin);
    const base = new Map([[live.id, baseEntry(live.id, 'kept.txt')], [deleted, baseEntry(deleted, 'gone.txt')]]);
    const listing = await listRemote(c, { binderId: BINDER, pageSize: 100, caseInsensitive: false, base });
    expect(listing.observation.docs.has(live.id)).toBe(true);
    expect(listing.observation.docs.has(deleted)).toBe(false);
    expect(listing.observation.gone.has(deleted)).toBe(true); // its folder's own listing confirms it
  });
});

describe('a base document missing from the listing, whose GET is refused (400/403)', () => {
  const live = { id: 'a0000000-0000-4000-8000-000000000001', fileName: 'kept.txt', folderId: TAB, binderId: BINDER, latestVersionId: 'v1' };
  const lagging = { id: 'a0000000-0000-4000-8000-0000000000aa', fileName: 'late.txt', folderId: TAB, binderId: BINDER, latestVersionId: 'v7' };
  const base = () => new Map([[live.id, baseEntry(live.id, 'kept.txt')], [lagging.id, baseEntry(lagging.id, 'late.txt')]]);

  it('is added back when its folder still lists it (the search index lagged)', async () => {
    const s = await stub((r) => {
      if (r.path === `/api/v1/documents/${lagging.id}`) return { status: 403, body: { title: 'Forbidden' } };
      if (r.path.endsWith(`${TAB}/documents`)) return { status: 200, body: [live, lagging] };
      return binderRoutes(r, [live]);
    });
    const listing = await listRemote(client(s.origin), { binderId: BINDER, pageSize: 100, caseInsensitive: false, base: base() });
    expect(listing.observation.docs.get(lagging.id)).toMatchObject({ versionId: 'v7', relPath: 'Tab/late.txt' });
    expect(listing.observation.gone.has(lagging.id)).toBe(false);
  });

  it('is deleted when its folder is gone (404)', async () => {
    const s = await stub((r) => {
      if (r.path === `/api/v1/documents/${lagging.id}`) return { status: 400, body: { title: 'Bad Request' } };
      if (r.path.endsWith(`${TAB}/documents`)) return { status: 404, body: { title: 'Not Found' } };
      return binderRoutes(r, [live]);
    });
    const listing = await listRemote(client(s.origin), { binderId: BINDER, pageSize: 100, caseInsensitive: false, base: base() });
    expect(listing.observation.gone.has(lagging.id)).toBe(true);
  });

  it('stays unknown (neither listed nor deleted) when its folder is refused as well', async () => {
    const s = await stub((r) => {
      if (r.path === `/api/v1/documents/${lagging.id}`) return { status: 400, body: { title: 'Bad Request' } };
      if (r.path.endsWith(`${TAB}/documents`)) return { status: 403, body: { title: 'Forbidden' } };
      return binderRoutes(r, [live]);
    });
    const listing = await listRemote(client(s.origin), { binderId: BINDER, pageSize: 100, caseInsensitive: false, base: base() });
    expect(listing.observation.docs.has(lagging.id)).toBe(false);
    expect(listing.observation.gone.has(lagging.id)).toBe(false);
    expect(listing.observation.docs.has(live.id)).toBe(true);
  });

  it('still fails the listing on answers that are not about the document (5xx after retries)', async () => {
    const s = await stub((r) => {
      if (r.path === `/api/v1/documents/${lagging.id}`) return { status: 503, body: { title: 'Unavailable' } };
      return binderRoutes(r, [live]);
    });
    const err = await rejection<{ status: number }>(listRemote(client(s.origin), { binderId: BINDER, pageSize: 100, caseInsensitive: false, base: base() }));
    expect(err.status).toBe(503);
  });
});

describe('smaller liberties', () => {
  it('a JSON answer that starts with a byte order mark (RFC 8259 8.1 lets a parser ignore it)', async () => {
    const s = await stub((r) => (r.path === '/api/v1/binders' ? { status: 200, body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify([{ id: BINDER, name: 'B' }]))]) } : undefined));
    expect((await client(s.origin).listBinders()).map((b) => b.id)).toEqual([BINDER]);
  });

  it('an empty binderId on a search item or a document is "not said", not another binder', async () => {
    const listed = { id: 'a0000000-0000-4000-8000-000000000001', fileName: 'listed.txt', folderId: TAB, binderId: '', latestVersionId: 'v1' };
    const lagging = { id: 'a0000000-0000-4000-8000-0000000000aa', fileName: 'late.txt', folderId: TAB, binderId: '', latestVersionId: 'v7' };
    const s = await stub((r) => (r.path === `/api/v1/documents/${lagging.id}` ? { status: 200, body: lagging } : binderRoutes(r, [listed])));
    const base = new Map([[lagging.id, baseEntry(lagging.id, 'late.txt')]]);
    const listing = await listRemote(client(s.origin), { binderId: BINDER, pageSize: 100, caseInsensitive: false, base });
    expect(listing.method).toBe('search'); // not dropped from the pages (which forced the per-folder listing)
    expect(listing.observation.docs.has(listed.id)).toBe(true);
    expect(listing.observation.docs.has(lagging.id)).toBe(true); // taken back, not deleted as "moved out"
    expect(listing.observation.gone.size).toBe(0);
  });
});

describe('checked and handled (coverage the suite did not have)', () => {
  // HTTP/1.1 servers may close the connection after every response (Connection: close). Every API call, the
  // token request and both storage transfers must still work, each on a new connection.
  it('a server that closes the connection after every response', async () => {
    const content = Buffer.from('hello');
    let stored: Buffer | undefined;
    const s = await stub(
      (r) => {
        if (r.path === '/api/v1/binders') return { status: 200, body: { items: [{ id: BINDER, name: 'B' }] } };
        if (r.path.endsWith('/presignedupload')) return { status: 200, body: { presignedUrl: `${s.origin}/storage/u1?sig=1`, uploadId: 'u1' } };
        if (r.path === '/storage/u1' && r.method === 'PUT') {
          stored = r.body;
          return { status: 201 };
        }
        if (r.path.endsWith('/raw')) return { status: 200, body: { url: `${s.origin}/storage/u1?sig=2` } };
        if (r.path === '/storage/u1' && r.method === 'GET') return (res) => void res.writeHead(200, { connection: 'close', 'content-length': String(stored!.length) }).end(stored);
        return binderRoutes(r, []);
      },
      { connectionClose: true },
    );
    const c = client(s.origin);
    for (let i = 0; i < 3; i++) expect(await c.listBinders()).toHaveLength(1);
    await Promise.all(Array.from({ length: 6 }, () => c.listTopFolders(BINDER)));
    const up = await c.uploadContent(() => Readable.from([content]), content.length);
    expect(up.uploadId).toBe('u1');
    const got: Buffer[] = [];
    await c.downloadVersionTo('d1', 'v1', new Writable({ write: (ch: Buffer, _e, cb) => (got.push(ch), cb()) }));
    expect(Buffer.concat(got).equals(content)).toBe(true);
  });

  // Spec 2: fields whose presence/format is not shown (type, createdAt, status, modifiedAt, description,
  // thumbnailUrl, downloadUrl, metadata), null vs missing, extra keys, charset in the content type, a token
  // answer with token_type/scope, expiresAt in another timestamp form, folders whose parentId is null / '' /
  // the binder id, the same folder listed twice, versions without documentId.
  it('accepts the optional-field variants the spec allows', async () => {
    const version = (id: string, extra: Record<string, unknown>) => ({ id, version: '1', ...extra });
    const s = await stub((r) => {
      const json = (body: unknown): Answer => ({ status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body });
      if (r.path === '/auth/connect/token') return json({ access_token: 'tok-x', token_type: 'Bearer', expires_in: 3600, scope: 'service_public', ext_expires_in: 3600 });
      if (r.path === '/api/v1/binders') return json([{ id: BINDER, name: 'B', type: null, createdAt: '2024-01-01T00:00:00.1234567+02:00', extra: { x: 1 } }]);
      if (r.path === `/api/v1/binders/${BINDER}/metadataelements`) return json([{ id: 'GLOBAL_Category', label: 'Category', dataType: 'enum', allowedValues: [{ id: 'c1', label: null }], required: false }, { id: 'Note', label: 'Note', dataType: 'text', allowedValues: null }]);
      if (r.path === `/api/v1/documents/drives/binders/${BINDER}`) return json([
        { id: TAB, name: 'Tab', type: 'tab', parentId: null },
        { id: 'tab-2', name: 'Tab 2', parentId: '' },
        { id: 'tab-3', name: 'Tab 3', parentId: BINDER },
        { id: TAB, name: 'Tab', type: 'tab', parentId: null },
      ]);
      if (r.path.startsWith(`/api/v1/documents/drives/binders/${BINDER}/`) && !r.path.endsWith('/documents')) return json([]);
      if (r.path === '/api/v1/documents' && r.method === 'POST') {
        return json({ items: [{ id: 'd1', fileName: 'a b#c%.txt', folderId: TAB, binderId: null, latestVersionId: 'v1', metadata: null }], totalCount: 1 });
      }
      if (r.path === '/api/v1/documents/d1/versions') return json([version('v1', { status: null, modifiedAt: '2024-01-01 10:00:00', description: '', thumbnailUrl: null, downloadUrl: null, metadata: [{ metadataElementId: 'Note', value: 'free text' }] })]);
      if (r.path.endsWith('/raw')) return json({ url: `${s.origin}/storage/x`, expiresAt: 'Tue, 01 Jan 2999 00:00:00 GMT' });
      if (r.path === '/storage/x') return (res) => void res.writeHead(200).end('ok');
      return undefined;
    });
    const c = client(s.origin);
    expect(await c.listBinders()).toHaveLength(1);
    expect(await c.getMetadataElements(BINDER)).toHaveLength(2);
    const listing = await listRemote(c, { binderId: BINDER, pageSize: 100, caseInsensitive: false, base: new Map() });
    expect([...listing.observation.folders.values()].map((f) => f.relPath).sort()).toEqual(['Tab', 'Tab 2', 'Tab 3']);
    expect([...listing.observation.docs.values()].map((d) => d.relPath)).toEqual(['Tab/a b#c%.txt']);
    expect((await c.listVersions('d1'))[0]).toMatchObject({ id: 'v1', documentId: 'd1' });
    const got: Buffer[] = [];
    await c.downloadVersionTo('d1', 'v1', new Writable({ write: (ch: Buffer, _e, cb) => (got.push(ch), cb()) }));
    expect(Buffer.concat(got).toString()).toBe('ok');
  });
});
