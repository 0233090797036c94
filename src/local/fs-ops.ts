// The only code that writes into the sync root: safe path resolution, temp files committed by atomic
// rename, no-clobber moves, and the trash under stateDir that keeps every local content we replace or remove.
// The per-file hot path of a download (commitTempFile, fsyncDir) makes its quick metadata calls (lstat,
// chmod, link, unlink, opening and closing a directory) synchronously: each takes microseconds on a local
// disk, several times less CPU than the thread-pool round trip of an async call (measured ~2.5x), which
// matters for thousands of small files. Creating a file, data writes and fsyncs, which can take
// milliseconds, stay asynchronous.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { BinderSyncError } from '../errors.js';
import { failpoint } from '../failpoints.js';
import { fileStatOf, sameStat, type FileStat } from '../sync/model.js';
import { DAEMON_FILE_PREFIX, TEMP_PREFIX } from './ignore.js';
import { fitName, MAX_PATH_BYTES, utf8Length } from './name-limits.js';
import { copyRegularFile } from './open-for-read.js';
import { LONG_PATHS_DIR, readsAsItself, RECORDS_DIR, recordNeeded, recordPathOf } from './trash-entries.js';

export { TEMP_PREFIX };

export function toFileStat(st: fs.Stats): FileStat {
  return fileStatOf(st);
}

/**
 * sameStat without the ctime, for a look right after this process linked, renamed or chmodded the file:
 * each of those changes its ctime and nothing else.
 */
function matchesButCtime(now: FileStat, before: FileStat): boolean {
  return now.size === before.size && now.mtimeMs === before.mtimeMs && now.inode === before.inode;
}

/**
 * The stat of a file this process has just put in place (`before`: its stat taken before it became visible).
 * Linking, renaming and chmod moved its ctime, so the base would otherwise keep a ctime the file no longer has,
 * and the next scan would read the whole file again to find it unchanged. The new ctime is taken only when
 * size, mtime and inode are still `before`'s; anything else means someone wrote to it in the microseconds
 * since, and `before` stays, so that the next scan sees that change.
 */
function settledStat(abs: string, before: FileStat): FileStat {
  const st = fs.lstatSync(abs, { throwIfNoEntry: false });
  if (st === undefined || !st.isFile()) return before;
  const now = toFileStat(st);
  return matchesButCtime(now, before) ? now : before;
}

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** lstat, or null when nothing is there. */
export async function lstatOrNull(abs: string): Promise<fs.Stats | null> {
  try {
    return await fsp.lstat(abs);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return null;
    throw err;
  }
}

export function localChanged(abs: string, detail: string): BinderSyncError {
  return new BinderSyncError(`${abs} changed since it was scanned (${detail}); not touching it`, {
    code: 'LOCAL_CHANGED',
    retryable: true,
    context: { path: abs },
    hint: 'the next pass re-scans the file and plans again',
  });
}

/** Wraps an unexpected fs error as LOCAL_IO (BinderSyncErrors pass through). */
export function localIo(err: unknown, op: string, abs: string): unknown {
  if (err instanceof BinderSyncError) return err;
  const code = errnoOf(err);
  if (code === undefined) return err;
  const retryable = code === 'ENOSPC' || code === 'EBUSY' || code === 'EAGAIN' || code === 'EMFILE' || code === 'ENFILE';
  return new BinderSyncError(`${op} failed for ${abs}: ${code}`, {
    code: 'LOCAL_IO',
    retryable,
    context: { op, path: abs, errno: code },
    hint: hintFor(code),
    cause: err,
  });
}

function hintFor(code: string): string {
  switch (code) {
    case 'ENOSPC':
      return 'free some disk space';
    case 'EACCES':
      return 'check file and folder permissions';
    case 'EPERM':
      // Root gets EPERM where permissions would not stop it: file attributes and sticky folders.
      return 'check permissions, and attributes: an immutable or append-only file or folder (lsattr; chattr -i / -a) cannot be replaced, nor a file of another user in a sticky folder';
    case 'EROFS':
      return 'the file system is mounted read-only';
    case 'ENAMETOOLONG':
      return 'the path is longer than the file system allows: shorten the folder names, or move the sync root or the stateDir to a shorter path';
    default:
      return 'check the local disk';
  }
}

async function guard<T>(op: string, abs: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw localIo(err, op, abs);
  }
}

/** Errors of link() meaning "this filesystem cannot hard-link here" (FAT, some network mounts, other device). */
const NO_LINK = new Set(['EXDEV', 'EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK', 'ENOSYS']);

/** Mode of a directory, cached for a few seconds: a burst of downloads into one folder stats it once. */
const dirModes = new Map<string, { mode: number; at: number }>();
function dirMode(dir: string): number {
  const now = Date.now();
  const hit = dirModes.get(dir);
  if (hit && now - hit.at < 5_000) return hit.mode;
  const mode = fs.statSync(dir).mode;
  if (dirModes.size > 1_000) dirModes.clear();
  dirModes.set(dir, { mode, at: now });
  return mode;
}

/**
 * fsyncs a file, first giving it `mode` when one is asked for. The mode is set through the open descriptor:
 * a temp file that takes a read-only file's mode (0444) before it is opened could no longer be opened for
 * writing by its own user, and every download over a read-only file failed with EACCES (root, which tests run
 * as, never sees that). A file we did not make (a trash copy keeps its source's mode) is opened read-only
 * when it may not be written: Linux fsyncs through a read-only descriptor too.
 */
async function fsyncFile(abs: string, mode?: number): Promise<void> {
  let h: fsp.FileHandle;
  try {
    h = await fsp.open(abs, 'r+');
  } catch (err) {
    if (errnoOf(err) !== 'EACCES' || mode !== undefined) throw err;
    h = await fsp.open(abs, 'r');
  }
  try {
    if (mode !== undefined) await h.chmod(mode);
    await h.sync();
  } finally {
    await h.close();
  }
}

