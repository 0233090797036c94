import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { chooseHeapTuning, DEFAULT_HEAP_GROWING_PERCENT, HEAP_GROWING_ENV, releaseMemorySoon } from '../../src/daemon/heap-tuning.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('chooseHeapTuning (the daemon heap growing factor)', () => {
  it('applies the default when nothing is set', () => {
    expect(chooseHeapTuning({}, [])).toEqual({ applied: true, percent: DEFAULT_HEAP_GROWING_PERCENT });
    expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: '  ' }, ['--enable-source-maps'])).toEqual({ applied: true, percent: DEFAULT_HEAP_GROWING_PERCENT });
  });

  it('takes a whole percentage from the environment, and 0 turns it off', () => {
    expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: '100' }, [])).toEqual({ applied: true, percent: 100 });
    expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: '400' }, [])).toEqual({ applied: true, percent: 400 });
    expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: '0' }, [])).toEqual({ applied: false, reason: 'disabled' });
  });

  it('rejects anything else without applying it', () => {
    for (const raw of ['-5', '1.5', '401', 'fast', '50%']) {
      expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: raw }, [])).toEqual({ applied: false, reason: 'invalid', raw });
    }
  });

  it("leaves node's own --heap-growing-percent alone", () => {
    expect(chooseHeapTuning({}, ['--heap-growing-percent=20'])).toEqual({ applied: false, reason: 'node flag given' });
    expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: '80' }, ['--heap_growing_percent', '20'])).toEqual({ applied: false, reason: 'node flag given' });
  });
});

describe('releaseMemorySoon (one full collection after a bulk pass)', () => {
  it('collects once, after the delay, however many pairs ask at the same time', () => {
    vi.useFakeTimers();
    try {
      const collect = vi.fn();
      releaseMemorySoon(collect, 2000);
      vi.advanceTimersByTime(1500);
      releaseMemorySoon(collect, 2000); // a second pair finishing: the delay starts again
      vi.advanceTimersByTime(1500);
      expect(collect).not.toHaveBeenCalled();
      vi.advanceTimersByTime(600);
      expect(collect).toHaveBeenCalledTimes(1);
      vi.advanceTimersByTime(10_000);
      expect(collect).toHaveBeenCalledTimes(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('does nothing without a collector (tuning off)', () => {
    vi.useFakeTimers();
    try {
      releaseMemorySoon(null, 10);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('gives a heap full of garbage back to the OS in a real process', () => {
    // The built module, in its own node process: V8 flags are process-wide and RSS is only meaningful there.
    const script = `
      import { tuneHeapForPolling, releaseMemorySoon } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/daemon/heap-tuning.js')).href)};
      const mode = process.argv[1];
      if (mode === 'tuned') tuneHeapForPolling({});
      else tuneHeapForPolling({ BINDER_SYNC_HEAP_GROWING_PERCENT: '0' });
      // Like a start-up pass: what stays alive (a quarter) is scattered among the garbage.
      const live = [];
      let garbage = [];
      for (let i = 0; i < 1.6e6; i++) (i % 4 === 0 ? live : garbage).push({ name: 'file-' + i, size: i, parts: [i] });
      garbage = null;
      globalThis.keep = live;
      const before = process.memoryUsage().rss;
      releaseMemorySoon(undefined, 10);
      setTimeout(() => console.log(JSON.stringify({ before, after: process.memoryUsage().rss })), 1500);
    `;
    const run = (mode: string) => JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script, mode], { encoding: 'utf8' })) as { before: number; after: number };
    const tuned = run('tuned');
    const untouched = run('off');
    const MiB = 1024 * 1024;
    expect(tuned.before).toBeGreaterThan(150 * MiB); // the garbage was resident
    expect(tuned.after).toBeLessThan(tuned.before - 80 * MiB); // the compacting collection gave most of it back
    // Without the tuning, V8's own collector may give some back in that time too (41 MiB once on a loaded
    // machine): the collection must give back clearly more than that.
    const freed = (r: { before: number; after: number }) => r.before - r.after;
    expect(freed(tuned), JSON.stringify({ tuned, untouched })).toBeGreaterThan(freed(untouched) + 40 * MiB);
  });
});
