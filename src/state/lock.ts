// One instance per stateDir: a lock file holding the owner's pid, taken with O_EXCL. A lock whose pid is no
// longer alive (a crashed process) is taken over, so a crash never leaves the stateDir stuck.
import fs from 'node:fs';
import path from 'node:path';
import { BinderSyncError } from '../errors.js';
import { stateDirError } from './state-dir-error.js';

export interface StateLock {
  readonly file: string;
  release(): void;
  /**
   * Writes the lock file again when it is gone (the stateDir deleted under a running daemon): without it,
   * `status` says no daemon runs and a second instance could start. Never takes over another live owner's file.
   */
  reassert(): void;
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
        reassert() {
          if (released || fs.existsSync(file)) return;
          fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
          const again = fs.openSync(file, 'wx', 0o600);
          try {
            fs.writeSync(again, `${process.pid}\n`);
          } finally {
            fs.closeSync(again);
          }
        },
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
          // Not "another stateDir": for the same folders that is refused too (ROOT_LOCKED), whose hint sent the
          // reader back here (black-box round 37b, F10).
          hint: `stop the other instance first (it holds ${file}); while a daemon runs it syncs on its own (\`binder-sync status\` shows its passes), so a \`sync\` beside it is not needed. A second stateDir is only for pairs of other local folders`,
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
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

/**
 * A process that was killed but not yet reaped by its parent (a zombie, state Z in /proc) still answers kill(pid, 0),
 * though it holds nothing: a restart right after `kill -9` was refused for about a second (black-box round 10).
 */
function isZombie(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false; // no /proc (not Linux), or gone meanwhile: kill() said it was there
  }
}
