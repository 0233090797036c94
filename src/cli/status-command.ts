// `binder-sync status`: what each pair is doing and what needs attention (conflicts, items that cannot be
// synced, pending transfers, the last error), read from the state DBs read-only so it works beside a daemon.
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { Config, PairConfig } from '../config/schema.js';
import { readDaemonStatus, liveLockOwner, type DaemonStatus } from '../daemon/status-file.js';
import { BinderSyncError, describeError } from '../errors.js';
import { StateStore, type ConflictRow, type OutboxStage } from '../state/store.js';
import { freeBytes } from '../local/fs-probe.js';
import { createIgnoreMatcher } from '../local/ignore.js';
import { NEARLY_FULL_BYTES, stateDirReadError, statePathUnreadable } from '../state/state-dir-error.js';
import { summarizeTrash, type TrashSummary } from '../local/trash-summary.js';
import { groupIssues, oneLine, printable } from '../sync/issue-groups.js';
import type { Issue } from '../sync/model.js';
import { LAST_PASS_STOPPED } from '../sync/stopped-steps.js';
import { collectRepeated, exitCodeFor, loadConfigOrExplain, printError, selectPairs } from './common.js';
import { fmtBytes } from '../format-bytes.js';
import { ExitCode } from './exit-codes.js';
import { runningConfigElsewhere, runningConfigLines, runningConfigOfInvalidFile, type RunningConfig, type StatusPair } from './status-running-config.js';
import { loadConfig } from '../config/load.js';
import { settingsIdentityOf } from '../service/index.js';
import { LAST_ERROR, LAST_ERROR_WITH } from '../state/pair-meta.js';

interface StatusOptions {
  config: string;
  pair?: string[];
  json?: boolean;
}

/** Conflicts listed per pair (newest first); `moreConflicts` says when older ones were left out. */
const CONFLICT_LIMIT = 100;
/** Lines per list in the human output (a line may stand for many items); --json has the full lists. */
const HUMAN_LIST_LIMIT = 10;

/**
 * The document `status --json` prints (stable: fields are only ever added). Times are ISO-8601 strings or
 * null when unknown.
 */
export interface StatusDocument {
  version: 1;
  generatedAt: string;
  /** Absolute path of the config file. */
  config: string;
  stateDir: string;
  /** Bytes free on the disk holding stateDir (null: not known). Under 1 MiB, no pass can record anything. */
  stateDirFreeBytes: number | null;
  daemon: {
    /** True while the pid in <stateDir>/binder-sync.lock is alive (a daemon, or a one-shot `sync`). */
    running: boolean;
    pid: number | null;
    /** From the daemon's status file; null for a one-shot `sync` or a daemon that does not write it. */
    startedAt: string | null;
    metricsPort: number | null;
    /** The daemon's last config reload, when it was rejected (it runs the config it had before). */
    reloadRejected: { at: string; reason: string } | null;
    /** Pairs the daemon runs that the config file no longer has (removed without a reload, or a rejected one). */
    pairsNotInConfig: string[];
  };
  pairs: PairStatus[];
  /**
   * Set when what is shown is the running daemon's config, not the file's: the file cannot be used (`problem`; exit
   * 2) or names another stateDir (`fileStateDir`) after a reload the daemon rejected. Absent otherwise.
   */
  runningConfig?: RunningConfig;
}

export type PairState = 'syncing' | 'never-synced' | 'error' | 'not-running' | 'idle';

