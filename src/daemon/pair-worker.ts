// One pair inside the daemon: opens it (retried with back-off until it works), watches its root, runs passes
// when the scheduler says so, and publishes its state (meta keys in the state DB, metrics, the status file).
import path from 'node:path';
import type { PairConfig } from '../config/schema.js';
import { BinderSyncError } from '../errors.js';
import { createWatcher, rootIdentity, type LocalWatcher, type WatchHints, type WatcherBackend } from '../local/watcher.js';
import type { Logger } from '../log.js';
import type { ServiceClient } from '../service/index.js';
import { lastErrorMeta, writePairMeta } from '../state/pair-meta.js';
import { stateDbWriteError } from '../state/state-dir-error.js';
import type { Action, Issue } from '../sync/model.js';
import { parentOf } from '../sync/path-key.js';
import { releaseRoot } from '../local/root-lock.js';
import { runPass, type PassObserver, type PassReport } from '../sync/pass.js';
import { openPair } from '../sync/open-pair.js';
import type { PairRuntime } from '../sync/pair-runtime.js';
import type { EarlyWatcher } from './early-watchers.js';
import { releaseMemorySoon } from './heap-tuning.js';
import type { SyncMetrics } from './metrics.js';
import { logIssueChanges, logPassSummary, pendingOf, recordPassMetrics } from './pass-summary.js';
import { PairScheduler, quietPollCostMs, type PairState, type PassOutcome, type Trigger } from './scheduler.js';
import type { DaemonTiming } from './timing.js';

/** How often the bytes a running pass has moved are written for `status` (ms). */
const PASS_BYTES_WRITE_MS = 1_000;

export interface PairWorkerDeps {
  pair: PairConfig;
  stateDir: string;
  client: ServiceClient;
  /** The daemon's logger; the worker adds {pair}. */
  log: Logger;
  timing: DaemonTiming;
  metrics: SyncMetrics | null;
  /** Fires when the daemon gives up waiting for in-flight work at shutdown: passes abort. */
  abortSignal: AbortSignal;
  /** Called after every state change (the daemon rewrites its status file). */
  onChange?: () => void;
  /** Progress callbacks handed to every pass (the terminal progress line); optional. */
  observer?: PassObserver;
  /** This pair's watcher, started before the daemon's modules loaded (early-watchers.ts): adopted on the first pass. */
  earlyWatcher?: EarlyWatcher;
}

export interface PairActivityView {
  state: PairState;
  since: number;
  nextPassAt: number | null;
  /** See PairActivitySchema.watcher; null until the first pass starts the watcher. */
  watcher: string | null;
  /** When the watcher first saw a local change that waits for the running pass to end (see PairActivitySchema). */
  changesWaitingSince: number | null;
  /** Why the pair could not be opened, while it has no state DB to hold it as lastError (see PairActivitySchema). */
  openError: string | null;
}

/** The local paths an action writes (or may write): what the watcher then reports. */
function writtenPaths(a: Action): string[] {
  const out: string[] = [];
  if ('relPath' in a) out.push(a.relPath);
  if ('from' in a) out.push(a.from);
  if ('to' in a) out.push(a.to);
  if (a.kind === 'upload' && a.thenMoveTo !== undefined) out.push(a.thenMoveTo.relPath); // moved there next (executor followUpOf)
  if (a.kind === 'mkdir-local') out.push(`${a.relPath}/.`);
  if (a.kind === 'move-dir-local') out.push(`${a.to}/.`); // the directory made and moved in: its own events too
  return out;
}

