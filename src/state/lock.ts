// One instance per stateDir: a lock file holding the owner's pid, taken with O_EXCL. A lock whose pid is no
// longer alive (a crashed process) is taken over, so a crash never leaves the stateDir stuck.
import fs from 'node:fs';
import path from 'node:path';
import { BinderSyncError } from '../errors.js';

export interface StateLock {
  readonly file: string;
  release(): void;
}

export function acquireStateLock(stateDir: string): StateLock {
  try {
    fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw stateDirError(stateDir, err, 'creating it');
  }
  const file = path.join(stateDir, 'binder-sync.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      let fd: number;
      try {
        fd = fs.openSync(file, 'wx', 0o600);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw err;
        throw stateDirError(stateDir, err, 'creating its lock file');
      }
      try {
        fs.writeSync(fd, `${process.pid}\n`);
        fs.fsyncSync(fd);
      } catch (err) {
        fs.closeSync(fd);
        fs.rmSync(file, { force: true });
        throw stateDirError(stateDir, err, 'writing its lock file');
      }
      fs.closeSync(fd);
      let released = false;
      return {
        file,
        release() {
          if (released) return;
          released = true;
          try {
            if (readPid(file) === process.pid) fs.unlinkSync(file);
          } catch {
            /* already gone */
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException | null)?.code !== 'EEXIST') throw err;
      const pid = readPid(file);
      if (pid !== null && pid !== process.pid && isAlive(pid)) {
        throw new BinderSyncError(`another binder-sync (pid ${pid}) is using the state directory ${stateDir}`, {
          code: 'STATE_LOCKED',
          retryable: false,
          context: { stateDir, pid },
          hint: `stop the other instance first (it holds ${file}), or give this one another stateDir`,
        });
      }
      // Stale: the owner died without releasing it. Remove and try again.
      try {
        fs.rmSync(file, { force: true });
      } catch (rmErr) {
        throw stateDirError(stateDir, rmErr, `removing the stale lock file of pid ${pid ?? '?'}`);
      }
    }
  }
  throw new BinderSyncError(`could not take the lock ${file}`, { code: 'STATE_LOCKED', retryable: true, context: { stateDir } });
}

/**
 * A state directory binder-sync cannot create or write (a service user without access to /var/lib/..., a
 * read-only mount, a full disk): a LOCAL_ error (exit 6) that says which directory and what to do, instead of a
 * bare errno. Nothing was changed when it is thrown. A non-fs error (a bug) is passed through.
 */
function stateDirError(stateDir: string, err: unknown, doing: string): unknown {
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

function readPid(file: string): number | null {
  try {
    const n = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10);
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
