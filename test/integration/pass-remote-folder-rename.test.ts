// A folder renamed or moved on the service, applied by real passes (real state DB, real files in a temp dir, the
// emulator on loopback) as ONE rename of its local directory: the directory and its files keep their inodes, the
// rows follow, a program writing in the folder meanwhile is not split between two directories, and a directory
// that appeared at the new place after the plan stops the move with nothing lost (black-box round 32a, F3).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runPass } from '../../src/sync/pass.js';
import { openTestPair, type TestPair } from './pass-fixture.js';

let emu: Emulator;

beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});

afterAll(async () => {
  await emu?.close();
});

/** A folder Reports (with a sub-folder Q1) of `n` + 2 documents, synced by a first pass. */
async function syncedFolder(name: string, n = 50): Promise<{ p: TestPair; reports: string; q1: string; at: (rel: string) => string }> {
  const p = await openTestPair(emu, name);
  const c = emu.control;
  c.createFolder(p.binderId, { name: 'Archive' });
  const reports = c.createFolder(p.binderId, { name: 'Reports' }).id;
  const q1 = c.createFolder(p.binderId, { name: 'Q1', parentId: reports }).id;
  for (let i = 0; i < n; i++) c.addDocument(p.binderId, reports, `r${String(i).padStart(2, '0')}.txt`, `report ${i}`);
  c.addDocument(p.binderId, q1, 'jan.txt', 'january');
  c.addDocument(p.binderId, q1, 'feb.txt', 'february');
  const first = await runPass(p.rt);
  expect(first.converged).toBe(true);
  return { p, reports, q1, at: (rel) => path.join(p.local, ...rel.split('/')) };
}

/** Every file under dir with its inode: "rel:inode", sorted. */
function inodesUnder(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => e.isFile())
    .map((e) => `${path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/')}:${fs.lstatSync(path.join(e.parentPath, e.name)).ino}`)
    .sort();
}

it('a folder of 50 files renamed on the service is one rename locally: the directory and its files keep their inodes, the rows follow', async () => {
  const { p, reports, at } = await syncedFolder('dir-rename');
  try {
    const dirInode = fs.lstatSync(at('Reports')).ino;
    const files = inodesUnder(at('Reports'));
    emu.control.renameFolder(reports, 'Reports 2026');
    p.rt.cache.foldersAt = 0; // the next listing walks the folder tree
    emu.control.resetCounters();
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    const c = emu.control.counters();
    expect([c['storage-get'], c['storage-put'], c.commit]).toEqual([0, 0, 0]);
    // One step for the folder and its sub-folder, not 52 moves and two mkdirs.
    expect(r.plan.groups.flat().map((a) => a.kind)).toEqual(['move-dir-local']);
    expect(r.execution?.done).toEqual({ 'move-dir-local': 1 });
    expect(r.execution?.dirMoveFiles).toBe(52);
    expect(r.converged).toBe(true);
    expect(fs.existsSync(at('Reports'))).toBe(false);
    expect(fs.lstatSync(at('Reports 2026')).ino).toBe(dirInode);
    expect(inodesUnder(at('Reports 2026'))).toEqual(files);
    const rows = p.rt.store.loadBase();
    expect([...rows.values()].filter((b) => !b.relPath.startsWith('Reports 2026/'))).toEqual([]);
    expect(rows.size).toBe(52);
    // Converged and quiet: nothing to do, nothing transferred again.
    const next = await runPass(p.rt);
    expect(next.plan.groups).toEqual([]);
    expect(next.converged).toBe(true);
  } finally {
    await p.close();
  }
});