export class PairWorker {
  readonly name: string;
  private rt: PairRuntime | null = null;
  private watcher: LocalWatcher | null = null;
  /**
   * The watcher being started when the pair was opened: the first pass lists the remote side meanwhile and walks
   * the local tree once it settles (PassOptions.localReady). startWatcher never throws.
   */
  private watcherStarting: Promise<void> = Promise.resolve();
  private watchFailed = false;
  /** See PairWorkerDeps.earlyWatcher: until the first watcher start takes it. */
  private earlyWatcher: EarlyWatcher | null;
  /**
   * The sync root as the watcher started on it (dev:ino), and whether it vanished since: a root moved away and
   * back, or unmounted and mounted again, is no longer seen by the watcher (chokidar stops at the root's
   * unlinkDir; inotify watches the old inode), so the next pass starts a new one once the root is back.
   */
  private watchedRoot: string | null = null;
  private watchedBackend: WatcherBackend | null = null;
  private rootGone = false;
  /** Folders the watcher named since the last pass started; `hintedFull` when it lost track. */
  private readonly hintedDirs = new Set<string>();
  private hintedFull = false;
  /** Process CPU at the start of the last pass, when that pass was a quiet poll (see quietPollCost). */
  private quietPollStartCpu: NodeJS.CpuUsage | null = null;
  /** The issues of the last pass, by key: logIssueChanges logs only what changed. */
  private openIssues = new Map<string, Issue>();
  private readonly scheduler: PairScheduler;
  private readonly log: Logger;
  /** Folders the running pass has written into (parents of what it downloaded, moved, created). */
  private readonly passWroteIn = new Set<string>();
  private activity: PairActivityView = { state: 'starting', since: Date.now(), nextPassAt: null, watcher: null, changesWaitingSince: null, openError: null };
  private closed = false;
  /** Aborts this pair's passes only (reload); the daemon's abortSignal aborts every pair (shutdown). */
  private readonly own = new AbortController();
  private readonly signal: AbortSignal;
  /** Fired by drain(): the running pass stops looking and starts no new step (PassOptions.windDown). */
  private readonly windDown = new AbortController();

  constructor(private readonly d: PairWorkerDeps) {
    this.name = d.pair.name;
    this.earlyWatcher = d.earlyWatcher ?? null;
    this.signal = AbortSignal.any([d.abortSignal, this.own.signal]);
    this.log = d.log.child({ pair: d.pair.name });
    this.scheduler = new PairScheduler({
      pollIntervalMs: d.timing.pollIntervalOverrideMs ?? d.pair.pollInterval,
      // A test's (or operator's) BINDER_SYNC_POLL_INTERVAL_MS is meant literally: no spacing out then.
      pollCpuBudgetPercent: d.timing.pollIntervalOverrideMs === undefined ? d.pair.pollCpuBudget : 0,
      rescanIntervalMs: d.timing.rescanIntervalOverrideMs ?? d.pair.fullRescanInterval,
      timing: d.timing,
      log: this.log,
      runPass: (trigger) => this.pass(trigger),
      onState: (state, nextAt) => this.onState(state, nextAt),
      onFailure: (f) => {
        d.metrics?.errors.inc({ pair: this.name });
        // runPass records lastError for what it finishes; a pass that threw (or an open that failed) ends here.
        this.writeMeta(lastErrorMeta(f.reason, d.client.settingsIdentity));
        // A pair refused before its state DB was made has no DB to hold that: the status file says it.
        if (this.rt === null) {
          this.activity = { ...this.activity, openError: f.reason };
          this.d.onChange?.();
        }
      },
    });
  }

  get pair(): PairConfig {
    return this.d.pair;
  }

  get view(): PairActivityView {
    return this.activity;
  }

  /** Starts the first pass (which opens the pair); returns at once. */
  start(): void {
    this.scheduler.start();
  }

  /**
   * No new pass starts, and the running one winds down (a scan or listing ends at once, no new step starts);
   * resolves when it has finished (or aborted through abortSignal).
   */
  drain(): Promise<void> {
    this.windDown.abort(new BinderSyncError('the daemon is stopping', { code: 'ABORTED', retryable: true, hint: 'the next run takes the pass up again' }));
    return this.scheduler.stop();
  }

  /** A pair backing off or in the error state tries again now (see PairScheduler.retryNow); true when it does. */
  retryNow(): boolean {
    return this.scheduler.retryNow();
  }

