// The terminal progress line: formatting (bytes, rate, ETA), what a plan counts, throttling to 5 draws a second,
// clearing when the pass ends or when a log line is written, and silence for short passes and non-terminals.
import { describe, expect, it } from 'vitest';
import {
  describeProgress,
  etaMs,
  fitToWidth,
  formatBytes,
  formatEta,
  formatRate,
  passHooks,
  progressOfPlan,
  ProgressDisplay,
  wantProgress,
  type PassProgress,
} from '../../src/cli/progress.js';
import type { Action, Plan, RemoteDoc } from '../../src/sync/model.js';

const doc = (n: number): RemoteDoc => ({ documentId: `d${n}`, fileName: `f${n}.txt`, folderId: 'F', versionId: `v${n}`, relPath: `A/f${n}.txt`, key: `a/f${n}.txt` });
const download = (n: number): Action => ({ kind: 'download', relPath: `A/f${n}.txt`, key: `a/f${n}.txt`, doc: doc(n), expectLocal: null, reason: 'new-remote' });
const upload = (n: number, size: number): Action => ({
  kind: 'upload',
  relPath: `A/u${n}.txt`,
  key: `a/u${n}.txt`,
  local: { relPath: `A/u${n}.txt`, key: `a/u${n}.txt`, size, mtimeMs: 0, inode: n, ctimeMs: 0, sha256: 'x' },
  target: { documentId: null, folderId: 'F', fileName: `u${n}.txt` },
  reason: 'new-local',
  replacesBase: null,
});
const mkdir: Action = { kind: 'mkdir-local', relPath: 'A', key: 'a', folderId: 'F', reason: 'new-remote-folder' };
const plan = (groups: Action[][]): Plan => ({ groups, issues: [], blocked: null });

/** A fake terminal: records every write; `screen` is what the one line shows now. */
class FakeTerminal {
  writes: string[] = [];
  columns = 120;
  write(s: string): boolean {
    this.writes.push(s);
    return true;
  }
  get screen(): string {
    const all = this.writes.join('');
    const last = all.lastIndexOf('\r\x1b[K');
    return last < 0 ? all : all.slice(last + 4);
  }
}

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('formatting', () => {
  it('formats bytes in binary units with one decimal below 100', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(12.34 * 1024 * 1024)).toBe('12.3 MiB');
    expect(formatBytes(123.4 * 1024 * 1024)).toBe('123 MiB');
    expect(formatBytes(2 * 1024 ** 3)).toBe('2.0 GiB');
    expect(formatRate(3.4 * 1024 * 1024)).toBe('3.4 MiB/s');
  });

  it('formats the ETA in s, m+s and h+m, rounding up', () => {
    expect(formatEta(0)).toBe('1s');
    expect(formatEta(6_200)).toBe('7s');
    expect(formatEta(59_000)).toBe('59s');
    expect(formatEta(185_000)).toBe('3m05s');
    expect(formatEta(3_720_000)).toBe('1h02m');
  });

  it('cuts a line to the terminal width minus one so it never wraps', () => {
    expect(fitToWidth('abcdef', 80)).toBe('abcdef');
    const cut = fitToWidth('x'.repeat(100), 40);
    expect([...cut]).toHaveLength(39);
    expect(cut.endsWith('…')).toBe(true);
  });
});

