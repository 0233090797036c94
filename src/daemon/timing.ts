// The daemon's timing knobs: back-off steps, shutdown grace, and the environment overrides that tests (and
// impatient operators) use to go below the config schema's minimum poll interval.
export interface DaemonTiming {
  /** First back-off delay after a transient failure; doubles per consecutive failure (default 5 s). */
  backoffBaseMs: number;
  /** Longest back-off delay (default 5 min). */
  backoffMaxMs: number;
  /** Retry period of a pair in the error state (bad metadata rules, binder not found; default 5 min). */
  fatalRetryMs: number;
  /** When set, replaces every pair's pollInterval (BINDER_SYNC_POLL_INTERVAL_MS). */
  pollIntervalOverrideMs: number | undefined;
  /** When set, replaces every pair's fullRescanInterval (BINDER_SYNC_RESCAN_INTERVAL_MS). */
  rescanIntervalOverrideMs: number | undefined;
  /** Watcher quiet period before its hints trigger a pass (BINDER_SYNC_WATCH_SETTLE_MS; default 300 ms). */
  watchSettleMs: number | undefined;
  /** How long a pair found read-only stays so before write access is probed again (BINDER_SYNC_WRITE_ACCESS_RECHECK_MS; default 1 h). */
  writeAccessRecheckMs: number | undefined;
  /** A quiet poll cheaper than this never spaces polls out (BINDER_SYNC_POLL_CPU_FLOOR_MS; default MIN_STRETCHING_POLL_CPU_MS). */
  pollCpuFloorMs: number | undefined;
}

export const DEFAULT_TIMING: DaemonTiming = {
  backoffBaseMs: 5_000,
  backoffMaxMs: 300_000,
  fatalRetryMs: 300_000,
  pollIntervalOverrideMs: undefined,
  rescanIntervalOverrideMs: undefined,
  watchSettleMs: undefined,
  writeAccessRecheckMs: undefined,
  pollCpuFloorMs: undefined,
};

/** Default bound on how long in-flight passes may run after SIGTERM/SIGINT before they are aborted. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

function positiveInt(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * Timing from the environment. These overrides are not part of the config file on purpose: the schema keeps
 * pollInterval >= 5 s to protect the service, and only tests need less. Invalid values are ignored.
 *   BINDER_SYNC_POLL_INTERVAL_MS, BINDER_SYNC_RESCAN_INTERVAL_MS, BINDER_SYNC_BACKOFF_BASE_MS,
 *   BINDER_SYNC_BACKOFF_MAX_MS, BINDER_SYNC_FATAL_RETRY_MS, BINDER_SYNC_WATCH_SETTLE_MS,
 *   BINDER_SYNC_WRITE_ACCESS_RECHECK_MS, BINDER_SYNC_POLL_CPU_FLOOR_MS
 */
export function timingFromEnv(env: NodeJS.ProcessEnv = process.env): DaemonTiming {
  return {
    backoffBaseMs: positiveInt(env, 'BINDER_SYNC_BACKOFF_BASE_MS') ?? DEFAULT_TIMING.backoffBaseMs,
    backoffMaxMs: positiveInt(env, 'BINDER_SYNC_BACKOFF_MAX_MS') ?? DEFAULT_TIMING.backoffMaxMs,
    fatalRetryMs: positiveInt(env, 'BINDER_SYNC_FATAL_RETRY_MS') ?? DEFAULT_TIMING.fatalRetryMs,
    pollIntervalOverrideMs: positiveInt(env, 'BINDER_SYNC_POLL_INTERVAL_MS'),
    rescanIntervalOverrideMs: positiveInt(env, 'BINDER_SYNC_RESCAN_INTERVAL_MS'),
    watchSettleMs: positiveInt(env, 'BINDER_SYNC_WATCH_SETTLE_MS'),
    writeAccessRecheckMs: positiveInt(env, 'BINDER_SYNC_WRITE_ACCESS_RECHECK_MS'),
    pollCpuFloorMs: positiveInt(env, 'BINDER_SYNC_POLL_CPU_FLOOR_MS'),
  };
}