  /** Makes the running pass stop at its next step (in-flight transfers finish, or end with the client). */
  abort(): void {
    this.own.abort();
  }

  /** Stops everything and releases the watcher and the state DB. Call after drain() (or instead of it). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    void this.scheduler.stop();
    await this.watcherStarting;
    await this.takeEarlyWatcher()?.close(); // never adopted (the pair was never opened)
    await this.watcher?.close().catch(() => undefined);
    this.watcher = null;
    // Not running any more: status must not show a stale state or due time.
    if (this.rt) this.writeMeta({ daemonState: null, nextPassAt: null });
    this.rt?.store.close();
    this.rt = null;
    // A pair removed, or restarted with another localPath, by a reload: another process may sync its old root now.
    releaseRoot(this.d.pair.localPath, this.d.pair.name);
    if (this.d.metrics) removePairMetrics(this.d.metrics, this.name);
  }

  /** One scheduled pass: open the pair the first time (or after it failed), then run a full pass. */
  private async pass(trigger: Trigger): Promise<PassOutcome> {
    if (!this.rt) {
      this.rt = await openPair(this.d.pair, this.d.stateDir, this.d.client, this.d.log, {
        badRules: 'hold-uploads',
        unreadableElements: 'hold-uploads',
        signal: AbortSignal.any([this.signal, this.windDown.signal]),
      });
      if (this.closed) {
        this.rt.store.close();
        this.rt = null;
        throw new BinderSyncError('pair stopped', { code: 'ABORTED', retryable: true });
      }
      if (this.activity.openError !== null) this.activity = { ...this.activity, openError: null };
      this.watcherStarting = this.startWatcher(this.rt);
    }
    const rt = this.rt;
    await this.rewatchIfRootChanged(rt);
    this.log.debug({ trigger }, 'pass starting');
    const obs = this.d.observer;
    let report: PassReport | null = null;
    const cpuBefore = process.cpuUsage();
    // Bytes moved and steps done by this pass so far, for `status` while it runs (one large file, or thousands of
    // small ones, take minutes: the planned counts alone looked stuck, black-box round 29b, finding 5): written at
    // most once a second, the last counts a second after the ones before at the latest.
    let passBytes = 0;
    let passDone = 0;
    let bytesWrittenAt = 0;
    let bytesTimer: NodeJS.Timeout | null = null;
    const writeBytes = (): void => {
      bytesTimer = null;
      bytesWrittenAt = Date.now();
      this.writeMeta({ passBytes: String(passBytes), passDone: String(passDone) });
    };
    const progressed = (): void => {
      const wait = bytesWrittenAt + PASS_BYTES_WRITE_MS - Date.now();
      if (wait <= 0) writeBytes();
      else bytesTimer ??= setTimeout(writeBytes, wait).unref();
    };
    const countBytes = (n: number): void => {
      passBytes += n;
      obs?.onBytes?.(n);
      progressed();
    };
    const scope = this.scope(trigger);
    this.passWroteIn.clear();
    try {
      report = await runPass(rt, {
        ...scope,
        // A local file changed less than this long ago is not uploaded yet (pair.quietPeriod, 1 s by default): tar,
        // rsync, cp and downloads write in several steps, and editors and sed save through temp files that are
        // renamed a moment later.
        minFileAgeMs: this.d.pair.quietPeriod,
        ...(this.d.timing.writeAccessRecheckMs !== undefined ? { writeAccessRecheckMs: this.d.timing.writeAccessRecheckMs } : {}),
        // A restart within minutes of the last folder walk does not walk again (see there).
        reuseSavedFolderTree: true,
        parkWhenQuiet: true,
        localReady: this.watcherStarting,
        signal: this.signal,
        windDown: this.windDown.signal,
        // What the pass is about to do, for `status` while it runs (a first sync of thousands of files takes minutes).
        onPlan: (plan) => {
          const planned = pendingOf({ plan, execution: null });
          const steps = plan.groups.reduce((n, g) => n + g.length, 0);
          this.writeMeta({ pendingUploads: String(planned.uploads), pendingDownloads: String(planned.downloads), passBytes: '0', passDone: '0', passSteps: String(steps) });
          obs?.onPlan?.(plan);
        },
        onActionDone: (action, ok) => {
          passDone++;
          progressed();
          // Where this pass wrote: the watcher reports those writes as changes (see onHints).
          for (const p of writtenPaths(action)) this.passWroteIn.add(parentOf(p));
          obs?.onActionDone?.(action, ok);
        },
        onBytes: countBytes,
      });
    } catch (thrown) {
      const err = stateDbWriteError(thrown, rt.store.file);
      if (err instanceof BinderSyncError && err.code === 'LOCAL_ROOT') this.rootGone = true;
      throw err;
    } finally {
      if (bytesTimer !== null) clearTimeout(bytesTimer);
      obs?.onPassEnd?.(report);
      // A full pass (start-up, rescan, retry) leaves a large heap of garbage behind; polls and watcher passes
      // are left to V8's own collector.
      if (trigger !== 'poll' && trigger !== 'watch') releaseMemorySoon();
    }
    const pending = pendingOf(report);
    logPassSummary(this.log, report, trigger);
    this.openIssues = logIssueChanges(this.log, this.openIssues, report.issues);
    this.writeMeta({ pendingUploads: String(pending.uploads), pendingDownloads: String(pending.downloads), passBytes: null, passDone: null, passSteps: null });
    if (this.d.metrics) recordPassMetrics(this.d.metrics, report, pending, Date.now());
    if (rt.readOnly === true && rt.pair.direction === 'upload') {
      throw new BinderSyncError(`pair ${this.name} is upload-only, but the API client has read-only access`, {
        code: 'PAIR_READ_ONLY',
        retryable: false,
        context: { pair: this.name },
        hint: 'grant the API client read/write access, or set direction: download for this pair',
      });
    }
    if (report.plan.blocked) {
      throw new BinderSyncError(`pair ${this.name}: ${report.plan.blocked.message}`, {
        code: 'PASS_BLOCKED',
        retryable: false,
        context: { pair: this.name, gate: report.plan.blocked.code },
        hint: 'check the local root and the binder (the pair is looked at again every poll interval); if the change is intended, stop the daemon, run `binder-sync sync --force` once and start it again',
      });
    }
    return {
      // Not a step held while another program writes its file: looked at again soon (recheckInMs), not backed off.
      retryableFailures: (report.execution?.failures ?? []).some((f) => f.retryable && f.heldOpen === undefined),
      recheckInMs: report.recheckInMs,
      quietPollCpuMs: this.quietPollCost(trigger, report, cpuBefore),
      scannedAll: scope.localDirs === undefined,
    };
  }

