// The executor's directory move (move-dir-local) against a real temp dir and state DB: one rename of the directory
// (same inode, every file's inode and ctime kept), every base row moved in one transaction, one log line; never
// over anything (a target that exists, a source that is another directory now, a target outside the root), and
// the steps after it run apart once it is done. Also the recovery of its intent after a crash.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { Trash, toFileStat } from '../../src/local/fs-ops.js';
import { StateStore } from '../../src/state/store.js';
import type { ExecutorDeps } from '../../src/sync/executor-deps.js';
import { describeDone, executePlan } from '../../src/sync/executor.js';
import { recordDirMoveIntent, recoverIntents } from '../../src/sync/intents.js';
import type { Action, BaseEntry, DirMoveFile, Plan } from '../../src/sync/model.js';

let dir: string;
let store: StateStore | undefined;
afterEach(() => {
  store?.close();
  store = undefined;
  fs.rmSync(dir, { recursive: true, force: true });
});

const sha = (s: string | Buffer): string => createHash('sha256').update(s).digest('hex');

/** Downloads write `remote <documentId>`; the documents named in `failing` fail. */
function fakeClient(failing: ReadonlySet<string> = new Set()): ExecutorDeps['client'] {
  return {
    downloadVersionTo: async (documentId: string, _versionId: string, dest: Writable) => {
      if (failing.has(documentId)) {
        const err = new Error(`no ${documentId}`);
        dest.destroy(err);
        throw err;
      }
      const body = Buffer.from(`remote ${documentId}`);
      await new Promise<void>((resolve, reject) => {
        dest.once('error', reject);
        dest.end(body, () => resolve());
      });
      return { bytes: body.length, sha256: sha(body) };
    },
  } as unknown as ExecutorDeps['client'];
}

function setup(client: ExecutorDeps['client'] = fakeClient()): ExecutorDeps & { store: StateStore } {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exec-move-dir-'));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  store = StateStore.open(path.join(dir, 'state.db'));
  return {
    pair: 'p', root, binderId: 'B', caseInsensitive: false, client, store,
    trash: new Trash(path.join(dir, 'trash'), root), log: pino({ level: 'silent' }),
    metadata: { forPath: () => [], valuesFor: () => [], missingFor: () => [], accepts: () => true }, versionLabelScheme: 'integer', now: () => new Date(0), concurrency: 4,
  };
}

const abs = (d: ExecutorDeps, rel: string) => path.join(d.root, ...rel.split('/'));

/** Synced files Old/a.txt, Old/b.txt, Old/Sub/c.txt (rows in folder F), and the move of Old to `to`, as planned. */
function syncedDir(d: ExecutorDeps & { store: StateStore }, to = 'Renamed'): Extract<Action, { kind: 'move-dir-local' }> {
  const files: DirMoveFile[] = [];
  for (const [id, rel] of [['d1', 'Old/a.txt'], ['d2', 'Old/b.txt'], ['d3', 'Old/Sub/c.txt']] as const) {
    fs.mkdirSync(path.dirname(abs(d, rel)), { recursive: true });
    fs.writeFileSync(abs(d, rel), `content ${id}`);
    const stat = toFileStat(fs.lstatSync(abs(d, rel)));
    const row: BaseEntry = { documentId: id, versionId: 'v1', versionLabel: '1', folderId: 'F', fileName: path.basename(rel), relPath: rel, key: rel, sha256: sha(`content ${id}`), ...stat };
    d.store.putBase(row);
    const next = `${to}${rel.slice(3)}`;
    files.push({ documentId: id, from: rel, to: next, toKey: next, folderId: 'F', fileName: path.basename(rel), expectLocal: stat, sha256: row.sha256 });
  }
  return { kind: 'move-dir-local', from: 'Old', fromKey: 'Old', to, toKey: to, inode: fs.lstatSync(abs(d, 'Old')).ino, folderId: 'F', files };
}

const plan = (...groups: Action[][]): Plan => ({ groups, issues: [], blocked: null });

