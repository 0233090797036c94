// The tree digest: what the in-sync mark keeps of a whole scan (sync/in-sync-mark.ts), so that a new process can
// tell whether the tree is exactly as then without loading the base. It is the SHA-256 of the walk's directory
// digests (tree-walk.ts chunkDigest: every directory, and every file's name, size, mtime, inode, ctime) in walk
// order; scanLocal computes the same one while it scans.
//
// A large tree is walked on two threads: the main thread lists the top of the tree until it has a few dozen
// sub-trees, then it and a worker take sub-trees in turn; the directory digests are hashed in walk order at the
// end, so the digest is the one a single walk gives. The walk is one lstat per file, which costs the kernel about as
// much as everything else together; the second core halves it.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createIgnoreMatcher } from './ignore.js';
import { readRoot, TreeWalker, type WalkFrame, type WalkOptions } from './tree-walk.js';

/** Below this many files the worker's start-up (~40 ms) is not worth it. */
export const PARALLEL_FROM_FILES = 20_000;

/** Sub-trees to split the walk into (more than two threads need, so that neither waits long for the other). */
const SEGMENTS = 48;

/** At most this many directories are expanded to find them (a deep chain of single folders stops here). */
const MAX_EXPANSIONS = 64;

export interface DigestOptions extends Omit<WalkOptions, 'ignore'> {
  /** The pair's own ignore globs (the built-in rules are added, as for the scan). */
  ignoreGlobs: string[];
  /** How many files the tree is expected to hold (the base): decides whether a worker helps. */
  expectedFiles?: number;
  /** Called for each sub-tree walked, with the thread that walked it. */
  onSegment?: (thread: 'main' | 'worker') => void;
  /** Tests: the main thread lists the top of the tree and leaves every sub-tree to the worker (if there is one). */
  workerOnly?: boolean;
}

/** What one sub-tree's walk gives: its directories' digests in walk order, and whether it can be vouched for. */
interface SegmentResult {
  digests: Uint8Array;
  clean: boolean;
}

/** Messages of the worker (tree-digest-worker.ts). */
export type WorkerMessage = ({ index: number } & SegmentResult) | { done: true };

/** The one message the worker gets, once the main thread has split the tree. */
export interface WorkerTask {
  root: string;
  caseInsensitive: boolean;
  ignoreGlobs: string[];
  /** Int32 counter shared by both threads: the next sub-tree to take (an index into `rels`). */
  next: SharedArrayBuffer;
  /** The sub-trees by path, in claim order. */
  rels: string[];
}

/**
 * The digest of the whole tree as a full scan sees it, without hashing or looking anything up: null when the
 * walk met anything a full scan would report as a problem, or a file of the daemon's own (a temp file left by a
 * crash). Equal digests mean a full scan would find exactly the same files with the same stats.
 */
export async function digestLocalTree(opts: DigestOptions): Promise<string | null> {
  const walkOpts: WalkOptions = { ...opts, ignore: createIgnoreMatcher(opts.ignoreGlobs) };
  let clean = true;
  const walker = new TreeWalker(walkOpts, { dir: () => undefined, file: () => undefined, problem: () => void (clean = false) });
  // Walk order as a list of segments: digests of directories already walked, and sub-trees still to walk.
  // Expanding a sub-tree into its own digest and its children's sub-trees (last found first: see TreeWalker.dir)
  // keeps the order.
  let segments: Array<Buffer | WalkFrame> = [{ rel: '', entries: readRoot(opts.root) }];
  const parallel = (opts.expectedFiles ?? 0) >= PARALLEL_FROM_FILES && fs.existsSync(WORKER_FILE);
  const next = new SharedArrayBuffer(4);
  const results: Array<SegmentResult | undefined> = [];
  // The worker boots (a new isolate: 0.1-0.25 s on a busy machine) while this thread splits the tree, and then
  // gets the sub-trees in one message.
  const helper = parallel ? startWorker(opts, next, results) : null;
  try {
    if (parallel) segments = splitTree(walker, segments);
    const frames = segments.filter(isFrame);
    results.length = frames.length;
    // Both threads take the sub-trees likely to be largest first, so that neither is left with a big one at the
    // end; each result goes to its sub-tree's place in walk order.
    const weights = frames.map(weight);
    const claimOrder = frames.map((_, i) => i).sort((a, b) => (weights[b] as number) - (weights[a] as number));
    helper?.start(claimOrder.map((i) => (frames[i] as WalkFrame).rel), claimOrder);
    const claims = new Int32Array(next);
    const walkHere = async (k: number) => {
      const i = claimOrder[k] as number;
      results[i] = await walkSegment(walkOpts, frames[i] as WalkFrame);
      opts.onSegment?.('main');
      // A segment is a few dozen directories, fewer than a walk goes between its own yields: without this
      // the main thread would walk its whole half (~0.3 s at 100k files) without answering a response, and
      // the listing that runs beside the walk would stall meanwhile.
      await new Promise<void>((resolve) => setImmediate(resolve));
    };
    for (;;) {
      if (helper !== null && opts.workerOnly === true) break;
      const i = Atomics.add(claims, 0, 1);
      if (i >= frames.length) break;
      await walkHere(i);
    }
    await helper?.finished;
    // Anything the worker took but did not answer (it failed) is walked here.
    for (let k = 0; k < frames.length; k++) if (results[claimOrder[k] as number] === undefined) await walkHere(k);
  } finally {
    await helper?.stop();
  }
  const hash = createHash('sha256');
  let f = 0;
  for (const s of segments) {
    if (!isFrame(s)) {
      hash.update(s);
      continue;
    }
    const r = results[f++] as SegmentResult;
    if (!r.clean) clean = false;
    hash.update(r.digests);
  }
  return clean && !walker.daemonFiles ? hash.digest('base64') : null;
}

