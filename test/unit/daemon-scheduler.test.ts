// The daemon's per-pair scheduler with fake timers: first pass, debounce through the dirty flag, poll and rescan
// timers, back-off (doubling, cap, Retry-After), the error state, and health logged once per state change.
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BinderSyncError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { ServiceError } from '../../src/service/errors.js';
import { MIN_STRETCHING_POLL_CPU_MS, PairScheduler, quietPollCostMs, type PairState, type PassOutcome, type Trigger } from '../../src/daemon/scheduler.js';
import { DEFAULT_TIMING } from '../../src/daemon/timing.js';

interface LogRecord {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** A pass the test finishes by hand. */
interface Deferred {
  trigger: Trigger;
  resolve(o?: PassOutcome): void;
  reject(err: unknown): void;
}

function setup(opts: { poll?: number; rescan?: number; budget?: number } = {}) {
  const records: LogRecord[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) records.push(JSON.parse(line) as LogRecord);
      cb();
    },
  });
  const log = createLogger({ level: 'debug', destination: sink, pretty: false });
  const passes: Deferred[] = [];
  const states: Array<{ state: PairState; nextAt: number | null }> = [];
  const s = new PairScheduler({
    pollIntervalMs: opts.poll ?? 60_000,
    rescanIntervalMs: opts.rescan ?? 3_600_000,
    ...(opts.budget !== undefined ? { pollCpuBudgetPercent: opts.budget } : {}),
    timing: DEFAULT_TIMING,
    log,
    random: () => 0.5, // jitter factor exactly 1.0
    runPass: (trigger) =>
      new Promise<PassOutcome>((resolve, reject) => {
        passes.push({ trigger, resolve: (o) => resolve(o ?? { retryableFailures: false }), reject });
      }),
    onState: (state, nextAt) => states.push({ state, nextAt }),
  });
  const last = () => passes[passes.length - 1]!;
  const logs = (level: number) => records.filter((r) => r.level === level).map((r) => r.msg);
  return { s, passes, states, last, records, logs };
}

