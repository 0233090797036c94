// Emulator: the read endpoints (binders, metadata elements, drives, folders, documents, versions, download
// links), their shape options, problem details, and unknown routes / wrong methods.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';

type Caller = (path: string, init?: { method?: string; body?: unknown }) => Promise<{ status: number; headers: Headers; body: any }>;

async function connect(emu: Emulator): Promise<Caller> {
  const c = emu.credentials;
  const res = await fetch(`${emu.authUrl}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope: 'service_public' }).toString(),
  });
  const { access_token } = (await res.json()) as { access_token: string };
  return async (path, init = {}) => {
    const headers: Record<string, string> = { authorization: `Bearer ${access_token}`, 'x-service-tenantid': c.tenantId };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`${emu.baseUrl}${path}`, { method: init.method ?? 'GET', headers, body: init.body === undefined ? null : JSON.stringify(init.body) });
    const text = await r.text();
    return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : undefined };
  };
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('emulator read endpoints', () => {
  let emu: Emulator;
  let api: Caller;
  let binderId: string;
  let tabA: string;
  let tabB: string;
  let sub: string;
  let docId: string;
  let v1: string;
  let v2: string;

  beforeAll(async () => {
    emu = await startEmulator();
    api = await connect(emu);
    binderId = emu.control.createBinder({ name: 'Alpha', type: 'Project' }).id;
    emu.control.addMetadataElement(binderId, { id: 'Dept', label: 'Department', dataType: 'Enum', allowedValues: [{ id: 'eng', label: 'Eng' }], required: true });
    tabA = emu.control.createFolder(binderId, { name: 'A' }).id;
    tabB = emu.control.createFolder(binderId, { name: 'B' }).id;
    sub = emu.control.createFolder(binderId, { name: 'A1', parentId: tabA }).id;
    const added = emu.control.addDocument(binderId, sub, 'report.txt', 'first', { versionLabel: 'v1', metadata: [{ metadataElementId: 'Dept', valueId: 'eng' }] });
    docId = added.document.id;
    v1 = added.version.id;
    v2 = emu.control.addVersion(docId, 'second', { versionLabel: 'v2' }).id;
  });
  afterAll(() => emu.close());

  it('lists binders as a bare array with the spec fields', async () => {
    const r = await api('/binders');
    expect(r.status).toBe(200);
    expect(r.body).toEqual([{ id: binderId, name: 'Alpha', type: 'Project', createdAt: expect.any(String) }]);
    expect(binderId).toMatch(/^[A-Za-z0-9_-]{9}$/);
    expect(Number.isNaN(Date.parse(r.body[0].createdAt))).toBe(false);
  });

  it('lists metadata elements with the GLOBAL_ keys and customer keys', async () => {
    const r = await api(`/binders/${binderId}/metadataelements`);
    expect(r.status).toBe(200);
    const ids = r.body.map((e: { id: string }) => e.id);
    expect(ids).toEqual(['GLOBAL_BinderId', 'GLOBAL_TabId', 'GLOBAL_Category', 'Dept']);
    const cat = r.body.find((e: { id: string }) => e.id === 'GLOBAL_Category');
    expect(cat.allowedValues.length).toBeGreaterThan(1);
    expect(r.body[3]).toEqual({ id: 'Dept', label: 'Department', dataType: 'Enum', allowedValues: [{ id: 'eng', label: 'Eng' }], required: true });
    expect((await api('/binders/NoSuchOne/metadataelements')).status).toBe(404);
  });

  it('lists top-level folders, sub-folders and documents of a folder', async () => {
    const top = await api(`/documents/drives/binders/${binderId}`);
    expect(top.body).toEqual([
      { id: tabA, name: 'A', type: 'Tab', parentId: null },
      { id: tabB, name: 'B', type: 'Tab', parentId: null },
    ]);
    expect(tabA).toMatch(GUID);
    const subs = await api(`/documents/drives/binders/${binderId}/${tabA}`);
    expect(subs.body).toEqual([{ id: sub, name: 'A1', type: 'Folder', parentId: tabA }]);
    expect((await api(`/documents/drives/binders/${binderId}/${tabB}`)).body).toEqual([]);
    const docs = await api(`/documents/drives/binders/${binderId}/${sub}/documents`);
    expect(docs.body).toEqual([
      {
        id: docId,
        fileName: 'report.txt',
        folderId: sub,
        binderId,
        metadata: [
          { metadataElementId: 'GLOBAL_BinderId', valueId: binderId },
          { metadataElementId: 'GLOBAL_TabId', valueId: sub },
          { metadataElementId: 'Dept', valueId: 'eng' },
        ],
        latestVersionId: v2,
      },
    ]);
  });

  it('answers 404 for an unknown domain, binder or folder (also a folder of another binder)', async () => {
    expect((await api(`/documents/drives/projects/${binderId}`)).status).toBe(404);
    expect((await api('/documents/drives/binders/Missing00')).status).toBe(404);
    expect((await api(`/documents/drives/binders/${binderId}/00000000-0000-0000-0000-000000000000`)).status).toBe(404);
    const other = emu.control.createBinder({ name: 'Beta' }).id;
    expect((await api(`/documents/drives/binders/${other}/${tabA}/documents`)).status).toBe(404);
  });

  it('gets a document, its versions (oldest first) and one version', async () => {
    const doc = await api(`/documents/${docId}`);
    expect(doc.body.latestVersionId).toBe(v2);
    const versions = await api(`/documents/${docId}/versions`);
    expect(versions.body.map((v: { id: string }) => v.id)).toEqual([v1, v2]);
    const one = await api(`/documents/${docId}/versions/${v1}`);
    expect(one.body).toEqual({
      id: v1,
      documentId: docId,
      version: 'v1',
      status: 'Published',
      modifiedAt: expect.any(String),
      description: '',
      metadata: [{ metadataElementId: 'Dept', valueId: 'eng' }],
      downloadUrl: expect.stringContaining('/storage/blobs/'),
      thumbnailUrl: '',
    });
    expect((await fetch(one.body.downloadUrl)).status).toBe(200);
    expect((await api(`/documents/${docId}/versions/${GUIDLESS}`)).status).toBe(404);
    expect((await api('/documents/00000000-0000-0000-0000-000000000000')).status).toBe(404);
  });

  it('hands out download links at /raw and /downloadlink that fetch each version', async () => {
    for (const [suffix, versionId, text] of [['raw', v1, 'first'], ['downloadlink', v2, 'second']] as const) {
      const link = await api(`/documents/${docId}/versions/${versionId}/${suffix}`);
      expect(link.status).toBe(200);
      expect(Object.keys(link.body).sort()).toEqual(['expiresAt', 'url']);
      expect(Date.parse(link.body.expiresAt)).toBeGreaterThan(Date.now());
      const blob = await fetch(link.body.url);
      expect(await blob.text()).toBe(text);
    }
  });

  it('answers RFC 7807 problems for unknown routes and 405 with Allow for wrong methods', async () => {
    const unknown = await api('/nothing/here');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(unknown.body).toMatchObject({ type: expect.any(String), title: 'Not Found', status: 404, traceId: expect.any(String) });
    const wrong = await api('/documents');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect((await api(`/documents/${docId}`, { method: 'DELETE' })).status).toBe(405);
  });
});

const GUIDLESS = '11111111-2222-3333-4444-555555555555';

describe('emulator shape options', () => {
  const withEmu = async (opts: EmulatorOptions, fn: (emu: Emulator, api: Caller) => Promise<void>) => {
    const emu = await startEmulator(opts);
    try {
      await fn(emu, await connect(emu));
    } finally {
      await emu.close();
    }
  };

  it("bindersShape 'items' wraps the list", async () => {
    await withEmu({ bindersShape: 'items' }, async (emu, api) => {
      const id = emu.control.createBinder({ name: 'X' }).id;
      expect((await api('/binders')).body).toEqual({ items: [{ id, name: 'X', type: 'Project', createdAt: expect.any(String) }] });
    });
  });

  it('downloadLinkPaths limits which suffix exists', async () => {
    await withEmu({ downloadLinkPaths: ['downloadlink'] }, async (emu, api) => {
      const b = emu.control.createBinder({ name: 'X' }).id;
      const f = emu.control.createFolder(b, { name: 'T' }).id;
      const { document } = emu.control.addDocument(b, f, 'x.txt', 'x');
      expect((await api(`/documents/${document.id}/versions/${document.latestVersionId}/raw`)).status).toBe(404);
      expect((await api(`/documents/${document.id}/versions/${document.latestVersionId}/downloadlink`)).status).toBe(200);
    });
  });

  it('topLevelParentId shows a top-level parent as absent or as the binder id', async () => {
    await withEmu({ topLevelParentId: 'absent' }, async (emu, api) => {
      const b = emu.control.createBinder({ name: 'X' }).id;
      emu.control.createFolder(b, { name: 'T' });
      const [tab] = (await api(`/documents/drives/binders/${b}`)).body;
      expect(tab).not.toHaveProperty('parentId');
    });
    await withEmu({ topLevelParentId: 'binderId' }, async (emu, api) => {
      const b = emu.control.createBinder({ name: 'X' }).id;
      emu.control.createFolder(b, { name: 'T' });
      expect((await api(`/documents/drives/binders/${b}`)).body[0].parentId).toBe(b);
    });
  });
});
