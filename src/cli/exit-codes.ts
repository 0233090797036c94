// Process exit codes of the binder-sync command (documented in README "Exit codes").
export const ExitCode = {
  /**
   * Everything asked for was done; for `sync`, both sides agree. Conflicts are settled by conflictPolicy in the
   * same pass (keep-both: a conflict copy beside the remote version), so a pass that met one still exits 0.
   */
  ok: 0,
  /** The pass ran but something is left: items that cannot be synced, files still being written, failed items. */
  incomplete: 1,
  /** Bad command line, configuration or environment variable: nothing was touched. */
  usage: 2,
  /** The service could not be reached, refused the credentials, or answered invalidly. */
  service: 3,
  /** A safety gate stopped the pass before it deleted anything (see --force). */
  blocked: 4,
  /** Another instance holds the lock of this stateDir. */
  locked: 5,
  /** Local filesystem failure (sync root missing, disk full, permission denied). */
  local: 6,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * Error codes that mean the local filesystem failed (exit 6): LOCAL_* and PATH_ESCAPE, but not LOCAL_CHANGED,
 * which only says a program was writing the file meanwhile (the next pass takes it up: exit 1).
 */
export function isLocalFailure(code: string): boolean {
  return (code.startsWith('LOCAL') && code !== 'LOCAL_CHANGED') || code === 'PATH_ESCAPE';
}
