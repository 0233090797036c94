// Safety gates end to end: a mass remote delete stops the pass (exit 4) until --force, and a missing or
// emptied local root after a sync is an error that changes nothing remotely.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import { createWorkspace, localTree, readLocal, remoteTree, sha256, sync, type Workspace } from './harness.js';
import { expectConvergedPass, explain, syncJson, trashHashes, versionCounts } from './scenario-helpers.js';

let ws: Workspace;
afterEach(async () => {
  await ws?.close();
});

async function tenSyncedFiles(): Promise<string[]> {
  ws = await createWorkspace();
  const c = ws.emulator.control;
  const tab = c.createFolder(ws.binderId, { name: 'T' });
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) ids.push(c.addDocument(ws.binderId, tab.id, `f${i}.txt`, `content ${i}`).document.id);
  await expectConvergedPass(ws);
  expect(localTree(ws.local).size).toBe(10);
  return ids;
}

describe('max-delete gate', () => {
  it('8 of 10 deleted remotely: stops with exit 4 and trashes nothing; --force trashes them', async () => {
    const ids = await tenSyncedFiles();
    const c = ws.emulator.control;
    for (const id of ids.slice(0, 8)) c.deleteDocument(id);
    const before = localTree(ws.local);

    const r = await sync(ws);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(4);
    expect(localTree(ws.local)).toEqual(before);
    expect(trashHashes(ws)).toEqual([]);
    // The message names the pair, the share that was exceeded and how to go on.
    expect(r.stdout).toMatch(/\[main\] STOPPED: .*8 local file\(s\)/);
    expect(r.stdout).toMatch(/50% of 10/);
    expect(r.stdout).toMatch(/maxDeleteShare/);
    expect(r.stdout).toMatch(/--force/);
    // A dry run says what the gate held back, and how to list it; with --force it lists the steps, changing nothing.
    const dry = await sync(ws, ['--dry-run']);
    expect(dry.code, dry.stdout).toBe(4);
    expect(dry.stdout).toMatch(/held by the safety gate: 8 trash-local .*sync --dry-run --force/);
    expect(dry.stdout).not.toMatch(/nothing to do/);
    const dryForced = await sync(ws, ['--dry-run', '--force']);
    expect(dryForced.stdout.match(/^ {2}trash /gm), dryForced.stdout).toHaveLength(8);
    expect(localTree(ws.local)).toEqual(before);

    const forced = await syncJson(ws, ['--force']);
    expect(forced.code, explain(forced)).toBe(0);
    expect([...localTree(ws.local).keys()].sort()).toEqual(['T/f8.txt', 'T/f9.txt']);
    const trashed = trashHashes(ws).sort();
    expect(trashed).toEqual(Array.from({ length: 8 }, (_, i) => sha256(`content ${i}`)).sort());
    expect(localTree(ws.local)).toEqual(remoteTree(ws));
  });
});

describe('local root gone after a sync', () => {
  it('a missing root of a pair that never synced is created, and the log says so (a mistyped localPath shows)', async () => {
    ws = await createWorkspace();
    const tab = ws.emulator.control.createFolder(ws.binderId, { name: 'T' });
    ws.emulator.control.addDocument(ws.binderId, tab.id, 'a.txt', 'a');
    expect(fs.existsSync(ws.local)).toBe(false);
    const r = await sync(ws);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(`${r.stdout}\n${r.stderr}`).toContain(`created the sync root ${ws.local}: it did not exist`);
    expect(localTree(ws.local).get('T/a.txt')).toBe(sha256('a'));
  });

  it('a missing root is an error (nothing created, nothing changed remotely); an emptied root stops the pass', async () => {
    await tenSyncedFiles();
    const c = ws.emulator.control;
    const versionsBefore = versionCounts(ws);
    const away = path.join(ws.dir, 'local-unmounted');
    fs.renameSync(ws.local, away);
    c.resetCounters();

    const r = await sync(ws);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(6);
    expect(r.stderr).toMatch(/local root .* is missing/);
    expect(fs.existsSync(ws.local)).toBe(false);
    expect(localTree(away).size).toBe(10);
    const n = c.counters();
    expect(n.presignedupload + n['storage-put'] + n.commit).toBe(0);
    expect(versionCounts(ws)).toEqual(versionsBefore);

    // The root is back but empty (a fresh mount point): the pass stops instead of "restoring" or deleting.
    fs.mkdirSync(ws.local);
    const empty = await syncJson(ws);
    expect(empty.code, explain(empty)).toBe(4);
    expect(empty.report?.blocked?.code).toBe('local-root-empty');
    expect(localTree(ws.local).size).toBe(0);
    expect(versionCounts(ws)).toEqual(versionsBefore);
    expect(c.counters().commit).toBe(0);
  });
});

