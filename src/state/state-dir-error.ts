// The error for a state directory binder-sync cannot create or write, shared by the lock and the state DBs.
import fs from 'node:fs';
import path from 'node:path';
import { freeBytes } from '../local/fs-probe.js';
import { BinderSyncError } from '../errors.js';

/**
 * A state directory binder-sync cannot create or write (a service user without access to /var/lib/..., a
 * read-only mount, a full disk): a LOCAL_ error (exit 6) that says which directory and what to do, instead of a
 * bare errno. Nothing was changed when it is thrown. A non-fs error (a bug) is passed through.
 */
export function stateDirError(stateDir: string, err: unknown, doing: string): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== 'string' || !/^E[A-Z]+$/.test(code)) return err;
  const denied = code === 'EACCES' || code === 'EPERM';
  const why =
    code === 'EROFS' ? 'is on a read-only filesystem'
    : denied ? 'is not writable by this user'
    : code === 'ENOSPC' || code === 'EDQUOT' ? 'is on a full disk'
    : code === 'ENOTDIR' || code === 'EEXIST' ? 'is not a directory (or a parent of it is a file)'
    : `cannot be written (${code})`;
  const uid = typeof process.getuid === 'function' ? ` (uid ${process.getuid()})` : '';
  return new BinderSyncError(`the state directory ${stateDir} ${why} (${code} when ${doing})`, {
    code: 'LOCAL_STATE_DIR',
    retryable: false,
    context: { stateDir, errno: code },
    cause: err,
    hint:
      code === 'ENOSPC' || code === 'EDQUOT'
        ? 'free some disk space. Nothing was changed.'
        : `binder-sync keeps its lock, state databases and trash in stateDir: make ${JSON.stringify(stateDir)} writable by the user binder-sync runs as${uid}, or set stateDir in the config to a directory that user owns. Nothing was changed.`,
  });
}

/** SQLite's codes for a state DB that cannot be written: the disk is full, or the file system refuses. */
const UNWRITABLE: Record<string, string> = {
  SQLITE_FULL: 'the disk holding it is full',
  SQLITE_READONLY: 'its file system or file is read-only',
  SQLITE_CANTOPEN: 'its file cannot be opened',
  SQLITE_IOERR: 'the disk reported an I/O error',
};

/**
 * A state DB write that failed because of the disk under the state directory (better-sqlite3 throws an
 * SqliteError with SQLITE_FULL, SQLITE_IOERR_*, SQLITE_READONLY_*): a LOCAL_STATE_DIR error that says so, with a
 * hint, retryable (space may return). Anything else is passed through. The step whose record failed is
 * planned again by the next pass, from what it then finds on disk.
 */
export function stateDbWriteError(err: unknown, file?: string): unknown {
  if (err instanceof BinderSyncError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return err;
  // Named when the caller knows which pair's DB it is (round 29a, F6: "the state database is damaged" said which).
  const which = file === undefined ? 'the state database' : `the state database ${file}`;
  const where = file === undefined ? {} : { file };
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT' || code.startsWith('SQLITE_CORRUPT_')) {
    // Damage open() could not see (its header was fine): met by a read or write in a pass.
    return new BinderSyncError(`${which} is damaged (${code})`, {
      code: 'STATE_CORRUPT',
      retryable: false,
      context: { sqlite: code, ...where },
      cause: err,
      hint: `stop binder-sync and move ${file === undefined ? "the pair's state.db" : file} aside (e.g. add .broken to its name); the next pass rebuilds the state by comparing content, and differences become conflicts, never overwrites`,
    });
  }
  const family = Object.keys(UNWRITABLE).find((k) => code === k || code.startsWith(`${k}_`));
  if (family === undefined) return err;
  return new BinderSyncError(`${which} cannot be written: ${UNWRITABLE[family]} (${code})`, {
    code: 'LOCAL_STATE_DIR',
    retryable: true,
    context: { sqlite: code, ...where },
    cause: err,
    hint:
      family === 'SQLITE_FULL'
        ? 'free some disk space where stateDir is; the next pass picks up where this one stopped'
        : 'check the disk and the permissions of stateDir; the next pass picks up where this one stopped',
  });
}

/** Below this much free space a state DB that will not open is put down to a full disk. */
export const NEARLY_FULL_BYTES = 1 << 20;


/**
 * "the disk holding <dir> is full (N KiB free)" when a SQLite failure to open a state DB (which SQLite reports as
 * a disk I/O error, or as "unable to open", when it cannot grow its -wal or -shm) meets a disk with less than
 * 1 MiB left for this user; else null. Said instead of "check that stateDir is writable" (black-box round 22, K2).
 */
export function fullDiskNote(dir: string, err: unknown): string | null {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !/^SQLITE_(IOERR|FULL|CANTOPEN)/.test(code)) return null;
  const free = freeBytes(dir);
  return free !== null && free < NEARLY_FULL_BYTES ? `the disk holding ${dir} is full (${Math.floor(free / 1024)} KiB free)` : null;
}

/** The files `status` reads directly in the stateDir besides the pairs' folders (state/lock.ts, daemon/status-file.ts). */
const STATUS_READS = ['binder-sync.lock', 'daemon-status.json'];

/**
 * A LOCAL_STATE_DIR error (exit 6) when this user cannot read `stateDir` (the units make it 0700, the daemon's
 * user's), or the lock and status files in it; null when it can, or when it does not exist yet (nothing synced).
 * `status` read such a stateDir as empty: "daemon not running", "never synced", exit 0 (black-box round 31b, F2).
 */
export function stateDirReadError(stateDir: string, command: string): BinderSyncError | null {
  let failed: { err: unknown; what: string } | null = null;
  try {
    fs.readdirSync(stateDir);
    for (const name of STATUS_READS) {
      const file = path.join(stateDir, name);
      try {
        fs.accessSync(file, fs.constants.R_OK);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') failed ??= { err, what: `its ${name}` };
      }
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    failed = { err, what: '' };
  }
  return failed === null ? null : stateReadError(stateDir, failed.err, failed.what, command);
}

/**
 * A state path this user cannot look at (`<stateDir>/<pair>/state.db` behind a 0700 folder): its errno (EACCES),
 * or null when it exists or is missing. fs.existsSync says "missing" for both, which reads as "never synced".
 */
export function statePathUnreadable(file: string): string | null {
  try {
    fs.statSync(file);
    return null;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? null : (code ?? 'error');
  }
}

function stateReadError(stateDir: string, err: unknown, what: string, command: string): BinderSyncError {
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  const denied = code === 'EACCES' || code === 'EPERM';
  const uid = typeof process.getuid === 'function' ? ` (uid ${process.getuid()})` : '';
  return new BinderSyncError(`cannot read the state directory ${stateDir}${what === '' ? '' : ` (${what})`}: ${code}`, {
    code: 'LOCAL_STATE_DIR',
    retryable: false,
    context: { stateDir, errno: code },
    cause: err,
    hint: denied
      ? `the stateDir is private to the user the daemon runs as, and this user${uid} may not read it: run it as that user (e.g. sudo -u binder-sync binder-sync ${command} ...)`
      : 'check the path and the permissions of stateDir',
  });
}
