// Emulator: injected faults (status + Retry-After, drop, truncate, invalid body, latency, times,
// seeded probability), the rate limit, counters / lastRequests, and the control interface over HTTP.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';

async function tokenOf(emu: Emulator): Promise<string> {
  const c = emu.credentials;
  const res = await fetch(`${emu.authUrl}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope: 'service_public' }).toString(),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

describe('emulator faults and rate limit', () => {
  let emu: Emulator;
  let headers: Record<string, string>;
  let docId: string;
  let versionId: string;
  const content = Buffer.from('0123456789abcdefghij');

  beforeAll(async () => {
    emu = await startEmulator({ faultSeed: 7 });
    headers = { authorization: `Bearer ${await tokenOf(emu)}`, 'x-service-tenantid': emu.credentials.tenantId };
    const b = emu.control.createBinder({ name: 'F' }).id;
    const f = emu.control.createFolder(b, { name: 'T' }).id;
    const added = emu.control.addDocument(b, f, 'f.txt', content);
    docId = added.document.id;
    versionId = added.version.id;
  });
  afterEach(() => {
    emu.control.clearFaults();
    emu.control.setRateLimit(null);
  });
  afterAll(() => emu.close());

  const get = (path: string) => request(`${emu.baseUrl}${path}`, { headers });
  const status = async (path: string) => {
    const r = await get(path);
    await r.body.dump();
    return r.statusCode;
  };

  it('answers an injected status with Retry-After, `times` times, on the named route only', async () => {
    emu.control.injectFault({ route: 'document', status: 503, retryAfterSeconds: 2, times: 2 });
    const r = await get(`/documents/${docId}`);
    expect(r.statusCode).toBe(503);
    expect(r.headers['retry-after']).toBe('2');
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(((await r.body.json()) as { status: number }).status).toBe(503);
    expect(await status('/binders')).toBe(200);
    expect(await status(`/documents/${docId}`)).toBe(503);
    expect(await status(`/documents/${docId}`)).toBe(200);
  });

  it("'*' matches every route", async () => {
    emu.control.injectFault({ route: '*', status: 500, times: 2 });
    expect(await status('/binders')).toBe(500);
    expect(await status(`/documents/${docId}/versions`)).toBe(500);
    expect(await status('/binders')).toBe(200);
  });

  it('drop destroys the socket without an answer', async () => {
    emu.control.injectFault({ route: 'versions', drop: true, times: 1 });
    await expect(get(`/documents/${docId}/versions`)).rejects.toThrow();
    expect(await status(`/documents/${docId}/versions`)).toBe(200);
    const dropped = emu.control.lastRequests(2)[0]!;
    expect(dropped).toMatchObject({ route: 'versions', status: 0 });
  });

  it('truncate sends the status and full Content-Length, then half the body', async () => {
    emu.control.injectFault({ route: 'document', truncate: true, times: 1 });
    const r = await get(`/documents/${docId}`);
    expect(r.statusCode).toBe(200);
    const declared = Number(r.headers['content-length']);
    expect(declared).toBeGreaterThan(0);
    await expect(r.body.text()).rejects.toThrow();
    const link = (await (await get(`/documents/${docId}/versions/${versionId}/raw`)).body.json()) as { url: string };
    emu.control.injectFault({ route: 'storage-get', truncate: true, times: 1 });
    const blob = await request(link.url);
    expect(blob.headers['content-length']).toBe(String(content.length));
    const received: Buffer[] = [];
    await expect(
      (async () => {
        for await (const part of blob.body) received.push(part as Buffer);
      })(),
    ).rejects.toThrow();
    expect(Buffer.concat(received).length).toBe(content.length / 2);
  });

  it('invalidBody answers 200 with a body that breaks the shape; storage answers flipped bytes', async () => {
    emu.control.injectFault({ route: 'document', invalidBody: true, times: 1 });
    const r = await get(`/documents/${docId}`);
    expect(r.statusCode).toBe(200);
    const body = (await r.body.json()) as Record<string, unknown>;
    expect(body.id).toBeUndefined();
    const link = (await (await get(`/documents/${docId}/versions/${versionId}/raw`)).body.json()) as { url: string };
    emu.control.injectFault({ route: 'storage-get', invalidBody: true, times: 1 });
    const bad = Buffer.from(await (await request(link.url)).body.arrayBuffer());
    expect(bad.length).toBe(content.length);
    expect(bad.equals(content)).toBe(false);
    expect(Buffer.from(await (await request(link.url)).body.arrayBuffer()).equals(content)).toBe(true);
  });

  it('latencyMs delays the answer', async () => {
    emu.control.injectFault({ route: 'binders', latencyMs: 150, times: 1 });
    const t0 = Date.now();
    expect(await status('/binders')).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
  });

  it('probability draws from a seeded PRNG: the same seed gives the same pattern', async () => {
    const pattern = async (seed: number) => {
      const e = await startEmulator({ faultSeed: seed });
      try {
        const h = { authorization: `Bearer ${await tokenOf(e)}`, 'x-service-tenantid': e.credentials.tenantId };
        e.control.injectFault({ route: 'binders', status: 500, probability: 0.5 });
        const out: number[] = [];
        for (let i = 0; i < 24; i++) {
          const r = await request(`${e.baseUrl}/binders`, { headers: h });
          await r.body.dump();
          out.push(r.statusCode);
        }
        return out.join(',');
      } finally {
        await e.close();
      }
    };
    const a = await pattern(11);
    expect(await pattern(11)).toBe(a);
    expect(a).toContain('500');
    expect(a).toContain('200');
    expect(await pattern(12)).not.toBe(a);
  });

  it('rate limit answers 429 with Retry-After beyond the burst, then recovers', async () => {
    emu.control.setRateLimit({ requestsPerSecond: 5, burst: 3 });
    const codes: number[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < 5; i++) {
      const r = await get('/binders');
      await r.body.dump();
      codes.push(r.statusCode);
      if (r.statusCode === 429) retryAfter = r.headers['retry-after'] as string;
    }
    expect(codes.slice(0, 3)).toEqual([200, 200, 200]);
    expect(codes.slice(3)).toContain(429);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 450));
    expect(await status('/binders')).toBe(200);
  });

  it('expireDownloadLinks issues links already expired, which storage refuses (403), for the named documents or all', async () => {
    const other = emu.control.addDocument(emu.control.getDocument(docId).binderId, emu.control.getDocument(docId).folderId, 'other.txt', 'other');
    const fetchVia = async (doc: string, version: string) => {
      const link = (await (await get(`/documents/${doc}/versions/${version}/raw`)).body.json()) as { url: string; expiresAt: string };
      const res = await request(link.url);
      const text = await res.body.text();
      return { past: Date.parse(link.expiresAt) < Date.now(), status: res.statusCode, text };
    };
    try {
      emu.control.expireDownloadLinks([docId]);
      const refused = await fetchVia(docId, versionId);
      expect(refused).toMatchObject({ past: true, status: 403 });
      expect(refused.text).toMatch(/expired/);
      expect(await fetchVia(other.document.id, other.version.id)).toMatchObject({ past: false, status: 200, text: 'other' });
      emu.control.expireDownloadLinks();
      expect(await fetchVia(other.document.id, other.version.id)).toMatchObject({ past: true, status: 403 });
      emu.control.expireDownloadLinks(null);
      expect(await fetchVia(docId, versionId)).toMatchObject({ past: false, status: 200 });
    } finally {
      emu.control.expireDownloadLinks(null);
      emu.control.deleteDocument(other.document.id);
    }
  });

  it('expireUploadUrls issues presigned upload URLs already expired, which storage refuses (403), for all or the next few', async () => {
    const slot = async () => (await (await get('/documents/uploads/personalstorage/presignedupload')).body.json()) as { presignedUrl: string; uploadId: string };
    const put = async (url: string) => {
      const res = await request(url, { method: 'PUT', body: 'bytes', headers: { 'x-ms-blob-type': 'BlockBlob' } });
      return { status: res.statusCode, text: await res.body.text() };
    };
    try {
      emu.control.expireUploadUrls(2);
      const first = await slot();
      const refused = await put(first.presignedUrl);
      expect(refused.status).toBe(403);
      expect(refused.text).toMatch(/expired/);
      expect((await put((await slot()).presignedUrl)).status).toBe(403);
      expect((await put((await slot()).presignedUrl)).status).toBe(201); // the two were spent
      emu.control.expireUploadUrls();
      expect((await put((await slot()).presignedUrl)).status).toBe(403);
      expect((await put((await slot()).presignedUrl)).status).toBe(403);
      emu.control.expireUploadUrls(null);
      expect((await put((await slot()).presignedUrl)).status).toBe(201);
      // Nothing was stored under a refused slot: there is nothing to commit.
      const { binderId, folderId } = emu.control.getDocument(docId);
      const commit = await request(`${emu.baseUrl}/documents/drives/binders/${binderId}/${folderId}/upload`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ fileName: 'never.txt', version: '1', uploadId: first.uploadId, additionalMetadata: [] }),
      });
      expect(commit.statusCode).toBe(409);
      expect(await commit.body.text()).toMatch(/PUT the bytes/);
    } finally {
      emu.control.expireUploadUrls(null);
    }
  });

  it('counts requests per route and records recent requests without query strings', async () => {
    emu.control.resetCounters();
    await status('/binders');
    await status('/binders');
    const link = (await (await get(`/documents/${docId}/versions/${versionId}/raw`)).body.json()) as { url: string };
    await (await request(link.url)).body.dump();
    const counters = emu.control.counters();
    expect(counters).toMatchObject({ binders: 2, downloadlink: 1, 'storage-get': 1, search: 0 });
    const last = emu.control.lastRequests(4);
    expect(last.map((r) => r.route)).toEqual(['binders', 'binders', 'downloadlink', 'storage-get']);
    expect(last[3]).toMatchObject({ method: 'GET', status: 200, authorization: false });
    expect(last[0]!.authorization).toBe(true);
    expect(last.every((r) => !r.path.includes('?'))).toBe(true);
  });
});

describe('emulator control over HTTP', () => {
  let emu: Emulator;
  beforeAll(async () => {
    emu = await startEmulator();
  });
  afterAll(() => emu.close());

  const control = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${emu.controlUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? null : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as any };
  };

  it('arranges binders, folders, documents and versions, and reads them back', async () => {
    const creds = await control('GET', '/credentials');
    expect(creds.body).toEqual(emu.credentials);
    const binder = await control('POST', '/binders', { name: 'Remote' });
    expect(binder.status).toBe(200);
    const tab = await control('POST', '/folders', { binderId: binder.body.id, name: 'Tab' });
    const sub = await control('POST', '/folders', { binderId: binder.body.id, name: 'Sub', parentId: tab.body.id });
    const doc = await control('POST', '/documents', { binderId: binder.body.id, folderId: sub.body.id, fileName: 'a.bin', contentBase64: Buffer.from([1, 2, 3]).toString('base64') });
    expect(doc.body.document.fileName).toBe('a.bin');
    const v2 = await control('POST', `/documents/${doc.body.document.id}/versions`, { content: 'two', versionLabel: 'v2' });
    expect(v2.body.version).toBe('v2');
    expect((await control('GET', `/documents/${doc.body.document.id}/versions`)).body).toHaveLength(2);
    const c1 = await control('GET', `/documents/${doc.body.document.id}/content?versionId=${doc.body.version.id}`);
    expect(Buffer.from(c1.body.contentBase64, 'base64')).toEqual(Buffer.from([1, 2, 3]));
    expect((await control('POST', `/documents/${doc.body.document.id}/rename`, { fileName: 'b.bin' })).body.fileName).toBe('b.bin');
    expect((await control('POST', `/documents/${doc.body.document.id}/move`, { folderId: tab.body.id })).body.folderId).toBe(tab.body.id);
    expect((await control('POST', `/folders/${sub.body.id}/rename`, { name: 'Sub2' })).body.name).toBe('Sub2');
    expect((await control('POST', `/folders/${sub.body.id}/move`, { parentId: null })).body.parentId).toBeNull();
    expect((await control('GET', `/binders/${binder.body.id}/folders`)).body).toHaveLength(2);
    expect((await control('DELETE', `/folders/${tab.body.id}`)).status).toBe(200);
    expect((await control('GET', `/binders/${binder.body.id}/documents`)).body).toEqual([]);
    expect((await control('GET', `/documents/${doc.body.document.id}`)).status).toBe(404);
  });

  it('injects faults, sets the rate limit, expires tokens and reads counters', async () => {
    const t = await tokenOf(emu);
    const h = { authorization: `Bearer ${t}`, 'x-service-tenantid': emu.credentials.tenantId };
    const fault = await control('POST', '/faults', { route: 'binders', status: 429, retryAfterSeconds: 1, times: 1 });
    expect(fault.body.faultId).toEqual(expect.any(String));
    expect((await fetch(`${emu.baseUrl}/binders`, { headers: h })).status).toBe(429);
    expect((await fetch(`${emu.baseUrl}/binders`, { headers: h })).status).toBe(200);
    await control('POST', '/faults', { route: 'binders', status: 500 });
    await control('DELETE', '/faults');
    expect((await fetch(`${emu.baseUrl}/binders`, { headers: h })).status).toBe(200);
    await control('POST', '/expire-tokens');
    expect((await fetch(`${emu.baseUrl}/binders`, { headers: h })).status).toBe(401);
    const counters = await control('GET', '/counters');
    expect(counters.body.binders).toBeGreaterThanOrEqual(4);
    const requests = await control('GET', '/requests?n=1');
    expect(requests.body).toEqual([expect.objectContaining({ route: 'binders', status: 401 })]);
    await control('DELETE', '/counters');
    expect((await control('GET', '/counters')).body.binders).toBe(0);
    await control('POST', '/ratelimit', { requestsPerSecond: 1, burst: 1 });
    await fetch(`${emu.authUrl}/connect/token`, { method: 'POST' });
    expect((await fetch(`${emu.baseUrl}/binders`, { headers: h })).status).toBe(429);
    await control('DELETE', '/ratelimit');
    expect((await control('POST', '/search-lag', { ms: -1 })).status).toBe(400);
    expect((await control('POST', '/search-lag', { ms: 60_000 })).status).toBe(200);
    expect((await control('POST', '/search-lag', { ms: 0 })).status).toBe(200);
    // Download links issued already expired: for every document, then none.
    const b = emu.control.createBinder({ name: 'Links' }).id;
    const d = emu.control.addDocument(b, emu.control.createFolder(b, { name: 'T' }).id, 'l.txt', 'l');
    const h2 = { authorization: `Bearer ${await tokenOf(emu)}`, 'x-service-tenantid': emu.credentials.tenantId };
    const storageStatus = async () => {
      const link = (await (await fetch(`${emu.baseUrl}/documents/${d.document.id}/versions/${d.version.id}/raw`, { headers: h2 })).json()) as { url: string };
      return (await fetch(link.url)).status;
    };
    expect((await control('POST', '/expired-download-links', {})).status).toBe(200);
    expect(await storageStatus()).toBe(403);
    expect((await control('POST', '/expired-download-links', { documentIds: null })).status).toBe(200);
    expect(await storageStatus()).toBe(200);
    expect((await control('POST', '/expired-download-links', { documentIds: 'all' })).status).toBe(400);
    // Presigned upload URLs issued already expired: the next one, then none.
    const uploadStatus = async () => {
      const slot = (await (await fetch(`${emu.baseUrl}/documents/uploads/personalstorage/presignedupload`, { headers: h2 })).json()) as { presignedUrl: string };
      return (await fetch(slot.presignedUrl, { method: 'PUT', body: 'x' })).status;
    };
    expect((await control('POST', '/expired-upload-urls', { slots: 1 })).status).toBe(200);
    expect(await uploadStatus()).toBe(403);
    expect(await uploadStatus()).toBe(201);
    expect((await control('POST', '/expired-upload-urls', {})).status).toBe(200);
    expect(await uploadStatus()).toBe(403);
    expect((await control('POST', '/expired-upload-urls', { slots: null })).status).toBe(200);
    expect(await uploadStatus()).toBe(201);
    expect((await control('POST', '/expired-upload-urls', { slots: 0 })).status).toBe(400);
  });

  it('refuses bad control input with problem details', async () => {
    const bad = await control('POST', '/faults', { route: 'nope' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toHaveProperty('route');
    expect((await control('POST', '/folders', { binderId: 'missing00', name: 'x' })).status).toBe(404);
    expect((await control('GET', '/nothing')).status).toBe(404);
  });
});