// Black-box round 29a, F3: an empty state DB was refused with a clear word, a missing one rebuilt in silence.
describe('a state DB that is gone', () => {
  it('is rebuilt by content with a warning when the pair synced before; a new pair (no directory) says nothing', async () => {
    await tenSyncedFiles();
    const quiet = await sync(ws);
    expect(`${quiet.stdout}${quiet.stderr}`).not.toContain('is missing');
    const db = path.join(ws.stateDir, 'main', 'state.db');
    fs.renameSync(db, `${db}.broken`); // as the damaged-DB hint says: moved aside
    const r = await sync(ws);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(`${r.stdout}${r.stderr}`).toContain(`pair main: its state DB ${db} is missing, but the pair has synced before (its directory still holds state.db.broken)`);
    expect(`${r.stdout}${r.stderr}`).toContain('a document deleted on the service since the last sync comes back from the local copy');
    expect(localTree(ws.local)).toEqual(remoteTree(ws));
    expect([...versionCounts(ws).values()].every((n) => n === 1)).toBe(true);
    const again = await sync(ws);
    expect(`${again.stdout}${again.stderr}`).not.toContain('is missing');

    fs.rmSync(ws.stateDir, { recursive: true }); // a whole new stateDir: a first sync, nothing to warn about
    const fresh = await sync(ws);
    expect(fresh.code).toBe(0);
    expect(`${fresh.stdout}${fresh.stderr}`).not.toContain('is missing');
  });

  it('deleted with its -wal and -shm by a pair that never trashed anything: still warned about; a file holding the version before the latest takes it (black-box round 30a, F2)', async () => {
    const ids = await tenSyncedFiles();
    const c = ws.emulator.control;
    const pairDir = path.join(ws.stateDir, 'main');
    expect(fs.readdirSync(pairDir).filter((n) => !n.startsWith('state.db'))).toEqual([]); // nothing in the trash
    c.addVersion(ids[4]!, 'v2 by a colleague'); // f4.txt here still holds v1
    for (const n of fs.readdirSync(pairDir)) fs.rmSync(path.join(pairDir, n));
    const r = await sync(ws);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(`${r.stdout}${r.stderr}`).toContain(`pair main: its state DB ${path.join(pairDir, 'state.db')} is missing, but the pair has synced before (its directory is still there, empty)`);
    expect(readLocal(ws, 'T/f4.txt')).toBe('v2 by a colleague');
    // No conflict copy: no document of bytes the service already had.
    expect(c.listDocuments(ws.binderId).map((d) => d.fileName).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `f${i}.txt`).sort());
    expect([...localTree(ws.local).keys()].filter((k) => k.includes('(conflict '))).toEqual([]);
  });
});