/**
 * Makes a rename/link/unlink in dir durable. Some platforms cannot fsync a directory: best effort there.
 * Concurrent calls for one directory share fsyncs (group commit): a caller joins the next fsync that starts
 * after its call, never one already running (that one may predate the caller's change). Eight downloads
 * committing into one folder then cost about two fsyncs instead of eight, each an open + fsync + close.
 */
export function fsyncDir(dir: string): Promise<void> {
  let slot = dirSyncs.get(dir);
  if (slot === undefined) {
    slot = { running: null, next: null };
    dirSyncs.set(dir, slot);
  }
  const s = slot;
  if (s.next !== null) return s.next; // queued behind the running one: it starts after this call
  const start = (): Promise<void> => {
    s.next = null;
    const p = fsyncDirNow(dir).finally(() => {
      s.running = null;
      if (s.next === null) dirSyncs.delete(dir);
    });
    s.running = p;
    return p;
  };
  if (s.running === null) return start();
  // A failure of the running fsync is that caller's; the queued one runs regardless.
  s.next = s.running.then(start, start);
  return s.next;
}

interface DirSyncSlot {
  /** The fsync in flight, if any. */
  running: Promise<void> | null;
  /** The fsync that starts when `running` ends, shared by everyone who asked meanwhile. */
  next: Promise<void> | null;
}
const dirSyncs = new Map<string, DirSyncSlot>();

async function fsyncDirNow(dir: string): Promise<void> {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    await fsyncFd(fd);
  } catch (err) {
    const code = errnoOf(err);
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM' && code !== 'EBADF') throw err;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** open(2) through the callback API: a plain descriptor, lighter than a FileHandle. */
function openFd(p: string, flags: string, mode: number): Promise<number> {
  return new Promise((resolve, reject) => fs.open(p, flags, mode, (err, fd) => (err ? reject(err) : resolve(fd))));
}

/** fsync(2) on a descriptor, through the callback API (lighter than a FileHandle for one call). */
function fsyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (err) => (err ? reject(err) : resolve())));
}

/**
 * Copies src to a new file dest (never overwriting) and fsyncs it: the fallback when link/rename cannot (another
 * disk). A copy takes time, so it is made under a temp name in `tmpDir` (dest's folder unless given, on dest's
 * disk; TEMP_PREFIX: scans and the trash listing skip it, and the stray-temp sweeps remove one a crash left) and
 * given dest's name only once whole and on disk. A SIGKILL mid-copy left a truncated file under dest's own name,
 * which `binder-sync trash` listed and `trash restore` put back as if it were whole (black-box round 35b, F1).
 */
async function copyDurably(src: string, dest: string, tmpDir = path.dirname(dest)): Promise<void> {
  const tmp = path.join(tmpDir, nextTempName());
  try {
    await copyRegularFile(src, tmp);
    await fsyncFile(tmp);
    try {
      await fsp.link(tmp, dest); // never over anything: EEXIST as the copy itself would have said
    } catch (err) {
      if (!NO_LINK.has(errnoOf(err) ?? '')) throw err;
      // A disk without hard links (FAT): dest was free a moment ago (its slot is this process's), so a rename.
      if ((await lstatOrNull(dest)) !== null) throw Object.assign(new Error(`EEXIST: ${dest}`), { code: 'EEXIST' });
      await fsp.rename(tmp, dest);
    }
  } finally {
    await fsp.rm(tmp, { force: true });
  }
}

function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel));
}

/**
 * The absolute path of relPath under root. Refuses (PATH_ESCAPE) an empty or absolute path, NUL, '.',
 * '..' or empty segments, backslashes or drive letters on win32, and any path whose deepest existing
 * parent resolves (through symlinks) outside root. The last segment itself is not followed: every
 * operation here acts on it with lstat/rename/link, which never follow a final symlink.
 */
export function resolveInside(root: string, relPath: string): string {
  const refuse = (why: string): never => {
    throw new BinderSyncError(`Refusing path ${JSON.stringify(relPath)}: ${why}`, {
      code: 'PATH_ESCAPE',
      retryable: false,
      context: { root, relPath },
      hint: 'a path from the service or the plan points outside the sync root; it was not touched',
    });
  };
  if (relPath === '') refuse('empty path');
  if (relPath.includes('\0')) refuse('contains NUL');
  if (relPath.startsWith('/') || path.isAbsolute(relPath)) refuse('absolute path');
  if (process.platform === 'win32' && (relPath.includes('\\') || /^[A-Za-z]:/.test(relPath))) {
    refuse('backslash or drive letter');
  }
  const segments = relPath.split('/');
  for (const s of segments) {
    if (s === '' || s === '.' || s === '..') refuse(`segment ${JSON.stringify(s)} is not allowed`);
  }
  const abs = path.join(root, ...segments);
  let realRoot: string;
  try {
    // .native: one realpath(3) call instead of a JS lstat per path component (this runs once per file
    // transferred, twice with the probe below).
    realRoot = fs.realpathSync.native(root);
  } catch (err) {
    throw new BinderSyncError(`Sync root ${root} cannot be resolved (${errnoOf(err)})`, {
      code: 'LOCAL_ROOT',
      retryable: false,
      context: { root },
      hint: 'is the disk mounted?',
      cause: err,
    });
  }
  // Resolve the deepest existing parent: a symlinked directory inside the root must not lead out of it.
  let probe = path.dirname(abs);
  for (;;) {
    try {
      const real = fs.realpathSync.native(probe);
      if (!isInside(realRoot, real)) refuse('it leads outside the sync root through a symbolic link');
      break;
    } catch (err) {
      if (err instanceof BinderSyncError) throw err;
      const code = errnoOf(err);
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || !isInside(root, path.dirname(probe))) throw localIo(err, 'realpath', probe);
      probe = path.dirname(probe);
    }
  }
  return abs;
}