  /**
   * What polling costs while idle, for the poll CPU budget: the process's CPU over a whole cycle from the start
   * of the previous quiet poll to the start of this one (the listing, plus the garbage collection after it,
   * which runs after the pass has returned), or over this pass alone for the first quiet poll, at most twice the
   * pass's own (quietPollCostMs). Null unless this was a quiet poll.
   */
  private quietPollCost(trigger: Trigger, report: PassReport, startCpu: NodeJS.CpuUsage): number | null {
    const quiet = trigger === 'poll' && report.plan.groups.length === 0 && report.deferred.length === 0;
    const cycleStart = this.quietPollStartCpu;
    this.quietPollStartCpu = quiet ? startCpu : null;
    if (!quiet) return null;
    const pass = process.cpuUsage(startCpu);
    const cycle = cycleStart === null ? null : (startCpu.user - cycleStart.user + startCpu.system - cycleStart.system) / 1000;
    return quietPollCostMs((pass.user + pass.system) / 1000, cycle);
  }

  /**
   * How much a pass looks at. While the watcher is healthy, a pass after local changes rescans only the
   * hinted folders and reuses the last remote listing if it is younger than the poll interval; a poll lists
   * the remote side but rescans only hinted folders. The first pass, periodic rescans, retries and any pass
   * after a watcher error or overflow look at everything (the watcher can miss events: DESIGN.md, Syncthing).
   */
  private scope(trigger: Trigger): { localDirs?: string[]; reuseRemoteWithinMs?: number } {
    const dirs = [...this.hintedDirs];
    const full = this.hintedFull;
    this.hintedDirs.clear();
    this.hintedFull = false;
    const watching = this.watcher !== null && !this.watchFailed;
    if (!watching || full || (trigger !== 'watch' && trigger !== 'poll')) return {};
    return {
      localDirs: dirs,
      ...(trigger === 'watch' ? { reuseRemoteWithinMs: this.d.timing.pollIntervalOverrideMs ?? this.d.pair.pollInterval } : {}),
    };
  }