// Black-box round 29a, F2: with a state DB older than the last pass (restored from a backup), a file downloaded
// since looked edited: a conflict copy of content the service already had was uploaded as a new document.
describe('a state DB restored from an older backup', () => {
  it('a local file that is an earlier version of its document takes the latest, with no conflict copy', async () => {
    const ids = await tenSyncedFiles();
    const c = ws.emulator.control;
    const backup = `${ws.stateDir}.backup`;
    fs.cpSync(ws.stateDir, backup, { recursive: true });
    c.addVersion(ids[2]!, 'v2 of f2');
    expect((await sync(ws)).code).toBe(0); // f2 downloaded: the local file is v2
    c.addVersion(ids[2]!, 'v3 of f2, a colleague\'s');
    fs.rmSync(ws.stateDir, { recursive: true });
    fs.renameSync(backup, ws.stateDir); // the backup says f2 is at v1

    const r = await sync(ws);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(`${r.stdout}${r.stderr}`).toContain('the local file was an earlier version of the document: replaced by the latest');
    // Said as what it is in the pass's line, not as a conflict (black-box round 30a, F5).
    expect(r.stdout).toMatch(/\] 1 earlier version replaced by the latest; /);
    expect(r.stdout).not.toMatch(/\d conflict/);
    expect(localTree(ws.local).get('T/f2.txt')).toBe(sha256("v3 of f2, a colleague's"));
    expect(localTree(ws.local).size).toBe(10); // no conflict copy
    expect(c.listDocuments(ws.binderId)).toHaveLength(10); // nothing uploaded
    expect(trashHashes(ws)).toContain(sha256('v2 of f2'));
    expect(localTree(ws.local)).toEqual(remoteTree(ws));
  });

  it('a local revert to a version older than the base is an edit: with a remote edit too, both are kept', async () => {
    const ids = await tenSyncedFiles();
    const c = ws.emulator.control;
    c.addVersion(ids[3]!, 'v2 of f3');
    expect((await sync(ws)).code).toBe(0);
    fs.writeFileSync(path.join(ws.local, 'T', 'f3.txt'), 'content 3'); // back to v1, on purpose
    c.addVersion(ids[3]!, 'v3 of f3, a colleague\'s');
    const r = await sync(ws);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(`${r.stdout}${r.stderr}`).not.toContain('earlier version of the document');
    const copies = [...localTree(ws.local)].filter(([p]) => p.startsWith('T/f3 (conflict'));
    expect(copies.map(([, h]) => h)).toEqual([sha256('content 3')]);
    expect(localTree(ws.local).get('T/f3.txt')).toBe(sha256("v3 of f3, a colleague's"));
  });
});

describe('a pair pointed at another binder', () => {
  it('is refused (exit 2) with the recorded and configured binders named; nothing local or remote changes', async () => {
    await tenSyncedFiles();
    const before = localTree(ws.local);
    const c = ws.emulator.control;
    const other = c.createBinder({ name: 'Other' });
    c.addDocument(other.id, c.createFolder(other.id, { name: 'T' }).id, 'elsewhere.txt', 'x');
    ws.writeConfig({ binderId: other.id });
    const r = await sync(ws);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`synced with binder ${ws.binderId}`);
    expect(r.stderr).toContain(other.id);
    expect(localTree(ws.local)).toEqual(before);
    expect(trashHashes(ws)).toEqual([]);
    expect(c.listDocuments(other.id).map((d) => d.fileName)).toEqual(['elsewhere.txt']);
    // Back to the right binder: in sync as before.
    ws.writeConfig();
    expect((await sync(ws)).code).toBe(0);
  });
});


