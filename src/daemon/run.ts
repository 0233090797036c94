// The daemon's lifecycle (`binder-sync run`): lock, service client, one worker per pair, metrics endpoint, status
// file, config reload (SIGHUP) and the bounded shutdown. Signals themselves are wired in cli/run-command.ts.
import path from 'node:path';
import { serviceClientFor } from '../service/from-config.js';
import { loadConfig } from '../config/load.js';
import type { Config, PairConfig } from '../config/schema.js';
import { BinderSyncError, describeError, oneLineMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { ServiceClient } from '../service/index.js';
import { acquireStateLock, type StateLock } from '../state/lock.js';
import type { PassObserver } from '../sync/pass.js';
import type { EarlyWatcher } from './early-watchers.js';
import { createSyncMetrics, serveMetrics, type MetricsServer, type SyncMetrics } from './metrics.js';
import { PairWorker } from './pair-worker.js';
import { preflightPair } from '../sync/open-pair.js';
import { removeDaemonStatus, writeDaemonStatus, type DaemonStatus, type PairActivity } from './status-file.js';
import { notifySystemd } from './systemd.js';
import type { DaemonTiming } from './timing.js';

export interface DaemonOptions {
  /** Re-read on reload(). */
  configFile: string;
  /** The config already loaded from configFile. */
  config: Config;
  log: Logger;
  timing: DaemonTiming;
  /** How long in-flight passes may run after shutdown() before they are aborted. */
  graceMs: number;
  /** Set when BINDER_SYNC_LOG_LEVEL is given: it wins over config.log.level, also on reload. */
  logLevelOverride?: string;
  env?: NodeJS.ProcessEnv;
  /** Progress callbacks for the passes of a pair (the terminal progress line of `run`/`demo`); optional. */
  passObserver?: (pair: string) => PassObserver | undefined;
  /** Watchers started before this module loaded, by pair (early-watchers.ts); the pairs' workers adopt them. */
  earlyWatchers?: Map<string, EarlyWatcher>;
}

/** After the grace period and the abort, how long shutdown still waits for passes to unwind. */
const ABORT_SETTLE_MS = 5_000;

/**
 * Takes the stateDir lock (throws STATE_LOCKED when another instance holds it), starts every pair and
 * returns the running daemon. Throws METRICS_LISTEN when the metrics port cannot be bound (nothing is left
 * running then).
 */
export async function startDaemon(o: DaemonOptions): Promise<Daemon> {
  let lock: StateLock;
  try {
    lock = acquireStateLock(o.config.stateDir);
  } catch (err) {
    await closeEarlyWatchers(o);
    throw err;
  }
  const daemon = new Daemon(o, lock);
  try {
    await daemon.startMetrics(o.config);
  } catch (err) {
    await Promise.all([daemon.shutdown(), closeEarlyWatchers(o)]);
    throw err;
  }
  daemon.startPairs();
  await notifySystemd(['--ready', `--status=syncing ${o.config.pairs.length} pair(s)`], o.log, o.env);
  return daemon;
}

/** The daemon did not start: nobody adopts the early watchers. */
async function closeEarlyWatchers(o: DaemonOptions): Promise<void> {
  const early = [...(o.earlyWatchers?.values() ?? [])];
  o.earlyWatchers?.clear();
  await Promise.all(early.map((w) => w.close()));
}

export class Daemon {
  private config: Config;
  private client: ServiceClient;
  private readonly workers = new Map<string, PairWorker>();
  private readonly hardAbort = new AbortController();
  private readonly metrics: SyncMetrics = createSyncMetrics();
  private metricsServer: MetricsServer | null = null;
  private readonly startedAt = new Date().toISOString();
  /** Reloads and the shutdown run one after the other. */
  private ops: Promise<unknown> = Promise.resolve();
  private stopping = false;
  private stopped: Promise<void> | null = null;
  private statusQueued = false;
  /** The last reload, when it was rejected (the running config stayed): `status` says so. Cleared by one that applies. */
  private reloadRejected: { at: string; reason: string } | null = null;
  private readonly log: Logger;
  private resolveFinished!: () => void;
  private readonly finishedPromise = new Promise<void>((r) => (this.resolveFinished = r));

  constructor(
    private readonly o: DaemonOptions,
    private readonly lock: StateLock,
  ) {
    this.config = o.config;
    this.log = o.log;
    this.client = this.newClient(o.config);
  }

  /** Names of the pairs currently running. */
  get pairNames(): string[] {
    return [...this.workers.keys()];
  }

  get metricsPort(): number | null {
    return this.metricsServer?.port ?? null;
  }

  /** Part of startDaemon (and of a reload that changes the metrics settings). */
  async startMetrics(config: Config): Promise<void> {
    if (config.metrics.port === undefined) return;
    this.metricsServer = await serveMetrics(config.metrics.port, config.metrics.host, this.metrics.registry);
    this.log.info({ host: config.metrics.host, port: this.metricsServer.port }, 'serving metrics at /metrics');
  }

  /** Part of startDaemon: one worker per pair, each starting its first pass. */
  startPairs(): void {
    this.log.info({ pairs: this.config.pairs.map((p) => p.name), stateDir: this.config.stateDir }, 'binder-sync daemon started');
    for (const pair of this.config.pairs) this.startWorker(pair, this.o.earlyWatchers?.get(pair.name));
    this.o.earlyWatchers?.clear();
    this.queueStatus();
  }

  /**
   * Re-reads the config file. An invalid config (or one that changes what needs a restart: stateDir) is
   * rejected with the reason logged at error level and the running config stays. Otherwise pairs are
   * started, stopped or restarted as needed, unchanged pairs keep running, and the log level applies.
   * Resolves true when the new config was applied.
   */
  reload(): Promise<boolean> {
    const run = this.ops.then(() => this.applyReload());
    this.ops = run.catch(() => undefined);
    return run;
  }

  /**
   * Stops taking work at once, lets in-flight passes finish within graceMs, then aborts them, closes
   * watchers, state DBs, the client and the metrics endpoint, removes the status file and releases the lock.
   * Idempotent: every call returns the same promise.
   */
  shutdown(): Promise<void> {
    if (this.stopped) return this.stopped;
    this.stopping = true;
    // Scheduling stops now, even if a reload is still draining its pairs.
    const drains = [...this.workers.values()].map((w) => w.drain());
    this.stopped = (async () => {
      this.log.info({ graceMs: this.o.graceMs }, 'shutting down');
      const notified = notifySystemd(['STOPPING=1'], this.log, this.o.env);
      const drained = Promise.all(drains);
      if (!(await within(drained, this.o.graceMs))) {
        this.log.warn({ graceMs: this.o.graceMs }, 'passes still running after the grace period: aborting them');
        this.hardAbort.abort();
        await this.client.close().catch(() => undefined);
        if (!(await within(drained, ABORT_SETTLE_MS))) this.log.warn('passes did not unwind in time; closing anyway');
      }
      await within(this.ops, ABORT_SETTLE_MS);
      for (const w of this.workers.values()) await w.close();
      this.workers.clear();
      await this.client.close().catch(() => undefined);
      await this.metricsServer?.close();
      try {
        removeDaemonStatus(this.config.stateDir);
      } catch {
        /* already gone */
      }
      await notified;
      this.lock.release();
      this.log.info('binder-sync daemon stopped');
    })();
    void this.stopped.then(this.resolveFinished, this.resolveFinished);
    return this.stopped;
  }

  /** Resolves when a shutdown (started by anyone) has finished. */
  get finished(): Promise<void> {
    return this.finishedPromise;
  }

  /** For a forced exit: releases the lock file synchronously and nothing else. */
  releaseLockNow(): void {
    this.lock.release();
  }

  private newClient(config: Config): ServiceClient {
    return serviceClientFor(config, this.log, this.hardAbort.signal);
  }

  private startWorker(pair: PairConfig, earlyWatcher?: EarlyWatcher): void {
    const observer = this.o.passObserver?.(pair.name);
    const w = new PairWorker({
      ...(observer ? { observer } : {}),
      ...(earlyWatcher ? { earlyWatcher } : {}),
      pair,
      stateDir: this.config.stateDir,
      client: this.client,
      log: this.log,
      timing: this.o.timing,
      metrics: this.metrics,
      abortSignal: this.hardAbort.signal,
      onChange: () => this.queueStatus(),
    });
    this.workers.set(pair.name, w);
    w.start();
  }

  /** Lets the running pass finish within graceMs, then aborts it; closes the worker. */
  private async stopWorker(w: PairWorker): Promise<void> {
    const drained = w.drain();
    if (!(await within(drained, this.o.graceMs))) {
      w.abort();
      await drained;
    }
    await w.close();
    this.workers.delete(w.name);
  }

  private async applyReload(): Promise<boolean> {
    if (this.stopping) return false;
    let next: Config;
    try {
      const loaded = loadConfig(this.o.configFile, this.o.env ?? process.env);
      for (const w of loaded.warnings) this.log.warn(w);
      next = loaded.config;
      if (next.stateDir !== this.config.stateDir) {
        throw new BinderSyncError(`stateDir changed from ${this.config.stateDir} to ${next.stateDir}`, {
          code: 'CONFIG_RELOAD',
          retryable: false,
          // A restart alone starts the pairs over in an empty stateDir: files changed on either side since the last
          // pass become conflict copies, documents deleted on the service come back (black-box round 31b, F3).
          hint: `a new stateDir needs a restart of the daemon, with the old one's content moved there first (stop binder-sync, move everything in ${this.config.stateDir} into ${next.stateDir}, start it): a new, empty stateDir starts over with no record of what was synced, and files changed since on either side become conflict copies`,
        });
      }
    } catch (err) {
      this.rejectReload(err);
      return false;
    }
    const prev = this.config;
    // A change of the bandwidth caps alone is applied to the running client: no pair restarts, and transfers in
    // flight go on at the new rate instead of starting over (black-box round 27, R3).
    const { maxUploadRate: _up, maxDownloadRate: _down, ...nextRest } = next.service;
    const { maxUploadRate: _pu, maxDownloadRate: _pd, ...prevRest } = prev.service;
    const serviceChanged = JSON.stringify(nextRest) !== JSON.stringify(prevRest);
    const ratesChanged = !serviceChanged && (next.service.maxUploadRate !== prev.service.maxUploadRate || next.service.maxDownloadRate !== prev.service.maxDownloadRate);
    const oldPairs = new Map(prev.pairs.map((p) => [p.name, p]));
    const newPairs = new Map(next.pairs.map((p) => [p.name, p]));
    const removed = [...oldPairs.keys()].filter((n) => !newPairs.has(n));
    const added = [...newPairs.keys()].filter((n) => !oldPairs.has(n));
    const changed = [...newPairs.keys()].filter(
      (n) => oldPairs.has(n) && (serviceChanged || JSON.stringify(oldPairs.get(n)) !== JSON.stringify(newPairs.get(n))),
    );
    const unchanged = [...newPairs.keys()].filter((n) => oldPairs.has(n) && !changed.includes(n));

    // What `sync` and `check` refuse (exit 2) is refused here too, before a running pair is stopped for it.
    const client = serviceChanged ? this.newClient(next) : this.client;
    try {
      for (const n of [...changed, ...added]) await preflightPair(newPairs.get(n)!, next.stateDir, client);
    } catch (err) {
      if (serviceChanged) await client.close().catch(() => undefined);
      this.rejectReload(err);
      return false;
    }
    if (this.stopping) {
      if (serviceChanged) await client.close().catch(() => undefined);
      return false;
    }

    this.applyLogLevel(next);
    const stopping = [...removed, ...changed].flatMap((n) => this.workers.get(n) ?? []);
    await Promise.all(stopping.map((w) => this.stopWorker(w)));
    if (serviceChanged) {
      await this.client.close().catch(() => undefined);
      this.client = client;
    }
    if (ratesChanged) this.client.setTransferRates(next.service.maxUploadRate ?? null, next.service.maxDownloadRate ?? null);
    if (JSON.stringify(next.metrics) !== JSON.stringify(prev.metrics)) {
      await this.metricsServer?.close();
      this.metricsServer = null;
      try {
        await this.startMetrics(next);
      } catch (err) {
        this.log.error(`metrics endpoint not restarted: ${describeError(err)}`);
      }
    }
    this.config = next;
    if (this.stopping) return false;
    for (const n of [...changed, ...added]) {
      const pair = newPairs.get(n);
      if (pair) this.startWorker(pair);
    }
    // An unchanged pair that is failing tries again now: a reload is how an admin says "I fixed it" (the state DB
    // moved aside as its hint says, a disk mounted), where the back-off may have minutes to run (round 33b, F3).
    const retried = unchanged.filter((n) => this.workers.get(n)?.retryNow() === true);
    this.reloadRejected = null;
    this.queueStatus();
    this.log.info({ added, removed, restarted: changed, unchanged, ...(retried.length > 0 ? { retriedNow: retried } : {}), serviceChanged }, 'config reloaded');
    return true;
  }

  private rejectReload(err: unknown): void {
    this.log.error({ code: (err as { code?: unknown }).code }, `config reload rejected, the running config stays: ${describeError(err)}`);
    this.reloadRejected = { at: new Date().toISOString(), reason: oneLineMessage(err) };
    this.queueStatus();
  }

  private applyLogLevel(next: Config): void {
    if (this.o.logLevelOverride !== undefined) return;
    const from = this.log.level;
    if (from === next.log.level) return;
    // Said at info under whichever of the two levels shows it (info -> warn is logged before, warn -> debug after).
    const said = this.log.isLevelEnabled('info');
    if (said) this.log.info({ from, to: next.log.level }, 'log level changed');
    // Child loggers (per pair, per component) inherit the root's level methods, so this applies everywhere.
    this.log.level = next.log.level;
    if (!said) this.log.info({ from, to: next.log.level }, 'log level changed');
  }

  /** Rewrites <stateDir>/daemon-status.json once per tick, however many pairs changed state in it. */
  private queueStatus(): void {
    if (this.statusQueued || this.stopping) return;
    this.statusQueued = true;
    setImmediate(() => {
      this.statusQueued = false;
      if (this.stopping) return;
      const pairs: Record<string, PairActivity> = {};
      for (const w of this.workers.values()) {
        const v = w.view;
        // The status file knows idle/syncing/backoff: starting is the first pass, error a slow back-off.
        const activity = v.state === 'starting' ? 'syncing' : v.state === 'error' ? 'backoff' : v.state;
        pairs[w.name] = {
          activity,
          since: new Date(v.since).toISOString(),
          ...(v.nextPassAt !== null ? { nextPassAt: new Date(v.nextPassAt).toISOString() } : {}),
          ...(v.watcher !== null ? { watcher: v.watcher } : {}),
          ...(v.changesWaitingSince !== null ? { changesWaitingSince: new Date(v.changesWaitingSince).toISOString() } : {}),
          ...(v.openError !== null ? { openError: v.openError } : {}),
        };
      }
      const status: DaemonStatus = {
        version: 1,
        pid: process.pid,
        startedAt: this.startedAt,
        ...(this.metricsServer ? { metricsPort: this.metricsServer.port } : {}),
        ...(this.reloadRejected !== null ? { reloadRejected: this.reloadRejected } : {}),
        pairs,
        // What the daemon runs, for a status whose config file no longer says it (black-box round 31b, F3).
        configFile: path.resolve(this.o.configFile),
        stateDir: this.config.stateDir,
        pairConfigs: Object.fromEntries(
          this.config.pairs.map((p) => [p.name, { localPath: p.localPath, binderId: p.binderId, direction: p.direction, ignore: p.ignore, trashRetentionDays: p.trashRetentionDays }]),
        ),
      };
      try {
        this.lock.reassert();
      } catch (err) {
        this.log.debug({ err }, 'could not write the lock file again');
      }
      try {
        writeDaemonStatus(this.config.stateDir, status);
      } catch (err) {
        this.log.debug({ err }, 'could not write the daemon status file');
      }
    });
  }
}

/** Waits for p at most ms; true when it settled in time. The timer never outlives the wait. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
