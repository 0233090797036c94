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