  /** `backend` overrides the pair's setting (see rewatchIfRootChanged). */
  private async startWatcher(rt: PairRuntime, backend?: WatcherBackend): Promise<void> {
    if (this.d.pair.watcher === 'off') {
      this.log.debug('watcher off: local changes are found by polling and rescans');
      this.showWatcher('off');
      return;
    }
    const handlers = {
      onHints: (h: WatchHints) => {
        this.log.debug({ dirs: h.dirs.slice(0, 10), full: h.full }, 'local change');
        if (h.full) this.hintedFull = true;
        for (const d of h.dirs) this.hintedDirs.add(d);
        // A pair runs one pass at a time: a change seen during a long transfer waits for it, which status says.
        // Events in folders the pass itself has written to are most likely its own downloads and moves.
        const own = !h.full && h.dirs.every((dir) => this.passWroteIn.has(dir));
        if (this.scheduler.busy && !own && this.activity.changesWaitingSince === null) {
          this.activity = { ...this.activity, changesWaitingSince: Date.now() };
          this.d.onChange?.();
        }
        this.scheduler.hint();
      },
      onError: (err: BinderSyncError) => this.watcherFailed(err),
    };
    const early = backend === undefined ? this.takeEarlyWatcher() : null;
    try {
      this.watcher = early
        ? await early.adopt(handlers)
        : await createWatcher({
            root: this.d.pair.localPath,
            ignore: rt.ignore,
            backend: backend ?? this.d.pair.watcher,
            log: this.log,
            ...(this.d.timing.watchSettleMs !== undefined ? { settleMs: this.d.timing.watchSettleMs } : {}),
            ...handlers,
          });
      // An early watcher watches the root it was started on (a root replaced since is then noticed: see below).
      this.watchedRoot = early ? early.rootId : rootIdentity(this.d.pair.localPath);
      this.watchedBackend = this.watcher.backend;
      this.showWatcher(this.watcher.backend);
      this.log.debug({ backend: this.watcher.backend }, 'watching for local changes');
    } catch (err) {
      this.watcherFailed(err);
    }
  }

  /** The early watcher, once (a later start creates its own); closed when it was started for another config. */
  private takeEarlyWatcher(): EarlyWatcher | null {
    const early = this.earlyWatcher;
    this.earlyWatcher = null;
    if (early === null || early.pair === this.d.pair) return early;
    void early.close();
    return null;
  }

  /**
   * Starts a new watcher when the root vanished and is back (chokidar and folders stop at the root's
   * unlinkDir), or is another directory now (a disk mounted again: inotify watches the old inode). The native
   * watcher keeps watching a root moved away and back (same inode), but @parcel/watcher cannot watch a path
   * again in the same process once the directory it watched there was deleted (measured: its unsubscribe fails
   * with EINVAL and a new subscription there gets no events): a replaced root is then watched by the folders
   * backend.
   */
  private async rewatchIfRootChanged(rt: PairRuntime): Promise<void> {
    if (this.d.pair.watcher === 'off' || this.watchedRoot === null) return;
    const now = rootIdentity(this.d.pair.localPath);
    if (now === null) return;
    const replaced = now !== this.watchedRoot;
    const native = this.watchedBackend === 'native';
    const wasGone = this.rootGone;
    this.rootGone = false;
    if (!replaced && (!wasGone || native)) return;
    const old = this.watcher;
    this.watcher = null;
    await old?.close().catch(() => undefined);
    this.watchFailed = false;
    this.hintedFull = true; // whatever happened meanwhile was not seen
    await this.startWatcher(rt, native ? 'folders' : undefined);
    if (this.watcher !== null) this.log.info({ backend: this.watchedBackend }, 'a folder is at the sync root\'s path again (the next pass checks it is the synced one): watching it');
  }

