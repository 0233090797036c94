// The conflict history that `status` lists: pruned by trashRetentionDays, once a day per process; and an edit of
// a document deleted on the service meanwhile is recorded there (the edit came back as a new document). Real
// passes over a real state DB against the emulator on loopback.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runPass } from '../../src/sync/pass.js';
import { openTestPair } from './pass-fixture.js';

let emu: Emulator;

beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});

afterAll(async () => {
  await emu?.close();
});

const DAY = 86_400_000;

it('drops conflicts older than trashRetentionDays from the history, once a day per process', async () => {
  const p = await openTestPair(emu, 'history', 'trashRetentionDays: 10');
  const { rt } = p;
  try {
    const t0 = Date.now();
    const conflict = (relPath: string, atMs: number) =>
      rt.store.addConflict({ relPath, conflictPath: `trash/${relPath}`, documentId: null, policy: 'keep-both', detail: 'both sides changed', at: new Date(atMs).toISOString() });
    conflict('old.txt', t0 - 11 * DAY);
    conflict('recent.txt', t0 - 9.5 * DAY);
    await runPass(rt, { now: () => new Date(t0) });
    expect(rt.store.listConflicts().map((r) => r.relPath)).toEqual(['recent.txt']);

    // The same day: not pruned again (no write on every poll).
    conflict('old-too.txt', t0 - 12 * DAY);
    await runPass(rt, { now: () => new Date(t0) });
    expect(rt.store.listConflicts().map((r) => r.relPath)).toEqual(['old-too.txt', 'recent.txt']);

    // The next day both are past the 10 days kept.
    await runPass(rt, { now: () => new Date(t0 + 1 * DAY) });
    expect(rt.store.listConflicts().map((r) => r.relPath)).toEqual([]);
  } finally {
    await p.close();
  }
});

it('an edit racing a delete on the service: postponed (not a failure), then kept as a new document and recorded as a conflict', async () => {
  const p = await openTestPair(emu, 'edit-vs-delete');
  const { rt } = p;
  try {
    const folder = emu.control.createFolder(p.binderId, { name: 'Docs' });
    const { document } = emu.control.addDocument(p.binderId, folder.id, 'f.txt', 'v1');
    for (const n of ['a', 'b', 'c']) emu.control.addDocument(p.binderId, folder.id, `${n}.txt`, n);
    expect((await runPass(rt)).converged).toBe(true);
    fs.writeFileSync(path.join(p.local, 'Docs', 'f.txt'), 'edited here');
    // Deleted on the service after the listing, before the upload.
    const raced = await runPass(rt, { onPlan: () => emu.control.deleteDocument(document.id) });
    expect(raced.execution?.failures.map((f) => [f.relPath, f.code, f.postponed])).toEqual([['Docs/f.txt', 'REMOTE_CHANGED', true]]);
    expect(raced.execution?.failures[0]?.message).toMatch(/its document was deleted on the service since the last listing/);

    const kept = await runPass(rt);
    expect(kept.execution?.failures).toEqual([]);
    const again = emu.control.listDocuments(p.binderId).filter((d) => d.fileName === 'f.txt');
    expect(again).toHaveLength(1);
    expect(again[0]!.id).not.toBe(document.id);
    expect(emu.control.readContent(again[0]!.id).toString()).toBe('edited here');
    expect(rt.store.listConflicts().map((c) => [c.relPath, c.policy, c.detail])).toEqual([
      ['Docs/f.txt', 'edit-kept', 'deleted on the service while edited here; the edit was uploaded as a new document'],
    ]);
    expect((await runPass(rt)).converged).toBe(true);
    expect(rt.store.listConflicts()).toHaveLength(1);
  } finally {
    await p.close();
  }
});