export interface PairStatus {
  name: string;
  localPath: string;
  binderId: string;
  direction: PairConfig['direction'];
  /**
   * First that applies: syncing: a pass is running now; error: the last pass (or the daemon's last attempt)
   * failed, or the state DB cannot be read; never-synced: no completed pass recorded; not-running: synced
   * before, no daemon running now; idle: the daemon waits for the next pass.
   */
  state: PairState;
  /** Path of the pair's state DB; null `stateError` means it was read (or does not exist yet). */
  stateDb: string;
  /** Why the state DB could not be read (status then exits 6); null when fine. */
  stateError: string | null;
  lastPassAt: string | null;
  /**
   * Steps the last pass left because a stop (SIGTERM, SIGINT, a daemon's reload) cut it short: cancelled cleanly,
   * the next run takes them up (not an error). Null when none.
   */
  lastPassStopped: number | null;
  lastPollAt: string | null;
  lastScanAt: string | null;
  /** When the daemon plans the next pass (from its status file). */
  nextPassAt: string | null;
  /** Since when the current activity (syncing / waiting) runs, from the daemon's status file. */
  activitySince: string | null;
  /** What watches the local tree, from the daemon's status file (see PairActivitySchema.watcher). */
  watcher: string | null;
  /** Since when local changes wait for the running pass to end (see PairActivitySchema.changesWaitingSince). */
  changesWaitingSince: string | null;
  /**
   * False when a daemon runs but not this pair: the config file has it, the daemon's running config does not (not
   * reloaded since it was added, or the reload was rejected). Null when no daemon status tells.
   */
  inDaemon: boolean | null;
  lastError: string | null;
  /**
   * The last error recorded, when it was met with other service settings than the config's now (an address or
   * client id fixed since): not this config's, so not `lastError`; a pass with these settings will tell. Null
   * otherwise, and when the config's service settings cannot be resolved here (their ${VAR}s unset in this shell).
   */
  lastErrorOfOtherSettings: { message: string; settings: string } | null;
  /** Base entries: files known to be the same on both sides (those an ignore rule now hides are not counted). */
  filesInSync: number;
  /** Synced files that an ignore rule added since hides: left as they are on both sides, so not "in sync". */
  filesHiddenByIgnore: number;
  /** Uploads in flight (their outbox rows). */
  pendingUploads: Array<{ relPath: string; stage: OutboxStage; since: string }>;
  /** Uploads the daemon's pass has to do (planned at its start, left at its end); null when not reported. */
  pendingUploadCount: number | null;
  /** Downloads the daemon's pass has to do (planned at its start, left at its end); null when not reported. */
  pendingDownloads: number | null;
  /** Bytes the running pass has uploaded and downloaded so far (updated every second); null when no pass runs. */
  passBytes: number | null;
  /** Steps of the running pass's plan done so far (updated every second), and how many it planned; null when none runs. */
  passDone: number | null;
  passSteps: number | null;
  /** Newest first, at most 100. */
  conflicts: Array<Pick<ConflictRow, 'relPath' | 'conflictPath' | 'policy' | 'detail' | 'at'>>;
  moreConflicts: boolean;
  /** Items that cannot be synced as of the last pass, and why. */
  issues: Issue[];
  /**
   * What the pair's trash holds: local content that a pass replaced or removed, kept `retentionDays` in
   * `<dir>/<day>/<path>` (counted up to 10,000 files; `capped` when there are more).
   */
  trash: TrashSummary & { retentionDays: number };
}

export function registerStatusCommand(program: Command, setExit: (code: number) => void): void {
  program
    .command('status')
    .description('Show each pair\'s state, conflicts, items that cannot be synced and pending transfers (safe while the daemon runs)')
    .requiredOption('-c, --config <file>', 'YAML config file')
    .option('-p, --pair <name>', 'only this pair (repeat for several)', collectRepeated)
    .option('--json', 'print one JSON document (shape: StatusDocument in src/cli/status-command.ts)')
    .addHelpText(
      'after',
      '\nExit status: 0 when the status was read (even if pairs have conflicts, issues or errors: they are shown),\n2 when the config cannot be read, 6 when the stateDir or a state DB cannot be read\n(run it as the user the daemon runs as: the stateDir is private to it).',
    )
    .action(async (opts: StatusOptions) => setExit(await statusCommand(opts)));
}

