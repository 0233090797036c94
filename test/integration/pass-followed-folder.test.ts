// A remote folder renamed while a new file is saved in its local directory: the pass moves the synced files to
// the new name, the new file keeps the old directory alive, and it must still go where its folder went (uploaded
// into the renamed folder, then moved there locally, by the same pass when the pass saw the file), not wait for
// good for a folder the service cannot create. A real pass over a real state DB and real files against the
// emulator on loopback.
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

it('a file saved in a folder while the pass follows its remote rename file by file is uploaded into the renamed folder', async () => {
  const p = await openTestPair(emu, 'followed');
  const { rt, binderId, local } = p;
  const folder = emu.control.createFolder(binderId, { name: 'Old' });
  const other = emu.control.createFolder(binderId, { name: 'Other' });
  for (const n of ['a', 'b']) emu.control.addDocument(binderId, folder.id, `${n}.txt`, n);
  const c = emu.control.addDocument(binderId, folder.id, 'c.txt', 'c').document;
  try {
    expect((await runPass(rt)).converged).toBe(true);
    emu.control.renameFolder(folder.id, 'New');
    // One of its documents moved elsewhere at the same time: the directory cannot move whole, its files follow one by one.
    emu.control.moveDocument(c.id, other.id);
    rt.cache.foldersAt = 0; // the next listing walks the folder tree (a daemon does so at its next walk)
    // Saved after the scan, before the moves: the pass empties Old of its synced files, but not of this one.
    const followed = await runPass(rt, { onPlan: () => fs.writeFileSync(path.join(local, 'Old', 'fresh.txt'), 'saved meanwhile') });
    expect(followed.execution?.done['move-local']).toBe(3);
    expect(followed.execution?.done['move-dir-local']).toBeUndefined();
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
    expect(emu.control.listDocuments(binderId).map((d) => d.fileName).sort()).toEqual(['a.txt', 'b.txt', 'c.txt', 'fresh.txt']);
    // Old is gone: nothing is remembered of it any more.
    expect(rt.store.getMeta('followedFolders')).toBeUndefined();
  } finally {
    await p.close();
  }
});

it('a file saved in a folder just before the pass moves the directory whole goes with it, and is uploaded there', async () => {
  const p = await openTestPair(emu, 'followed-whole');
  const { rt, binderId, local } = p;
  const folder = emu.control.createFolder(binderId, { name: 'Old' });
  for (const n of ['a', 'b']) emu.control.addDocument(binderId, folder.id, `${n}.txt`, n);
  try {
    expect((await runPass(rt)).converged).toBe(true);
    emu.control.renameFolder(folder.id, 'New');
    rt.cache.foldersAt = 0;
    const followed = await runPass(rt, { onPlan: () => fs.writeFileSync(path.join(local, 'Old', 'fresh.txt'), 'saved meanwhile') });
    expect(followed.execution?.done).toEqual({ 'move-dir-local': 1 });
    expect(fs.existsSync(path.join(local, 'Old'))).toBe(false);
    expect(fs.readFileSync(path.join(local, 'New', 'fresh.txt'), 'utf8')).toBe('saved meanwhile');
    // A new file in New, which is the renamed folder's: uploaded there by the next pass.
    const next = await runPass(rt);
    expect(next.execution?.done).toEqual({ upload: 1 });
    expect(emu.control.listDocuments(binderId).find((d) => d.fileName === 'fresh.txt')?.folderId).toBe(folder.id);
    const last = await runPass(rt);
    expect(last.converged, JSON.stringify(last.issues)).toBe(true);
    expect(last.plan.groups).toEqual([]);
    expect(rt.store.getMeta('followedFolders')).toBeUndefined();
  } finally {
    await p.close();
  }
});

