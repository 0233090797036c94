// The error for a state directory binder-sync cannot create or write, shared by the lock and the state DBs.
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
