// V8 heap tuning for the long-running daemon (`binder-sync run` only; one-shot commands keep V8's defaults).
//
// Why: the service has no change feed, so every poll reads the whole listing (about 40 MB of search pages at
// 100,000 documents). V8 counts those response buffers (external memory) against the old generation's
// allocation limit, and once the idle memory reducer has shrunk the heap that limit sits only ~8 MB above
// the live heap (~50 MB at 100k). Each quiet poll then ran 3-4 full mark-compacts of the whole heap, more
// CPU than the listing itself (measured with --trace-gc and --trace-incremental-marking in
// bench/tools/idle-lab; see docs/BENCHMARKS.md, sixth session). A growing factor of 1.5 leaves room for a
// poll's buffers: one mark-compact per poll. The memory reducer still shrinks the heap after each poll, so
// the resident size while idle stays about the same.
//
// Also: after a pass that walked the whole tree (the start-up pass, a periodic rescan, a retry) the heap holds
// ~150 MB of garbage at 100k files that V8's memory reducer returns only ~30-40 s later. One compacting
// full collection shortly after such a pass gives it back at once; it costs ~100-150 ms of CPU per full pass,
// never per poll.
import v8 from 'node:v8';
import vm from 'node:vm';

export const DEFAULT_HEAP_GROWING_PERCENT = 50;
export const HEAP_GROWING_ENV = 'BINDER_SYNC_HEAP_GROWING_PERCENT';

export type HeapTuning =
  | { applied: true; percent: number }
  | { applied: false; reason: 'disabled' | 'node flag given' }
  | { applied: false; reason: 'invalid'; raw: string };

/**
 * What to set: BINDER_SYNC_HEAP_GROWING_PERCENT (1-400; 0 keeps V8's own heuristics) or the default; nothing
 * when node was started with its own --heap-growing-percent, which wins.
 */
export function chooseHeapTuning(env: NodeJS.ProcessEnv, execArgv: readonly string[]): HeapTuning {
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent\b/.test(a))) return { applied: false, reason: 'node flag given' };
  const raw = env[HEAP_GROWING_ENV]?.trim();
  if (raw === undefined || raw === '') return { applied: true, percent: DEFAULT_HEAP_GROWING_PERCENT };
  if (!/^\d+$/.test(raw) || Number(raw) > 400) return { applied: false, reason: 'invalid', raw };
  const percent = Number(raw);
  return percent === 0 ? { applied: false, reason: 'disabled' } : { applied: true, percent };
}

/** Applies chooseHeapTuning's choice to this process (V8 reads the flag whenever it sets a new limit). */
export function tuneHeapForPolling(env: NodeJS.ProcessEnv = process.env, execArgv: readonly string[] = process.execArgv): HeapTuning {
  const choice = chooseHeapTuning(env, execArgv);
  if (choice.applied) {
    v8.setFlagsFromString(`--heap-growing-percent=${choice.percent}`);
    // --expose-gc set at run time does not add global.gc to the running context, but a new context gets it.
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    fullCollection = () => {
      // A plain full collection frees the garbage but leaves the pages it was spread over committed (the live
      // objects of the start-up pass are scattered among them): compacting this once is what gives them back.
      v8.setFlagsFromString('--compact-on-every-full-gc');
      try {
        gc();
      } finally {
        v8.setFlagsFromString('--no-compact-on-every-full-gc');
      }
    };
  }
  return choice;
}

/** Set by tuneHeapForPolling; null when the tuning is off (BINDER_SYNC_HEAP_GROWING_PERCENT=0, node's flag). */
let fullCollection: (() => void) | null = null;
let pending: NodeJS.Timeout | null = null;

/** After a pass this long ago with no other bulk pass since, the heap is collected (lets its closures go). */
export const RELEASE_DELAY_MS = 2_000;

/**
 * Collects the whole heap once, RELEASE_DELAY_MS after the last call (pairs finishing their start-up passes
 * together cost one collection). Call after a pass that walked the whole tree; a no-op without the tuning.
 */
export function releaseMemorySoon(collect: (() => void) | null = fullCollection, delayMs = RELEASE_DELAY_MS): void {
  if (collect === null) return;
  if (pending) clearTimeout(pending);
  pending = setTimeout(() => {
    pending = null;
    collect();
  }, delayMs);
  pending.unref(); // never keeps a stopping daemon alive
}

