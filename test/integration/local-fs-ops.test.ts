// fs-ops on real temp dirs: path escapes, temp files, atomic commits, replace via trash, moves, trash, cleanup,
// plus the small helpers next to them (hashFile, detectCaseInsensitive).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BinderSyncError } from '../../src/errors.js';
import {
  cleanStaleTemps,
  commitTempFile,
  createTempFor,
  ensureDir,
  fsyncDir,
  moveFile,
  removeDirIfEmpty,
  replaceFile,
  resolveInside,
  TEMP_PREFIX,
  toFileStat,
  Trash,
} from '../../src/local/fs-ops.js';
import { listTrashEntries } from '../../src/local/trash-entries.js';
import { detectCaseInsensitive, detectCaseInsensitiveWithoutWriting } from '../../src/local/fs-probe.js';
import { hashFile } from '../../src/local/hash.js';
import type { FileStat } from '../../src/sync/model.js';

let tmp: string;
let root: string;
let trashDir: string;

const statOf = (abs: string): FileStat => toFileStat(fs.lstatSync(abs));
const read = (abs: string) => fs.readFileSync(abs, 'utf8');

async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    if (typeof p === 'function') p();
    else await p;
  } catch (err) {
    expect(err).toBeInstanceOf(BinderSyncError);
    return (err as BinderSyncError).code;
  }
  throw new Error('expected a BinderSyncError');
}

async function tempWith(dir: string, content: string): Promise<string> {
  const t = await createTempFor(dir);
  fs.writeFileSync(t.fd, content);
  fs.closeSync(t.fd);
  return t.path;
}