/**
 * Creates a temp file (O_EXCL, named with TEMP_PREFIX, which scans ignore; mode 0600 until commitTempFile gives
 * it its final mode) for content that will be committed into dirAbs, and returns its open descriptor, which the caller must
 * close. dirAbs (and its parents) is created when missing. The directory is not checked first: the open
 * itself says when it is missing (ENOENT), which saves a mkdir per file when many files go into one folder.
 */
export async function createTempFor(dirAbs: string): Promise<{ path: string; fd: number }> {
  let madeDir = false;
  for (let taken = 0; ; ) {
    // O_EXCL guards against a leftover of another run of the same name.
    const p = path.join(dirAbs, nextTempName());
    try {
      // Asynchronous, unlike the other metadata calls here: creating a file allocates an inode, which was
      // measured at ~0.7 ms on ext4 after many deletions (it searches for a reusable inode).
      // Read-write: a large download is hashed from it once written (sync/download.ts).
      return { path: p, fd: await openFd(p, 'wx+', 0o600) };
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'EEXIST' && ++taken < 3) continue; // a leftover of another run: take the next name
      if (code !== 'ENOENT' || madeDir) throw localIo(err, 'create temp file', dirAbs);
      madeDir = true;
      try {
        fs.mkdirSync(dirAbs, { recursive: true });
      } catch (mkdirErr) {
        throw localIo(mkdirErr, 'mkdir', dirAbs);
      }
    }
  }
}

const PROCESS_TAG = randomBytes(4).toString('hex');
let tempCounter = 0;

/** A temp file name of this process: unique without a random draw per file (a random tag per process, a counter). */
function nextTempName(): string {
  return `${TEMP_PREFIX}${PROCESS_TAG}${(++tempCounter >>> 0).toString(16).padStart(8, '0')}`;
}

function isDirectory(abs: string): boolean {
  try {
    return fs.statSync(abs, { throwIfNoEntry: false })?.isDirectory() === true;
  } catch {
    return false;
  }
}

/** Where an open temp file went when it is no longer at tempPath (its folder moved away, maybe out of the root). */
export interface StrayTemp {
  path: string;
  inode: number;
}

/**
 * Where the open temp file `fd` is now, when it is no longer at tempPath: its folder was moved or renamed while the
 * file was written (`mv` of the folder, maybe out of the sync root), so a cleanup by its old path cannot find it
 * (black-box rounds 23, L3, and 28a, T4). Linux's /proc/self/fd names the file wherever it went; null when it is
 * still in place, was deleted, or cannot be told. Call it before the descriptor is closed.
 */
export function strayTempOf(fd: number, tempPath: string): StrayTemp | null {
  try {
    const inode = fs.fstatSync(fd).ino;
    let here: number | undefined;
    try {
      here = fs.lstatSync(tempPath, { throwIfNoEntry: false })?.ino;
    } catch {
      here = undefined; // ENOTDIR: a file took its folder's name
    }
    if (here === inode) return null;
    const now = fs.readlinkSync(`/proc/self/fd/${fd}`);
    if (now.endsWith(' (deleted)') || !path.isAbsolute(now) || !path.basename(now).startsWith(TEMP_PREFIX)) return null;
    return { path: now, inode };
  } catch {
    return null;
  }
}

/**
 * Removes a temp file of ours that moved with its folder (strayTempOf), after its descriptor was closed: only
 * while the same file (inode) still has our temp name there, so nothing else is ever removed.
 */
export function removeStrayTemp(stray: StrayTemp): boolean {
  try {
    if (fs.lstatSync(stray.path).ino !== stray.inode) return false;
    fs.unlinkSync(stray.path);
    return true;
  } catch {
    return false;
  }
}

/**
 * fsyncs a written temp file through its descriptor (LOCAL_IO on failure). `before`: earlier flushes of the
 * same descriptor to wait for first; their failure fails this sync like its own would.
 */
export async function syncTempFile(fd: number, tempPath: string, before?: () => Promise<void>): Promise<void> {
  await guard('fsync temp file', tempPath, async () => {
    await before?.();
    await fsyncFd(fd);
  });
}

/**
 * What a writer knows of the temp file it filled, checked again just before the file is put in place. Between
 * the temp's creation (its folder resolved inside the root) and its link to the final name, its folder may be
 * moved to another disk and back (the temp path then names a partial copy), or replaced by a symbolic link to
 * where the folder went, maybe out of the root: a commit by path then gave the final name to a truncated copy,
 * recorded with the full download's hash, or wrote outside the root (black-box round 32a, F1).
 */
export interface WrittenTemp {
  ino: number;
  dev: number;
  size: number;
  /** The sync root: the destination's folder must still resolve (symbolic links followed) inside it. */
  root: string;
}

/**
 * Throws LOCAL_CHANGED (context.folderMoved: callers other than a pass, which plans again, say it their way)
 * unless tempPath is still the file written, in a folder that resolves inside the root.
 */
function ensureWrittenTempInPlace(tempPath: string, destAbs: string, w: WrittenTemp): void {
  const moved = (detail: string) => {
    const err = localChanged(destAbs, detail);
    err.context.folderMoved = true;
    return err;
  };
  const st = fs.lstatSync(tempPath, { throwIfNoEntry: false });
  if (st === undefined || !st.isFile() || st.ino !== w.ino || st.dev !== w.dev || st.size !== w.size) {
    throw moved('its folder was moved or replaced while the file was written: what is at the temp path now is not what was written');
  }
  let realRoot: string;
  let realDir: string;
  try {
    realRoot = fs.realpathSync.native(w.root);
    realDir = fs.realpathSync.native(path.dirname(destAbs));
  } catch (err) {
    throw moved(`its folder cannot be resolved now (${errnoOf(err) ?? String(err)})`);
  }
  if (!isInside(realRoot, realDir)) throw moved('its folder became a symbolic link out of the sync root while the file was written');
}

