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
import v8 from 'node:v8';

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
  if (choice.applied) v8.setFlagsFromString(`--heap-growing-percent=${choice.percent}`);
  return choice;
}