async function statusCommand(opts: StatusOptions): Promise<number> {
  let fromFile: Config | null = null;
  let running: RunningConfig | null;
  let failed: number | null = null;
  try {
    // Local state only: the service's ${VAR}s and secret file need not resolve here (a monitoring user's shell).
    fromFile = loadConfigOrExplain(opts.config, undefined, { localOnly: true }).config;
    running = await runningConfigElsewhere(fromFile.stateDir, fromFile.pairs, opts.config);
  } catch (err) {
    printError(err);
    // A file the daemon rejected on reload: what it runs meanwhile is still shown, and the exit code says the file.
    running = err instanceof BinderSyncError && err.code === 'CONFIG_INVALID' ? runningConfigOfInvalidFile(opts.config, err) : null;
    if (running === null) return exitCodeFor(err);
    failed = exitCodeFor(err);
  }
  const config = running ?? fromFile;
  if (config === null) return failed ?? ExitCode.usage;
  const pairs = selectPairs(config.pairs, opts.pair, opts.config);
  if (pairs === null) return ExitCode.usage;
  // A stateDir this user may not read is said as such (exit 6), not shown as one where nothing ever ran.
  const unreadable = stateDirReadError(config.stateDir, 'status');
  if (unreadable !== null) {
    printError(unreadable);
    return exitCodeFor(unreadable);
  }
  // Compared with the settings each pair's last error was met with: only the file's own, fully resolved (the
  // running daemon's, shown instead, are not known here).
  const settingsNow = running === null ? serviceSettingsOf(opts.config) : null;
  const doc: StatusDocument = { ...collectStatus(config, pairs, path.resolve(opts.config), new Date(), settingsNow), ...(running !== null ? { runningConfig: running } : {}) };
  process.stdout.write(opts.json ? `${JSON.stringify(doc, null, 2)}\n` : `${running !== null ? runningConfigLines(running) : ''}${formatStatus(doc, new Date())}`);
  if (failed !== null) return failed;
  // A state DB that cannot be read is a local failure, as for `sync` (exit-codes.ts): not a bad command line.
  return doc.pairs.some((p) => p.stateError !== null) ? ExitCode.local : ExitCode.ok;
}

/** Reads everything status shows. Never writes: the DBs are opened read-only, the lock is only read. */
/**
 * The config file's service settings (settingsIdentityOf), or null when they do not resolve here: status reads
 * the file for local state only, and a ${VAR} unset in this shell or a secret file this user cannot read must not
 * make it fail, nor make an error look like another config's.
 */
function serviceSettingsOf(configFile: string): string | null {
  try {
    return settingsIdentityOf(loadConfig(configFile).config.service);
  } catch {
    return null;
  }
}

/** `settingsNow`: the config's service settings (settingsIdentityOf), null when not known (see PairStatus.lastErrorOfOtherSettings). */
export function collectStatus(
  config: { stateDir: string; pairs: readonly { name: string }[] },
  pairs: readonly StatusPair[],
  configFile: string,
  now = new Date(),
  settingsNow: string | null = null,
): StatusDocument {
  const pid = liveLockOwner(config.stateDir);
  // The status file is trusted only when the live lock owner wrote it (a crashed daemon leaves a stale one).
  const daemonFile = pid === null ? null : readDaemonStatus(config.stateDir);
  const daemon = daemonFile !== null && daemonFile.pid === pid ? daemonFile : null;
  const free = freeBytes(config.stateDir);
  const shown = withStateDirFull(pairs.map((p) => pairStatus(config.stateDir, p, pid !== null, daemon, settingsNow)), free, pid !== null);
  return {
    version: 1,
    generatedAt: now.toISOString(),
    config: configFile,
    stateDir: config.stateDir,
    stateDirFreeBytes: free,
    daemon: {
      running: pid !== null,
      pid,
      startedAt: daemon?.startedAt ?? null,
      metricsPort: daemon?.metricsPort ?? null,
      reloadRejected: daemon?.reloadRejected ?? null,
      pairsNotInConfig: daemon === null ? [] : Object.keys(daemon.pairs).filter((n) => !config.pairs.some((p) => p.name === n)),
    },
    pairs: shown,
  };
}

/**
 * A full stateDir under a running daemon: its passes fail at their first write, and it cannot record that either
 * (its status file and state DBs keep what they said before): a pair stayed "syncing (started N s ago)" with
 * "last error -" (black-box round 33b, F2). Each pair is said to be in error, for that reason.
 */
