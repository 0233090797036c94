// Process exit codes of the binder-sync command (documented in README "Exit codes").
export const ExitCode = {
  /**
   * Everything asked for was done; for `sync`, both sides agree. Conflicts are settled by conflictPolicy in the
   * same pass (keep-both: a conflict copy beside the remote version), so a pass that met one still exits 0.
   */
  ok: 0,
  /** The pass ran but something is left: items that cannot be synced, files still being written, failed items. */
  incomplete: 1,
  /**
   * Bad command line, configuration (an unset ${VAR} in it included) or BINDER_SYNC_LOG_LEVEL: nothing was touched.
   * A tuning variable with a safe default (BINDER_SYNC_HEAP_GROWING_PERCENT) is only warned about.
   */
  usage: 2,
  /**
   * The service could not be reached, refused the credentials, or answered invalidly; or it has no binder of a
   * pair's binderId for this client. That last is a wrong id or missing access, and the service does not say
   * which (both are a 404 or an absent binder), so it is the service's answer (3), not a config error (2).
   */
  service: 3,
  /** A safety gate stopped the pass before it deleted anything (see --force). */
  blocked: 4,
  /** Another instance holds the lock of this stateDir. */
  locked: 5,
  /** Local filesystem failure (sync root missing, disk full, permission denied, a damaged or replaced state DB). */
  local: 6,
  /** Stopped by SIGINT (Ctrl-C; 128 + 2, as a shell reports it): `sync` cancelled its pass, or a second one stopped at once. */
  interrupted: 130,
  /** Stopped by SIGTERM (128 + 15): `sync` cancelled its pass cleanly. */
  terminated: 143,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * Error codes that mean the local filesystem failed (exit 6): LOCAL_*, PATH_ESCAPE and an unusable state DB, but not LOCAL_CHANGED,
 * which only says a program was writing the file meanwhile (the next pass takes it up: exit 1).
 */
export function isLocalFailure(code: string): boolean {
  return (code.startsWith('LOCAL') && code !== 'LOCAL_CHANGED') || code === 'PATH_ESCAPE' || STATE_DB_UNUSABLE.has(code);
}

/**
 * The state DB cannot be used (damaged, replaced under the process, not creatable, written by a newer version): no
 * pass ran, which exit 1 ("something is left") would hide from a wrapper script (black-box round 11, F6).
 */
const STATE_DB_UNUSABLE = new Set(['STATE_CORRUPT', 'STATE_REPLACED', 'STATE_OPEN', 'STATE_NOT_CREATED', 'STATE_TOO_NEW']);