it('a folder moved under another folder, with a new version and a local edit inside: one move, then the content steps at the new paths', async () => {
  const { p, reports, at } = await syncedFolder('dir-move', 3);
  try {
    const archive = emu.control.listFolders(p.binderId).find((f) => f.name === 'Archive')!.id;
    const docs = emu.control.listDocuments(p.binderId);
    emu.control.addVersion(docs.find((d) => d.fileName === 'r00.txt')!.id, 'report 0, second version');
    fs.writeFileSync(at('Reports/r01.txt'), 'report 1, edited here');
    fs.writeFileSync(at('Reports/Q1/new.txt'), 'a new file');
    emu.control.moveFolder(reports, archive);
    p.rt.cache.foldersAt = 0;
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(r.plan.groups).toHaveLength(1);
    expect(r.plan.groups[0]!.map((a) => a.kind)).toEqual(['move-dir-local', 'download', 'upload', 'upload']);
    expect(r.converged).toBe(true);
    expect(fs.readFileSync(at('Archive/Reports/r00.txt'), 'utf8')).toBe('report 0, second version');
    const edited = emu.control.listDocuments(p.binderId).find((d) => d.fileName === 'r01.txt')!;
    expect(emu.control.getDocument(edited.id).folderId).toBe(reports);
    expect(emu.control.listDocuments(p.binderId).find((d) => d.fileName === 'new.txt')).toBeDefined();
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it('a file being written in the folder (an open descriptor) ends up whole in the new folder, and is uploaded there', async () => {
  const { p, reports, at } = await syncedFolder('dir-writing', 3);
  try {
    const fd = fs.openSync(at('Reports/Q1/log.txt'), 'w');
    fs.writeSync(fd, 'written before the pass, ');
    emu.control.renameFolder(reports, 'Renamed');
    p.rt.cache.foldersAt = 0;
    // As the daemon runs it: a file written less than its quiet period ago is not uploaded yet (its upload waits;
    // the directory moves all the same, with the file in it).
    const r = await runPass(p.rt, { minFileAgeMs: 60_000 });
    expect(r.execution?.done).toEqual({ 'move-dir-local': 1 });
    expect(r.deferred).toEqual(['Renamed/Q1/log.txt']);
    fs.writeSync(fd, 'and after it');
    fs.closeSync(fd);
    expect(fs.existsSync(at('Reports'))).toBe(false);
    expect(fs.readFileSync(at('Renamed/Q1/log.txt'), 'utf8')).toBe('written before the pass, and after it');
    const next = await runPass(p.rt);
    expect(next.execution?.done).toEqual({ upload: 1 });
    const log = emu.control.listDocuments(p.binderId).find((d) => d.fileName === 'log.txt')!;
    expect(emu.control.getDocument(log.id).folderId).not.toBe(reports); // into Q1, which moved with Renamed
    expect((await runPass(p.rt)).converged).toBe(true);
  } finally {
    await p.close();
  }
});

it('a directory that appears at the new place after the plan stops the move: nothing moved, nothing lost, the next pass takes it up', async () => {
  const { p, reports, at } = await syncedFolder('dir-occupied', 3);
  try {
    emu.control.renameFolder(reports, 'Renamed');
    p.rt.cache.foldersAt = 0;
    const before = inodesUnder(at('Reports'));
    const r = await runPass(p.rt, {
      onPlan: () => {
        fs.mkdirSync(at('Renamed'));
        fs.writeFileSync(at('Renamed/mine.txt'), 'made here meanwhile');
      },
    });
    expect(r.execution?.failures.map((f) => [f.kind, f.relPath, f.code])).toEqual([['move-dir-local', 'Reports', 'LOCAL_TARGET_EXISTS']]);
    expect(r.converged).toBe(false);
    expect(inodesUnder(at('Reports'))).toEqual(before);
    expect(fs.readFileSync(at('Renamed/mine.txt'), 'utf8')).toBe('made here meanwhile');
    expect([...p.rt.store.loadBase().values()].every((b) => b.relPath.startsWith('Reports/'))).toBe(true);
    // The next pass sees the directory there: the files directly in Reports follow one by one into it, beside the
    // new file (uploaded), while Q1, whose own new place is free, moves whole.
    const next = await runPass(p.rt);
    expect(next.execution?.failures).toEqual([]);
    expect(next.plan.groups.flat().flatMap((a) => (a.kind === 'move-dir-local' ? [`${a.from} -> ${a.to}`] : []))).toEqual(['Reports/Q1 -> Renamed/Q1']);
    expect(next.execution?.done['move-local']).toBe(3);
    expect(next.converged).toBe(true);
    expect(fs.existsSync(at('Reports'))).toBe(false);
    expect(inodesUnder(at('Renamed')).map((x) => x.split(':')[0])).toEqual(['Q1/feb.txt', 'Q1/jan.txt', 'mine.txt', 'r00.txt', 'r01.txt', 'r02.txt']);
    expect(inodesUnder(at('Renamed')).filter((x) => !x.startsWith('mine.txt')).sort()).toEqual(before);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it('the same rename made locally too (a crash between the rename and its rows, its intent lost) is adopted file by file: nothing transferred', async () => {
  const { p, reports, at } = await syncedFolder('dir-alike', 3);
  try {
    const before = inodesUnder(at('Reports'));
    emu.control.renameFolder(reports, 'Renamed');
    fs.renameSync(at('Reports'), at('Renamed'));
    p.rt.cache.foldersAt = 0;
    emu.control.resetCounters();
    const r = await runPass(p.rt);
    expect(r.plan.groups.flat().map((a) => a.kind)).toEqual(Array(5).fill('adopt'));
    expect(r.converged).toBe(true);
    expect(inodesUnder(at('Renamed'))).toEqual(before);
    const c = emu.control.counters();
    expect([c['storage-get'], c['storage-put'], c.commit]).toEqual([0, 0, 0]);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it('a new local sub-folder goes along with its folder moved on the service, and waits for a remote folder there, not at the old place (black-box round 35a, F3)', async () => {
  const { p, reports, at } = await syncedFolder('dir-move-new-sub', 3);
  try {
    const c = emu.control;
    fs.mkdirSync(at('Reports/my-drafts'));
    fs.writeFileSync(at('Reports/my-drafts/draft.txt'), 'mine, not synced yet');
    const archive = c.listFolders(p.binderId).find((f) => f.name === 'Archive')!.id;
    c.moveFolder(reports, archive);
    p.rt.cache.foldersAt = 0;
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(fs.existsSync(at('Reports'))).toBe(false); // the old place is not re-created for the new sub-folder
    expect(fs.readFileSync(at('Archive/Reports/my-drafts/draft.txt'), 'utf8')).toBe('mine, not synced yet');
    const again = await runPass(p.rt);
    const waiting = again.issues.filter((i) => i.code === 'waiting-for-remote-folder');
    expect(waiting.map((i) => i.relPath)).toEqual(['Archive/Reports/my-drafts/draft.txt']);
    expect(waiting[0]?.detail).toContain('no remote folder for "Archive/Reports/my-drafts"');
  } finally {
    await p.close();
  }
});