describe('move-dir-local', () => {
  it('renames the directory once: its inode, the files\' inodes and ctimes kept, every row moved, one log line', async () => {
    const d = setup();
    const lines: Array<{ msg: string; from?: string; to?: string; files?: number }> = [];
    d.log = createLogger({ destination: { write: (s: string) => { for (const l of s.split('\n')) if (l.trim()) lines.push(JSON.parse(l)); return true; } } as unknown as Writable, level: 'debug' });
    const move = syncedDir(d);
    fs.writeFileSync(abs(d, 'Old/new.txt'), 'a new file moves along');
    // An edit since the sync: its row keeps the synced stat and hash (its upload, planned after the move, records it).
    fs.writeFileSync(abs(d, 'Old/b.txt'), 'edited');
    const edited = toFileStat(fs.lstatSync(abs(d, 'Old/b.txt')));
    move.files[1] = { ...move.files[1]!, expectLocal: edited, sha256: sha('edited') };
    const before = new Map(['a.txt', 'b.txt', 'Sub/c.txt', 'new.txt'].map((n) => [n, fs.lstatSync(abs(d, `Old/${n}`))]));
    const dirInode = move.inode;
    const r = await executePlan(plan([move]), d);
    expect(r.failures).toEqual([]);
    expect(fs.existsSync(abs(d, 'Old'))).toBe(false);
    expect(fs.lstatSync(abs(d, 'Renamed')).ino).toBe(dirInode);
    for (const [n, st] of before) {
      const now = fs.lstatSync(abs(d, `Renamed/${n}`));
      expect([now.ino, now.ctimeMs, now.mtimeMs], n).toEqual([st.ino, st.ctimeMs, st.mtimeMs]);
    }
    expect(d.store.getBase('d1')).toMatchObject({ relPath: 'Renamed/a.txt', key: 'Renamed/a.txt', ...toFileStat(before.get('a.txt')!), sha256: sha('content d1') });
    expect(d.store.getBase('d3')).toMatchObject({ relPath: 'Renamed/Sub/c.txt', key: 'Renamed/Sub/c.txt' });
    const b = d.store.getBase('d2')!;
    expect(b.relPath).toBe('Renamed/b.txt');
    expect(b.sha256).toBe(sha('content d2'));
    expect(b.mtimeMs === edited.mtimeMs && b.size === edited.size).toBe(false);
    expect(d.store.listIntents()).toEqual([]);
    expect(r.done).toEqual({ 'move-dir-local': 1 });
    expect(describeDone(r)).toBe('1 move-dir-local (3 files)');
    expect(r.followedDirs).toEqual(new Map([['Old', 'F']]));
    expect([...r.vacatedDirs]).toEqual(['']);
    expect(lines.filter((l) => l.msg.startsWith('moved'))).toEqual([expect.objectContaining({ from: 'Old', to: 'Renamed', files: 3 })]);
  });

  it('a file being written through an open descriptor ends up whole in the new directory', async () => {
    const d = setup();
    const move = syncedDir(d);
    const fd = fs.openSync(abs(d, 'Old/log.txt'), 'w');
    fs.writeSync(fd, 'first half, ');
    const r = await executePlan(plan([move]), d);
    fs.writeSync(fd, 'second half');
    fs.closeSync(fd);
    expect(r.failures).toEqual([]);
    expect(fs.readFileSync(abs(d, 'Renamed/log.txt'), 'utf8')).toBe('first half, second half');
    expect(fs.existsSync(abs(d, 'Old'))).toBe(false);
  });

  it.each([
    ['a directory', (d: ExecutorDeps) => fs.mkdirSync(abs(d, 'Renamed'))],
    ['a file', (d: ExecutorDeps) => fs.writeFileSync(abs(d, 'Renamed'), 'theirs')],
    ['a directory holding a file', (d: ExecutorDeps) => { fs.mkdirSync(abs(d, 'Renamed')); fs.writeFileSync(abs(d, 'Renamed/x.txt'), 'theirs'); }],
  ])('refuses when %s appeared at the new place: nothing moved, nothing recorded, the steps after it not run', async (_what, make) => {
    const d = setup();
    const move = syncedDir(d);
    make(d);
    const mkdir: Action = { kind: 'mkdir-local', relPath: 'Renamed/New', key: 'Renamed/New', folderId: 'G', reason: 'new-remote-folder' };
    const r = await executePlan(plan([move, mkdir]), d);
    expect(r.failures.map((f) => [f.kind, f.relPath, f.code])).toEqual([['move-dir-local', 'Old', 'LOCAL_TARGET_EXISTS']]);
    expect(fs.readFileSync(abs(d, 'Old/a.txt'), 'utf8')).toBe('content d1');
    expect(fs.existsSync(abs(d, 'Renamed/New'))).toBe(false);
    expect(d.store.getBase('d1')?.relPath).toBe('Old/a.txt');
    expect(d.store.listIntents()).toEqual([]);
  });

  it('refuses a source that is another directory now (same name, other inode), and removes the directory it made', async () => {
    const d = setup();
    const move = syncedDir(d);
    fs.renameSync(abs(d, 'Old'), abs(d, 'Elsewhere'));
    fs.mkdirSync(abs(d, 'Old'));
    fs.writeFileSync(abs(d, 'Old/other.txt'), 'another folder of that name');
    const r = await executePlan(plan([move]), d);
    expect(r.failures.map((f) => [f.kind, f.code])).toEqual([['move-dir-local', 'LOCAL_CHANGED']]);
    expect(fs.existsSync(abs(d, 'Renamed'))).toBe(false);
    expect(fs.readFileSync(abs(d, 'Old/other.txt'), 'utf8')).toBe('another folder of that name');
    expect(d.store.getBase('d1')?.relPath).toBe('Old/a.txt');
  });

  it('refuses a source replaced by a symbolic link to the directory', async () => {
    const d = setup();
    const move = syncedDir(d);
    fs.renameSync(abs(d, 'Old'), abs(d, 'Real'));
    fs.symlinkSync('Real', abs(d, 'Old'));
    const r = await executePlan(plan([move]), d);
    expect(r.failures.map((f) => f.code)).toEqual(['LOCAL_CHANGED']);
    expect(fs.lstatSync(abs(d, 'Old')).isSymbolicLink()).toBe(true);
    expect(fs.existsSync(abs(d, 'Renamed'))).toBe(false);
  });

  it('never writes outside the sync root: a new place under a folder that became a symbolic link out of it is refused', async () => {
    const d = setup();
    const move = syncedDir(d, 'Parent/Renamed');
    const outside = path.join(dir, 'outside');
    fs.mkdirSync(outside);
    fs.symlinkSync(outside, abs(d, 'Parent'));
    const r = await executePlan(plan([move]), d);
    expect(r.failures.map((f) => f.code)).toEqual(['PATH_ESCAPE']);
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(fs.existsSync(abs(d, 'Old/a.txt'))).toBe(true);
  });

  it('the steps after the move run apart once it is done: one failing does not stop the others', async () => {
    const d = setup(fakeClient(new Set(['d8'])));
    const move = syncedDir(d);
    const download = (id: string, rel: string): Action => ({ kind: 'download', relPath: rel, key: rel, expectLocal: null, reason: 'new-remote', doc: { documentId: id, fileName: path.basename(rel), folderId: 'F', versionId: 'v', relPath: rel, key: rel } });
    const r = await executePlan(plan([move, download('d8', 'Renamed/x.txt'), download('d9', 'Renamed/y.txt'), { kind: 'mkdir-local', relPath: 'Renamed/New', key: 'Renamed/New', folderId: 'G', reason: 'new-remote-folder' }]), d);
    expect(r.failures.map((f) => f.relPath)).toEqual(['Renamed/x.txt']);
    expect(fs.readFileSync(abs(d, 'Renamed/y.txt'), 'utf8')).toBe('remote d9');
    expect(fs.statSync(abs(d, 'Renamed/New')).isDirectory()).toBe(true);
    expect(r.done).toEqual({ 'move-dir-local': 1, download: 1, 'mkdir-local': 1 });
  });
});