/** Mode of a new file in a directory of mode dirMode: the directory's read/write bits. */
function newFileMode(dirModeBits: number): number {
  return dirModeBits & 0o666;
}

/**
 * Moves a finished temp file to destAbs atomically. expect null: dest must not exist, and the commit
 * never clobbers (hard link, which fails if something appeared; plain check+rename where links are
 * unsupported). expect a stat: dest must still match it exactly, then the temp is renamed over it —
 * the caller must already have kept the old content (use replaceFile). The temp is fsynced first and
 * the directory after. The file gets the replaced file's mode, or for a new file its directory's
 * read/write bits (0600 temps must not leak into the user's tree).
 * Throws LOCAL_CHANGED (retryable) when dest does not match; the temp is then removed.
 */
export async function commitTempFile(
  tempPath: string,
  destAbs: string,
  expect: FileStat | null,
  opts: {
    synced?: boolean;
    /** a new file's mode, instead of its directory's read/write bits */
    mode?: number;
    /** the temp as its writer left it: checked just before the link or rename (see WrittenTemp) */
    written?: WrittenTemp;
  } = {},
): Promise<FileStat> {
  return guard('commit', destAbs, async () => {
    let committed: FileStat;
    try {
      // A new file (expect null) needs no look at the target first: linkNoClobber refuses one that exists.
      let mode: number;
      if (expect === null) mode = opts.mode ?? newFileMode(dirMode(path.dirname(destAbs)));
      else {
        const cur = fs.lstatSync(destAbs, { throwIfNoEntry: false });
        if (cur === undefined || !sameStat(toFileStat(cur), expect)) {
          throw localChanged(destAbs, cur === undefined ? 'it was removed' : 'it was modified');
        }
        mode = cur.mode & 0o7777;
      }
      // The stat is taken from the temp BEFORE it becomes visible (link and rename keep inode and mtime): a
      // stat of the destination afterwards could already describe a user's edit, which the base would then
      // pair with the downloaded content's hash, and the edit would never be seen as a change. Only its ctime
      // is brought up to date afterwards (settledStat), when nothing else moved.
      const st = fs.lstatSync(tempPath);
      committed = toFileStat(st);
      // chmod and fsync change neither size, mtime nor inode. `synced`: the writer already fsynced the temp
      // through its own descriptor (saves an open + close); a chmod by path needs no permission on the file.
      const chmod = (st.mode & 0o7777) !== mode;
      if (opts.synced === true) {
        if (chmod) fs.chmodSync(tempPath, mode);
      } else {
        await fsyncFile(tempPath, chmod ? mode : undefined);
      }
      if (opts.written !== undefined) ensureWrittenTempInPlace(tempPath, destAbs, opts.written);
      if (expect === null) await linkNoClobber(tempPath, destAbs);
      else fs.renameSync(tempPath, destAbs);
      committed = settledStat(destAbs, committed);
    } catch (err) {
      // The temp's folder may be gone or be a file now (ENOTDIR): the cleanup must not replace the error.
      await fsp.rm(tempPath, { force: true }).catch(() => undefined);
      const code = errnoOf(err);
      if ((code === 'ENOENT' || code === 'ENOTDIR') && !isDirectory(path.dirname(tempPath))) {
        throw localChanged(destAbs, 'its folder was moved or removed while it was being synced');
      }
      throw err;
    }
    await fsyncDir(path.dirname(destAbs));
    return committed;
  });
}

/** Moves src to a new name dest that must not exist, without ever overwriting what may appear there. */
async function linkNoClobber(src: string, dest: string): Promise<void> {
  try {
    fs.linkSync(src, dest);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'EEXIST') throw localChanged(dest, 'a file appeared at the target');
    if (!NO_LINK.has(code ?? '')) throw err;
    // No hard links here: the check-then-rename leaves a window of microseconds, the best POSIX allows.
    if ((await lstatOrNull(dest)) !== null) throw localChanged(dest, 'a file appeared at the target');
    await fsp.rename(src, dest);
    return;
  }
  fs.unlinkSync(src);
}

/**
 * Replaces an existing local file with a finished temp file without a window where a user edit is lost:
 * dest must match expect; its current content is kept in the trash (a hard link when possible, so even an
 * in-place edit racing with us lands in the kept copy); dest is checked again; then the temp is renamed
 * over it. Returns the new stat and where the old content was kept (kept even when the swap is refused).
 * Throws LOCAL_CHANGED when dest no longer matches.
 */
export async function replaceFile(
  tempPath: string,
  destAbs: string,
  expect: FileStat,
  trash: Trash,
  relPath?: string,
  written?: WrittenTemp,
): Promise<{ stat: FileStat; trashPath: string }> {
  const cur = await guard('replace', destAbs, () => lstatOrNull(destAbs));
  if (cur === null || !sameStat(toFileStat(cur), expect)) {
    await fsp.rm(tempPath, { force: true });
    throw localChanged(destAbs, cur === null ? 'it was removed' : 'it was modified');
  }
  let trashPath: string;
  let kept: fs.Stats | null;
  try {
    trashPath = await trash.keep(destAbs, relPath);
    // Keeping it (a hard link) moved its ctime: from here on, expect the file as it is now.
    kept = await lstatOrNull(destAbs);
  } catch (err) {
    await fsp.rm(tempPath, { force: true });
    throw err;
  }
  if (kept === null || !matchesButCtime(toFileStat(kept), expect)) {
    await fsp.rm(tempPath, { force: true });
    throw localChanged(destAbs, kept === null ? 'it was removed' : 'it was modified');
  }
  try {
    const stat = await commitTempFile(tempPath, destAbs, toFileStat(kept), written ? { written } : {});
    return { stat, trashPath };
  } catch (err) {
    await dropTrashCopyOfUnreplaced(trash, trashPath, destAbs, kept);
    throw err;
  }
}

