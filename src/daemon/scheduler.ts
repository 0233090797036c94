// When one pair runs its next pass: first pass at start, watcher hints (debounced with a dirty flag), the poll
// timer with jitter, the periodic full rescan, and back-off after failures. No I/O: the pass is a callback.
import type { Logger } from '../log.js';
import { classifyFailure, jitter, retryDelay, type FailureInfo } from './backoff.js';
import { HealthLog } from './health.js';
import type { DaemonTiming } from './timing.js';

/** Why a pass runs (logged; every pass is a full one, see below). */
export type Trigger = 'start' | 'watch' | 'poll' | 'rescan' | 'retry';

/** What `binder-sync status` shows for the pair (meta key daemonState). */
export type PairState = 'starting' | 'idle' | 'syncing' | 'backoff' | 'error';

export interface PassOutcome {
  /** Some actions failed but may succeed later: the next pass comes sooner (back-off steps, at most poll). */
  retryableFailures: boolean;
  /** Files were left for later because they were still being written: look again after this many ms. */
  recheckInMs?: number | null;
  /** CPU time (ms) of a pass that only listed and found nothing to do; what spacing polls out is based on. */
  quietPollCpuMs?: number | null;
  /**
   * The pass scanned the whole local tree. Passes triggered by 'start', 'rescan' and 'retry' always do; a 'watch'
   * or 'poll' pass may scan only the folders the watcher hinted, and says here when it scanned everything.
   */
  scannedAll?: boolean;
}

/** Polls are never spaced out further than this many pollIntervals by the CPU budget. */
export const MAX_POLL_STRETCH = 5;

/**
 * A quiet poll cheaper than this (ms of CPU) never spaces polls out, whatever the budget: the budget is for
 * large binders (a 100k-document listing is ~1 s of JSON); a small binder polled every 5 s would otherwise be
 * slowed by the noise of the process's other work (a watcher, the garbage collector, another pair's transfer).
 */
export const MIN_STRETCHING_POLL_CPU_MS = 200;

/**
 * What a quiet poll costs, from the process's CPU time (ms) during the pass and over the whole cycle since the
 * previous quiet poll began (null for the first): the cycle also holds the collection of the listing's garbage,
 * which runs after the pass, but CPU time is process-wide, so it holds every other pair's transfers as well. A
 * 2-document binder beside a pair moving large files was said to cost 0.36 s a listing, and its polls were spaced
 * out fivefold (black-box round 28b, F5). The cycle counts for at most twice the pass itself.
 */
export function quietPollCostMs(passCpuMs: number, cycleCpuMs: number | null): number {
  return cycleCpuMs === null ? passCpuMs : Math.min(cycleCpuMs, 2 * passCpuMs);
}

/** Two poll spacings differ by more than a quarter of the smaller one (what is worth a log line). */
function farApart(a: number, b: number): boolean {
  return Math.abs(a - b) > Math.min(a, b) / 4;
}

export interface SchedulerOptions {
  pollIntervalMs: number;
  /**
   * Percent of one core that quiet polls may use (0 = off). A binder so large that one listing costs more than
   * this share of pollIntervalMs is polled every cost/budget instead (at most MAX_POLL_STRETCH x pollIntervalMs):
   * the service has no change feed, so a 100k-document listing is ~1 s of JSON to parse each time.
   */
  pollCpuBudgetPercent?: number;
  rescanIntervalMs: number;
  timing: DaemonTiming;
  /** Runs one pass; throws when the pass (or opening the pair) failed as a whole. */
  runPass: (trigger: Trigger) => Promise<PassOutcome>;
  /** Every state change, with the time the next pass is due (null while syncing or stopped). */
  onState?: (state: PairState, nextPassAt: number | null) => void;
  /** Every failed pass, after it was classified (metrics). */
  onFailure?: (f: FailureInfo) => void;
  log: Logger;
  random?: () => number;
  now?: () => number;
}

/**
 * One scheduler per pair. Contract:
 * - at most one pass runs at a time; hints that arrive during a pass set a dirty flag, which yields exactly
 *   one more pass after it (however many hints arrived);
 * - every pass lists the whole remote; 'start', 'rescan' and 'retry' passes also scan the whole local tree
 *   (unchanged files are not re-hashed), while 'watch' and 'poll' passes may scan only what the watcher hinted.
 *   The watcher can miss changes (an mmap write, a network share written by another host, a lost event), so a
 *   whole scan comes at least every rescanIntervalMs, counted from the last one: after any pass, one timer is
 *   armed for whichever is due first, the jittered poll (±10%) or that rescan, and a pass started by a hint or a
 *   poll once the rescan is due is run as the rescan;
 * - after a failed pass no hint runs a pass early: the retry timer decides (back-off must hold off the
 *   service); the retry is a full pass, so nothing hinted meanwhile is lost;
 * - stop() cancels the timer and resolves when the in-flight pass (if any) has finished.
 */