describe('a pair pointed at another local folder', () => {
  it('is refused (exit 2) when the new folder does not hold the synced files: nothing is uploaded from it or restored into it', async () => {
    await tenSyncedFiles();
    const c = ws.emulator.control;
    const versionsBefore = versionCounts(ws);
    // Another folder, with unrelated files: one of them at a synced file's path (T/f1.txt), one new.
    const other = path.join(ws.dir, 'other');
    fs.mkdirSync(path.join(other, 'T'), { recursive: true });
    fs.writeFileSync(path.join(other, 'T/f1.txt'), 'an unrelated file that happens to share the name');
    fs.writeFileSync(path.join(other, 'T/mine.txt'), 'unrelated');
    const otherBefore = localTree(other);
    ws.writeConfig({ localPath: './other' });
    const r = await sync(ws);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`synced with the local folder ${ws.local}, but the config now says ${other}`);
    expect(r.stderr).toMatch(/set localPath back to/);
    expect(localTree(other)).toEqual(otherBefore);
    expect(versionCounts(ws)).toEqual(versionsBefore);
    expect(c.counters().commit).toBe(0);
    // Back to the synced folder: in sync as before.
    ws.writeConfig();
    expect((await sync(ws)).code).toBe(0);
    expect(c.counters().commit).toBe(0);
  });

  it('is refused when the new folder has files of the synced names and sizes that are not those files (two pairs swapped)', async () => {
    await tenSyncedFiles();
    const c = ws.emulator.control;
    const other = path.join(ws.dir, 'other');
    fs.mkdirSync(path.join(other, 'T'), { recursive: true });
    // 'content N' is 9 bytes: each stand-in has the name, size and mtime of a synced file (files written in one
    // clock tick share their mtime), not its content.
    for (let i = 0; i < 10; i++) {
      const standIn = path.join(other, `T/f${i}.txt`);
      fs.writeFileSync(standIn, `OTHER ${i}!!`);
      const synced = fs.statSync(path.join(ws.local, `T/f${i}.txt`));
      fs.utimesSync(standIn, synced.atime, synced.mtime);
    }
    ws.writeConfig({ localPath: './other' });
    const r = await sync(ws);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toContain(`while ${ws.local} still holds the synced files (10 of 10 looked at)`);
    expect(c.counters().commit).toBe(0);
    // Even an exact copy (cp -a: content and times) is refused while the synced folder is still there: two binders
    // that share template files look just like that (black-box round 11, F2).
    const copy = path.join(ws.dir, 'copy');
    expect(spawnSync('cp', ['-a', ws.local, copy]).status).toBe(0);
    ws.writeConfig({ localPath: './copy' });
    const refused = await sync(ws);
    expect(refused.code, refused.stdout + refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`If ${copy} is a copy of it, move ${ws.local} away first`);
    // A dry run (what the hint's reader tries first) is refused alike: the same code, no stack trace of the token
    // request its stop cancelled (black-box round 37b, F2: exit 1, "would change something", with a trace).
    const dry = await sync(ws, ['--dry-run']);
    expect(dry.stderr).not.toMatch(/ServiceError|    at /);
    expect(dry.code, dry.stdout + dry.stderr).toBe(2);
    expect(dry.stderr).toContain(`If ${copy} is a copy of it, move ${ws.local} away first`);
    // With the original moved away, the copy is the synced folder.
    fs.renameSync(ws.local, path.join(ws.dir, 'original'));
    const copied = await sync(ws);
    expect(copied.code, copied.stdout + copied.stderr).toBe(0);
    expect(copied.stdout + copied.stderr).toContain(`the sync root is now ${copy}`);
    expect(c.counters().commit).toBe(0);
  });

  it('is refused when the old folder is gone and the new one has a synced file\'s content but not its time (an empty file)', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    c.addDocument(ws.binderId, tab.id, '__init__.py', '');
    for (let i = 0; i < 5; i++) c.addDocument(ws.binderId, tab.id, `f${i}.txt`, `content ${i}`);
    expect((await sync(ws)).code).toBe(0);
    const versionsBefore = versionCounts(ws);
    fs.rmSync(ws.local, { recursive: true });
    const other = path.join(ws.dir, 'unrelated');
    fs.mkdirSync(path.join(other, 'T'), { recursive: true });
    fs.writeFileSync(path.join(other, 'T/__init__.py'), '');
    const anHourAgo = new Date(Date.now() - 3_600_000);
    fs.utimesSync(path.join(other, 'T/__init__.py'), anHourAgo, anHourAgo); // the unrelated folder's own file, older
    fs.writeFileSync(path.join(other, 'T/f1.txt'), 'an unrelated file');
    const otherBefore = localTree(other);
    ws.writeConfig({ localPath: './unrelated' });
    const r = await sync(ws);
    expect(r.code, r.stdout + r.stderr).toBe(2);
    expect(r.stderr).toContain('which does not hold the synced files (0 of 6 looked for, 3 needed)');
    expect(r.stderr).toContain(`${ws.local} is gone`);
    expect(localTree(other)).toEqual(otherBefore);
    expect(versionCounts(ws)).toEqual(versionsBefore);
    expect(c.counters().commit).toBe(0);
  });

  it('another folder at the same path (synced folders swapped on disk): refused until the synced one is back; a copy with times or an empty mount point is not refused', async () => {
    await tenSyncedFiles();
    const c = ws.emulator.control;
    const versionsBefore = versionCounts(ws);
    const synced = path.join(ws.dir, 'synced-away');
    fs.renameSync(ws.local, synced);
    fs.mkdirSync(path.join(ws.local, 'T'), { recursive: true });
    for (let i = 0; i < 10; i++) fs.writeFileSync(path.join(ws.local, `T/f${i}.txt`), `another binder's ${i}`);
    const r = await sync(ws);
    expect(r.code, r.stdout + r.stderr).toBe(6);
    expect(r.stderr).toContain(`the folder at ${ws.local} is not the synced one: another folder took its place, and it does not hold the synced files (0 of 10 found with their content and time)`);
    expect(r.stderr).toContain('put the synced folder back');
    // Nor is a folder whose files all have other names (two roots swapped whose binders share no file name: round 13, H1).
    fs.rmSync(ws.local, { recursive: true });
    fs.mkdirSync(path.join(ws.local, 'T'), { recursive: true });
    fs.writeFileSync(path.join(ws.local, 'T/another binder.txt'), 'not ours');
    expect((await sync(ws)).code).toBe(6);
    expect(versionCounts(ws)).toEqual(versionsBefore);
    expect(c.counters().commit).toBe(0);
    // An empty folder in its place (a disk not mounted): the safety gate speaks, as before.
    fs.rmSync(ws.local, { recursive: true });
    fs.mkdirSync(ws.local);
    expect((await sync(ws)).code).toBe(4);
    // A copy with its times (restored from a backup with cp -a) is the synced folder; so is the original, back.
    fs.rmSync(ws.local, { recursive: true });
    expect(spawnSync('cp', ['-a', synced, ws.local]).status).toBe(0);
    const restored = await sync(ws);
    expect(restored.code, restored.stdout + restored.stderr).toBe(0);
    expect(restored.stdout + restored.stderr).toContain('is another folder than before, holding the synced files');
    fs.rmSync(ws.local, { recursive: true });
    fs.renameSync(synced, ws.local);
    expect((await sync(ws)).code).toBe(0);
    expect(versionCounts(ws)).toEqual(versionsBefore);
    expect(c.counters().commit).toBe(0);
  });

  it('is taken as moved when the new folder holds the synced files (mv, then localPath changed): nothing is uploaded', async () => {
    await tenSyncedFiles();
    const c = ws.emulator.control;
    const moved = path.join(ws.dir, 'moved');
    fs.renameSync(ws.local, moved);
    fs.writeFileSync(path.join(moved, 'T/f2.txt'), 'edited after the move');
    ws.writeConfig({ localPath: './moved' });
    const r = await sync(ws);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toContain(`the sync root is now ${moved}`);
    expect(c.counters().commit).toBe(1); // the edit, as the next version of its document
    expect(localTree(moved)).toEqual(remoteTree(ws));
    expect(fs.existsSync(ws.local)).toBe(false);
  });

  it('is taken as moved when the old folder is gone, even with most files saved anew since (new inodes and times)', async () => {
    await tenSyncedFiles();
    const c = ws.emulator.control;
    const moved = path.join(ws.dir, 'moved');
    fs.renameSync(ws.local, moved);
    for (let i = 0; i < 8; i++) {
      // An editor's save: a new file renamed over the old one.
      fs.writeFileSync(path.join(moved, `T/.f${i}.new`), `saved anew ${i}`);
      fs.renameSync(path.join(moved, `T/.f${i}.new`), path.join(moved, `T/f${i}.txt`));
    }
    ws.writeConfig({ localPath: './moved' });
    const r = await sync(ws);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(c.counters().commit).toBe(8); // the eight edits, each as the next version of its document
    expect(c.listDocuments(ws.binderId)).toHaveLength(10);
  });
});