/**
 * After a replace that failed: the trash copy just made is dropped when the file is still the one it copies (same
 * inode, size and mtime: not replaced), so a replace that keeps failing (a full disk, a read-only folder) does not
 * leave one more copy in the trash per attempt. When in doubt it stays: then it may be the only copy.
 */
async function dropTrashCopyOfUnreplaced(trash: Trash, trashPath: string, destAbs: string, kept: fs.Stats): Promise<void> {
  try {
    const now = fs.lstatSync(destAbs, { throwIfNoEntry: false });
    if (now === undefined || !matchesButCtime(toFileStat(now), toFileStat(kept))) return;
    trash.discard(trashPath);
  } catch {
    // best effort: a copy too many in the trash, purged with its day
  }
}

/**
 * Moves a file inside the sync root: creates the target's parents, refuses an existing target
 * (LOCAL_TARGET_EXISTS, never overwrites) and a source that no longer matches expect (LOCAL_CHANGED).
 * Uses link+unlink so a target appearing meanwhile is never clobbered; falls back to rename, or to
 * copy+fsync+unlink across devices. Returns the stat of the moved file.
 */
export async function moveFile(fromAbs: string, toAbs: string, expect: FileStat): Promise<FileStat> {
  return guard('move', fromAbs, async () => {
    const targetExists = (): BinderSyncError =>
      new BinderSyncError(`Cannot move to ${toAbs}: something is already there`, {
        code: 'LOCAL_TARGET_EXISTS',
        retryable: true,
        context: { from: fromAbs, to: toAbs },
        hint: 'the next pass re-scans both paths and plans again',
      });
    await fsp.mkdir(path.dirname(toAbs), { recursive: true });
    if ((await lstatOrNull(toAbs)) !== null) throw targetExists();
    const cur = await lstatOrNull(fromAbs);
    if (cur === null || !sameStat(toFileStat(cur), expect)) {
      throw localChanged(fromAbs, cur === null ? 'it was removed' : 'it was modified');
    }
    // Link and rename keep inode and mtime: the moved file's stat is the one just verified, with the ctime they
    // moved (settledStat). (A stat taken after the move could already describe a user's edit.)
    let moved = toFileStat(cur);
    let linked = false;
    try {
      await fsp.link(fromAbs, toAbs);
      linked = true;
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'EEXIST') throw targetExists();
      if (!NO_LINK.has(code ?? '')) throw err;
    }
    if (linked) {
      failpoint('move-after-link');
      // The source may have been swapped for a new file between the check and the link.
      const again = await lstatOrNull(fromAbs);
      if (again === null || again.ino !== expect.inode) {
        await fsp.unlink(toAbs);
        throw localChanged(fromAbs, 'it was replaced');
      }
      await fsp.unlink(fromAbs);
      moved = settledStat(toAbs, moved);
    } else {
      if ((await lstatOrNull(toAbs)) !== null) throw targetExists();
      try {
        await fsp.rename(fromAbs, toAbs);
        moved = settledStat(toAbs, moved);
      } catch (err) {
        if (errnoOf(err) !== 'EXDEV') throw err;
        await copyDurably(fromAbs, toAbs);
        moved = toFileStat(await fsp.lstat(toAbs)); // a copy is a new inode
        await fsp.unlink(fromAbs);
      }
    }
    await fsyncDir(path.dirname(toAbs));
    if (path.dirname(toAbs) !== path.dirname(fromAbs)) await fsyncDir(path.dirname(fromAbs));
    return moved;
  });
}

/**
 * Renames directory fromAbs to toAbs, a path where nothing may be, never over anything, and only while fromAbs is
 * still the directory of inode `expectInode` (what the plan saw). Everything under it moves in one rename: a
 * program writing in it meanwhile keeps writing to the same file, now at its new path, and every file keeps its
 * inode and ctime. The steps, each for a reason:
 * - toAbs is made first, exclusively, in its existing parent (not `-p`: a missing parent is a changed tree): one
 *   that exists is LOCAL_TARGET_EXISTS with nothing done. A rename onto a path that does not exist would not do:
 *   rename(2) has no no-clobber flag for directories in Node, and replaces an empty directory made meanwhile.
 * - it must resolve inside `root` (its parent may have become a symbolic link since the plan), and fromAbs must
 *   still be that directory, not a symbolic link or another directory put in its place (LOCAL_CHANGED).
 * - rename(2) then replaces only our own empty directory, atomically; ENOTEMPTY or EEXIST means something was
 *   written into it meanwhile: LOCAL_TARGET_EXISTS, the directory made is removed if it is still empty, and the
 *   source has not moved.
 * - both parents are fsynced, as a file move does.
 */