/** Lets the scheduler's promise callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

const unavailable = () =>
  new ServiceError('GET /search failed with HTTP 503', { code: 'SERVICE_UNAVAILABLE', retryable: true, request: 'GET /search', status: 503 });

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('PairScheduler', () => {
  it('runs a first pass, then polls every pollInterval', async () => {
    const { s, passes, last, states } = setup({ poll: 10_000 });
    s.start();
    expect(passes.map((p) => p.trigger)).toEqual(['start']);
    expect(s.current).toBe('starting');
    last().resolve();
    await settle();
    expect(s.current).toBe('idle');
    expect(states.at(-1)?.nextAt).toBe(Date.now() + 10_000);
    await vi.advanceTimersByTimeAsync(9_999);
    expect(passes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(passes.map((p) => p.trigger)).toEqual(['start', 'poll']);
    expect(s.current).toBe('syncing');
    expect(states.map((x) => x.state)).toEqual(['starting', 'idle', 'syncing']);
  });

  it('jitters the poll interval within ±10%', async () => {
    for (const [r, expected] of [
      [0, 9_000],
      [0.999999, 11_000],
    ] as const) {
      const passes: Trigger[] = [];
      const s = new PairScheduler({
        pollIntervalMs: 10_000,
        rescanIntervalMs: 3_600_000,
        timing: DEFAULT_TIMING,
        log: createLogger({ level: 'silent', destination: new Writable({ write: (_c, _e, cb) => cb() }) }),
        random: () => r,
        runPass: async (t) => {
          passes.push(t);
          return { retryableFailures: false };
        },
      });
      s.start();
      await settle();
      await vi.advanceTimersByTimeAsync(expected - 1);
      expect(passes).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(passes).toHaveLength(2);
      await s.stop();
    }
  });

  it('runs a pass at once for a hint while idle, and restarts the poll timer after it', async () => {
    const { s, passes, last } = setup({ poll: 10_000 });
    s.start();
    last().resolve();
    await settle();
    await vi.advanceTimersByTimeAsync(6_000);
    s.hint();
    expect(passes.map((p) => p.trigger)).toEqual(['start', 'watch']);
    last().resolve();
    await settle();
    // The old poll (due at 10 s) was replaced: the next is 10 s after the watch pass.
    await vi.advanceTimersByTimeAsync(9_999);
    expect(passes).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(passes.at(-1)?.trigger).toBe('poll');
  });

  it('turns any number of hints during a pass into exactly one more pass', async () => {
    const { s, passes, last } = setup();
    s.start();
    for (let i = 0; i < 50; i++) s.hint();
    expect(passes).toHaveLength(1);
    last().resolve();
    await settle();
    expect(passes.map((p) => p.trigger)).toEqual(['start', 'watch']);
    // No hint during the second pass: nothing more.
    last().resolve();
    await settle();
    expect(passes).toHaveLength(2);
    expect(s.current).toBe('idle');
  });

  it('runs a full rescan when it is due before the next poll', async () => {
    const { s, passes, last } = setup({ poll: 120_000, rescan: 60_000 });
    s.start();
    last().resolve();
    await settle();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(passes.map((p) => p.trigger)).toEqual(['start', 'rescan']);
  });

  it('scans the whole tree every rescan interval, counted from the last whole scan, however often it polls', async () => {
    // Polls and watcher passes scan only hinted folders: without this, a change no watcher reports (an mmap
    // write, a network share written by another host) waited for the next unrelated change (black-box round 28a).
    const { s, passes, last } = setup({ poll: 10_000, rescan: 60_000 });
    const partial: PassOutcome = { retryableFailures: false, scannedAll: false };
    s.start();
    last().resolve(); // t=0: the first pass scans everything
    await settle();
    for (let t = 10_000; t <= 60_000; t += 10_000) {
      await vi.advanceTimersByTimeAsync(10_000);
      last().resolve(partial);
      await settle();
    }
    expect(passes.map((p) => p.trigger)).toEqual(['start', 'poll', 'poll', 'poll', 'poll', 'poll', 'rescan']);
    // A poll that scanned everything anyway (the watcher overflowed) counts as the rescan: the next one is due
    // 60 s after it, not after the rescan above.
    await vi.advanceTimersByTimeAsync(10_000); // t=70 s
    last().resolve({ retryableFailures: false, scannedAll: true });
    await settle();
    for (let i = 0; i < 5; i++) {
      await vi.advanceTimersByTimeAsync(10_000);
      last().resolve(partial);
      await settle();
    }
    expect(passes.slice(7).map((p) => p.trigger)).toEqual(['poll', 'poll', 'poll', 'poll', 'poll', 'poll']);
    // t=120 s: a hint while the rescan (due at 130 s) is not yet due runs a watcher pass; at 130 s the rescan.
    s.hint();
    last().resolve(partial);
    await settle();
    expect(last().trigger).toBe('watch');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(last().trigger).toBe('rescan');
    last().resolve(partial);
    await settle();
    // A hint that comes once a rescan is due runs as that rescan.
    await vi.advanceTimersByTimeAsync(10_000); // t=140 s: poll
    last().resolve(partial);
    await settle();
    const before = passes.length;
    vi.setSystemTime(Date.now() + 60_000); // the clock moves past the due time without the poll timer firing
    s.hint();
    expect(passes).toHaveLength(before + 1);
    expect(last().trigger).toBe('rescan');
  });

  it("a quiet poll's cost is its cycle's CPU (the listing's garbage collected after it), but at most twice the pass's own", () => {
    expect(quietPollCostMs(400, null)).toBe(400); // the first quiet poll: the pass alone
    expect(quietPollCostMs(400, 520)).toBe(520); // a large binder: the pass plus the collection after it
    // A tiny binder while another pair moves large files: the cycle's CPU is mostly that pair's (round 28b, F5).
    expect(quietPollCostMs(8, 360)).toBe(16);
    expect(quietPollCostMs(8, 360)).toBeLessThan(MIN_STRETCHING_POLL_CPU_MS);
  });

  it('backs off 5 s, 10 s, 20 s ... up to 5 min, logs the failure once and the recovery once', async () => {
    const { s, passes, last, logs, states } = setup();
    s.start();
    last().reject(unavailable());
    await settle();
    expect(s.current).toBe('backoff');
    const delays: number[] = [];
    for (let i = 0; i < 8; i++) {
      const due = states.at(-1)!.nextAt! - Date.now();
      delays.push(due);
      await vi.advanceTimersByTimeAsync(due);
      expect(last().trigger).toBe('retry');
      last().reject(unavailable());
      await settle();
    }
    expect(delays).toEqual([5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
    expect(logs(40).filter((m) => m.includes('failing'))).toHaveLength(1);
    expect(logs(40)[0]).toContain('HTTP 503');
    await vi.advanceTimersByTimeAsync(states.at(-1)!.nextAt! - Date.now());
    last().resolve();
    await settle();
    expect(s.current).toBe('idle');
    expect(logs(30).filter((m) => m === 'pair recovered')).toHaveLength(1);
    expect(logs(40).filter((m) => m.includes('failing'))).toHaveLength(1);
    expect(passes.length).toBe(10);
    // After recovery a new failure starts again at the first step and is logged again.
    await vi.advanceTimersByTimeAsync(60_000);
    last().reject(unavailable());
    await settle();
    expect(states.at(-1)!.nextAt! - Date.now()).toBe(5_000);
    expect(logs(40).filter((m) => m.includes('failing'))).toHaveLength(2);
  });

  it('honours Retry-After when it is longer than the back-off step', async () => {
    const { s, last, states } = setup();
    s.start();
    const limited = new ServiceError('rate limited', { code: 'SERVICE_RATE_LIMITED', retryable: true, request: 'GET /search', status: 429 });
    limited.retryAfterMs = 42_000;
    last().reject(limited);
    await settle();
    expect(states.at(-1)!.nextAt! - Date.now()).toBe(42_000);
  });

  it('ignores hints while backing off: the retry timer decides', async () => {
    const { s, passes, last } = setup();
    s.start();
    last().reject(unavailable());
    await settle();
    s.hint();
    s.hint();
    expect(passes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(passes.map((p) => p.trigger)).toEqual(['start', 'retry']);
  });

  it('keeps a misconfigured pair in the error state, retried every 5 min, logged at error level', async () => {
    const { s, passes, last, logs, states } = setup();
    s.start();
    const bad = () => new BinderSyncError('metadata rule names an unknown element', { code: 'METADATA_RULES_INVALID', retryable: false });
    last().reject(bad());
    await settle();
    expect(s.current).toBe('error');
    expect(states.at(-1)!.nextAt! - Date.now()).toBe(300_000);
    await vi.advanceTimersByTimeAsync(300_000);
    expect(passes).toHaveLength(2);
    last().reject(bad());
    await settle();
    expect(states.at(-1)!.nextAt! - Date.now()).toBe(300_000);
    expect(logs(50)).toHaveLength(1);
    expect(logs(50)[0]).toContain('error state');
    expect(logs(50)[0]).toContain('unknown element');
  });

  it('retryNow (a reload): a pair in the error state or backing off tries again at once; an idle or busy one does not (round 33b, F3)', async () => {
    const { s, passes, last } = setup();
    s.start();
    last().reject(new BinderSyncError('the state DB is damaged', { code: 'STATE_CORRUPT', retryable: false }));
    await settle();
    expect(s.current).toBe('error');
    expect(s.retryNow()).toBe(true);
    expect(passes).toHaveLength(2);
    expect(last().trigger).toBe('retry');
    expect(s.retryNow()).toBe(false); // a pass is running
    last().reject(unavailable());
    await settle();
    expect(s.current).toBe('backoff');
    expect(s.retryNow()).toBe(true);
    last().resolve();
    await settle();
    expect(s.current).toBe('idle');
    expect(s.retryNow()).toBe(false);
    expect(passes).toHaveLength(3);
    // The retry replaced the armed timer: no second pass when the old back-off would have run out.
    await vi.advanceTimersByTimeAsync(30_000);
    expect(passes).toHaveLength(3);
  });

  it('looks at a pair stopped by a safety gate again every poll interval (a remounted disk resumes by itself), still in the error state', async () => {
    const { s, passes, last, states } = setup({ poll: 30_000 });
    s.start();
    const blocked = () => new BinderSyncError('pair main: the local root is empty', { code: 'PASS_BLOCKED', retryable: false });
    last().reject(blocked());
    await settle();
    expect(s.current).toBe('error');
    expect(states.at(-1)!.nextAt! - Date.now()).toBe(30_000);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(passes.map((p) => p.trigger)).toEqual(['start', 'retry']);
    last().resolve();
    await settle();
    expect(s.current).toBe('idle');
  });

  it('never rechecks a blocked pair more often than the error period when the poll interval is longer', async () => {
    const { s, last, states } = setup({ poll: 3_600_000 });
    s.start();
    last().reject(new BinderSyncError('blocked', { code: 'PASS_BLOCKED', retryable: false }));
    await settle();
    expect(states.at(-1)!.nextAt! - Date.now()).toBe(300_000);
  });

  it('logs a change of failure reason once, as a new state', async () => {
    const { s, last, logs } = setup();
    s.start();
    last().reject(unavailable());
    await settle();
    await vi.advanceTimersByTimeAsync(5_000);
    last().reject(new ServiceError('token refused', { code: 'AUTH_FAILED', retryable: false, request: 'POST /connect/token', status: 400 }));
    await settle();
    await vi.advanceTimersByTimeAsync(10_000);
    last().reject(new ServiceError('token refused', { code: 'AUTH_FAILED', retryable: false, request: 'POST /connect/token', status: 400 }));
    await settle();
    const warns = logs(40);
    expect(warns).toHaveLength(2);
    expect(warns[1]).toMatch(/^failure changed: .*token refused/);
  });

  it('comes back sooner after a pass with retryable action failures, never later than the poll', async () => {
    const { s, last, states } = setup({ poll: 60_000 });
    s.start();
    last().resolve({ retryableFailures: true });
    await settle();
    expect(states.at(-1)!.nextAt! - Date.now()).toBe(5_000);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(last().trigger).toBe('retry');
    for (const expected of [10_000, 20_000, 40_000, 60_000, 60_000]) {
      last().resolve({ retryableFailures: true });
      await settle();
      expect(states.at(-1)!.nextAt! - Date.now()).toBe(expected);
      await vi.advanceTimersByTimeAsync(expected);
    }
    last().resolve();
    await settle();
    expect(states.at(-1)!.nextAt! - Date.now()).toBe(60_000);
  });

  it('stop() waits for the running pass and starts nothing afterwards', async () => {
    const { s, passes, last } = setup({ poll: 10_000 });
    s.start();
    s.hint();
    let stopped = false;
    const done = s.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    last().resolve();
    await done;
    s.hint();
    await vi.advanceTimersByTimeAsync(600_000);
    expect(passes).toHaveLength(1);
  });

  describe('poll CPU budget', () => {
    /** Runs the first pass and then quiet polls costing cpuMs each; returns the delays armed after each. */
    async function delaysFor(budget: number, costs: number[]) {
      const t = setup({ poll: 60_000, budget });
      t.s.start();
      t.last().resolve();
      await settle();
      const delays: number[] = [];
      for (const cpu of costs) {
        await vi.advanceTimersByTimeAsync(t.s.pollIntervalMs);
        expect(t.last().trigger).toBe('poll');
        t.last().resolve({ retryableFailures: false, quietPollCpuMs: cpu });
        await settle();
        delays.push((t.states.at(-1)?.nextAt as number) - Date.now());
      }
      await t.s.stop();
      return { delays, t };
    }

    it('keeps pollInterval while a quiet poll costs less than the budget', async () => {
      const { delays, t } = await delaysFor(1, [300, 500, 540]);
      expect(delays).toEqual([60_000, 60_000, 60_000]);
      expect(t.logs(30).filter((m) => m.includes('polling every'))).toEqual([]);
    });

    it('spaces polls out to cost/budget (up once two polls show it, down by halves), at most 5x pollInterval, logs on change, and comes back', async () => {
      const { delays, t } = await delaysFor(1, [1_200, 1_200, 1_300, 1_300, 10_000, 10_000, 10_000, 100, 100, 100, 100, 100, 100]);
      // cost / 1% x 1.1 (room for the jitter), from the second poll that shows it; a higher cost counts at once then.
      expect(delays.slice(0, 4)).toEqual([60_000, 132_000, 132_000, 143_000]);
      expect(delays[6]).toBe(300_000); // capped at 5 x 60 s
      expect(delays.at(-1)).toBe(60_000); // cheap again: back to pollInterval
      const notes = t.logs(30).filter((m) => m.startsWith('polling every'));
      expect(notes[0]).toMatch(/^polling every 132 s instead of 60 s: one listing of this binder costs 1\.20 s of CPU/);
      expect(notes.at(-1)).toMatch(/^polling every pollInterval again/);
      expect(notes.length).toBeLessThan(delays.length / 2); // on changes of more than a quarter, not per poll
    });

    it('a spacing that comes and goes again soon after its end was said is said at debug (round 29b, finding 8)', async () => {
      // Costly, cheap, costly, cheap...: each swing spaces polls out and brings them back within minutes.
      const swing = [1_200, 1_200, 100, 100, 100, 100, 100];
      const { t } = await delaysFor(1, [...swing, ...swing, ...swing]);
      const info = t.logs(30).filter((m) => m.startsWith('polling every'));
      expect(info).toHaveLength(2); // the first spacing and its end
      expect(info[0]).toMatch(/^polling every 132 s instead of 60 s/);
      expect(info[1]).toMatch(/^polling every pollInterval again/);
      expect(t.logs(20).filter((m) => m.startsWith('polling every')).length).toBeGreaterThan(2); // the rest at debug
    });

    it('says nothing while the spacing stays within a quarter of pollInterval ("every 30 s instead of 30 s")', async () => {
      const t = setup({ poll: 30_000, budget: 1 });
      t.s.start();
      t.last().resolve();
      await settle();
      // 285 ms -> 31.35 s, 312 ms -> 34.32 s, then cheap again: real but small changes, flapping around pollInterval.
      const intervals: number[] = [];
      for (const cpu of [285, 312, 312, 120, 312, 312, 285, 285, 90]) {
        await vi.advanceTimersByTimeAsync(t.s.pollIntervalMs);
        t.last().resolve({ retryableFailures: false, quietPollCpuMs: cpu });
        await settle();
        intervals.push(t.s.pollIntervalMs);
      }
      await t.s.stop();
      expect(Math.max(...intervals)).toBe(34_320); // it did move, by less than a quarter
      expect(t.logs(30).filter((m) => m.startsWith('polling every'))).toEqual([]);
    });

    it('logs a steady spacing once, however many polls it lasts', async () => {
      const { delays, t } = await delaysFor(1, [1_000, 1_050, 980, 1_020, 1_000, 1_010]);
      expect(delays[1]).toBe(110_000);
      expect(t.logs(30).filter((m) => m.startsWith('polling every'))).toEqual([expect.stringMatching(/^polling every 110 s instead of 60 s: /)]);
    });

    it('is not moved by one costly poll between cheap ones (process-wide CPU: another pair, a collection)', async () => {
      const { delays, t } = await delaysFor(1, [300, 1_421, 300, 2_000, 250, 5_000]);
      expect(delays).toEqual([60_000, 60_000, 60_000, 60_000, 60_000, 60_000]);
      expect(t.logs(30).filter((m) => m.includes('polling every'))).toEqual([]);
    });

    it('never spaces out a poll cheaper than MIN_STRETCHING_POLL_CPU_MS, even at pollInterval 5 s', async () => {
      const t = setup({ poll: 5_000, budget: 1 }); // the budget: 50 ms per poll
      t.s.start();
      t.last().resolve();
      await settle();
      const delays: number[] = [];
      for (const cpu of [MIN_STRETCHING_POLL_CPU_MS - 1, 150, 120, 190, 199, 300, 300]) {
        await vi.advanceTimersByTimeAsync(t.s.pollIntervalMs);
        t.last().resolve({ retryableFailures: false, quietPollCpuMs: cpu });
        await settle();
        delays.push((t.states.at(-1)?.nextAt as number) - Date.now());
      }
      await t.s.stop();
      expect(delays.slice(0, 5)).toEqual([5_000, 5_000, 5_000, 5_000, 5_000]);
      expect(delays.at(-1)).toBe(25_000); // 300 ms twice: 33 s wanted, capped at 5 x 5 s
    });

    it('is off at 0, and ignores passes that were not quiet polls', async () => {
      expect((await delaysFor(0, [5_000, 5_000])).delays).toEqual([60_000, 60_000]);
      const t = setup({ poll: 60_000, budget: 1 });
      t.s.start();
      t.last().resolve({ retryableFailures: false, quietPollCpuMs: null }); // a pass that did work
      await settle();
      expect((t.states.at(-1)?.nextAt as number) - Date.now()).toBe(60_000);
      await t.s.stop();
    });
  });
});