function listTree(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bs-fsops-'));
  root = path.join(tmp, 'root');
  trashDir = path.join(tmp, 'state', 'pair', 'trash');
  fs.mkdirSync(root);
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('resolveInside', () => {
  it('returns the absolute path for ordinary relative paths, existing or not', () => {
    expect(resolveInside(root, 'a/b c/d.txt')).toBe(path.join(root, 'a', 'b c', 'd.txt'));
    fs.mkdirSync(path.join(root, 'x'));
    expect(resolveInside(root, 'x/new/deeper.txt')).toBe(path.join(root, 'x', 'new', 'deeper.txt'));
  });

  it.each([
    ['', 'empty'],
    ['/etc/passwd', 'absolute'],
    ['../outside.txt', 'dot-dot'],
    ['a/../../outside.txt', 'dot-dot inside'],
    ['a/./b', 'dot segment'],
    ['a//b', 'empty segment'],
    ['a/', 'trailing slash'],
    ['a\0b', 'NUL'],
  ])('refuses %j (%s)', async (rel) => {
    expect(await codeOf(() => resolveInside(root, rel))).toBe('PATH_ESCAPE');
  });

  it('refuses a path that leaves the root through a symlinked directory, even for not-yet-existing children', async () => {
    const outside = path.join(tmp, 'outside');
    fs.mkdirSync(outside);
    fs.symlinkSync(outside, path.join(root, 'escape'));
    expect(await codeOf(() => resolveInside(root, 'escape/file.txt'))).toBe('PATH_ESCAPE');
    expect(await codeOf(() => resolveInside(root, 'escape/new/dir/file.txt'))).toBe('PATH_ESCAPE');
    // A symlink that stays inside the root is fine.
    fs.mkdirSync(path.join(root, 'real'));
    fs.symlinkSync(path.join(root, 'real'), path.join(root, 'alias'));
    expect(resolveInside(root, 'alias/f.txt')).toBe(path.join(root, 'alias', 'f.txt'));
  });

  it('works when the root itself is reached through a symlink', () => {
    const alias = path.join(tmp, 'rootalias');
    fs.symlinkSync(root, alias);
    expect(resolveInside(alias, 'a/b.txt')).toBe(path.join(alias, 'a', 'b.txt'));
  });
});

describe('temp files and commitTempFile', () => {
  it('creates 0600 exclusive temps with the daemon prefix', async () => {
    const a = await createTempFor(root);
    const b = await createTempFor(root);
    fs.closeSync(a.fd);
    fs.closeSync(b.fd);
    expect(a.path).not.toBe(b.path);
    expect(path.basename(a.path)).toMatch(/^\.binder-sync-tmp-[0-9a-f]{16}$/);
    expect(fs.statSync(a.path).mode & 0o777).toBe(0o600);
  });

  it('commits a new file (expect null) with its directory permissions and returns its stat', async () => {
    const t = await tempWith(root, 'downloaded');
    const dest = path.join(root, 'new.txt');
    const st = await commitTempFile(t, dest, null);
    expect(read(dest)).toBe('downloaded');
    expect(st).toEqual(statOf(dest));
    expect(fs.existsSync(t)).toBe(false);
    expect(fs.statSync(dest).mode & 0o777).toBe(fs.statSync(root).mode & 0o666);
  });

  it('refuses to create over a file that appeared, keeping it and removing the temp', async () => {
    const dest = path.join(root, 'new.txt');
    fs.writeFileSync(dest, 'user wrote this first');
    const t = await tempWith(root, 'downloaded');
    expect(await codeOf(commitTempFile(t, dest, null))).toBe('LOCAL_CHANGED');
    expect(read(dest)).toBe('user wrote this first');
    expect(fs.existsSync(t)).toBe(false);
  });

  it('replaces an existing file only when it still matches expect, keeping its mode', async () => {
    const dest = path.join(root, 'doc.txt');
    fs.writeFileSync(dest, 'v1');
    fs.chmodSync(dest, 0o640);
    const expect1 = statOf(dest);
    const t = await tempWith(root, 'v2');
    const st = await commitTempFile(t, dest, expect1);
    expect(read(dest)).toBe('v2');
    expect(st.inode).not.toBe(expect1.inode);
    expect(fs.statSync(dest).mode & 0o777).toBe(0o640);

    const t2 = await tempWith(root, 'v3');
    expect(await codeOf(commitTempFile(t2, dest, expect1))).toBe('LOCAL_CHANGED'); // stale expectation
    expect(read(dest)).toBe('v2');
    expect(fs.existsSync(t2)).toBe(false);
  });
});

describe('createTempFor and fsyncDir (the download hot path)', () => {
  async function tempForWith(dir: string, content: string): Promise<string> {
    const t = await createTempFor(dir);
    fs.writeSync(t.fd, content);
    fs.closeSync(t.fd);
    return t.path;
  }

  it('createTempFor creates a missing folder; the temp stays 0600 until the commit gives it the folder mode', async () => {
    const dir = path.join(root, 'new', 'deep');
    const t = await tempForWith(dir, 'downloaded');
    expect(path.basename(t)).toMatch(/^\.binder-sync-tmp-[0-9a-f]{16}$/);
    expect(read(t)).toBe('downloaded');
    expect(fs.statSync(t).mode & 0o777).toBe(0o600);
    fs.chmodSync(dir, 0o750);
    const dest = path.join(dir, 'a.txt');
    await commitTempFile(t, dest, null, { synced: true });
    expect(fs.statSync(dest).mode & 0o777).toBe(0o640);
  });

  it('createTempFor recreates a folder removed after it was used (its cached mode notwithstanding)', async () => {
    const dir = path.join(root, 'gone');
    fs.rmSync(await tempForWith(dir, 'a'));
    fs.rmSync(dir, { recursive: true });
    const t = await tempForWith(dir, 'b');
    expect(read(t)).toBe('b');
  });

  it('createTempFor refuses to create a folder where a file is (no retry loop, LOCAL_IO)', async () => {
    fs.writeFileSync(path.join(root, 'file'), 'x');
    expect(await codeOf(createTempFor(path.join(root, 'file', 'sub')))).toBe('LOCAL_IO');
  });

  it('fsyncDir: concurrent calls for one folder share fsyncs, but never one that began before the call', async () => {
    const fsync = vi.spyOn(fs, 'fsync');
    try {
      const first = fsyncDir(root); // starts at once
      // Queued while the first runs (it may predate their changes): they share one fsync after it.
      const calls: number[] = [];
      const joined = [fsyncDir(root), fsyncDir(root), fsyncDir(root)].map((p) => p.then(() => calls.push(fsync.mock.calls.length)));
      await Promise.all([first, ...joined]);
      expect(fsync).toHaveBeenCalledTimes(2);
      expect(calls).toEqual([2, 2, 2]);
      await fsyncDir(root); // nothing running: a fresh one
      expect(fsync).toHaveBeenCalledTimes(3);
    } finally {
      fsync.mockRestore();
    }
  });
});

describe('replaceFile', () => {
  it('keeps the old content in the trash, then swaps in the new one', async () => {
    const trash = new Trash(trashDir, root);
    fs.mkdirSync(path.join(root, 'Reports'));
    const dest = path.join(root, 'Reports', 'q1.txt');
    fs.writeFileSync(dest, 'local v1');
    const t = await tempWith(path.dirname(dest), 'remote v2');
    const { stat, trashPath } = await replaceFile(t, dest, statOf(dest), trash);
    expect(read(dest)).toBe('remote v2');
    expect(stat).toEqual(statOf(dest));
    expect(read(trashPath)).toBe('local v1');
    expect(path.relative(trashDir, trashPath)).toMatch(/^\d{4}-\d\d-\d\d\/Reports\/q1\.txt$/);
  });

  it('refuses when the destination changed since the plan: the user edit survives, the temp is gone', async () => {
    const trash = new Trash(trashDir, root);
    const dest = path.join(root, 'doc.txt');
    fs.writeFileSync(dest, 'planned against this');
    const planned = statOf(dest);
    fs.writeFileSync(dest, 'user edit after the scan, longer');
    const t = await tempWith(root, 'remote');
    expect(await codeOf(replaceFile(t, dest, planned, trash))).toBe('LOCAL_CHANGED');
    expect(read(dest)).toBe('user edit after the scan, longer');
    expect(fs.existsSync(t)).toBe(false);

    fs.rmSync(dest);
    const t2 = await tempWith(root, 'remote');
    expect(await codeOf(replaceFile(t2, dest, planned, trash))).toBe('LOCAL_CHANGED');
    expect(fs.existsSync(dest)).toBe(false);
  });
});

describe('replaceFile that fails after keeping the old content', () => {
  const trashFiles = () => (fs.existsSync(trashDir) ? [...localTreeFiles(trashDir)] : []);
  function localTreeFiles(dir: string): string[] {
    return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
  }

  it('drops its trash copy when the file was not replaced, so repeated failures leave none (linked or copied)', async () => {
    for (const how of ['link', 'copy'] as const) {
      fs.rmSync(trashDir, { recursive: true, force: true });
      // A trash on another filesystem copies instead of linking (EXDEV).
      const trash = how === 'link' ? new Trash(trashDir, root) : new Trash(trashDir, root, { link: async () => Promise.reject(Object.assign(new Error('cross-device'), { code: 'EXDEV' })) });
      const dest = path.join(root, `kept-${how}.txt`);
      fs.writeFileSync(dest, 'the only copy');
      for (let attempt = 0; attempt < 3; attempt++) {
        // The temp is gone before its commit (as if the disk had lost it): the replace fails after trash.keep.
        const err = await replaceFile(path.join(root, '.binder-sync-tmp-missing'), dest, statOf(dest), trash).catch((e: unknown) => e);
        expect(err, how).toBeInstanceOf(Error);
      }
      expect(read(dest), how).toBe('the only copy');
      expect(trashFiles(), how).toEqual([]);
    }
  });

  it('keeps the trash copy when the file was replaced meanwhile: it may be the only copy left', async () => {
    fs.rmSync(trashDir, { recursive: true, force: true });
    const dest = path.join(root, 'raced.txt');
    fs.writeFileSync(dest, 'old content');
    const planned = statOf(dest);
    // The trash's link step is where a user's save lands between keep and commit.
    const trash = new Trash(trashDir, root, {
      link: async (from, to) => {
        await fsp.link(from, to);
        fs.rmSync(dest);
        fs.writeFileSync(dest, 'saved by the user meanwhile');
      },
    });
    const t = await tempWith(root, 'remote');
    expect(await codeOf(replaceFile(t, dest, planned, trash))).toBe('LOCAL_CHANGED');
    expect(read(dest)).toBe('saved by the user meanwhile');
    expect(trashFiles().map((f) => read(f))).toEqual(['old content']);
  });
});

describe('moveFile', () => {
  it('moves into a new directory and keeps the file identity', async () => {
    const from = path.join(root, 'a.txt');
    fs.writeFileSync(from, 'content');
    const before = statOf(from);
    const to = path.join(root, 'new', 'dir', 'b.txt');
    const st = await moveFile(from, to, before);
    expect(fs.existsSync(from)).toBe(false);
    expect(read(to)).toBe('content');
    // Same file (size, mtime, inode); the ctime the move gave it, so the next scan need not read it again.
    expect({ ...st, ctimeMs: 0 }).toEqual({ ...before, ctimeMs: 0 });
    expect(st).toEqual(statOf(to));
  });

  it('never overwrites a target and refuses a changed source', async () => {
    const from = path.join(root, 'a.txt');
    const to = path.join(root, 'b.txt');
    fs.writeFileSync(from, 'a');
    fs.writeFileSync(to, 'b');
    expect(await codeOf(moveFile(from, to, statOf(from)))).toBe('LOCAL_TARGET_EXISTS');
    expect(read(to)).toBe('b');
    expect(read(from)).toBe('a');

    fs.rmSync(to);
    const stale = statOf(from);
    fs.writeFileSync(from, 'aa');
    expect(await codeOf(moveFile(from, to, stale))).toBe('LOCAL_CHANGED');
    expect(fs.existsSync(to)).toBe(false);
  });
});

describe('Trash', () => {
  it('keep() preserves content under the day folder with unique names, dirs 0700', async () => {
    const trash = new Trash(trashDir, root, { now: () => new Date(2026, 2, 14, 10) });
    const f = path.join(root, 'notes.md');
    fs.writeFileSync(f, 'one');
    const k1 = await trash.keep(f);
    fs.rmSync(f);
    fs.writeFileSync(f, 'two');
    const k2 = await trash.keep(f, 'notes.md');
    expect(k1).toBe(path.join(trashDir, '2026-03-14', 'notes.md'));
    expect(k2).toBe(path.join(trashDir, '2026-03-14', 'notes~1.md'));
    expect(read(k1)).toBe('one');
    expect(read(k2)).toBe('two');
    expect(read(f)).toBe('two'); // keep() leaves the original in place
    expect(fs.statSync(path.join(trashDir, '2026-03-14')).mode & 0o777).toBe(0o700);
    expect(fs.statSync(trashDir).mode & 0o777).toBe(0o700);
  });

  it('keep() of a 254-byte name twice in a day: the second copy shortens its stem to stay within 255 bytes', async () => {
    const trash = new Trash(trashDir, root, { now: () => new Date(2026, 2, 14, 10) });
    const name = `${'é'.repeat(125)}.txt`; // 254 bytes
    const f = path.join(root, name);
    const kept: string[] = [];
    for (const content of ['one', 'two', 'three']) {
      fs.writeFileSync(f, content);
      kept.push(await trash.keep(f, name));
      fs.rmSync(f);
    }
    expect(kept.map((k) => read(k))).toEqual(['one', 'two', 'three']);
    for (const k of kept) expect(Buffer.byteLength(path.basename(k))).toBeLessThanOrEqual(255);
    expect(path.basename(kept[2]!)).toMatch(/^é+~2\.txt$/);
  });

  it('keep() still finds a place when a file trashed earlier holds a parent name', async () => {
    const trash = new Trash(trashDir, root, { now: () => new Date(2026, 2, 14, 10) });
    fs.writeFileSync(path.join(root, 'a'), 'file a');
    await trash.keep(path.join(root, 'a'));
    fs.rmSync(path.join(root, 'a'));
    fs.mkdirSync(path.join(root, 'a'));
    fs.writeFileSync(path.join(root, 'a', 'b'), 'file a/b');
    const kept = await trash.keep(path.join(root, 'a', 'b'));
    expect(read(kept)).toBe('file a/b');
    expect(read(path.join(trashDir, '2026-03-14', 'a'))).toBe('file a');
  });

  it('keep() copies when hard links are impossible (other device)', async () => {
    const exdev = Object.assign(new Error('cross-device link'), { code: 'EXDEV' });
    const trash = new Trash(trashDir, root, { link: () => Promise.reject(exdev) });
    const f = path.join(root, 'a.txt');
    fs.writeFileSync(f, 'copied');
    const kept = await trash.keep(f);
    expect(read(kept)).toBe('copied');
    expect(fs.lstatSync(kept).ino).not.toBe(fs.lstatSync(f).ino);
  });

  it('moveToTrash() moves a matching file and refuses a changed one', async () => {
    const trash = new Trash(trashDir, root);
    fs.mkdirSync(path.join(root, 'd'));
    const f = path.join(root, 'd', 'gone.txt');
    fs.writeFileSync(f, 'remote deleted me');
    const moved = await trash.moveToTrash(f, 'd/gone.txt', statOf(f));
    expect(fs.existsSync(f)).toBe(false);
    expect(read(moved)).toBe('remote deleted me');

    fs.writeFileSync(f, 'x');
    const stale = statOf(f);
    fs.writeFileSync(f, 'edited again');
    expect(await codeOf(trash.moveToTrash(f, 'd/gone.txt', stale))).toBe('LOCAL_CHANGED');
    expect(read(f)).toBe('edited again');
  });

  it('moveToTrash() falls back to copy+fsync+unlink across devices', async () => {
    const exdev = Object.assign(new Error('cross-device link'), { code: 'EXDEV' });
    const trash = new Trash(trashDir, root, { rename: () => Promise.reject(exdev) });
    const f = path.join(root, 'big.bin');
    fs.writeFileSync(f, Buffer.alloc(300_000, 7));
    const moved = await trash.moveToTrash(f, undefined, statOf(f));
    expect(fs.existsSync(f)).toBe(false);
    expect(fs.readFileSync(moved).equals(Buffer.alloc(300_000, 7))).toBe(true);
  });

  it('a copy into the trash across devices gets its name only once whole: cut short, it is no entry, and the next process removes it (black-box round 35b, F1)', async () => {
    const exdev = Object.assign(new Error('cross-device link'), { code: 'EXDEV' });
    const now = () => new Date(2026, 2, 14, 12);
    const trash = new Trash(trashDir, root, { rename: () => Promise.reject(exdev), now });
    const f = path.join(root, 'big.bin');
    fs.writeFileSync(f, Buffer.alloc(300_000, 7));
    const day = path.join(trashDir, '2026-03-14');
    // The copy is cut short (a SIGKILL in a real run): its bytes are written, but no more happens.
    const copy = vi.spyOn(fsp, 'copyFile').mockImplementationOnce(async (src, dest) => {
      fs.writeFileSync(dest as string, fs.readFileSync(src as string).subarray(0, 1000));
      throw Object.assign(new Error('killed'), { code: 'EIO' });
    });
    try {
      await expect(trash.moveToTrash(f, 'big.bin', statOf(f))).rejects.toThrow();
    } finally {
      copy.mockRestore();
    }
    expect(read(f).length).toBe(300_000); // the file is where it was
    expect(fs.existsSync(path.join(day, 'big.bin'))).toBe(false);
    expect(listTrashEntries(trashDir).entries).toEqual([]);
    // What a SIGKILL leaves (the temp not removed): never listed, and removed by the next process's first purge.
    const left = path.join(day, `${TEMP_PREFIX}0000dead00000001`);
    fs.writeFileSync(left, 'partial');
    expect(listTrashEntries(trashDir).entries).toEqual([]);
    await new Trash(trashDir, root, { now }).purgeOlderThan(30);
    expect(fs.existsSync(left)).toBe(false);
    // Whole, it has its name, and nothing else is left beside it.
    const moved = await trash.moveToTrash(f, 'big.bin', statOf(f));
    expect(fs.readFileSync(moved).equals(Buffer.alloc(300_000, 7))).toBe(true);
    expect(fs.readdirSync(day).filter((n) => n.startsWith(TEMP_PREFIX))).toEqual([]);
    expect(listTrashEntries(trashDir).entries.map((e) => e.entry)).toEqual(['2026-03-14/big.bin']);
  });

  it('moveToTrash() puts back a file swapped in between the check and the rename', async () => {
    const f = path.join(root, 'race.txt');
    fs.writeFileSync(f, 'planned');
    const planned = statOf(f);
    const trash = new Trash(trashDir, root, {
      rename: async (a, b) => {
        // The user's editor saves atomically right before our rename.
        fs.writeFileSync(`${f}.new`, 'user save');
        fs.renameSync(`${f}.new`, f);
        await fs.promises.rename(a, b);
      },
    });
    expect(await codeOf(trash.moveToTrash(f, 'race.txt', planned))).toBe('LOCAL_CHANGED');
    expect(read(f)).toBe('user save');
  });

  it('purgeOlderThan() removes only day folders older than the limit', async () => {
    let now = new Date(2026, 0, 1, 12);
    const trash = new Trash(trashDir, root, { now: () => now });
    const f = path.join(root, 'f.txt');
    fs.writeFileSync(f, 'x');
    await trash.keep(f);
    now = new Date(2026, 0, 20, 12);
    await trash.keep(f);
    fs.mkdirSync(path.join(trashDir, 'not-a-day'));
    now = new Date(2026, 0, 25, 12);
    expect(await trash.purgeOlderThan(14)).toBe(1);
    expect(fs.readdirSync(trashDir).sort()).toEqual(['2026-01-20', 'not-a-day']);
    expect(await new Trash(path.join(tmp, 'nope'), root).purgeOlderThan(1)).toBe(0);
    // A file where the trash should be: nothing to purge, not a failure of the pass (black-box round 30a, F5).
    const notADir = path.join(tmp, 'trash-file');
    fs.writeFileSync(notADir, 'x');
    expect(await new Trash(notADir, root).purgeOlderThan(1)).toBe(0);
  });
});

describe('directories and cleanup', () => {
  it('ensureDir, removeDirIfEmpty', async () => {
    const d = path.join(root, 'a', 'b');
    await ensureDir(d);
    await ensureDir(d);
    expect(fs.statSync(d).isDirectory()).toBe(true);
    fs.writeFileSync(path.join(d, 'f'), 'x');
    expect(await removeDirIfEmpty(d)).toBe(false);
    fs.rmSync(path.join(d, 'f'));
    expect(await removeDirIfEmpty(d)).toBe(true);
    expect(await removeDirIfEmpty(d)).toBe(false);
    fs.writeFileSync(path.join(root, 'file'), 'x');
    expect(await codeOf(ensureDir(path.join(root, 'file', 'sub')))).toBe('LOCAL_IO');
  });

  it('cleanStaleTemps removes only crash leftovers, without following symlinks', async () => {
    fs.mkdirSync(path.join(root, 'd', 'e'), { recursive: true });
    fs.writeFileSync(path.join(root, '.binder-sync-tmp-aaaa'), 'partial');
    fs.writeFileSync(path.join(root, 'd', 'e', '.binder-sync-tmp-bbbb'), 'partial');
    fs.writeFileSync(path.join(root, 'd', '.binder-sync-probe-1-case'), '');
    fs.writeFileSync(path.join(root, 'd', 'keep.txt'), 'mine');
    fs.writeFileSync(path.join(root, 'binder-sync-tmp-notours'), 'mine');
    const outside = path.join(tmp, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, '.binder-sync-tmp-cccc'), 'not in the root');
    fs.symlinkSync(outside, path.join(root, 'link'));
    expect(await cleanStaleTemps(root)).toBe(3);
    expect(listTree(root)).toEqual(['binder-sync-tmp-notours', 'd/keep.txt']);
    expect(fs.existsSync(path.join(outside, '.binder-sync-tmp-cccc'))).toBe(true);
  });
});

