// The sync command end to end: the real CLI in a child process against the emulator over loopback.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, localTree, readLocal, remoteTree, sha256, sync, writeLocal, type Workspace } from './harness.js';

let ws: Workspace;
afterEach(async () => {
  await ws?.close();
});

describe('binder-sync sync', () => {
  it('downloads a nested tree, then a second pass does nothing', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'Contracts' });
    const sub = c.createFolder(ws.binderId, { name: '2026', parentId: tab.id });
    const deep = c.createFolder(ws.binderId, { name: 'Q4', parentId: sub.id });
    c.addDocument(ws.binderId, tab.id, 'readme.txt', 'hello');
    c.addDocument(ws.binderId, deep.id, 'deal.csv', 'a,b\n1,2\n');
    c.addDocument(ws.binderId, sub.id, 'empty.bin', Buffer.alloc(0));
    c.createFolder(ws.binderId, { name: 'Empty tab' });

    const first = await sync(ws);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(localTree(ws.local)).toEqual(remoteTree(ws));
    expect(readLocal(ws, 'Contracts/2026/Q4/deal.csv')).toBe('a,b\n1,2\n');
    expect(fs.statSync(path.join(ws.local, 'Contracts/2026/empty.bin')).size).toBe(0);
    expect(fs.statSync(path.join(ws.local, 'Empty tab')).isDirectory()).toBe(true);

    c.resetCounters();
    const second = await sync(ws, ['--json']);
    expect(second.code).toBe(0);
    const [report] = JSON.parse(second.stdout) as Array<{ actions: string[]; hashed: number; bytesDownloaded: number }>;
    expect(report?.actions).toEqual([]);
    expect(report?.hashed).toBe(0);
    const counters = c.counters();
    expect(counters['storage-get'] + counters['storage-put'] + counters.commit + counters.downloadlink).toBe(0);
  });

  it('uploads new local files into existing remote folders and edits as new versions', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'Reports' });
    expect((await sync(ws)).code).toBe(0);
    writeLocal(ws, 'Reports/q1.txt', 'first');
    const up = await sync(ws);
    expect(up.code).toBe(0);
    const docs = c.listDocuments(ws.binderId);
    expect(docs.map((d) => d.fileName)).toEqual(['q1.txt']);
    expect(docs[0]?.folderId).toBe(tab.id);

    writeLocal(ws, 'Reports/q1.txt', 'second, longer');
    expect((await sync(ws)).code).toBe(0);
    const versions = c.listVersions(docs[0]!.id);
    expect(versions.map((v) => v.version)).toEqual(['1', '2']);
    expect(c.readContent(docs[0]!.id).toString()).toBe('second, longer');
    expect(c.listDocuments(ws.binderId)).toHaveLength(1);
  });

  // Black-box round 30b, F10: a label past 2^53 or a decimal one was followed by "2" (labels went backwards).
  it('labels an edit with the next integer above the highest numeric label, past 2^53 and after a decimal one', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'Reports' });
    const big = c.addDocument(ws.binderId, tab.id, 'big.txt', 'v1', { versionLabel: '1' }).document.id;
    c.addVersion(big, 'v2', { versionLabel: '9007199254740993' });
    const dec = c.addDocument(ws.binderId, tab.id, 'dec.txt', 'v1', { versionLabel: '1' }).document.id;
    c.addVersion(dec, 'v2', { versionLabel: '2.9' });
    expect((await sync(ws)).code).toBe(0);
    writeLocal(ws, 'Reports/big.txt', 'local edit');
    writeLocal(ws, 'Reports/dec.txt', 'local edit');
    expect((await sync(ws)).code).toBe(0);
    expect(c.listVersions(big).map((v) => v.version)).toEqual(['1', '9007199254740993', '9007199254740994']);
    expect(c.listVersions(dec).map((v) => v.version)).toEqual(['1', '2.9', '3']);
  });

  it('brings remote edits, renames and moves down, and trashes remote deletes', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const a = c.createFolder(ws.binderId, { name: 'A' });
    const b = c.createFolder(ws.binderId, { name: 'B' });
    const { document: d1 } = c.addDocument(ws.binderId, a.id, 'one.txt', 'one');
    const { document: d2 } = c.addDocument(ws.binderId, a.id, 'two.txt', 'two');
    const { document: d3 } = c.addDocument(ws.binderId, a.id, 'three.txt', 'three');
    c.addDocument(ws.binderId, a.id, 'four.txt', 'four');
    expect((await sync(ws)).code).toBe(0);
    const inodeBefore = fs.statSync(path.join(ws.local, 'A/two.txt')).ino;

    c.addVersion(d1.id, 'one v2');
    c.renameDocument(d2.id, 'zwei.txt');
    c.moveDocument(d3.id, b.id);
    const r = await sync(ws);
    expect(r.code).toBe(0);
    expect(readLocal(ws, 'A/one.txt')).toBe('one v2');
    expect(fs.existsSync(path.join(ws.local, 'A/two.txt'))).toBe(false);
    // A remote rename is applied as a local move (same inode), not as delete + download.
    expect(fs.statSync(path.join(ws.local, 'A/zwei.txt')).ino).toBe(inodeBefore);
    expect(readLocal(ws, 'B/three.txt')).toBe('three');
    expect(localTree(ws.local)).toEqual(remoteTree(ws));

    c.deleteDocument(d1.id);
    const del = await sync(ws);
    expect(del.code).toBe(0);
    expect(fs.existsSync(path.join(ws.local, 'A/one.txt'))).toBe(false);
    // The removed content is kept in the trash under stateDir.
    const trashed = [...localTree(path.join(ws.stateDir, 'main', 'trash')).values()];
    expect(trashed).toContain(sha256('one v2'));
  });

  it('keeps both sides of a conflict and uploads the local edit as its own document', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    const { document } = c.addDocument(ws.binderId, tab.id, 'plan.md', 'base');
    expect((await sync(ws)).code).toBe(0);
    writeLocal(ws, 'T/plan.md', 'local edit');
    c.addVersion(document.id, 'remote edit');
    const r = await sync(ws);
    expect(r.code).toBe(0);
    expect(readLocal(ws, 'T/plan.md')).toBe('remote edit');
    const names = fs.readdirSync(path.join(ws.local, 'T'));
    const copy = names.find((n) => n.includes('conflict'));
    expect(copy).toBeDefined();
    expect(readLocal(ws, `T/${copy}`)).toBe('local edit');
    expect(localTree(ws.local)).toEqual(remoteTree(ws));
  });

  it('dry-run prints the plan and changes nothing', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    c.addDocument(ws.binderId, tab.id, 'x.txt', 'x');
    const r = await sync(ws, ['--dry-run']);
    expect(r.stdout).toMatch(/download\s+T\/x\.txt/);
    expect(r.code).toBe(1); // a download is left to do
    // A pair that never synced: neither its sync root nor the stateDir (with a state DB) is created.
    expect(fs.existsSync(ws.local)).toBe(false);
    expect(fs.existsSync(ws.stateDir)).toBe(false);
    expect(c.counters()['storage-get']).toBe(0);
    // The real pass then does what the dry run listed.
    expect((await sync(ws)).code).toBe(0);
    expect(readLocal(ws, 'T/x.txt')).toBe('x');
  });

  it('dry-run with no record of the last sync (a lost state DB) lists files on both sides as compared, not as conflicts', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    c.addDocument(ws.binderId, tab.id, 'same.txt', 'same');
    c.addDocument(ws.binderId, tab.id, 'other.txt', 'remote');
    expect((await sync(ws)).code).toBe(0);
    writeLocal(ws, 'T/other.txt', 'local');
    fs.rmSync(path.join(ws.stateDir, 'main'), { recursive: true });
    const r = await sync(ws, ['--dry-run']);
    expect(r.stdout).toMatch(/^ {2}compare +T\/same\.txt {2}\(no record of the last sync: fetched and compared; the same content is only recorded, different content is settled keep-both, local copy -> T\/same \(conflict .*\)\.txt\)$/m);
    expect(r.stdout).toMatch(/^ {2}compare +T\/other\.txt /m);
    expect(r.stdout).not.toMatch(/^ {2}conflict /m);
    // The real pass does as said: the same file recorded, the different one kept both ways.
    const real = await sync(ws);
    expect(real.code, real.stdout + real.stderr).toBe(0);
    expect(readLocal(ws, 'T/same.txt')).toBe('same');
    expect(readLocal(ws, 'T/other.txt')).toBe('remote');
    expect([...localTree(ws.local).keys()].filter((p) => p.startsWith('T/other (conflict '))).toHaveLength(1);
  });

  it('dry-run after a sync leaves the state DB and the sync root exactly as they were', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    const { document: doc } = c.addDocument(ws.binderId, tab.id, 'x.txt', 'x');
    c.addDocument(ws.binderId, tab.id, 'y.txt', 'y');
    expect((await sync(ws)).code).toBe(0);
    writeLocal(ws, 'T/y.txt', 'local edit');
    writeLocal(ws, 'T/new.txt', 'new');
    c.addVersion(doc.id, 'remote edit');
    const stateFiles = () => new Map(fs.readdirSync(path.join(ws.stateDir, 'main')).filter((n) => n.startsWith('state.db')).map((n) => [n, sha256(fs.readFileSync(path.join(ws.stateDir, 'main', n)))]));
    const stateBefore = stateFiles();
    const treeBefore = localTree(ws.local);
    // Nothing may be created in the root, not even for a moment (the case probe of a real pass makes a file).
    const created: string[] = [];
    const watcher = fs.watch(ws.local, (_event, name) => created.push(String(name)));
    try {
      const r = await sync(ws, ['--dry-run']);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stdout).toMatch(/download\s+T\/x\.txt/);
      expect(r.stdout).toMatch(/upload\s+T\/y\.txt/);
      expect(r.stdout).toMatch(/upload\s+T\/new\.txt/);
      await new Promise((resolve) => setTimeout(resolve, 100)); // events of the child's last writes
    } finally {
      watcher.close();
    }
    expect(created).toEqual([]);
    expect(stateFiles()).toEqual(stateBefore);
    expect(localTree(ws.local)).toEqual(treeBefore);
    // The plan the dry run saw is still the one the real pass makes.
    expect((await sync(ws)).code).toBe(0);
    expect(readLocal(ws, 'T/x.txt')).toBe('remote edit');
    expect(localTree(ws.local)).toEqual(remoteTree(ws));
  });
});

describe('binder-sync sync: what the service cannot do', () => {
  it('a file deleted locally comes back, with a warning that says why and how to stop it', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'Docs' });
    c.addDocument(ws.binderId, tab.id, 'keep.txt', 'kept by the service');
    c.addDocument(ws.binderId, tab.id, 'other.txt', 'so the root is not empty (that is a safety gate of its own)');
    expect((await sync(ws)).code).toBe(0);
    fs.rmSync(path.join(ws.local, 'Docs/keep.txt'));
    const r = await sync(ws);
    expect(r.code).toBe(0);
    expect(readLocal(ws, 'Docs/keep.txt')).toBe('kept by the service');
    const logs = r.stdout + r.stderr;
    expect(logs).toContain('restored a file that was deleted or renamed locally');
    expect(r.stdout).toContain('[main] restored 1 file deleted or renamed locally (Docs/keep.txt): the service has no delete or rename; localDeletePolicy: forget stops this');
  });
});
