// Server variants the spec leaves open (binders shape, download-link path, commit spelling, page size clamp,
// how a top-level folder shows its parent, compressed answers): one full round trip each (download, upload,
// edits both ways); and the statuses a server may answer for a deleted document.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { EmulatorOptions } from '../../src/emulator/index.js';
import { createWorkspace, readLocal, sha256, writeLocal, type Workspace } from './harness.js';
import { docNamed, expectConvergedPass, expectSidesEqual, trashHashes, versionContents } from './scenario-helpers.js';

let ws: Workspace;
afterEach(async () => {
  await ws?.close();
});

const VARIANTS: Array<{ name: string; emulator: EmulatorOptions; docs?: number }> = [
  { name: 'bindersShape items', emulator: { bindersShape: 'items' } },
  { name: 'download link only at /downloadlink', emulator: { downloadLinkPaths: ['downloadlink'] } },
  { name: 'commit spelling walkthrough only', emulator: { commitSpelling: 'walkthrough' } },
  { name: 'commit spelling reference only', emulator: { commitSpelling: 'reference' } },
  { name: 'maxPageSize 7 with 30 documents', emulator: { maxPageSize: 7 }, docs: 30 },
  { name: 'top-level parentId absent', emulator: { topLevelParentId: 'absent' } },
  { name: 'top-level parentId = binder id', emulator: { topLevelParentId: 'binderId' } },
  { name: 'JSON answers gzip-encoded', emulator: { compressJson: true } },
];

describe('emulator variants', () => {
  it.each(VARIANTS)('$name: download, upload and edits on both sides converge', async ({ emulator, docs = 1 }) => {
    ws = await createWorkspace({ emulator });
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    const sub = c.createFolder(ws.binderId, { name: 'S', parentId: tab.id });
    const remoteIds: string[] = [];
    for (let i = 0; i < docs; i++) remoteIds.push(c.addDocument(ws.binderId, i % 2 ? sub.id : tab.id, `remote-${i}.txt`, `remote ${i}`).document.id);
    writeLocal(ws, 'T/S/local.txt', 'local v1');

    await expectConvergedPass(ws);
    expect(readLocal(ws, 'T/remote-0.txt')).toBe('remote 0');
    const up = docNamed(ws, 'local.txt');
    expect(up.folderId).toBe(sub.id);
    expect(versionContents(ws, up.id)).toEqual(['local v1']);
    expectSidesEqual(ws);
    if (emulator.maxPageSize) expect(c.counters().search).toBeGreaterThanOrEqual(Math.ceil((docs + 1) / emulator.maxPageSize));

    writeLocal(ws, 'T/S/local.txt', 'local v2, longer');
    c.addVersion(remoteIds[0]!, 'remote 0 v2');
    await expectConvergedPass(ws);
    expect(readLocal(ws, 'T/remote-0.txt')).toBe('remote 0 v2');
    expect(versionContents(ws, up.id)).toEqual(['local v1', 'local v2, longer']);
    expect(c.listDocuments(ws.binderId)).toHaveLength(docs + 1);
    expectSidesEqual(ws);
  });
});

describe('a deleted document, whatever GET /documents/{id} answers for it (spec 7: statuses not shown)', () => {
  it.each([404, 400, 403] as const)('%i: the local copy goes to the trash, the rest stays in sync', async (status) => {
    ws = await createWorkspace({ emulator: { missingDocumentStatus: status } });
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    const kept = c.addDocument(ws.binderId, tab.id, 'kept.txt', 'kept').document.id;
    const doomed = c.addDocument(ws.binderId, tab.id, 'doomed.txt', 'doomed content').document.id;
    await expectConvergedPass(ws);
    expect(readLocal(ws, 'T/doomed.txt')).toBe('doomed content');

    c.deleteDocument(doomed);
    c.addVersion(kept, 'kept v2');
    await expectConvergedPass(ws);
    expect(existsSync(path.join(ws.local, 'T', 'doomed.txt'))).toBe(false);
    expect(trashHashes(ws)).toContain(sha256('doomed content'));
    expect(readLocal(ws, 'T/kept.txt')).toBe('kept v2');
    expectSidesEqual(ws);
  });
});

describe('a strict server whose spellings an earlier process found (<stateDir>/service-capabilities.json)', () => {
  it('the next `sync` process asks /downloadlink and commits in the walkthrough spelling at once: no 404, no 400', async () => {
    ws = await createWorkspace({ emulator: { downloadLinkPaths: ['downloadlink'], commitSpelling: 'walkthrough' } });
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    c.addDocument(ws.binderId, tab.id, 'r1.txt', 'remote 1');
    writeLocal(ws, 'T/l1.txt', 'local 1');
    const refused = () =>
      c
        .lastRequests(10_000)
        .filter((r) => (r.route === 'downloadlink' || r.route === 'commit') && r.status >= 400)
        .map((r) => `${r.route} ${r.path.split('/').pop()} ${r.status}`);
    c.resetCounters();
    await expectConvergedPass(ws);
    // The first process finds its way: /raw is missing, the body with both spellings is refused.
    expect(refused().sort()).toEqual(['commit upload 400', 'downloadlink raw 404']);

    c.resetCounters();
    c.addDocument(ws.binderId, tab.id, 'r2.txt', 'remote 2');
    writeLocal(ws, 'T/l2.txt', 'local 2');
    await expectConvergedPass(ws);
    expect(refused()).toEqual([]);
    expect(readLocal(ws, 'T/r2.txt')).toBe('remote 2');
    expect(versionContents(ws, docNamed(ws, 'l2.txt').id)).toEqual(['local 2']);
    expectSidesEqual(ws);
  });
});