/** Regular files under dir, as sorted relative paths. */
function filesUnder(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

// Black-box round 32b, F3: a new file in Docs/Sub while Docs was renamed to Documents on the service. The pass
// uploaded it into the renamed folder and said "in sync" (converged, `sync` exit 0) with the file still at
// Docs/Sub: only the next pass moved it. The same pass now moves it where its document is.
it.each([
  ['a new file', 'new'],
  ['a file renamed locally (a new document)', 'renamed'],
  ['an edited file whose document was deleted on the service (uploaded again)', 'deleted-remotely'],
  ['an edited file (a new version)', 'edited'],
] as const)('%s in a folder renamed on the service ends in the folder\'s new place in the same pass', async (_what, change) => {
  const p = await openTestPair(emu, `followed-${change}`);
  const { rt, binderId, local } = p;
  const docs = emu.control.createFolder(binderId, { name: 'Docs' });
  const sub = emu.control.createFolder(binderId, { name: 'Sub', parentId: docs.id });
  const a = emu.control.addDocument(binderId, sub.id, 'a.txt', 'a').document;
  emu.control.addDocument(binderId, sub.id, 'b.txt', 'b');
  try {
    expect((await runPass(rt)).converged).toBe(true);
    const at = (rel: string) => path.join(local, ...rel.split('/'));
    let expected: string[];
    if (change === 'new') {
      fs.writeFileSync(at('Docs/Sub/newlocal.txt'), 'newlocal');
      expected = ['Documents/Sub/a.txt', 'Documents/Sub/b.txt', 'Documents/Sub/newlocal.txt'];
    } else if (change === 'renamed') {
      fs.renameSync(at('Docs/Sub/a.txt'), at('Docs/Sub/a2.txt'));
      // The service cannot delete a document: a.txt comes back beside the renamed file (localDeletePolicy restore).
      expected = ['Documents/Sub/a.txt', 'Documents/Sub/a2.txt', 'Documents/Sub/b.txt'];
    } else if (change === 'deleted-remotely') {
      fs.writeFileSync(at('Docs/Sub/a.txt'), 'a edited');
      emu.control.deleteDocument(a.id);
      expected = ['Documents/Sub/a.txt', 'Documents/Sub/b.txt'];
    } else {
      fs.writeFileSync(at('Docs/Sub/a.txt'), 'a edited');
      expected = ['Documents/Sub/a.txt', 'Documents/Sub/b.txt'];
    }
    emu.control.renameFolder(docs.id, 'Documents');
    rt.cache.foldersAt = 0; // the next listing walks the folder tree
    const r = await runPass(rt);
    expect(r.execution?.failures ?? []).toEqual([]);
    expect(r.converged, JSON.stringify(r.issues)).toBe(true);
    // Both sides agree now: the local tree is the binder's, and the old directories are gone.
    expect(filesUnder(local)).toEqual(expected);
    expect(fs.existsSync(at('Docs'))).toBe(false);
    const remote = emu.control.listDocuments(binderId).map((d) => `${d.folderId === sub.id ? 'Documents/Sub' : d.folderId}/${d.fileName}`).sort();
    expect(remote).toEqual(expected);
    if (change !== 'renamed') expect(fs.readFileSync(at(change === 'new' ? 'Documents/Sub/newlocal.txt' : 'Documents/Sub/a.txt'), 'utf8')).toBe(change === 'new' ? 'newlocal' : 'a edited');
    const next = await runPass(rt);
    expect(next.plan.groups).toEqual([]);
    expect(next.converged).toBe(true);
  } finally {
    await p.close();
  }
});

it('the move after the upload never overwrites: a file that appeared at the new place meanwhile stays, and the pass is not in sync', async () => {
  const p = await openTestPair(emu, 'followed-occupied');
  const { rt, binderId, local } = p;
  const docs = emu.control.createFolder(binderId, { name: 'Docs' });
  emu.control.addDocument(binderId, docs.id, 'a.txt', 'a');
  try {
    expect((await runPass(rt)).converged).toBe(true);
    fs.writeFileSync(path.join(local, 'Docs', 'new.txt'), 'mine');
    // A symbolic link in Docs: a path the scan does not look into, so the directory does not move whole (it would
    // take the link along unseen); its files follow one by one, the new one by its upload's move.
    fs.symlinkSync('/nonexistent', path.join(local, 'Docs', 'link'));
    emu.control.renameFolder(docs.id, 'Documents');
    rt.cache.foldersAt = 0;
    // Written after the plan was made, before its steps ran: the folder's new place now holds a file of that name.
    const r = await runPass(rt, {
      onPlan: () => {
        fs.mkdirSync(path.join(local, 'Documents'), { recursive: true });
        fs.writeFileSync(path.join(local, 'Documents', 'new.txt'), 'theirs');
      },
    });
    expect(r.execution?.done.upload).toBe(1);
    expect(r.execution?.failures.map((f) => [f.kind, f.code])).toEqual([['move-local', 'LOCAL_TARGET_EXISTS']]);
    expect(r.converged).toBe(false);
    expect(fs.readFileSync(path.join(local, 'Docs', 'new.txt'), 'utf8')).toBe('mine');
    expect(fs.readFileSync(path.join(local, 'Documents', 'new.txt'), 'utf8')).toBe('theirs');
  } finally {
    await p.close();
  }
});

// Black-box round 42c, F1: an upload-only pair moves no local file. A new file in a folder renamed on the service
// was uploaded into it and then moved here into a new directory of the folder's new name, away from its
// neighbours (which stay, as the pair does not follow remote renames); the file written again at the user's
// path was then a path collision for ever, and never published.
it('an upload-only pair uploads a new file into its folder renamed on the service and leaves it where the user put it', async () => {
  const p = await openTestPair(emu, 'followed-upload-only', 'direction: upload');
  const { rt, binderId, local } = p;
  const docs = emu.control.createFolder(binderId, { name: 'Docs' });
  const sub = emu.control.createFolder(binderId, { name: 'Sub', parentId: docs.id });
  const at = (rel: string) => path.join(local, ...rel.split('/'));
  fs.mkdirSync(at('Docs/Sub'), { recursive: true });
  fs.writeFileSync(at('Docs/Sub/a.txt'), 'a');
  try {
    expect((await runPass(rt)).converged).toBe(true);
    emu.control.renameFolder(sub.id, 'Sub renamed');
    fs.writeFileSync(at('Docs/Sub/export.csv'), 'run 1');
    rt.cache.foldersAt = 0;
    const r = await runPass(rt);
    expect(r.execution?.failures ?? []).toEqual([]);
    expect(r.plan.groups.flat().map((a) => a.kind)).toEqual(['upload']);
    expect(filesUnder(local)).toEqual(['Docs/Sub/a.txt', 'Docs/Sub/export.csv']);
    const exported = emu.control.listDocuments(binderId).find((d) => d.fileName === 'export.csv');
    expect(exported?.folderId).toBe(sub.id);
    // The program writes the file again (a new file at the same path): the document's next version.
    fs.rmSync(at('Docs/Sub/export.csv'));
    fs.writeFileSync(at('Docs/Sub/export.csv'), 'run 2');
    const again = await runPass(rt);
    expect(again.execution?.failures ?? []).toEqual([]);
    expect(again.issues.filter((i) => i.code !== 'upload-only')).toEqual([]);
    const versions = emu.control.listVersions(exported!.id).map((v) => emu.control.readContent(exported!.id, v.id).toString('utf8'));
    expect(versions).toEqual(['run 1', 'run 2']);
    expect(filesUnder(local)).toEqual(['Docs/Sub/a.txt', 'Docs/Sub/export.csv']);
  } finally {
    await p.close();
  }
});