function isFrame(s: Buffer | WalkFrame): s is WalkFrame {
  return !Buffer.isBuffer(s);
}

/** Sub-directories listed in a frame (from the directory entries' types: no system call). */
function subdirCount(frame: WalkFrame): number {
  let n = 0;
  for (const e of frame.entries) if (e.isDirectory()) n++;
  return n;
}

/** A guess at a sub-tree's size before walking it: a sub-directory counts as a hundred files. */
function weight(frame: WalkFrame): number {
  const dirs = subdirCount(frame);
  return dirs * 100 + (frame.entries.length - dirs);
}

/**
 * Splits the walk into at least SEGMENTS sub-trees (where the tree has them) by expanding, in place, the sub-tree
 * with the most sub-directories, one at a time: each expansion is walked on this thread alone, while the worker
 * waits, so it expands as little as it can (a level at a time expanded 1,100 directories of the 100k-file bench
 * tree: 0.1-0.2 s before the worker had anything to do).
 */
function splitTree(walker: TreeWalker, start: Array<Buffer | WalkFrame>): Array<Buffer | WalkFrame> {
  let segments = start;
  for (let expansions = 0; expansions < MAX_EXPANSIONS; expansions++) {
    let best = -1;
    let bestDirs = 0;
    let frames = 0;
    segments.forEach((s, i) => {
      if (!isFrame(s)) return;
      frames++;
      const dirs = subdirCount(s);
      if (dirs > bestDirs) [best, bestDirs] = [i, dirs];
    });
    if (frames >= SEGMENTS || best < 0) break;
    const { digest, children } = walker.dir(segments[best] as WalkFrame);
    segments = [...segments.slice(0, best), digest, ...children.reverse(), ...segments.slice(best + 1)];
  }
  return segments;
}

/** Walks one sub-tree with a walker of its own (names in different sub-trees cannot collide). */
export async function walkSegment(opts: WalkOptions, frame: WalkFrame): Promise<SegmentResult> {
  let clean = true;
  const walker = new TreeWalker(opts, { dir: () => undefined, file: () => undefined, problem: () => void (clean = false) });
  const parts: Buffer[] = [];
  await walker.walk([frame], (digest) => parts.push(digest));
  return { digests: Buffer.concat(parts), clean: clean && !walker.daemonFiles };
}

/** The compiled worker next to this module (absent when running from TypeScript sources: then no worker). */
const WORKER_FILE = fileURLToPath(new URL('./tree-digest-worker.js', import.meta.url));

/** How long a prewarmed worker waits to be taken before it is let go (the pass took another path). */
const PREWARM_IDLE_MS = 10_000;

let warm: { worker: Worker; timer: NodeJS.Timeout } | null = null;

/**
 * Starts the digest's worker ahead of the walk that will need it, so that its start-up (a new isolate and its
 * modules: 0.1-0.2 s on a busy 2-core machine, half the walk) runs beside the rest of the pass's start instead
 * of after it. The pass calls this when the in-sync mark promises a large tree to digest; digestLocalTree takes
 * it. Not taken within PREWARM_IDLE_MS, it is stopped; it never keeps the process alive.
 */
export function prewarmDigestWorker(): void {
  if (warm !== null || !fs.existsSync(WORKER_FILE)) return;
  const worker = new Worker(WORKER_FILE);
  worker.unref();
  const forget = () => {
    if (warm?.worker === worker) {
      clearTimeout(warm.timer);
      warm = null;
    }
  };
  worker.once('error', forget);
  worker.once('exit', forget);
  warm = { worker, timer: setTimeout(() => void (forget(), worker.terminate()), PREWARM_IDLE_MS).unref() };
}

/** Whether a prewarmed worker waits to be taken (for tests). */
export function hasWarmWorker(): boolean {
  return warm !== null;
}

/** The prewarmed worker if there is one (still alive), else a new one. */
function takeWorker(): Worker {
  const w = warm;
  if (w === null) return new Worker(WORKER_FILE);
  clearTimeout(w.timer);
  warm = null;
  w.worker.ref();
  return w.worker;
}

function startWorker(
  opts: DigestOptions,
  next: SharedArrayBuffer,
  results: Array<SegmentResult | undefined>,
): { start: (rels: string[], claimOrder: number[]) => void; finished: Promise<void>; stop: () => Promise<void> } {
  const worker = takeWorker();
  // Settles when the worker has answered every sub-tree it took, or stopped: what it did not answer, the
  // caller walks itself.
  let claimOrder: number[] = [];
  const finished = new Promise<void>((resolve) => {
    worker.on('message', (m: WorkerMessage) => {
      if ('done' in m) resolve();
      else {
        // The worker answers by its place in the claim order.
        results[claimOrder[m.index] as number] = { digests: m.digests, clean: m.clean };
        opts.onSegment?.('worker');
      }
    });
    worker.on('error', () => resolve());
    worker.on('exit', () => resolve());
  });
  opts.signal?.addEventListener('abort', () => void worker.terminate(), { once: true });
  return {
    start: (rels, order) => {
      claimOrder = order;
      const task: WorkerTask = { root: opts.root, caseInsensitive: opts.caseInsensitive, ignoreGlobs: opts.ignoreGlobs, next, rels };
      worker.postMessage(task);
    },
    finished,
    stop: async () => void (await worker.terminate()),
  };
}