/** How often a change of the poll spacing is said at info (PairScheduler.notePollCost). */
const SPACING_SAID_EVERY_MS = 15 * 60_000;

export class PairScheduler {
  private state: PairState = 'starting';
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | null = null;
  private dirty = false;
  private stopped = false;
  private failures = 0;
  private softFailures = 0;
  private readonly health: HealthLog;
  /** Smoothed CPU cost of a quiet poll (ms), and the poll spacing last announced in the log. */
  private pollCostMs: number | null = null;
  /** The last quiet poll's own reading (ms): a cost counts once two polls in a row show it. */
  private lastPollReadingMs: number | null = null;
  private announcedIntervalMs: number;
  /** When the end of a spacing was last said at info, and whether the spacing in force is said at debug only. */
  private spacingEndSaidAt = Number.NEGATIVE_INFINITY;
  private spacingQuiet = false;
  /** When the last pass that scanned the whole local tree started (null: none has finished yet). */
  private lastFullScanAt: number | null = null;
  private readonly random: () => number;
  private readonly now: () => number;

  constructor(private readonly o: SchedulerOptions) {
    this.random = o.random ?? Math.random;
    this.now = o.now ?? Date.now;
    this.health = new HealthLog(o.log, this.now);
    this.announcedIntervalMs = o.pollIntervalMs;
  }

  /**
   * The poll interval in force: pollIntervalMs, or longer while quiet polls cost more than the CPU budget.
   * Logged when the spacing starts (more than a quarter above pollInterval), moves by more than a quarter from
   * what was last logged, or ends after it was logged; a steady or slightly varying spacing is logged once.
   */
  get pollIntervalMs(): number {
    const budget = this.o.pollCpuBudgetPercent ?? 0;
    const base = this.o.pollIntervalMs;
    // x1.1: the poll jitter (±10%) may shorten an interval; the budget must hold for the shortest one too.
    const wanted = budget > 0 && this.pollCostMs !== null ? (this.pollCostMs * 100 * 1.1) / budget : 0;
    return Math.round(Math.min(base * MAX_POLL_STRETCH, Math.max(base, wanted)));
  }

  private notePollCost(reading: number): void {
    // A reading is process-wide CPU: a spike (another pair's transfer, a collection of garbage left by a burst
    // of uploads) must not space polls out. What two quiet polls in a row cost at least is what polling costs.
    const previous = this.lastPollReadingMs;
    this.lastPollReadingMs = reading;
    if (previous === null) return;
    const both = Math.min(reading, previous);
    const cpuMs = both < (this.o.timing.pollCpuFloorMs ?? MIN_STRETCHING_POLL_CPU_MS) ? 0 : both;
    // A higher cost counts at once (the budget is a ceiling); a lower one by halves, so one cheap poll does
    // not pull the schedule back in.
    this.pollCostMs = this.pollCostMs === null ? cpuMs : Math.max(cpuMs, 0.5 * this.pollCostMs + 0.5 * cpuMs);
    const interval = this.pollIntervalMs;
    const last = this.announcedIntervalMs;
    const base = this.o.pollIntervalMs;
    if (interval === base) {
      // Back to pollInterval: worth a line only when a spacing was announced.
      if (last === base) return;
    } else if (!farApart(interval, last) || !farApart(interval, base)) {
      // Spaced out, but within a quarter of what was last said or of pollInterval itself: a poll's cost always
      // varies a little, and "polling every 10 s instead of 10 s" tells nobody anything.
      return;
    }
    this.announcedIntervalMs = interval;
    const fields = { pollCpuMs: Math.round(this.pollCostMs), pollIntervalMs: interval, configuredMs: base, pollCpuBudget: this.o.pollCpuBudgetPercent };
    // A cost near the budget makes the spacing come and go (12 lines in 15 minutes on a 7,000-document binder:
    // black-box round 29b, finding 8): a spacing that starts again within SPACING_SAID_EVERY_MS of the last end
    // said is said at debug, and so are its changes and its end.
    const now = this.now();
    if (interval !== base && last === base) this.spacingQuiet = now - this.spacingEndSaidAt < SPACING_SAID_EVERY_MS;
    const level = this.spacingQuiet ? 'debug' : 'info';
    if (interval === base && level === 'info') this.spacingEndSaidAt = now;
    if (interval === base) this.o.log[level](fields, 'polling every pollInterval again: a listing now costs less than the poll CPU budget');
    else {
      this.o.log[level](
        fields,
        `polling every ${(interval / 1000).toFixed(0)} s instead of ${(base / 1000).toFixed(0)} s: one listing of this binder costs ${(this.pollCostMs / 1000).toFixed(2)} s of CPU, more than pollCpuBudget (${this.o.pollCpuBudgetPercent}%) allows (set pollCpuBudget: 0 to poll every pollInterval regardless)`,
      );
    }
  }

  get current(): PairState {
    return this.state;
  }

  /** True while a pass runs. */
  get busy(): boolean {
    return this.inFlight !== null;
  }

  start(): void {
    this.launch('start');
  }