describe('plan totals and ETA', () => {
  it('counts only transfers, and knows the byte total only when all are uploads', () => {
    const mixed = progressOfPlan('p', plan([[mkdir, download(1)], [download(2)], [upload(3, 500)]]), 0);
    expect(mixed).toMatchObject({ filesTotal: 3, bytesTotal: null });
    const uploads = progressOfPlan('p', plan([[upload(1, 1000)], [upload(2, 3000)], [mkdir]]), 0);
    expect(uploads).toMatchObject({ filesTotal: 2, bytesTotal: 4000 });
  });

  it('estimates from files for downloads and from bytes for uploads', () => {
    const p: PassProgress = { pair: 'p', startedAt: 0, filesTotal: 100, filesDone: 25, filesFailed: 0, bytesDone: 5_000, bytesTotal: null };
    // 25 files in 10 s -> 75 files left take 30 s.
    expect(etaMs(p, 10_000)).toBe(30_000);
    const up: PassProgress = { ...p, bytesTotal: 20_000 };
    // 5000 bytes in 10 s -> 15000 left take 30 s, whatever the file count says.
    expect(etaMs({ ...up, filesDone: 90 }, 10_000)).toBe(30_000);
    expect(etaMs({ ...p, filesDone: 0 }, 10_000)).toBeNull();
  });

  it('describes a pass with counts, bytes, average rate and ETA', () => {
    const p: PassProgress = { pair: 'atlas', startedAt: 0, filesTotal: 300, filesDone: 120, filesFailed: 0, bytesDone: 45 * 1024 * 1024, bytesTotal: null };
    expect(describeProgress(p, 15_000, false)).toBe('[atlas] 120/300 files · 45.0 MiB · 3.0 MiB/s · ETA 23s');
    const withBar = describeProgress(p, 15_000, true);
    expect(withBar).toMatch(/^\[atlas\] █{8}░{12} 120\/300 files/);
    expect(describeProgress({ ...p, filesDone: 118, filesFailed: 2 }, 15_000, false)).toContain('120/300 files (2 failed)');
    expect(describeProgress({ ...p, filesDone: 0 }, 15_000, false)).toContain('ETA --');
    expect(describeProgress({ ...p, filesDone: 300 }, 15_000, false)).toContain('finishing');
    expect(describeProgress({ ...p, bytesTotal: 90 * 1024 * 1024 }, 15_000, false)).toContain('45.0 MiB of 90.0 MiB');
  });
});

