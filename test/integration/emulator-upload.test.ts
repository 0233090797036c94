// Emulator: the three-step upload (presigned slot, storage PUT, commit), storage rules (no Authorization,
// one-shot PUT, signed expiring URLs, streaming), commit idempotency and validation, both body spellings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';

interface Api {
  call(path: string, init?: { method?: string; body?: unknown }): Promise<{ status: number; body: any }>;
  slot(): Promise<{ presignedUrl: string; uploadId: string }>;
  put(url: string, content: Buffer | string, headers?: Record<string, string>): Promise<number>;
}

async function connect(emu: Emulator): Promise<Api> {
  const c = emu.credentials;
  const res = await fetch(`${emu.authUrl}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope: 'service_public' }).toString(),
  });
  const { access_token } = (await res.json()) as { access_token: string };
  const call: Api['call'] = async (path, init = {}) => {
    const headers: Record<string, string> = { authorization: `Bearer ${access_token}`, 'x-service-tenantid': c.tenantId };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`${emu.baseUrl}${path}`, { method: init.method ?? 'GET', headers, body: init.body === undefined ? null : JSON.stringify(init.body) });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : undefined };
  };
  return {
    call,
    async slot() {
      const r = await call('/documents/uploads/personalstorage/presignedupload');
      expect(r.status).toBe(200);
      return r.body;
    },
    async put(url, content, headers = {}) {
      const r = await fetch(url, { method: 'PUT', headers: { 'x-ms-blob-type': 'BlockBlob', ...headers }, body: content });
      await r.arrayBuffer();
      return r.status;
    },
  };
}

describe('emulator upload flow', () => {
  let emu: Emulator;
  let api: Api;
  let binderId: string;
  let tab: string;
  const commitPath = () => `/documents/drives/binders/${binderId}/${tab}/upload`;
  const ref = (uploadId: string, fileName = 'new.txt', version = '1', dept = 'eng') => ({
    fileName,
    version,
    uploadId,
    additionalMetadata: [{ metadataElementId: 'Dept', value: dept }],
  });

  beforeAll(async () => {
    emu = await startEmulator({ downloadUrlLifetimeSeconds: 1 });
    api = await connect(emu);
    binderId = emu.control.createBinder({ name: 'Up' }).id;
    emu.control.addMetadataElement(binderId, { id: 'Dept', label: 'D', dataType: 'Enum', allowedValues: [{ id: 'eng', label: 'E' }], required: true });
    emu.control.addMetadataElement(binderId, { id: 'Note', label: 'N', dataType: 'Text' });
    tab = emu.control.createFolder(binderId, { name: 'Tab' }).id;
  });
  afterAll(() => emu.close());

  it('creates a document from slot + PUT + commit, and a new version for the same fileName', async () => {
    const s1 = await api.slot();
    expect(await api.put(s1.presignedUrl, 'version one')).toBe(201);
    const c1 = await api.call(commitPath(), { method: 'POST', body: ref(s1.uploadId, 'plan.txt', '1.0') });
    expect(c1.status).toBe(201);
    expect(c1.body).toMatchObject({ documentId: expect.any(String), version: '1.0', status: 'Published', metadata: [{ metadataElementId: 'Dept', valueId: 'eng' }] });
    const docId = c1.body.documentId as string;
    expect(emu.control.readContent(docId).toString()).toBe('version one');

    const s2 = await api.slot();
    await api.put(s2.presignedUrl, 'version two');
    // Customer metadata is inherited by a new version: an empty list is fine now.
    const c2 = await api.call(commitPath(), { method: 'POST', body: { fileName: 'plan.txt', version: '2.0', uploadId: s2.uploadId, additionalMetadata: [] } });
    expect(c2.status).toBe(201);
    expect(c2.body.documentId).toBe(docId);
    const doc = await api.call(`/documents/${docId}`);
    expect(doc.body.latestVersionId).toBe(c2.body.id);
    expect(doc.body.metadata).toContainEqual({ metadataElementId: 'Dept', valueId: 'eng' });
    expect((await api.call(`/documents/${docId}/versions`)).body.map((v: { version: string }) => v.version)).toEqual(['1.0', '2.0']);
    const link = await api.call(`/documents/${docId}/versions/${c1.body.id}/raw`);
    expect(await (await fetch(link.body.url)).text()).toBe('version one');
  });

  it('makes a repeated commit of an uploadId idempotent: 200 with the same version, nothing new', async () => {
    const s = await api.slot();
    await api.put(s.presignedUrl, 'once');
    const first = await api.call(commitPath(), { method: 'POST', body: ref(s.uploadId, 'once.txt') });
    const second = await api.call(commitPath(), { method: 'POST', body: ref(s.uploadId, 'once.txt') });
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(first.body.id);
    expect(emu.control.listVersions(first.body.documentId)).toHaveLength(1);
    expect(emu.control.listDocuments(binderId).filter((d) => d.fileName === 'once.txt')).toHaveLength(1);
  });

  it('refuses a commit whose content was never PUT (409) and an unknown uploadId (404)', async () => {
    const s = await api.slot();
    const missing = await api.call(commitPath(), { method: 'POST', body: ref(s.uploadId) });
    expect(missing.status).toBe(409);
    expect(missing.body.detail).toMatch(/upload content missing/);
    expect((await api.call(commitPath(), { method: 'POST', body: ref('00000000-0000-0000-0000-000000000000') })).status).toBe(404);
    // The slot is still usable afterwards.
    await api.put(s.presignedUrl, 'late');
    expect((await api.call(commitPath(), { method: 'POST', body: ref(s.uploadId, 'late.txt') })).status).toBe(201);
  });

  it('answers 404 for an unknown folder or a folder of another binder', async () => {
    const s = await api.slot();
    await api.put(s.presignedUrl, 'x');
    expect((await api.call(`/documents/drives/binders/${binderId}/00000000-0000-0000-0000-000000000000/upload`, { method: 'POST', body: ref(s.uploadId) })).status).toBe(404);
    const other = emu.control.createBinder({ name: 'Other' }).id;
    expect((await api.call(`/documents/drives/binders/${other}/${tab}/upload`, { method: 'POST', body: ref(s.uploadId) })).status).toBe(404);
  });

  it('validates commit metadata: known elements, allowed values, required on new documents, no GLOBAL ids', async () => {
    const s = await api.slot();
    await api.put(s.presignedUrl, 'meta');
    const cases: Array<[Array<{ metadataElementId: string; value: string }>, string]> = [
      [[], 'Dept'],
      [[{ metadataElementId: 'Dept', value: 'sales' }], 'metadata.0'],
      [[{ metadataElementId: 'Dept', value: 'eng' }, { metadataElementId: 'Colour', value: 'red' }], 'metadata.1'],
      [[{ metadataElementId: 'Dept', value: 'eng' }, { metadataElementId: 'GLOBAL_TabId', value: tab }], 'metadata.1'],
    ];
    for (const [additionalMetadata, field] of cases) {
      const r = await api.call(commitPath(), { method: 'POST', body: { fileName: 'meta.txt', version: '1', uploadId: s.uploadId, additionalMetadata } });
      expect(r.status, field).toBe(400);
      expect(r.body.errors, field).toHaveProperty([field]);
    }
    // A refused commit created nothing and left the upload committable.
    const ok = await api.call(commitPath(), {
      method: 'POST',
      body: { fileName: 'meta.txt', version: '1', uploadId: s.uploadId, additionalMetadata: [{ metadataElementId: 'Dept', value: 'eng' }, { metadataElementId: 'Note', value: 'free text' }] },
    });
    expect(ok.status).toBe(201);
    expect(ok.body.metadata).toContainEqual({ metadataElementId: 'Note', valueId: 'free text' });
  });

  it("refuses invalid file names and unknown body keys with 400 'errors'", async () => {
    const s = await api.slot();
    await api.put(s.presignedUrl, 'n');
    for (const fileName of ['a/b.txt', '..', 'tab\tname', '']) {
      expect((await api.call(commitPath(), { method: 'POST', body: ref(s.uploadId, fileName) })).status, fileName).toBe(400);
    }
    const extra = await api.call(commitPath(), { method: 'POST', body: { ...ref(s.uploadId), folderId: tab } });
    expect(extra.status).toBe(400);
    expect(extra.body.errors).toHaveProperty('folderId');
  });

  it('storage refuses an Authorization header (400) and a second PUT (409)', async () => {
    const s = await api.slot();
    expect(await api.put(s.presignedUrl, 'x', { authorization: 'Bearer leaked' })).toBe(400);
    expect(await api.put(s.presignedUrl, 'first')).toBe(201);
    expect(await api.put(s.presignedUrl, 'second')).toBe(409);
    const c = await api.call(commitPath(), { method: 'POST', body: ref(s.uploadId, 'oneshot.txt') });
    expect(emu.control.readContent(c.body.documentId).toString()).toBe('first');
    const link = await api.call(`/documents/${c.body.documentId}/versions/${c.body.id}/raw`);
    const withAuth = await fetch(link.body.url, { headers: { authorization: 'Bearer leaked' } });
    expect(withAuth.status).toBe(400);
    const records = emu.control.lastRequests(50).filter((r) => r.route === 'storage-get' || r.route === 'storage-put');
    expect(records.filter((r) => r.authorization).every((r) => r.status === 400)).toBe(true);
  });

  it('storage checks signatures and expiry (403)', async () => {
    const s = await api.slot();
    const u = new URL(s.presignedUrl);
    u.searchParams.set('sig', 'forged');
    expect(await api.put(u.toString(), 'x')).toBe(403);
    const noQuery = s.presignedUrl.split('?')[0]!;
    expect(await api.put(noQuery, 'x')).toBe(403);
    await api.put(s.presignedUrl, 'expiring');
    const c = await api.call(commitPath(), { method: 'POST', body: ref(s.uploadId, 'expiring.txt') });
    const link = await api.call(`/documents/${c.body.documentId}/versions/${c.body.id}/raw`);
    expect((await fetch(link.body.url)).status).toBe(200);
    // A URL signed for one blob does not open another.
    const otherBlob = new URL(link.body.url);
    otherBlob.pathname = otherBlob.pathname.replace(/[^/]+$/, '00000000-0000-0000-0000-000000000000');
    expect((await fetch(otherBlob)).status).toBe(403);
    await sleep(Math.max(0, Date.parse(link.body.expiresAt) - Date.now()) + 50);
    const expired = await fetch(link.body.url);
    expect(expired.status).toBe(403);
    expect(((await expired.json()) as { detail: string }).detail).toMatch(/expired/);
  });

  it('accepts a PUT without x-ms-blob-type but refuses another blob type', async () => {
    const s = await api.slot();
    expect(await api.put(s.presignedUrl, 'x', { 'x-ms-blob-type': 'AppendBlob' })).toBe(400);
    const r = await fetch(s.presignedUrl, { method: 'PUT', body: 'plain' });
    expect(r.status).toBe(201);
  });

  it('spends the slot when a PUT breaks off (short body -> 400, then 409)', async () => {
    const s = await api.slot();
    const u = new URL(s.presignedUrl);
    const res = await request(u, {
      method: 'PUT',
      headers: { 'content-length': '10' },
      body: Readable.from([Buffer.from('12345')]),
    }).catch((e: unknown) => e);
    // Either the server answers 400 or the client gives up on the short body; both leave the slot spent.
    if (!(res instanceof Error)) {
      await (res as { body: { dump(): Promise<void> } }).body.dump();
    }
    await sleep(50);
    expect(await api.put(s.presignedUrl, 'again')).toBe(409);
    expect((await api.call(commitPath(), { method: 'POST', body: ref(s.uploadId, 'broken.txt') })).status).toBe(409);
  });

  it('streams a 24 MiB blob in and out intact', async () => {
    const size = 24 * 1024 * 1024;
    const chunk = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 31) % 251;
    const hashIn = createHash('sha256');
    const s = await api.slot();
    const source = Readable.from(
      (function* () {
        for (let i = 0; i < size / chunk.length; i++) {
          hashIn.update(chunk);
          yield chunk;
        }
      })(),
    );
    const put = await request(s.presignedUrl, { method: 'PUT', headers: { 'content-length': String(size) }, body: source });
    await put.body.dump();
    expect(put.statusCode).toBe(201);
    const c = await api.call(commitPath(), { method: 'POST', body: ref(s.uploadId, 'big.bin') });
    const link = await api.call(`/documents/${c.body.documentId}/versions/${c.body.id}/raw`);
    const get = await request(link.body.url);
    expect(get.headers['content-length']).toBe(String(size));
    const hashOut = createHash('sha256');
    for await (const part of get.body) hashOut.update(part as Buffer);
    expect(hashOut.digest('hex')).toBe(hashIn.digest('hex'));
  });
});

describe('emulator commit spellings', () => {
  const spellings = async (opts: EmulatorOptions) => {
    const emu = await startEmulator(opts);
    try {
      const api = await connect(emu);
      const b = emu.control.createBinder({ name: 'S' }).id;
      const tab = emu.control.createFolder(b, { name: 'T' }).id;
      const commit = async (body: (uploadId: string) => unknown) => {
        const s = await api.slot();
        await api.put(s.presignedUrl, 'x');
        return api.call(`/documents/drives/binders/${b}/${tab}/upload`, { method: 'POST', body: body(s.uploadId) });
      };
      const reference = await commit((uploadId) => ({ fileName: 'r.txt', version: '1', uploadId, additionalMetadata: [{ metadataElementId: 'GLOBAL_Category', value: 'report' }] }));
      const walkthrough = await commit((uploadId) => ({ fileName: 'w.txt', versionLabel: '1', uploadId, metadata: [{ metadataElementId: 'GLOBAL_Category', valueId: 'report' }] }));
      const walkthroughBare = await commit((uploadId) => ({ fileName: 'w2.txt', versionLabel: '1', uploadId }));
      const referenceBare = await commit((uploadId) => ({ fileName: 'r2.txt', version: '1', uploadId }));
      const mixed = await commit((uploadId) => ({ fileName: 'm.txt', version: '1', uploadId, metadata: [] }));
      const dual = await commit((uploadId) => ({
        fileName: 'd.txt',
        version: 'D1',
        versionLabel: 'D1',
        uploadId,
        additionalMetadata: [{ metadataElementId: 'GLOBAL_Category', value: 'report' }],
        metadata: [{ metadataElementId: 'GLOBAL_Category', valueId: 'report' }],
      }));
      const dualBare = await commit((uploadId) => ({ fileName: 'd2.txt', version: 'D2', versionLabel: 'D2', uploadId, additionalMetadata: [] }));
      const dualDisagree = await commit((uploadId) => ({ fileName: 'd3.txt', version: 'D3', versionLabel: 'other', uploadId, additionalMetadata: [] }));
      return { reference, walkthrough, walkthroughBare, referenceBare, mixed, dual, dualBare, dualDisagree };
    } finally {
      await emu.close();
    }
  };

  it("'both' accepts either spelling; a mix, or reference without additionalMetadata, is a 400", async () => {
    const r = await spellings({});
    expect([r.reference.status, r.walkthrough.status, r.walkthroughBare.status]).toEqual([201, 201, 201]);
    expect(r.walkthrough.body.metadata).toEqual([{ metadataElementId: 'GLOBAL_Category', valueId: 'report' }]);
    expect(r.referenceBare.status).toBe(400);
    expect(r.referenceBare.body.errors).toHaveProperty('additionalMetadata');
    expect(r.mixed.status).toBe(400);
  });

  it("'both' takes a body carrying both spellings in full when they agree", async () => {
    const r = await spellings({});
    expect([r.dual.status, r.dualBare.status]).toEqual([201, 201]);
    expect(r.dual.body).toMatchObject({ version: 'D1', metadata: [{ metadataElementId: 'GLOBAL_Category', valueId: 'report' }] });
    expect(r.dualBare.body.version).toBe('D2');
    expect(r.dualDisagree.status).toBe(400);
  });

  it.each(['reference', 'walkthrough'] as const)("'%s' (strict) refuses a body carrying both spellings", async (commitSpelling) => {
    const r = await spellings({ commitSpelling });
    expect([r.dual.status, r.dualBare.status]).toEqual([400, 400]);
    expect(Object.keys(r.dual.body.errors)).toEqual(commitSpelling === 'reference' ? ['versionLabel', 'metadata'] : ['version', 'additionalMetadata']);
  });

  it.each(['reference', 'walkthrough'] as const)("'%s' with ignoreUnknownCommitKeys reads its own keys only and numbers a version it finds no label for", async (commitSpelling) => {
    const r = await spellings({ commitSpelling, ignoreUnknownCommitKeys: true });
    expect(r.dual.status).toBe(201);
    expect(r.dual.body).toMatchObject({ version: 'D1', metadata: [{ metadataElementId: 'GLOBAL_Category', valueId: 'report' }] });
    // The other spelling is not refused: it "works" without label and metadata (the data loss this models).
    const other = commitSpelling === 'reference' ? r.walkthrough : r.reference;
    expect(other.status).toBe(201);
    expect(other.body.version).toBe('1');
    expect(other.body.metadata).toEqual([]);
    expect(r.mixed.status).toBe(201);
  });

  it("'reference' refuses the walkthrough spelling", async () => {
    const r = await spellings({ commitSpelling: 'reference' });
    expect(r.reference.status).toBe(201);
    expect(r.walkthrough.status).toBe(400);
    expect(r.walkthrough.body.errors).toHaveProperty('versionLabel');
  });

  it("'walkthrough' refuses the reference spelling", async () => {
    const r = await spellings({ commitSpelling: 'walkthrough' });
    expect(r.walkthrough.status).toBe(201);
    expect(r.walkthroughBare.status).toBe(201);
    expect(r.reference.status).toBe(400);
    expect(r.reference.body.errors).toHaveProperty('additionalMetadata');
  });
});