  /** A local change was seen (watcher hint). */
  hint(): void {
    if (this.stopped) return;
    if (this.inFlight) {
      this.dirty = true;
      return;
    }
    if (this.state === 'backoff' || this.state === 'error') return;
    this.launch('watch');
  }

  /** Runs a pass now unless one is running (then: one more after it) or the pair is backing off. */
  request(trigger: Trigger): void {
    if (trigger === 'watch') this.hint();
    else if (!this.stopped && !this.inFlight) this.launch(trigger);
  }

  /**
   * A pair backing off or in the error state tries again now (a reload: the admin has just mended the cause the
   * error's hint named, and the back-off may have minutes to run: black-box round 33b, F3). True when it does.
   */
  retryNow(): boolean {
    if (this.stopped || this.inFlight || (this.state !== 'backoff' && this.state !== 'error')) return false;
    this.launch('retry');
    return true;
  }

  /** No pass starts after this; resolves when the running one has finished. */
  stop(): Promise<void> {
    this.stopped = true;
    this.clearTimer();
    return this.inFlight ?? Promise.resolve();
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private setState(state: PairState, nextAt: number | null): void {
    this.state = state;
    this.o.onState?.(state, nextAt);
  }

  /** When the next whole-tree scan is due (ms since the epoch), or null before the first one. */
  private rescanDueAt(): number | null {
    return this.lastFullScanAt === null ? null : this.lastFullScanAt + this.o.rescanIntervalMs;
  }

  private launch(requested: Trigger): void {
    this.clearTimer();
    this.dirty = false;
    const due = this.rescanDueAt();
    const trigger: Trigger = (requested === 'watch' || requested === 'poll') && due !== null && this.now() >= due ? 'rescan' : requested;
    // 'starting' = the first pass of this pair (opening it, the initial sync); later passes are 'syncing'.
    this.setState(trigger === 'start' ? 'starting' : 'syncing', null);
    const p: Promise<void> = this.runOnce(trigger).then(
      (again) => {
        if (this.inFlight === p) this.inFlight = null;
        // Hints arrived during the pass: exactly one more pass, right away.
        if (again && !this.stopped) this.launch('watch');
      },
      (err: unknown) => {
        // runOnce catches the pass's errors; this is a bug in a callback (onState, onFailure): keep going.
        if (this.inFlight === p) this.inFlight = null;
        this.o.log.error({ err }, 'scheduler callback failed');
        if (!this.stopped) this.arm('retry', this.o.timing.backoffBaseMs, 'backoff');
      },
    );
    this.inFlight = p;
  }

  /** Runs one pass and arms what comes next; true when a dirty flag asks for another pass at once. */
  private async runOnce(trigger: Trigger): Promise<boolean> {
    let outcome: PassOutcome | undefined;
    let failure: FailureInfo | undefined;
    const startedAt = this.now();
    try {
      outcome = await this.o.runPass(trigger);
    } catch (err) {
      failure = classifyFailure(err);
    }
    if (this.stopped) return false;
    if (failure) {
      this.failures++;
      const delay = retryDelay(failure, this.failures, this.o.timing, this.random, this.pollIntervalMs);
      this.health.failed(failure, delay);
      this.o.onFailure?.(failure);
      this.dirty = false; // the retry is a full pass
      this.arm('retry', delay, failure.fatal ? 'error' : 'backoff');
      return false;
    }
    this.failures = 0;
    this.health.succeeded();
    if (trigger === 'start' || trigger === 'rescan' || trigger === 'retry' || outcome?.scannedAll === true) this.lastFullScanAt = startedAt;
    this.softFailures = outcome?.retryableFailures ? this.softFailures + 1 : 0;
    if (typeof outcome?.quietPollCpuMs === 'number') this.notePollCost(outcome.quietPollCpuMs);
    else this.lastPollReadingMs = null; // a pass that did work: the next two quiet polls measure afresh
    if (this.dirty) return true;
    const poll = jitter(this.pollIntervalMs, this.random);
    const rescanIn = Math.max(0, (this.rescanDueAt() ?? this.now() + this.o.rescanIntervalMs) - this.now());
    let [trigger2, delay]: [Trigger, number] = poll <= rescanIn ? ['poll', poll] : ['rescan', rescanIn];
    if (this.softFailures > 0) {
      const soon = retryDelay({ fatal: false, code: 'ACTIONS_FAILED', reason: '' }, this.softFailures, this.o.timing, this.random);
      if (soon < delay) [trigger2, delay] = ['retry', soon];
    }
    const recheck = outcome?.recheckInMs;
    if (recheck !== undefined && recheck !== null && recheck < delay) [trigger2, delay] = ['watch', recheck];
    this.arm(trigger2, delay, 'idle');
    return false;
  }

  private arm(trigger: Trigger, delayMs: number, state: PairState): void {
    this.clearTimer();
    this.setState(state, this.now() + delayMs);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.stopped && !this.inFlight) this.launch(trigger);
    }, delayMs);
  }
}