export async function moveDir(fromAbs: string, toAbs: string, expectInode: number, root: string): Promise<void> {
  return guard('move folder', fromAbs, async () => {
    const targetExists = (): BinderSyncError =>
      new BinderSyncError(`Cannot move the folder to ${toAbs}: something is already there`, {
        code: 'LOCAL_TARGET_EXISTS',
        retryable: true,
        context: { from: fromAbs, to: toAbs },
        hint: 'the next pass re-scans both paths and plans again',
      });
    try {
      await fsp.mkdir(toAbs);
    } catch (err) {
      if (errnoOf(err) === 'EEXIST') throw targetExists();
      if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') throw localChanged(toAbs, 'its parent folder is gone');
      throw err;
    }
    const made = fs.lstatSync(toAbs).ino;
    let renamed = false;
    try {
      if (!isInside(fs.realpathSync.native(root), fs.realpathSync.native(toAbs))) {
        throw new BinderSyncError(`Refusing to move a folder to ${toAbs}: it leads outside the sync root through a symbolic link`, {
          code: 'PATH_ESCAPE',
          retryable: false,
          context: { root, to: toAbs },
          hint: 'a folder above the target was replaced by a symbolic link; nothing was moved',
        });
      }
      const cur = await lstatOrNull(fromAbs);
      if (cur === null || !cur.isDirectory() || cur.ino !== expectInode) {
        throw localChanged(fromAbs, cur === null ? 'it was removed' : 'another folder or file is there now');
      }
      if ((await lstatOrNull(toAbs))?.ino !== made) throw targetExists(); // ours was replaced meanwhile
      try {
        await fsp.rename(fromAbs, toAbs);
        renamed = true;
      } catch (err) {
        if (errnoOf(err) === 'ENOTEMPTY' || errnoOf(err) === 'EEXIST') throw targetExists();
        throw err;
      }
    } finally {
      // Refused: the directory made for the move goes, while it is still ours and empty (rmdir removes no content).
      if (!renamed && fs.lstatSync(toAbs, { throwIfNoEntry: false })?.ino === made) await removeDirIfEmpty(toAbs).catch(() => false);
    }
    await fsyncDir(path.dirname(toAbs));
    if (path.dirname(toAbs) !== path.dirname(fromAbs)) await fsyncDir(path.dirname(fromAbs));
  });
}

/** mkdir -p. */
export async function ensureDir(absDir: string): Promise<void> {
  await guard('mkdir', absDir, () => fsp.mkdir(absDir, { recursive: true }).then(() => undefined));
}

/** Removes absDir when it is empty; true if removed. A non-empty or missing dir is left alone. */
export async function removeDirIfEmpty(absDir: string): Promise<boolean> {
  try {
    await fsp.rmdir(absDir);
    return true;
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT') return false;
    throw localIo(err, 'rmdir', absDir);
  }
}

/**
 * Removes `.binder-sync-tmp-*` and `.binder-sync-probe-*` files a crash left under root (they only ever
 * hold partial downloads or probes, never the user's content). Symlinks are not followed; unreadable
 * directories are skipped. Returns how many were removed.
 */
export async function cleanStaleTemps(root: string): Promise<number> {
  let removed = 0;
  const stack = [root];
  while (stack.length > 0) {
    const dir = stack.pop() as string;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const abs = path.join(dir, e.name);
      if (e.isDirectory()) stack.push(abs);
      else if (e.isFile() && (e.name.startsWith(TEMP_PREFIX) || e.name.startsWith(`${DAEMON_FILE_PREFIX}probe-`))) {
        await fsp.rm(abs, { force: true });
        removed++;
      }
    }
  }
  return removed;
}

export interface TrashOptions {
  /** Clock for the day folder (tests). */
  now?: () => Date;
  /** Injected for tests of the cross-device (EXDEV) path. */
  rename?: (from: string, to: string) => Promise<void>;
  link?: (from: string, to: string) => Promise<void>;
}

