// Probes properties of the filesystem holding the sync root (today: whether it ignores case).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BinderSyncError } from '../errors.js';
import { DAEMON_FILE_PREFIX } from './ignore.js';

/** Errors that mean "this process may not write here": the root's owner/mode, an ACL, a read-only mount. */
const NOT_WRITABLE = new Set(['EACCES', 'EPERM', 'EROFS']);

/**
 * True when `dir`'s filesystem treats names differing only in case as the same file (macOS/Windows
 * defaults, FAT, case-folded ext4 dirs). Creates a mixed-case probe file, looks it up under the
 * upper-case spelling, and removes it. When dir cannot be written (permissions, read-only mount, disk
 * full) it throws a LOCAL_ROOT BinderSyncError (exit 6 for `sync`) with a hint; nothing was changed.
 */
export function detectCaseInsensitive(dir: string): boolean {
  const name = `${DAEMON_FILE_PREFIX}probe-${randomBytes(6).toString('hex')}-case`;
  const probe = path.join(dir, name);
  try {
    fs.closeSync(fs.openSync(probe, 'wx', 0o600));
  } catch (err) {
    throw probeError(dir, err);
  }
  try {
    const other = fs.lstatSync(path.join(dir, name.toUpperCase()), { throwIfNoEntry: false });
    return other !== undefined;
  } finally {
    fs.rmSync(probe, { force: true });
  }
}

/** The root-level error for a failed probe write; a non-fs error (a bug) is passed through as it is. */
function probeError(dir: string, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== 'string' || !/^E[A-Z]+$/.test(code)) return err;
  const notWritable = NOT_WRITABLE.has(code);
  const why = code === 'EROFS' ? 'is on a read-only filesystem' : notWritable ? 'is not writable by this user' : `cannot be written (${code})`;
  return new BinderSyncError(`the local root ${dir} ${why} (${code} when creating a probe file in it)`, {
    code: 'LOCAL_ROOT',
    retryable: true,
    context: { localPath: dir, errno: code },
    cause: err,
    hint: notWritable
      ? `binder-sync must be able to read and write the local root: check its owner and mode (ls -ld ${JSON.stringify(dir)}) against the user binder-sync runs as, or that the disk is mounted read-write. Nothing was changed.`
      : 'is the disk full or failing, or the path on a filesystem that does not allow new files? Nothing was changed.',
  });
}

/**
 * The same answer without writing anything, for `sync --dry-run`: a name in `dir` (or, for a root that does not
 * exist yet, in the nearest folder above it that does) whose case can be flipped is looked up under the flipped
 * spelling; the same inode means the filesystem ignores case. With no such name to try, the platform's default
 * (case-insensitive on macOS and Windows) stands in: a dry run that guesses wrong only words a plan differently.
 */
export function detectCaseInsensitiveWithoutWriting(dir: string): boolean {
  let at = dir;
  while (!fs.statSync(at, { throwIfNoEntry: false })?.isDirectory()) {
    const parent = path.dirname(at);
    if (parent === at) break;
    at = parent;
  }
  let names: string[] = [];
  try {
    names = fs.readdirSync(at).slice(0, 200);
  } catch {
    // unreadable: the default below
  }
  for (const name of names) {
    const flipped = flipCase(name);
    if (flipped === name) continue;
    const own = fs.lstatSync(path.join(at, name), { throwIfNoEntry: false });
    if (own === undefined) continue; // gone meanwhile
    const other = fs.lstatSync(path.join(at, flipped), { throwIfNoEntry: false });
    if (other === undefined) return false;
    // Both spellings exist: the same file on a case-insensitive filesystem, two files on a case-sensitive one.
    return other.ino === own.ino && other.dev === own.dev;
  }
  return process.platform === 'darwin' || process.platform === 'win32';
}

/** ASCII letters only: every case-insensitive filesystem folds those, not all fold the rest alike (ß, Turkish i). */
function flipCase(name: string): string {
  return name.replace(/[A-Za-z]/g, (ch) => (ch <= 'Z' ? ch.toLowerCase() : ch.toUpperCase()));
}

/**
 * Bytes free for this process on the disk holding `dir` (root may also use the blocks ext4 reserves for it); null
 * when that cannot be told (dir missing).
 */
export function freeBytes(dir: string): number | null {
  try {
    const st = fs.statfsSync(dir);
    return (process.getuid?.() === 0 ? st.bfree : st.bavail) * st.bsize;
  } catch {
    return null;
  }
}