export function withStateDirFull(pairs: PairStatus[], freeBytes: number | null, daemonRunning: boolean): PairStatus[] {
  if (!daemonRunning || freeBytes === null || freeBytes >= NEARLY_FULL_BYTES) return pairs;
  return pairs.map((p) => ({ ...p, state: 'error', lastError: `${STATE_DIR_FULL}${p.lastError !== null ? `; before that: ${p.lastError}` : ''}` }));
}

const STATE_DIR_FULL = "the stateDir's disk is full: every pass fails at its first write and cannot record it (what else is shown may be out of date); free some space, and the daemon resumes by itself";

function pairStatus(stateDir: string, pair: StatusPair, running: boolean, daemon: DaemonStatus | null, settingsNow: string | null): PairStatus {
  const stateDb = path.join(stateDir, pair.name, 'state.db');
  const activity = daemon?.pairs[pair.name];
  const out: PairStatus = {
    name: pair.name,
    localPath: pair.localPath,
    binderId: pair.binderId,
    direction: pair.direction,
    state: 'never-synced',
    stateDb,
    stateError: null,
    lastPassAt: null,
    lastPassStopped: null,
    lastPollAt: null,
    lastScanAt: null,
    nextPassAt: activity?.nextPassAt ?? null,
    activitySince: activity?.since ?? null,
    watcher: activity?.watcher ?? null,
    changesWaitingSince: running ? (activity?.changesWaitingSince ?? null) : null,
    inDaemon: daemon === null ? null : activity !== undefined,
    // The daemon's word for a pair it could not open: one refused before its state DB was made has none to read.
    lastError: activity?.openError ?? null,
    lastErrorOfOtherSettings: null,
    filesInSync: 0,
    filesHiddenByIgnore: 0,
    pendingUploads: [],
    pendingUploadCount: null,
    pendingDownloads: null,
    passBytes: null,
    passDone: null,
    passSteps: null,
    conflicts: [],
    moreConflicts: false,
    issues: [],
    trash: { ...summarizeTrash(path.join(stateDir, pair.name, 'trash')), retentionDays: pair.trashRetentionDays },
  };
  const denied = statePathUnreadable(stateDb);
  if (denied !== null) {
    out.stateError = `cannot read ${stateDb}: ${denied} (run status as the user the daemon runs as, e.g. sudo -u binder-sync binder-sync status ...)`;
  } else if (fs.existsSync(stateDb)) {
    let store: StateStore | undefined;
    try {
      store = StateStore.openReadOnly(stateDb);
      // Damage the rows read below may not reach (a no-change pass reads no base row either): said, not shown as a
      // healthy pair (black-box round 37b, F5). ~50 ms at 100k files (state/integrity.ts).
      store.assertIntact(pair.name);
      const meta = (k: string) => {
        const v = store?.getMeta(k);
        return v === undefined || v === '' ? null : v;
      };
      out.lastPassAt = meta('lastPassAt');
      out.lastPollAt = meta('lastPollAt');
      out.lastScanAt = meta('lastScanAt');
      out.lastError = meta(LAST_ERROR) ?? out.lastError;
      const errorWith = meta(LAST_ERROR_WITH);
      if (out.lastError !== null && settingsNow !== null && errorWith !== null && errorWith !== settingsNow) {
        out.lastErrorOfOtherSettings = { message: out.lastError, settings: errorWith };
        out.lastError = null;
      }
      const count = (k: string) => {
        const v = meta(k);
        return v !== null && /^\d+$/.test(v) ? Number(v) : null;
      };
      out.lastPassStopped = count(LAST_PASS_STOPPED);
      out.pendingDownloads = count('pendingDownloads');
      out.pendingUploadCount = count('pendingUploads');
      out.passBytes = count('passBytes');
      out.passDone = count('passDone');
      out.passSteps = count('passSteps');
      out.filesInSync = store.countBase();
      // Only a pair with rules of its own is looked through (the base is loaded: ~0.25 s at 100k files); the
      // built-in rules hide temp files, which never have a base row (black-box round 30b, F8).
      if (pair.ignore.length > 0 && out.filesInSync > 0) {
        const rules = createIgnoreMatcher(pair.ignore);
        for (const b of store.loadBase().values()) if (rules.ignores(b.relPath, false)) out.filesHiddenByIgnore++;
        out.filesInSync -= out.filesHiddenByIgnore;
      }
      out.pendingUploads = store.listOutbox().map((o) => ({ relPath: o.relPath, stage: o.stage, since: o.createdAt }));
      const conflicts = store.listConflicts(CONFLICT_LIMIT + 1);
      out.moreConflicts = conflicts.length > CONFLICT_LIMIT;
      out.conflicts = conflicts.slice(0, CONFLICT_LIMIT).map(({ relPath, conflictPath, policy, detail, at }) => ({ relPath, conflictPath, policy, detail, at }));
      out.issues = store.listIssues();
    } catch (err) {
      // A state DB with no schema at all is one a first pass is creating right now: not synced yet, not an error.
      if (!(err instanceof BinderSyncError && err.code === 'STATE_NOT_CREATED')) out.stateError = err instanceof BinderSyncError ? err.describe() : describeError(err);
    } finally {
      store?.close();
    }
  }
  out.state = stateOf(out, running, activity?.activity);
  return out;
}