/** Local calendar day, YYYY-MM-DD. */
function dayOf(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

/**
 * Where replaced or removed local content goes: `<dir>/<YYYY-MM-DD>/<relPath>` (a "~N" before the
 * extension when that name is taken), dirs mode 0700. `dir` is `<stateDir>/<pair>/trash`, outside the
 * sync root; `root` is the sync root, used to derive relPath when none is given.
 */
export class Trash {
  private readonly now: () => Date;
  private readonly rename: (from: string, to: string) => Promise<void>;
  private readonly link: (from: string, to: string) => Promise<void>;
  private partialsSwept = false;

  constructor(
    readonly dir: string,
    readonly root: string,
    opts: TrashOptions = {},
  ) {
    this.now = opts.now ?? (() => new Date());
    this.rename = opts.rename ?? ((a, b) => fsp.rename(a, b));
    this.link = opts.link ?? ((a, b) => fsp.link(a, b));
  }

  /** Keeps a copy of absPath's current content in the trash (hard link, else copy+fsync); returns its path. */
  async keep(absPath: string, relPath?: string): Promise<string> {
    return this.guard('keep in trash', absPath, async () => {
      for (let n = 0; ; n++) {
        const slot = await this.candidate(absPath, relPath, n);
        if (slot === null) continue;
        const { dest } = slot;
        try {
          await this.link(absPath, dest);
        } catch (err) {
          const code = errnoOf(err);
          if (code === 'EEXIST') {
            this.release(slot, { taken: true });
            continue;
          }
          if (!NO_LINK.has(code ?? '')) {
            this.release(slot);
            throw err;
          }
          try {
            await copyDurably(absPath, dest, this.partialsDir(dest));
          } catch (copyErr) {
            this.release(slot, { taken: errnoOf(copyErr) === 'EEXIST' });
            if (errnoOf(copyErr) === 'EEXIST') continue;
            throw copyErr;
          }
        }
        await fsyncDir(path.dirname(dest));
        return dest;
      }
    });
  }

  /**
   * Moves absPath into the trash if it still matches expect (else LOCAL_CHANGED, nothing moved).
   * rename is atomic, and what was moved is checked again: a file swapped in at the last moment is put
   * back (or, if the name was taken again meanwhile, left in the trash and reported). Across devices:
   * copy+fsync, check, unlink. Returns the trash path.
   */
  async moveToTrash(absPath: string, relPath: string | undefined, expect: FileStat): Promise<string> {
    return this.guard('move to trash', absPath, async () => {
      const cur = await lstatOrNull(absPath);
      if (cur === null || !sameStat(toFileStat(cur), expect)) {
        throw localChanged(absPath, cur === null ? 'it was removed' : 'it was modified');
      }
      let slot: TrashSlot | null = null;
      for (let n = 0; slot === null; n++) slot = await this.candidate(absPath, relPath, n);
      const { dest } = slot;
      try {
        await this.rename(absPath, dest);
      } catch (err) {
        if (errnoOf(err) !== 'EXDEV') {
          this.release(slot);
          throw err;
        }
        try {
          await copyDurably(absPath, dest, this.partialsDir(dest));
        } catch (copyErr) {
          this.release(slot, { taken: errnoOf(copyErr) === 'EEXIST' });
          throw copyErr;
        }
        const again = await lstatOrNull(absPath);
        if (again === null || !sameStat(toFileStat(again), expect)) {
          await fsp.rm(dest, { force: true });
          this.release(slot);
          throw localChanged(absPath, 'it changed while being copied to the trash');
        }
        await fsp.unlink(absPath);
        await fsyncDir(path.dirname(absPath));
        return dest;
      }
      const moved = await fsp.lstat(dest);
      // The rename moved its ctime; size, mtime and inode say whether it is the file that was checked.
      if (!matchesButCtime(toFileStat(moved), expect)) {
        try {
          await fsp.link(dest, absPath); // put the user's new file back, never over something newer
          await fsp.unlink(dest);
          this.release(slot);
        } catch {
          throw new BinderSyncError(`${absPath} changed while being trashed; its content is kept at ${dest}`, {
            code: 'LOCAL_CHANGED',
            retryable: true,
            context: { path: absPath, trashPath: dest },
            hint: 'copy it back from the trash if you still need it',
          });
        }
        throw localChanged(absPath, 'it was replaced while being trashed');
      }
      await fsyncDir(path.dirname(absPath));
      return dest;
    });
  }

  /**
   * guard(), and a failure that is the trash's (it cannot be written, or its disk is full) said as such:
   * LOCAL_TRASH, naming the trash, not the local file, which is left as it was (black-box round 29a, F4).
   */
  private async guard<T>(op: string, abs: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const io = localIo(err, op, abs);
      if (!(io instanceof BinderSyncError) || io.code !== 'LOCAL_IO') throw io;
      const errno = io.context.errno as string;
      if (errno !== 'ENOSPC' && errno !== 'EDQUOT' && this.writable()) throw io;
      throw new BinderSyncError(`${op} failed for ${abs}: the pair's trash ${this.dir} cannot take it (${errno}); the local file was left as it was`, {
        code: 'LOCAL_TRASH',
        retryable: io.retryable,
        context: { op, path: abs, trash: this.dir, errno },
        hint: errno === 'ENOSPC' || errno === 'EDQUOT'
          ? `free some space on the disk of the stateDir (${this.dir}): content is replaced only once its old version is kept there`
          : `the trash is in the stateDir: it must be writable by this user (check the owner, mode and attributes of ${this.dir} and its parents: ls -ld, lsattr -d)`,
        cause: err,
      });
    }
  }

  /** Whether this user may create files in the trash (and today's folder in it), as far as access() tells. */
  writable(): boolean {
    try {
      fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      fs.accessSync(this.dir, fs.constants.W_OK | fs.constants.X_OK);
      const day = path.join(this.dir, dayOf(this.now()));
      if (fs.existsSync(day)) fs.accessSync(day, fs.constants.W_OK | fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Where a copy into the trash is made until whole (copyDurably): the top of its day folder, so that one a crash
   * left is found by reading the day folders alone (sweepPartialCopies), not the whole trash.
   */
  private partialsDir(dest: string): string {
    const [day = ''] = path.relative(this.dir, dest).split(path.sep);
    return path.join(this.dir, day);
  }

  /**
   * Removes the copies into the trash a crash cut short (copyDurably's temps at the top of each day folder), once
   * per process: they are never entries, only space taken. This process's own (a copy in flight) are left.
   */
  private sweepPartialCopies(days: readonly string[]): void {
    if (this.partialsSwept) return;
    this.partialsSwept = true;
    for (const day of days) {
      let names: string[];
      try {
        names = fs.readdirSync(path.join(this.dir, day));
      } catch {
        continue;
      }
      for (const name of names) {
        if (name.startsWith(TEMP_PREFIX) && !name.startsWith(`${TEMP_PREFIX}${PROCESS_TAG}`)) fs.rmSync(path.join(this.dir, day, name), { force: true });
      }
    }
  }

  /** Removes day folders older than `days` days; returns how many were removed. */
  async purgeOlderThan(days: number): Promise<number> {
    const cutoff = dayOf(new Date(this.now().getTime() - days * 86_400_000));
    let entries: string[];
    try {
      entries = await fsp.readdir(this.dir);
    } catch (err) {
      // Not a directory (a file put at its path): nothing to purge. Housekeeping must not stop the pair (it did,
      // uploads too, with "check the local disk": black-box round 30a, F5); what goes to the trash is held with
      // its own message (Trash.guard) until the trash can take it.
      if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return 0;
      throw localIo(err, 'read trash', this.dir);
    }
    this.sweepPartialCopies(entries.filter((name) => /^\d{4}-\d{2}-\d{2}$/.test(name) && name >= cutoff));
    let removed = 0;
    for (const name of entries) {
      if (/^\d{4}-\d{2}-\d{2}$/.test(name) && name < cutoff) {
        await fsp.rm(path.join(this.dir, name), { recursive: true, force: true });
        removed++;
      }
    }
    return removed;
  }

  /**
   * Removes a file this process kept in the trash (a replace that did not happen after all), and its origin
   * record after it (a crash between the two leaves a record of no file, never a file with no record).
   */
  discard(trashPath: string): void {
    fs.unlinkSync(trashPath);
    const [day = '', ...inDay] = path.relative(this.dir, trashPath).split(path.sep);
    if (!readsAsItself(inDay.join('/'))) fs.rmSync(path.join(this.dir, day, recordPathOf(inDay.join('/'))), { force: true });
  }

  /**
   * The n-th candidate trash path for a file, with its parent dirs created and its origin recorded when the path
   * does not tell it (trash-entries.ts recordNeeded); null when taken.
   */
  private async candidate(absPath: string, relPath: string | undefined, n: number): Promise<TrashSlot | null> {
    const rel = relPath ?? path.relative(this.root, absPath).split(path.sep).join('/');
    const dayDir = path.join(this.dir, dayOf(this.now()));
    await fsp.mkdir(dayDir, { recursive: true, mode: 0o700 });
    const dest = await this.freePath(dayDir, rel, n);
    if (dest === null) return null;
    const inDay = path.relative(dayDir, dest).split(path.sep).join('/');
    if (!recordNeeded(inDay, rel)) return { dest, record: null };
    const record = await this.writeRecord(dayDir, inDay, rel);
    return record === null ? null : { dest, record };
  }

  /** The n-th candidate path in dayDir for the file from `rel`, with its parent dirs created; null when taken. */
  private async freePath(dayDir: string, rel: string, n: number): Promise<string | null> {
    // The records' folder is not a place for files, even for one restored there by hand: a side folder then.
    if (rel === RECORDS_DIR || rel.startsWith(`${RECORDS_DIR}/`)) return this.sidePath(dayDir, rel, n);
    let name = rel;
    if (n > 0) {
      const slash = rel.lastIndexOf('/');
      const base = rel.slice(slash + 1);
      const dot = base.lastIndexOf('.');
      const stem = dot > 0 ? base.slice(0, dot) : base;
      const ext = dot > 0 ? base.slice(dot) : '';
      name = `${rel.slice(0, slash + 1)}${fitName(stem, `~${n}`, ext)}`; // within 255 bytes, however long the name
    }
    const dest = resolveInside(dayDir, name); // relPath comes from the plan: keep it inside the trash too
    // The stateDir's path is longer than the sync root's: a deep file's mirrored path may pass PATH_MAX.
    if (utf8Length(dest) > MAX_PATH_BYTES) return this.longPathCandidate(dayDir, rel, n);
    try {
      await fsp.mkdir(path.dirname(dest), { recursive: true, mode: 0o700 });
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ENAMETOOLONG') return this.longPathCandidate(dayDir, rel, n);
      if (code !== 'ENOTDIR' && code !== 'EEXIST') throw err;
      // A file trashed earlier today occupies a parent's name ("a" then "a/b"): use a side folder.
      return this.sidePath(dayDir, rel, n);
    }
    return (await lstatOrNull(dest)) === null ? dest : null;
  }

  /** `<day>/~n/<rel>`, with its parent dirs created; null when taken. */
  private async sidePath(dayDir: string, rel: string, n: number): Promise<string | null> {
    const dest = resolveInside(dayDir, `~${n}/${rel}`);
    try {
      await fsp.mkdir(path.dirname(dest), { recursive: true, mode: 0o700 });
    } catch {
      return null;
    }
    return (await lstatOrNull(dest)) === null ? dest : null;
  }

  /**
   * Records that the file about to be kept at `inDay` came from `rel`, durably (the record's content and its
   * name fsynced) before the file is put there: a crash in between leaves a record of no file, which is never
   * listed and makes that path taken, never a file whose origin is read wrong. Created exclusively: a record
   * already there (another process's, or one a crash left) means the path is taken: null.
   */
  private async writeRecord(dayDir: string, inDay: string, rel: string): Promise<string | null> {
    const abs = path.join(dayDir, recordPathOf(inDay));
    if ((await fsp.mkdir(path.dirname(abs), { recursive: true, mode: 0o700 })) !== undefined) await fsyncDir(dayDir);
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(abs, 'wx', 0o600);
    } catch (err) {
      if (errnoOf(err) === 'EEXIST') return null;
      throw err;
    }
    try {
      await fh.writeFile(rel);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsyncDir(path.dirname(abs));
    return abs;
  }

  /**
   * Gives up a slot whose file was not put there: its record goes, unless a file is there after all (a partial
   * copy, which then keeps its origin). `taken`: the path was taken by another writer, so the file there is not
   * the one the record names.
   */
  private release(slot: TrashSlot, opts: { taken?: boolean } = {}): void {
    if (slot.record === null) return;
    try {
      if (opts.taken === true || fs.lstatSync(slot.dest, { throwIfNoEntry: false }) === undefined) fs.rmSync(slot.record, { force: true });
    } catch {
      /* best effort: a record of no file is never listed */
    }
  }

  /**
   * A file whose mirrored trash path would be too long for the system (black-box round 28a, T3): kept as
   * `<day>/~long/<id>/<basename>`, its origin recorded like any path that does not tell it (candidate), where
   * `binder-sync trash` and `trash restore` read it (trash-entries.ts). Null when taken.
   */
  private async longPathCandidate(dayDir: string, rel: string, n: number): Promise<string | null> {
    const id = createHash('sha256').update(`${n}\0${rel}`).digest('hex').slice(0, 16);
    const dir = path.join(dayDir, LONG_PATHS_DIR, id);
    await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    const dest = path.join(dir, rel.slice(rel.lastIndexOf('/') + 1));
    return (await lstatOrNull(dest)) === null ? dest : null;
  }
}

/** A path in the trash chosen for a file, and the record of its origin written for it (null: none needed). */
interface TrashSlot {
  dest: string;
  record: string | null;
}
