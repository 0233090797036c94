// A remote folder renamed while a new file is saved in its local directory: the pass moves the synced files to
// the new name, the new file keeps the old directory alive, and it must still go where its folder went (uploaded
// into the renamed folder, then moved there locally), not wait for good for a folder the service cannot create.
// A real pass over a real state DB and real files against the emulator on loopback.
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

it('a file saved in a folder while the pass follows its remote rename is uploaded into the renamed folder', async () => {
  const p = await openTestPair(emu, 'followed');
  const { rt, binderId, local } = p;
  const folder = emu.control.createFolder(binderId, { name: 'Old' });
  for (const n of ['a', 'b']) emu.control.addDocument(binderId, folder.id, `${n}.txt`, n);
  try {
    expect((await runPass(rt)).converged).toBe(true);
    emu.control.renameFolder(folder.id, 'New');
    rt.cache.foldersAt = 0; // the next listing walks the folder tree (a daemon does so at its next walk)
    // Saved after the scan, before the moves: the pass empties Old of its synced files, but not of this one.
    const followed = await runPass(rt, { onPlan: () => fs.writeFileSync(path.join(local, 'Old', 'fresh.txt'), 'saved meanwhile') });
    expect(followed.execution?.done['move-local']).toBe(2);
    expect(fs.readdirSync(path.join(local, 'Old'))).toEqual(['fresh.txt']);

    const next = await runPass(rt);
    expect(next.issues.filter((i) => i.code === 'waiting-for-remote-folder')).toEqual([]);
    const doc = emu.control.listDocuments(binderId).find((d) => d.fileName === 'fresh.txt');
    expect(doc?.folderId).toBe(folder.id);
    await runPass(rt);
    const last = await runPass(rt);
    expect(last.converged, JSON.stringify(last.issues)).toBe(true);
    expect(fs.readFileSync(path.join(local, 'New', 'fresh.txt'), 'utf8')).toBe('saved meanwhile');
    expect(fs.existsSync(path.join(local, 'Old'))).toBe(false);
    expect(emu.control.listDocuments(binderId).map((d) => d.fileName).sort()).toEqual(['a.txt', 'b.txt', 'fresh.txt']);
    // Old is gone: nothing is remembered of it any more.
    expect(rt.store.getMeta('followedFolders')).toBeUndefined();
  } finally {
    await p.close();
  }
});