function stateOf(p: PairStatus, running: boolean, activity: 'idle' | 'syncing' | 'backoff' | undefined): PairState {
  if (running && activity === 'syncing') return 'syncing';
  if (p.lastError !== null || p.stateError !== null || (running && activity === 'backoff')) return 'error';
  if (p.lastPassAt === null) return 'never-synced';
  return running ? 'idle' : 'not-running';
}

// ---- human output ----

const STATE_WORDS: Record<PairState, string> = {
  syncing: 'syncing',
  'never-synced': 'never synced',
  error: 'error',
  'not-running': 'daemon not running',
  idle: 'idle',
};

/** How long past its due time a pass may not have started before status calls the daemon's status stale. */
const STALE_STATUS_MS = 60_000;

export function formatStatus(doc: StatusDocument, now: Date): string {
  const lines: string[] = [];
  const d = doc.daemon;
  const daemonLine = d.running
    ? `running (pid ${d.pid}${d.startedAt ? `, started ${ago(d.startedAt, now)}` : ''}${d.metricsPort ? `, metrics on port ${d.metricsPort}` : ''})`
    : 'not running';
  // A full disk there stops every pass at its first write, and the daemon from saying so anywhere but its log.
  const full = doc.stateDirFreeBytes !== null && doc.stateDirFreeBytes < NEARLY_FULL_BYTES;
  const stateDirLine = full ? `${doc.stateDir}   DISK FULL (${Math.floor(doc.stateDirFreeBytes! / 1024)} KiB free): no pass can record its work; free some space` : doc.stateDir;
  lines.push(row('daemon', daemonLine, 11));
  if (d.running && d.reloadRejected !== null) {
    lines.push(row('reload', `REJECTED ${ago(d.reloadRejected.at, now)}: ${oneLine(d.reloadRejected.reason)} (the daemon runs the config it had before)`, 11));
  }
  if (d.running && d.pairsNotInConfig.length > 0) {
    lines.push(row('also runs', `${d.pairsNotInConfig.join(', ')}: no longer in the config file, still synced until the daemon is reloaded`, 11));
  }
  lines.push(row('state dir', stateDirLine, 11));
  for (const p of doc.pairs) {
    lines.push('', `${p.name}  ${p.localPath}  <->  binder ${p.binderId}${p.direction === 'both' ? '' : `  (${p.direction} only)`}`);
    if (d.running && p.inDaemon === false) {
      lines.push(row('  state', `NOT RUNNING in the daemon: its running config has no pair ${p.name} (${d.reloadRejected !== null ? 'the reload was rejected, see above' : 'reload it: systemctl reload binder-sync, or SIGHUP'})`));
      continue;
    }
    let state = STATE_WORDS[p.state];
    if (p.state === 'syncing' && p.activitySince) state += ` (started ${ago(p.activitySince, now)})`;
    else if (p.nextPassAt && d.running) {
      state += ` (next pass ${ago(p.nextPassAt, now)})`;
      // The daemon says "syncing" as soon as a pass starts: a pass this far past due means its status file is not
      // being written (a full disk where stateDir is, say), so the rest of what it shows may be stale too.
      if (now.getTime() - Date.parse(p.nextPassAt) > STALE_STATUS_MS) state += `; OVERDUE: the daemon has not updated its status since, so what follows may be old (its log says why; is the disk of ${doc.stateDir} full?)`;
    }
    lines.push(row('  state', state));
    if (p.watcher !== null && d.running) lines.push(row('  watcher', p.watcher));
    // On a full disk the DB is not damaged: SQLite only cannot make the files it reads through.
    if (p.stateError) lines.push(row('  state DB', `${full ? 'CANNOT OPEN' : 'UNREADABLE'}: ${oneLine(p.stateError)}`));
    if (p.lastPassAt) {
      const stopped = p.lastPassStopped !== null && p.lastPassStopped > 0 ? `, stopped by the shutdown: ${p.lastPassStopped} step${p.lastPassStopped === 1 ? '' : 's'} left, the next run takes ${p.lastPassStopped === 1 ? 'it' : 'them'} up` : '';
      lines.push(row('  last pass', `${ago(p.lastPassAt, now)}${stopped}   (poll ${agoOrNever(p.lastPollAt, now)}, scan ${agoOrNever(p.lastScanAt, now)})`));
    }
    lines.push(row('  files in sync', `${p.filesInSync}${p.filesHiddenByIgnore > 0 ? `   (and ${p.filesHiddenByIgnore} synced before, hidden by an ignore rule since: left as they are)` : ''}`));
    const ups = p.pendingUploads;
    const upCount = Math.max(ups.length, p.pendingUploadCount ?? 0);
    const inFlight = ups.length === 0 ? '' : ` (${upCount > ups.length ? `${ups.length} in flight: ` : ''}${listPreview(ups.map((u) => printable(u.relPath)), 3)})`;
    const upText = `${upCount} upload${upCount === 1 ? '' : 's'}${inFlight}`;
    const downText = p.pendingDownloads === null ? 'downloads unknown' : `${p.pendingDownloads} download${p.pendingDownloads === 1 ? '' : 's'}`;
    // The counts come from the last pass that planned: while passes fail (the service unreachable, say), the
    // changes made since are not in them (black-box round 23, L2).
    const asOf = p.lastError !== null && (p.state === 'error' || p.state === 'syncing') ? `   (as of the last pass${p.lastPassAt ? `, ${ago(p.lastPassAt, now)}` : ''}; changes since are counted once a pass gets through)` : '';
    lines.push(row('  pending', `${upText}, ${downText}${asOf}`));
    if (p.state === 'syncing' && p.changesWaitingSince !== null) {
      lines.push(row('  waiting', `local changes seen ${ago(p.changesWaitingSince, now)}: the next pass takes them up when this one ends (one pass at a time per pair)`));
    }
    if (p.state === 'syncing' && p.passSteps !== null && p.passSteps > 0 && p.passDone !== null) {
      lines.push(row('  progress', `${p.passDone} of the ${p.passSteps} steps this pass planned are done (pending counts what it planned at its start)`));
    }
    if (p.state === 'syncing' && p.passBytes !== null && p.passBytes > 0) lines.push(row('  transferred', transferredText(p.passBytes, p.activitySince, now)));
    const other = p.lastErrorOfOtherSettings;
    const otherText = other === null ? '' : `   (the last one was met with other service settings, ${other.settings}: ${oneLine(other.message)}; a pass with these will tell)`;
    lines.push(row('  last error', p.lastError ? oneLine(p.lastError) : `-${otherText}`));
    if (p.conflicts.length > 0) {
      lines.push(row('  conflicts', `${p.conflicts.length}${p.moreConflicts ? '+' : ''}, newest first`));
      const shown = p.conflicts.slice(0, HUMAN_LIST_LIMIT);
      const width = Math.max(...shown.map((c) => ago(c.at, now).length));
      for (const c of shown) {
        const copy = c.conflictPath ? `  -> ${printable(c.conflictPath)}` : '';
        lines.push(`    ${ago(c.at, now).padEnd(width)}  ${printable(c.relPath)}${copy}  [${c.policy}]`);
      }
      if (p.conflicts.length > shown.length || p.moreConflicts) lines.push(`    ... ${p.conflicts.length - shown.length}${p.moreConflicts ? '+' : ''} more (see --json)`);
    } else {
      lines.push(row('  conflicts', 'none'));
    }
    if (p.issues.length > 0) {
      lines.push(row('  not synced', `${p.issues.length} item${p.issues.length === 1 ? '' : 's'}`));
      const groups = groupIssues(p.issues);
      const shown = groups.slice(0, HUMAN_LIST_LIMIT);
      const width = Math.max(...shown.map((g) => g.label.length));
      for (const g of shown) lines.push(`    ${g.label.padEnd(width)}  ${g.code}: ${g.detail}`);
      if (groups.length > shown.length) {
        const rest = groups.slice(shown.length).reduce((n, g) => n + g.count, 0);
        lines.push(`    ... ${rest} more item${rest === 1 ? '' : 's'} in ${groups.length - shown.length} more line${groups.length - shown.length === 1 ? '' : 's'} (see --json)`);
      }
    } else {
      lines.push(row('  not synced', 'none'));
    }
    lines.push(row('  trash', trashText(p.trash)));
    if (p.trash.files > 0) lines.push(row('', '(`binder-sync trash` lists it, `binder-sync trash restore` puts a file back)'));
  }
  return `${lines.join('\n')}\n`;
}