describe('recovery of a directory move after a crash', () => {
  it('the directory at its new place: the rows follow it; not moved: the intent is dropped and the rows stay', async () => {
    const d = setup();
    const move = syncedDir(d);
    const intent = { fromDir: 'Old', fromKey: 'Old', toDir: 'Renamed', toKey: 'Renamed', inode: move.inode, documentIds: ['d1', 'd2', 'd3'] };
    recordDirMoveIntent(d.store, intent);
    expect(await recoverIntents(d.store, d.root, pino({ level: 'silent' }))).toBe(0); // killed before the rename
    expect(d.store.getBase('d1')?.relPath).toBe('Old/a.txt');
    recordDirMoveIntent(d.store, intent);
    fs.renameSync(abs(d, 'Old'), abs(d, 'Renamed')); // killed after it
    expect(await recoverIntents(d.store, d.root, pino({ level: 'silent' }))).toBe(1);
    expect(['d1', 'd2', 'd3'].map((id) => d.store.getBase(id)?.relPath)).toEqual(['Renamed/a.txt', 'Renamed/b.txt', 'Renamed/Sub/c.txt']);
    expect(d.store.getBase('d3')?.key).toBe('Renamed/Sub/c.txt');
    expect(d.store.listIntents()).toEqual([]);
  });
});
