// `trash restore` whose target folder is replaced by a symbolic link out of the root while the file is copied
// into it (black-box round 33a, F3): nothing is written outside the root, nothing gets the name, and the error
// says so for a restore (run it again), not as a pass's "changed since it was scanned; the next pass plans again".
// Real files; the folder is swapped at the moment the copy is about to be put in place.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';

const swap = vi.hoisted(() => ({ before: null as null | (() => void) }));
vi.mock('../../src/local/fs-ops.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/local/fs-ops.js')>();
  return {
    ...real,
    commitTempFile: (...args: Parameters<typeof real.commitTempFile>) => {
      swap.before?.();
      return real.commitTempFile(...args);
    },
  };
});

const { Trash, toFileStat } = await import('../../src/local/fs-ops.js');
const { listTrashEntries } = await import('../../src/local/trash-entries.js');
const { restoreFromTrash } = await import('../../src/local/trash-restore.js');
const { BinderSyncError } = await import('../../src/errors.js');

let dir: string;
afterEach(() => {
  swap.before = null;
  fs.rmSync(dir, { recursive: true, force: true });
});

it('a restore whose folder became a link out of the root mid-copy: refused as such, nothing outside, still in the trash', async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'restore-moved-'));
  const root = path.join(dir, 'root');
  const outside = path.join(dir, 'outside');
  fs.mkdirSync(path.join(root, 'Docs'), { recursive: true });
  fs.mkdirSync(outside);
  const abs = path.join(root, 'Docs', 'report.txt');
  fs.writeFileSync(abs, 'kept content');
  const trash = new Trash(path.join(dir, 'trash'), root, { now: () => new Date('2026-11-27T12:00:00') });
  await trash.moveToTrash(abs, 'Docs/report.txt', toFileStat(fs.lstatSync(abs)));
  const [entry] = listTrashEntries(path.join(dir, 'trash')).entries;
  swap.before = () => {
    fs.renameSync(path.join(root, 'Docs'), path.join(outside, 'Docs'));
    fs.symlinkSync(path.join(outside, 'Docs'), path.join(root, 'Docs'));
  };
  const err = await restoreFromTrash(trash, entry!.entry, 'Docs/report.txt').catch((e: unknown) => e);
  expect(err).toBeInstanceOf(BinderSyncError);
  expect(err).toMatchObject({ code: 'LOCAL_TARGET_MOVED' });
  expect((err as Error).message).toContain('nothing was restored (the trash still holds it)');
  expect((err as { hint?: string }).hint).toContain('run the restore again');
  expect(fs.readdirSync(path.join(outside, 'Docs'))).toEqual([]);
  expect(listTrashEntries(path.join(dir, 'trash')).entries.map((e) => e.originalPath)).toEqual(['Docs/report.txt']);
});
