// The daemon's live status file <stateDir>/daemon-status.json (what each pair is doing right now, when the
// next pass is due), written atomically by the daemon and read by `binder-sync status`.
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

export const DAEMON_STATUS_FILE = 'daemon-status.json';

export const PairActivitySchema = z.object({
  /** idle: waiting for the next poll or a local change; syncing: a pass is running; backoff: waiting after an error. */
  activity: z.enum(['idle', 'syncing', 'backoff']),
  /** ISO time the activity began. */
  since: z.string(),
  /** ISO time of the next scheduled pass, when known. */
  nextPassAt: z.string().optional(),
  /**
   * What watches the local tree: the backend (folders, chokidar, native), `off` (the config says so), or why
   * nothing does (a watch limit: changes are then found by rescans only; the root gone). Absent before the
   * first pass starts the watcher.
   */
  watcher: z.string().optional(),
  /**
   * ISO time the watcher first saw a local change while a pass was running: a pair runs one pass at a time, so
   * the change waits for it (a large transfer can take minutes) and is taken up by the pass right after.
   */
  changesWaitingSince: z.string().optional(),
  /**
   * Why the pair could not be opened (it retries), while it has no state DB to hold that as its lastError: a pair
   * refused before anything was made for it (renamed in the config, its root held by another process).
   */
  openError: z.string().optional(),
});

/**
 * What `status` shows of a pair the daemon runs, from the daemon's running config: when the config file cannot be
 * used or names another stateDir (a rejected reload), status shows the daemon's pairs from here.
 */
export const RunningPairSchema = z.object({
  localPath: z.string(),
  binderId: z.string(),
  direction: z.enum(['both', 'download', 'upload']),
  ignore: z.array(z.string()),
  trashRetentionDays: z.number(),
});

export const DaemonStatusSchema = z.object({
  version: z.literal(1),
  /** The daemon's pid; the file is trusted only while the lock file names the same live pid. */
  pid: z.number().int().positive(),
  /** ISO time the daemon started. */
  startedAt: z.string(),
  /** Port of the metrics endpoint, when served. */
  metricsPort: z.number().int().optional(),
  /** The last config reload, when it was rejected: the daemon runs the config it had before. */
  reloadRejected: z.object({ at: z.string(), reason: z.string() }).optional(),
  /** The pairs the daemon runs (its running config, which may differ from the file after a rejected reload). */
  pairs: z.record(z.string(), PairActivitySchema),
  /** The config file the daemon was started with (absolute path), and the stateDir it runs with. */
  configFile: z.string().optional(),
  stateDir: z.string().optional(),
  /** Each running pair's config as status shows it (RunningPairSchema), by name. */
  pairConfigs: z.record(z.string(), RunningPairSchema).optional(),
});

export type PairActivity = z.infer<typeof PairActivitySchema>;
export type RunningPair = z.infer<typeof RunningPairSchema>;
export type DaemonStatus = z.infer<typeof DaemonStatusSchema>;

export function daemonStatusPath(stateDir: string): string {
  return path.join(stateDir, DAEMON_STATUS_FILE);
}

/** Writes the file atomically (temp file + rename), so a reader never sees half of it. */
export function writeDaemonStatus(stateDir: string, status: DaemonStatus): void {
  const file = daemonStatusPath(stateDir);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(status, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** Removes the file (the daemon calls this on a clean shutdown). */
export function removeDaemonStatus(stateDir: string): void {
  fs.rmSync(daemonStatusPath(stateDir), { force: true });
}

/** The status file, or null when it is missing or unreadable (a missing status is never an error). */
export function readDaemonStatus(stateDir: string): DaemonStatus | null {
  let text: string;
  try {
    text = fs.readFileSync(daemonStatusPath(stateDir), 'utf8');
  } catch {
    return null;
  }
  try {
    const parsed = DaemonStatusSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * The pid in <stateDir>/binder-sync.lock when that process is alive (a daemon or a one-shot `sync`), else
 * null. Read-only twin of the check in state/lock.ts: `status` must never take or clear the lock.
 */
export function liveLockOwner(stateDir: string): number | null {
  let pid: number;
  try {
    pid = Number.parseInt(fs.readFileSync(path.join(stateDir, 'binder-sync.lock'), 'utf8').trim(), 10);
  } catch {
    return null;
  }
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? pid : null;
  }
}