/** "3 files, 12.0 KiB from 2026-11-20 to 2026-11-26 (kept 30 days) in <dir>", or "empty". */
function trashText(t: PairStatus['trash']): string {
  if (t.files === 0) return 'empty';
  const count = `${t.files}${t.capped ? '+' : ''} file${t.files === 1 && !t.capped ? '' : 's'}, ${fmtBytes(t.bytes)}${t.capped ? '+' : ''}`;
  const days = t.oldestDay === t.newestDay ? `from ${t.oldestDay}` : `from ${t.oldestDay} to ${t.newestDay}`;
  return `${count} ${days} (kept ${t.retentionDays} days) in ${t.dir}`;
}

function row(label: string, value: string, width = 19): string {
  return `${label.padEnd(width)}${value}`;
}

function listPreview(items: string[], n: number): string {
  return items.length <= n ? items.join(', ') : `${items.slice(0, n).join(', ')}, ...`;
}

function agoOrNever(iso: string | null, now: Date): string {
  return iso === null ? 'never' : ago(iso, now);
}

/** "just now", "42 s ago", "3 min ago", "5 h ago", "2 days ago"; future times read "in 40 s". */
export function ago(iso: string, now: Date): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const diff = now.getTime() - t;
  const s = Math.round(Math.abs(diff) / 1000);
  let span: string;
  if (s < 60) span = `${s} s`;
  else if (s < 3600) span = `${Math.floor(s / 60)} min`;
  else if (s < 48 * 3600) span = `${Math.floor(s / 3600)} h`;
  else span = `${Math.floor(s / 86400)} days`;
  if (s < 2) return diff >= 0 ? 'just now' : 'now';
  return diff >= 0 ? `${span} ago` : `in ${span}`;
}

/** "120.5 MiB this pass (12.0 MiB/s)": what a running pass has moved, and how fast since it started. */
function transferredText(bytes: number, since: string | null, now: Date): string {
  const seconds = since === null ? NaN : (now.getTime() - Date.parse(since)) / 1000;
  const rate = Number.isFinite(seconds) && seconds >= 1 ? ` (${fmtBytes(Math.round(bytes / seconds))}/s)` : '';
  return `${fmtBytes(bytes)} this pass${rate}`;
}
