// Emulator: state and blobs kept in a dataDir across restarts (credentials, tokens, upload slots, content),
// the atomic state file, and the demo seed (shape, required Department, speed, seeded only once).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';

async function tokenOf(emu: Emulator): Promise<string> {
  const c = emu.credentials;
  const res = await fetch(`${emu.authUrl}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope: 'service_public' }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

describe('emulator persistence', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'emu-persist-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps binders, folders, documents, versions, content, credentials and tokens across a restart', async () => {
    const first = await startEmulator({ dataDir: dir });
    const token = await tokenOf(first);
    const h = { authorization: `Bearer ${token}`, 'x-service-tenantid': first.credentials.tenantId };
    const b = first.control.createBinder({ name: 'Kept' }).id;
    const f = first.control.createFolder(b, { name: 'Tab' }).id;
    const { document } = first.control.addDocument(b, f, 'kept.txt', 'v1 content');
    // An upload slot PUT before the restart and committed after it.
    const slot = (await (await fetch(`${first.baseUrl}/documents/uploads/personalstorage/presignedupload`, { headers: h })).json()) as { presignedUrl: string; uploadId: string };
    expect((await fetch(slot.presignedUrl, { method: 'PUT', body: 'v2 content' })).status).toBe(201);
    const credentials = first.credentials;
    await first.close();
    expect(existsSync(join(dir, 'state.json'))).toBe(true);
    expect(readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);

    const second = await startEmulator({ dataDir: dir });
    try {
      expect(second.credentials).toEqual(credentials);
      const h2 = { ...h, 'content-type': 'application/json' };
      const commit = await fetch(`${second.baseUrl}/documents/drives/binders/${b}/${f}/upload`, {
        method: 'POST',
        headers: h2,
        body: JSON.stringify({ fileName: 'kept.txt', version: '2', uploadId: slot.uploadId, additionalMetadata: [] }),
      });
      expect(commit.status).toBe(201);
      expect(second.control.listVersions(document.id).map((v) => v.version)).toEqual(['1', '2']);
      expect(second.control.readContent(document.id).toString()).toBe('v2 content');
      expect(second.control.readContent(document.id, document.latestVersionId).toString()).toBe('v1 content');
      const binders = (await (await fetch(`${second.baseUrl}/binders`, { headers: h })).json()) as Array<{ id: string }>;
      expect(binders.map((x) => x.id)).toEqual([b]);
      second.control.expireTokens();
    } finally {
      await second.close();
    }
    // Revocation is part of the state too.
    const third = await startEmulator({ dataDir: dir });
    try {
      expect((await fetch(`${third.baseUrl}/binders`, { headers: h })).status).toBe(401);
    } finally {
      await third.close();
    }
  });

  it('keeps an unused upload slot across a restart; a PUT cut off by shutdown spends its slot', async () => {
    const first = await startEmulator({ dataDir: dir });
    const h = { authorization: `Bearer ${await tokenOf(first)}` };
    const slot = async () =>
      (await (await fetch(`${first.baseUrl}/documents/uploads/personalstorage/presignedupload`, { headers: h })).json()) as { presignedUrl: string };
    const unused = await slot();
    const cut = await slot();
    // Start a PUT that announces 100 bytes, send 10, and keep the stream open while the emulator stops.
    const body = new PassThrough();
    const pending = request(cut.presignedUrl, { method: 'PUT', headers: { 'content-length': '100' }, body }).catch((e: unknown) => e);
    body.write(Buffer.alloc(10));
    await sleep(100);
    await first.close();
    expect(await pending).toBeInstanceOf(Error);
    body.destroy();

    const second = await startEmulator({ dataDir: dir });
    const moved = (url: string) => url.replace(/127\.0\.0\.1:\d+/, new URL(second.baseUrl).host);
    try {
      expect((await fetch(moved(unused.presignedUrl), { method: 'PUT', body: 'x' })).status).toBe(201);
      expect((await fetch(moved(cut.presignedUrl), { method: 'PUT', body: 'x' })).status).toBe(409);
    } finally {
      await second.close();
    }
  });
});

describe('emulator demo seed', () => {
  // (How fast it seeds is not asserted here: a timing in a test fails on a loaded machine, not on a slow seed.)
  it('seeds Project Atlas: nested folders, hundreds of files, versions, required Department', async () => {
    const emu = await startEmulator({ seed: 'demo' });
    try {
      const binderId = emu.demoBinderId!;
      const docs = emu.control.listDocuments(binderId);
      expect(docs.length).toBeGreaterThanOrEqual(200);
      expect(docs.length).toBeLessThanOrEqual(500);
      const folders = emu.control.listFolders(binderId);
      const depth = (id: string | null): number => (id === null ? 0 : 1 + depth(folders.find((f) => f.id === id)!.parentId));
      expect(Math.max(...folders.map((f) => depth(f.id)))).toBeGreaterThanOrEqual(4);
      const multi = docs.filter((d) => emu.control.listVersions(d.id).length > 1);
      expect(multi.length).toBeGreaterThan(5);
      const sizes = docs.map((d) => emu.control.readContent(d.id).length);
      expect(Math.max(...sizes)).toBeGreaterThan(256 * 1024);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(1024 * 1024 + 64);
      expect(docs.some((d) => d.fileName.endsWith('.csv'))).toBe(true);
      expect(docs.every((d) => d.metadata.some((m) => m.metadataElementId === 'Department'))).toBe(true);
      const h = { authorization: `Bearer ${await tokenOf(emu)}`, 'x-service-tenantid': emu.credentials.tenantId };
      const elements = (await (await fetch(`${emu.baseUrl}/binders/${binderId}/metadataelements`, { headers: h })).json()) as Array<{ id: string; required: boolean; allowedValues: Array<{ id: string }> }>;
      const dept = elements.find((e) => e.id === 'Department')!;
      expect(dept.required).toBe(true);
      expect(dept.allowedValues.map((v) => v.id)).toEqual(['eng', 'ops', 'legal']);
    } finally {
      await emu.close();
    }
  });

  it('produces the same content on every run and seeds a dataDir only once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'emu-seed-'));
    try {
      const a = await startEmulator({ seed: 'demo', dataDir: dir });
      const namesA = a.control.listDocuments(a.demoBinderId!).map((d) => `${d.fileName}:${a.control.readContent(d.id).length}`);
      const idA = a.demoBinderId;
      await a.close();
      const b = await startEmulator({ seed: 'demo', dataDir: dir });
      expect(b.demoBinderId).toBe(idA);
      expect(b.control.listDocuments(idA!)).toHaveLength(namesA.length);
      await b.close();
      const c = await startEmulator({ seed: 'demo' });
      const namesC = c.control.listDocuments(c.demoBinderId!).map((d) => `${d.fileName}:${c.control.readContent(d.id).length}`);
      await c.close();
      expect(namesC).toEqual(namesA);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