describe('a pair pointed at another server', () => {
  it('a clone with the same binder id but other documents: the gate stops the pass and says the service changed', async () => {
    await tenSyncedFiles();
    const before = localTree(ws.local);
    const clone = await startEmulator({ quiet: true });
    try {
      const cc = clone.control;
      cc.createBinder({ name: 'Clone', id: ws.binderId });
      const tab = cc.createFolder(ws.binderId, { name: 'T' });
      for (let i = 0; i < 10; i++) cc.addDocument(ws.binderId, tab.id, `other ${i}.txt`, `other ${i}`);
      const k = clone.credentials;
      ws.writeConfig({}, { service: { baseUrl: clone.baseUrl, authUrl: clone.authUrl, tenantId: k.tenantId, clientId: k.clientId, clientSecret: k.clientSecret } });
      const r = await sync(ws);
      expect(r.code, r.stdout + r.stderr).toBe(4);
      const said = r.stdout + r.stderr;
      expect(said).toContain(`the service changed since the last pass: was ${ws.emulator.baseUrl} (tenant ${ws.emulator.credentials.tenantId}), now ${clone.baseUrl}`);
      expect(localTree(ws.local)).toEqual(before);
      expect(trashHashes(ws)).toEqual([]);
      // Pointed back: in sync as before, and nothing more is said of a change.
      ws.writeConfig();
      const back = await sync(ws);
      expect(back.code).toBe(0);
      expect(back.stdout + back.stderr).not.toContain('the service changed');
    } finally {
      await clone.close();
    }
  });
});
