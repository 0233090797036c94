// A directory move the file system refuses for where the directory is (a mount point: EBUSY; a move across mounts:
// EXDEV) falls back to a move per file, which works across disks, instead of failing on every pass (black-box round
// 36a, F1). moveDir is made to refuse as a mount would (no mount in a test); the per-file moves are real.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, expect, it, vi } from 'vitest';
import { BinderSyncError } from '../../src/errors.js';
import { Trash, toFileStat } from '../../src/local/fs-ops.js';
import { StateStore } from '../../src/state/store.js';
import type { ExecutorDeps } from '../../src/sync/executor-deps.js';
import { executePlan } from '../../src/sync/executor.js';
import type { Action, BaseEntry, DirMoveFile } from '../../src/sync/model.js';

const refusal = { errno: 'EXDEV' };
vi.mock('../../src/local/fs-ops.js', async (importOriginal) => {
  const orig = await importOriginal<typeof import('../../src/local/fs-ops.js')>();
  return {
    ...orig,
    moveDir: async (fromAbs: string) => {
      throw new BinderSyncError(`move folder failed for ${fromAbs}: ${refusal.errno}`, { code: 'LOCAL_IO', retryable: false, context: { op: 'move folder', path: fromAbs, errno: refusal.errno } });
    },
  };
});

let dir: string;
let store: StateStore | undefined;
afterEach(() => {
  store?.close();
  store = undefined;
  fs.rmSync(dir, { recursive: true, force: true });
});

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

it.each(['EXDEV', 'EBUSY'])('a directory rename refused with %s moves the files one by one: rows follow, nothing failed', async (errno) => {
  refusal.errno = errno;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exec-move-dir-fallback-'));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  store = StateStore.open(path.join(dir, 'state.db'));
  const d: ExecutorDeps = {
    pair: 'p', root, binderId: 'B', caseInsensitive: false, client: {} as ExecutorDeps['client'], store,
    trash: new Trash(path.join(dir, 'trash'), root), log: pino({ level: 'silent' }),
    metadata: { forPath: () => [], valuesFor: () => [], missingFor: () => [], accepts: () => true }, versionLabelScheme: 'integer', now: () => new Date(0), concurrency: 4,
  };
  const files: DirMoveFile[] = [];
  for (const [id, rel] of [['d1', 'Old/a.txt'], ['d2', 'Old/Sub/c.txt']] as const) {
    const at = path.join(root, ...rel.split('/'));
    fs.mkdirSync(path.dirname(at), { recursive: true });
    fs.writeFileSync(at, `content ${id}`);
    const stat = toFileStat(fs.lstatSync(at));
    const row: BaseEntry = { documentId: id, versionId: 'v1', versionLabel: '1', folderId: 'F', fileName: path.basename(rel), relPath: rel, key: rel, sha256: sha(`content ${id}`), ...stat };
    store.putBase(row);
    const next = `Mounted/Old${rel.slice(3)}`;
    files.push({ documentId: id, from: rel, to: next, toKey: next, folderId: 'F', fileName: path.basename(rel), expectLocal: stat, sha256: row.sha256 });
  }
  fs.mkdirSync(path.join(root, 'Mounted'));
  const move: Action = { kind: 'move-dir-local', from: 'Old', fromKey: 'Old', to: 'Mounted/Old', toKey: 'Mounted/Old', inode: fs.lstatSync(path.join(root, 'Old')).ino, folderId: 'F', files };
  const r = await executePlan({ groups: [[move]], issues: [], blocked: null }, d);
  expect(r.failures).toEqual([]);
  expect(fs.readFileSync(path.join(root, 'Mounted/Old/a.txt'), 'utf8')).toBe('content d1');
  expect(fs.readFileSync(path.join(root, 'Mounted/Old/Sub/c.txt'), 'utf8')).toBe('content d2');
  expect(store.getBase('d1')?.relPath).toBe('Mounted/Old/a.txt');
  expect(store.getBase('d2')?.relPath).toBe('Mounted/Old/Sub/c.txt');
  expect(store.listIntents()).toEqual([]);
  expect(r.done).toEqual({ 'move-dir-local': 1 });
  expect(r.dirMoveFiles).toBe(2);
});