describe('ProgressDisplay', () => {
  function setup(opts: { showAfterMs?: number } = {}) {
    const term = new FakeTerminal();
    const c = clock();
    const display = new ProgressDisplay({ stream: term, now: c.now, autoTick: false, showAfterMs: opts.showAfterMs ?? 500 });
    return { term, c, display };
  }

  it('stays silent for a pass that ends before showAfterMs, and for plans without transfers', () => {
    const { term, c, display } = setup();
    const obs = display.observer('p');
    obs.onPlan?.(plan([[download(1)]]));
    c.advance(300);
    display.tick();
    obs.onActionDone?.(download(1), true);
    obs.onPassEnd?.(null);
    obs.onPlan?.(plan([[mkdir]]));
    c.advance(5_000);
    display.tick();
    expect(term.writes).toEqual([]);
  });

  it('draws at most once per 200 ms on one line and clears it when the pass ends', () => {
    const { term, c, display } = setup();
    const obs = display.observer('atlas');
    const actions = Array.from({ length: 10 }, (_, i) => download(i));
    obs.onPlan?.(plan(actions.map((a) => [a])));
    c.advance(1_000);
    obs.onActionDone?.(actions[0]!, true);
    obs.onBytes?.(1024 * 1024);
    display.tick();
    expect(term.screen).toBe('[atlas] ██░░░░░░░░░░░░░░░░░░ 1/10 files · 1.0 MiB · 1.0 MiB/s · ETA 9s');
    // Ten ticks within 100 ms draw nothing more.
    for (let i = 0; i < 10; i++) {
      c.advance(10);
      display.tick();
    }
    expect(term.writes).toHaveLength(1);
    c.advance(100);
    obs.onActionDone?.(actions[1]!, false);
    display.tick();
    expect(term.writes).toHaveLength(2);
    expect(term.screen).toContain('2/10 files (1 failed)');
    // Every draw starts by returning to column 0 and clearing: one line, never a scroll.
    expect(term.writes.every((w) => w.startsWith('\r\x1b[K'))).toBe(true);
    expect(term.writes.join('')).not.toContain('\n');
    obs.onPassEnd?.(null);
    expect(term.writes.at(-1)).toBe('\r\x1b[K');
    expect(term.screen).toBe('');
    c.advance(1_000);
    display.tick();
    expect(term.writes.at(-1)).toBe('\r\x1b[K');
  });

  it('clears the line before a log line is written to an intercepted stream, and redraws on the next tick', () => {
    const term = new FakeTerminal();
    const logs: string[] = [];
    const stdout = {
      write: (s: string) => {
        logs.push(`${term.writes.at(-1) === '\r\x1b[K' ? '[cleared]' : '[torn]'}${s}`);
        return true;
      },
    };
    const c = clock();
    const display = new ProgressDisplay({ stream: term, now: c.now, autoTick: false, intercept: [stdout] });
    const obs = display.observer('p');
    obs.onPlan?.(plan([[download(1)], [download(2)]]));
    c.advance(600);
    display.tick();
    expect(term.screen).toContain('0/2 files');
    stdout.write('12:00:00 INFO downloaded\n');
    expect(logs).toEqual(['[cleared]12:00:00 INFO downloaded\n']);
    c.advance(200);
    display.tick();
    expect(term.screen).toContain('0/2 files');
    display.close();
    // After close the stream is restored: writes pass straight through, nothing is cleared.
    const before = term.writes.length;
    stdout.write('after\n');
    expect(term.writes.length).toBe(before);
    expect(logs.at(-1)).toBe('[cleared]after\n');
  });

  it('writes its own line through the original write when its stream is intercepted too', () => {
    const written: string[] = [];
    const stderr = {
      columns: 100,
      write(s: string) {
        written.push(s);
        return true;
      },
    };
    const c = clock();
    const display = new ProgressDisplay({ stream: stderr, now: c.now, autoTick: false, intercept: [stderr] });
    const obs = display.observer('p');
    obs.onPlan?.(plan([[download(1)]]));
    c.advance(600);
    display.tick();
    expect(written).toHaveLength(1);
    stderr.write('warning: something\n');
    expect(written.slice(1)).toEqual(['\r\x1b[K', 'warning: something\n']);
    display.close();
  });

  it('shows the passes of several pairs on the one line', () => {
    const { term, c, display } = setup();
    const a = display.observer('a');
    const b = display.observer('b');
    a.onPlan?.(plan([[download(1)], [download(2)]]));
    b.onPlan?.(plan([[upload(1, 2048)]]));
    c.advance(700);
    b.onBytes?.(1024);
    display.tick();
    expect(term.screen).toMatch(/^\[a\] 0\/2 files .*  \|  \[b\] 0\/1 files · 1\.0 KiB of 2\.0 KiB/);
    a.onPassEnd?.(null);
    // One pass still running: the line stays (redrawn on the next tick, with only b).
    c.advance(200);
    display.tick();
    expect(term.screen.startsWith('[b]')).toBe(true);
    b.onPassEnd?.(null);
    expect(term.screen).toBe('');
  });

  it('draws from its own timer when autoTick is on, and stops it when the last pass ends', async () => {
    const term = new FakeTerminal();
    const display = new ProgressDisplay({ stream: term, intervalMs: 20, showAfterMs: 0 });
    const obs = display.observer('p');
    obs.onPlan?.(plan([[download(1)]]));
    await new Promise((r) => setTimeout(r, 120));
    const drawn = term.writes.length;
    expect(drawn).toBeGreaterThanOrEqual(2);
    expect(drawn).toBeLessThanOrEqual(7);
    obs.onPassEnd?.(null);
    const after = term.writes.length;
    await new Promise((r) => setTimeout(r, 80));
    expect(term.writes.length).toBe(after);
    display.close();
  });
});

describe('when to show', () => {
  it('needs a terminal, and can be turned off', () => {
    expect(wantProgress({ isTTY: true }, {})).toBe(true);
    expect(wantProgress({ isTTY: false }, {})).toBe(false);
    expect(wantProgress({}, {})).toBe(false);
    expect(wantProgress({ isTTY: true }, { TERM: 'dumb' })).toBe(false);
    expect(wantProgress({ isTTY: true }, { BINDER_SYNC_PROGRESS: '0' })).toBe(false);
  });

  it('hands only the callbacks a pass takes', () => {
    expect(passHooks(undefined)).toEqual({});
    const onBytes = () => undefined;
    expect(passHooks({ onBytes, onPassEnd: () => undefined })).toEqual({ onBytes });
  });
});
