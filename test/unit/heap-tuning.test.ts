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
      // RSS every 250 ms for up to 6 s (on a loaded machine the collection, and the OS taking the pages, may take
      // seconds); the tuned run stops at the first sample that shows it, the other takes as many samples.
      const maxSamples = Number(process.argv[2]);
      const samples = [];
      const timer = setInterval(() => {
        const rss = process.memoryUsage().rss;
        samples.push(rss);
        if (samples.length === maxSamples || (mode === 'tuned' && rss < before - 80 * 1024 * 1024)) {
          clearInterval(timer);
          console.log(JSON.stringify({ before, samples }));
        }
      }, 250);
    `;
    const run = (mode: string, samples: number) => JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script, mode, String(samples)], { encoding: 'utf8' })) as { before: number; samples: number[] };
    const tuned = run('tuned', 24);
    // The untouched run, sampled until the moment the tuned one showed the drop (it is compared there).
    const untouched = run('off', tuned.samples.length);
    const MiB = 1024 * 1024;
    const said = JSON.stringify({ tuned, untouched });
    expect(tuned.before).toBeGreaterThan(150 * MiB); // the garbage was resident
    // The compacting collection gave most of it back (the first sample where it shows).
    const at = tuned.samples.findIndex((rss) => rss < tuned.before - 80 * MiB);
    expect(at, said).toBeGreaterThanOrEqual(0);
    // Without the tuning, V8's own collector may give some back in that time too (41 MiB once on a loaded
    // machine): by the same moment, the collection must have given back clearly more than that.
    const freedBy = (r: { before: number; samples: number[] }) => r.before - r.samples[at]!;
    expect(freedBy(tuned), said).toBeGreaterThan(freedBy(untouched) + 40 * MiB);
  });
});