describe('hashFile and detectCaseInsensitive', () => {
  it('hashes by streaming, including empty and multi-chunk files', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;
    fs.writeFileSync(path.join(root, 'big'), big);
    fs.writeFileSync(path.join(root, 'empty'), '');
    const h = await hashFile(path.join(root, 'big'));
    expect(h).toEqual({ sha256: createHash('sha256').update(big).digest('hex'), size: big.length });
    expect(await hashFile(path.join(root, 'empty'))).toEqual({
      sha256: createHash('sha256').update('').digest('hex'),
      size: 0,
    });
    await expect(hashFile(path.join(root, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('detects this (case-sensitive) test filesystem and leaves no probe behind', () => {
    // Linux temp dirs are case-sensitive; the probe must say so and clean up after itself.
    if (process.platform === 'linux') expect(detectCaseInsensitive(root)).toBe(false);
    else expect(typeof detectCaseInsensitive(root)).toBe('boolean');
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it('without writing (sync --dry-run): the flipped spelling of a name already there, or of one above a missing root', () => {
    const platformDefault = process.platform === 'darwin' || process.platform === 'win32';
    const created: string[] = [];
    const watcher = fs.watch(root, (_e, name) => created.push(String(name)));
    try {
      expect(detectCaseInsensitiveWithoutWriting(root)).toBe(platformDefault); // nothing to try yet
      fs.writeFileSync(path.join(root, '2026.txt'), 'digits only but the extension');
      if (process.platform === 'linux') expect(detectCaseInsensitiveWithoutWriting(root)).toBe(false);
      // Both spellings present as two files: case-sensitive, whatever else is in the folder.
      fs.rmSync(path.join(root, '2026.txt'));
      fs.writeFileSync(path.join(root, 'Notes'), 'a');
      fs.writeFileSync(path.join(root, 'nOTES'), 'b');
      expect(detectCaseInsensitiveWithoutWriting(root)).toBe(false);
      // A root that does not exist yet is judged by the folder above it (here: tmp, which holds 'root').
      if (process.platform === 'linux') expect(detectCaseInsensitiveWithoutWriting(path.join(root, 'missing', 'deeper'))).toBe(false);
    } finally {
      watcher.close();
    }
    // A filesystem that folds case answers the flipped name with the same file.
    const real = fs.lstatSync;
    const spy = vi.spyOn(fs, 'lstatSync').mockImplementation(((p: fs.PathLike, o?: fs.StatSyncOptions) =>
      real(String(p).replace(/NOTES$/i, 'Notes'), o as fs.StatSyncOptions)) as typeof fs.lstatSync);
    try {
      fs.rmSync(path.join(root, 'nOTES'));
      expect(detectCaseInsensitiveWithoutWriting(root)).toBe(true);
    } finally {
      spy.mockRestore();
    }
    expect(created.filter((n) => !['2026.txt', 'Notes', 'nOTES'].includes(n))).toEqual([]);
  });
});
