// The tree digest: what the in-sync mark keeps of a whole scan (sync/in-sync-mark.ts), so that a new process can
// tell whether the tree is exactly as then without loading the base. It is the SHA-256 of the walk's chunks
// digests (tree-walk.ts chunkDigest: every directory, and every file's name, size, mtime and inode) in walk
// order; scanLocal computes the same one while it scans.
//
// A large tree is walked on two threads: the main thread lists the top of the tree until it has a few dozen
// sub-trees, then it and a worker take sub-trees in turn; the chunk digests are hashed in walk order at the
// end, so the digest is the one a single walk gives. The walk is one lstat per file, which costs the kernel about as
// much as everything else together; the second core halves it.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createIgnoreMatcher } from './ignore.js';
import { chunkDigest, readRoot, TreeWalker, type WalkFrame, type WalkOptions } from './tree-walk.js';

/** Below this many files the worker's start-up (~40 ms) is not worth it. */
export const PARALLEL_FROM_FILES = 20_000;

/** Sub-trees to split the walk into (more than two threads need, so that neither waits long for the other). */
const SEGMENTS = 48;

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

/** What one sub-tree's walk gives: its chunks' digests in walk order, and whether it can be vouched for. */
interface SegmentResult {
  digests: Uint8Array;
  clean: boolean;
}

/** Messages of the worker (tree-digest-worker.ts). */
export type WorkerMessage = ({ index: number } & SegmentResult) | { done: true };

export interface WorkerInput {
  root: string;
  caseInsensitive: boolean;
  ignoreGlobs: string[];
  rels: string[];
  /** Int32 counter shared by both threads: the next sub-tree to take. */
  next: SharedArrayBuffer;
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
  // Walk order as a list of segments: chunks already walked, and sub-trees still to walk. Expanding a sub-tree
  // into its own chunk and its children's sub-trees (last found first: see TreeWalker.dir) keeps the order.
  let segments: Array<string | WalkFrame> = [{ rel: '', entries: readRoot(opts.root) }];
  const parallel = (opts.expectedFiles ?? 0) >= PARALLEL_FROM_FILES && fs.existsSync(WORKER_FILE);
  for (let depth = 0; parallel && depth < 3 && segments.filter(isFrame).length < SEGMENTS; depth++) {
    segments = segments.flatMap((s) => {
      if (!isFrame(s)) return [s];
      const { chunk, children } = walker.dir(s);
      return [chunk, ...children.reverse()];
    });
  }
  const frames = segments.filter(isFrame);
  const results: Array<SegmentResult | undefined> = new Array(frames.length);
  const next = new SharedArrayBuffer(4);
  const helper = parallel && frames.length > 1 ? startWorker(opts, frames, next, results) : null;
  try {
    const claims = new Int32Array(next);
    const walkHere = async (i: number) => {
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
    for (let i = 0; i < frames.length; i++) if (results[i] === undefined) await walkHere(i);
  } finally {
    await helper?.stop();
  }
  const hash = createHash('sha256');
  let f = 0;
  for (const s of segments) {
    if (!isFrame(s)) {
      hash.update(chunkDigest(s));
      continue;
    }
    const r = results[f++] as SegmentResult;
    if (!r.clean) clean = false;
    hash.update(r.digests);
  }
  return clean && !walker.daemonFiles ? hash.digest('base64') : null;
}

function isFrame(s: string | WalkFrame): s is WalkFrame {
  return typeof s !== 'string';
}

/** Walks one sub-tree with a walker of its own (names in different sub-trees cannot collide). */
export async function walkSegment(opts: WalkOptions, frame: WalkFrame): Promise<SegmentResult> {
  let clean = true;
  const walker = new TreeWalker(opts, { dir: () => undefined, file: () => undefined, problem: () => void (clean = false) });
  const parts: Buffer[] = [];
  await walker.walk([frame], (chunk) => parts.push(chunkDigest(chunk)));
  return { digests: Buffer.concat(parts), clean: clean && !walker.daemonFiles };
}

/** The compiled worker next to this module (absent when running from TypeScript sources: then no worker). */
const WORKER_FILE = fileURLToPath(new URL('./tree-digest-worker.js', import.meta.url));

function startWorker(
  opts: DigestOptions,
  frames: WalkFrame[],
  next: SharedArrayBuffer,
  results: Array<SegmentResult | undefined>,
): { finished: Promise<void>; stop: () => Promise<void> } {
  const input: WorkerInput = { root: opts.root, caseInsensitive: opts.caseInsensitive, ignoreGlobs: opts.ignoreGlobs, rels: frames.map((f) => f.rel), next };
  const worker = new Worker(WORKER_FILE, { workerData: input });
  // Settles when the worker has answered every sub-tree it took, or stopped: what it did not answer, the
  // caller walks itself.
  const finished = new Promise<void>((resolve) => {
    worker.on('message', (m: WorkerMessage) => {
      if ('done' in m) resolve();
      else {
        results[m.index] = { digests: m.digests, clean: m.clean };
        opts.onSegment?.('worker');
      }
    });
    worker.on('error', () => resolve());
    worker.on('exit', () => resolve());
  });
  opts.signal?.addEventListener('abort', () => void worker.terminate(), { once: true });
  return { finished, stop: async () => void (await worker.terminate()) };
}