  /** Any watcher trouble: warn once with its hint, drop the watcher, and live on polling plus rescans. */
  private watcherFailed(err: unknown): void {
    if (err instanceof BinderSyncError && err.code === 'WATCH_ROOT_GONE') {
      // Not a watcher fault: the next pass reports the missing root, and a new watcher starts once it is back.
      this.rootGone = true;
      this.showWatcher('none: the local root is gone (watched again once it is back)');
      this.log.warn(`${err.message}; looked for again at every poll interval at the latest, and watched again once it is back`);
      const w = this.watcher;
      this.watcher = null;
      this.hintedFull = true;
      void w?.close().catch(() => undefined);
      this.scheduler.hint();
      return;
    }
    if (this.watchFailed) return;
    this.watchFailed = true;
    const e = err instanceof BinderSyncError ? err : null;
    this.showWatcher(`none: ${e?.code ?? 'WATCH_FAILED'} (changes are found by polls and rescans)`);
    this.log.warn(
      { code: e?.code ?? 'WATCH_FAILED', ...(e?.hint ? { hint: e.hint } : {}) },
      `${e?.message ?? String(err)}; falling back to polling and periodic rescans`,
    );
    const w = this.watcher;
    this.watcher = null;
    this.hintedFull = true;
    void w?.close().catch(() => undefined);
    // The watcher may have missed changes before it failed.
    this.scheduler.hint();
  }

  /** What `status` shows as this pair's watcher (see PairActivitySchema.watcher). */
  private showWatcher(watcher: string): void {
    if (watcher === this.activity.watcher) return;
    this.activity = { ...this.activity, watcher };
    this.d.onChange?.();
  }

  private onState(state: PairState, nextAt: number | null): void {
    // A pass that starts takes up every change seen so far.
    const changesWaitingSince = state === 'syncing' || state === 'starting' ? null : this.activity.changesWaitingSince;
    if (state !== this.activity.state) this.activity = { ...this.activity, state, since: Date.now(), nextPassAt: nextAt, changesWaitingSince };
    else this.activity = { ...this.activity, nextPassAt: nextAt, changesWaitingSince };
    this.writeMeta({ daemonState: state, nextPassAt: nextAt === null ? '' : new Date(nextAt).toISOString() });
    this.d.onChange?.();
  }

  /**
   * Meta keys for `binder-sync status`. Before the pair could be opened (e.g. binder not found) there is no
   * runtime, so a short-lived handle on the same DB file is used; a DB that cannot be opened is skipped. A DB that
   * does not exist is not made for them: a pair refused before its open made one (renamed in the config) must leave
   * nothing in the stateDir, or the `mv` of its old state to the new name moved the state into it (black-box
   * round 31a, F3). Its failure is in the status file (openError).
   */
  private writeMeta(values: Record<string, string | null>): void {
    const err = writePairMeta(this.rt?.store, path.join(this.d.stateDir, this.name, 'state.db'), values, { create: false });
    if (err !== null) this.log.debug({ err }, 'could not write status to the state DB');
  }
}

function removePairMetrics(m: SyncMetrics, pair: string): void {
  for (const f of [m.filesTransferred, m.bytesTransferred, m.queueDepth, m.errors, m.lastPollTimestamp, m.conflicts, m.passDuration]) f.remove({ pair });
}
