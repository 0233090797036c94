// Walks the local sync root into a LocalObservation: every regular file with its stat and SHA-256 (null for a
// large new file when asked: read later, by its upload), every directory, and every path that could not be
// observed (a problem, never mistaken for a deletion).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sameStat, type FileStat, type LocalFile, type LocalObservation, type LocalProblem, type PathKey } from '../sync/model.js';
import { pathKey } from '../sync/path-key.js';
import { hashFile } from './hash.js';
import type { IgnoreMatcher } from './ignore.js';
import { errnoOf, nameCollision, readRoot, statOf, TreeWalker, UNREADABLE, type WalkFrame } from './tree-walk.js';

/**
 * The detail of a file found changing while the scan read it (a program still writing it): a passing state,
 * which the next pass after the file settles takes up (the daemon's log says it at debug: pass-summary.ts).
 */
export const CHANGED_WHILE_READ = 'the file changed while it was being read';

export interface PriorFile extends FileStat {
  /** null: seen before, not read yet (see lazyHashFromBytes). */
  sha256: string | null;
}

export interface ScanOptions {
  /** Absolute path of the sync root. */
  root: string;
  caseInsensitive: boolean;
  ignore: IgnoreMatcher;
  /** What was seen last time on this key (the base); a file with the same size, mtime and inode is not re-hashed. */
  prior: (key: PathKey) => PriorFile | undefined;
  signal?: AbortSignal;
  /** Called for every file actually hashed (benchmarks count these). */
  onHash?: (relPath: string) => void;
  /** Files hashed at the same time (default 4). */
  hashConcurrency?: number;
  /**
   * Files of this size or more that have no prior with a hash (new files: nothing to compare them with yet)
   * are not read: their sha256 is null, and whoever needs the content reads it then (an upload hashes what it
   * sends). Undefined: every file is hashed. Files seen before with a hash are always hashed when changed.
   */
  lazyHashFromBytes?: number;
  /**
   * Walk only these directories (relative to root, '' = root) and everything under them; the result then
   * describes just those subtrees (see mergeScan). A listed directory that no longer exists yields nothing.
   * Used after watcher hints, so a 100k-file tree is not walked for one saved file.
   */
  subtrees?: string[];
}

/**
 * The size from which a new file is not hashed by the scan (lazyHashFromBytes in the sync pass), the size from
 * which the hash pool reads in worker threads. Below it a second read costs little (the file is in the page
 * cache), and every file keeps the stricter check of its upload: the bytes sent must hash to the scanned hash.
 */
export const LAZY_HASH_FROM_BYTES = 4 << 20;

/**
 * Scans `root`. The walk is synchronous (readdirSync + lstatSync is several times faster than async
 * stat storms for 100k files); only files whose (size, mtimeMs, inode, ctimeMs) differ from `prior` are hashed,
 * streaming, a few at a time. Symlinks are reported, never followed.
 * Throws LOCAL_ROOT when the root is missing, not a directory or unreadable, and the abort reason when
 * `signal` fires. Everything else becomes a LocalProblem.
 */
export async function scanLocal(opts: ScanOptions): Promise<LocalObservation> {
  const { caseInsensitive } = opts;
  const files = new Map<PathKey, LocalFile>();
  const dirs = new Map<PathKey, string>();
  const dirInodes = new Map<PathKey, number>();
  const problems: LocalProblem[] = [];
  const toHash: Array<{ relPath: string; key: PathKey; stat: FileStat }> = [];

  const problem = (relPath: string, key: PathKey, reason: LocalProblem['reason'], detail: string): void => {
    problems.push({ relPath, key, reason, detail });
  };

  const stack: WalkFrame[] = [];
  const rootEntries = readRoot(opts.root);
  if (opts.subtrees === undefined || opts.subtrees.includes('')) stack.push({ rel: '', entries: rootEntries });
  else {
    // Collisions are looked for per directory (tree-walk.ts), and a walk never reaches two directories with one
    // key; two hinted ones (an NFC and an NFD spelling, say) are compared here: the first one listed wins.
    const rootKeys = new Map<PathKey, string>();
    for (const sub of opts.subtrees) {
      const key = pathKey(sub, caseInsensitive);
      const prev = rootKeys.get(key);
      if (prev !== undefined) {
        problem(sub, key, 'name-not-representable', nameCollision(sub, prev));
        continue;
      }
      let st: fs.Stats | undefined;
      try {
        st = fs.lstatSync(path.join(opts.root, sub), { throwIfNoEntry: false });
      } catch {
        st = undefined;
      }
      if (st === undefined || !st.isDirectory()) continue; // gone (or replaced): its old entries are dropped
      try {
        stack.push({ rel: sub, entries: fs.readdirSync(path.join(opts.root, sub), { withFileTypes: true }) });
        dirs.set(key, sub);
        dirInodes.set(key, st.ino);
        rootKeys.set(key, sub);
      } catch (err) {
        const code = errnoOf(err);
        if (code !== 'ENOENT') problem(sub, key, UNREADABLE.has(code ?? '') ? 'unreadable' : 'changing', `cannot list: ${code}`);
      }
    }
  }
  // Only a scan of the whole tree has a digest (a partial one describes some subtrees).
  const full = opts.subtrees === undefined || opts.subtrees.includes('');
  const hash = full ? createHash('sha256') : null;
  const lazyFrom = opts.lazyHashFromBytes;
  const walker = new TreeWalker(opts, {
    dir: (relPath, key, inode) => {
      dirs.set(key, relPath);
      dirInodes.set(key, inode);
    },
    problem,
    file: (relPath, key, stat) => {
      const before = opts.prior(key);
      if (before !== undefined && sameStat(stat, before)) {
        // Every field in one literal (no spread): a spread object gets out-of-line property storage, ~40
        // bytes more per file for as long as the daemon keeps this observation.
        files.set(key, { relPath, key, size: stat.size, mtimeMs: stat.mtimeMs, inode: stat.inode, ctimeMs: stat.ctimeMs, bornMs: stat.bornMs ?? 0, sha256: before.sha256 });
      } else if (lazyFrom !== undefined && stat.size >= lazyFrom && (before === undefined || before.sha256 === null)) {
        files.set(key, { relPath, key, size: stat.size, mtimeMs: stat.mtimeMs, inode: stat.inode, ctimeMs: stat.ctimeMs, bornMs: stat.bornMs ?? 0, sha256: null });
      } else {
        toHash.push({ relPath, key, stat });
      }
    },
  });
  await walker.walk(stack, (digest) => hash?.update(digest));

  await hashAll(toHash, opts, files, problem);
  // The tree digest (tree-digest.ts) comes with a whole scan that met nothing it could not vouch for.
  return hash !== null && !walker.daemonFiles && problems.length === 0 ? { files, dirs, dirInodes, problems, digest: hash.digest('base64') } : { files, dirs, dirInodes, problems };
}

/** Hashes the queued files, `hashConcurrency` at a time, checking that each stayed still while read. */
async function hashAll(
  queue: Array<{ relPath: string; key: PathKey; stat: FileStat }>,
  opts: ScanOptions,
  files: Map<PathKey, LocalFile>,
  problem: (relPath: string, key: PathKey, reason: LocalProblem['reason'], detail: string) => void,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < queue.length) {
      opts.signal?.throwIfAborted();
      const item = queue[next++] as (typeof queue)[number];
      const abs = path.join(opts.root, item.relPath);
      opts.onHash?.(item.relPath);
      let sha256: string;
      let size: number;
      try {
        ({ sha256, size } = await hashFile(abs, opts.signal));
      } catch (err) {
        const code = errnoOf(err);
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (code === 'ENOENT') continue; // deleted since the walk
        if (UNREADABLE.has(code ?? '')) problem(item.relPath, item.key, 'unreadable', `cannot read: ${code}`);
        else problem(item.relPath, item.key, 'changing', `changed while reading: ${code ?? String(err)}`);
        continue;
      }
      let after: fs.Stats | undefined;
      try {
        after = fs.lstatSync(abs, { throwIfNoEntry: false });
      } catch (err) {
        problem(item.relPath, item.key, 'unreadable', `cannot stat: ${errnoOf(err)}`);
        continue;
      }
      if (after === undefined) continue;
      const now = statOf(after);
      if (!after.isFile() || !sameStat(now, item.stat) || size !== item.stat.size) {
        problem(item.relPath, item.key, 'changing', CHANGED_WHILE_READ);
        continue;
      }
      files.set(item.key, { relPath: item.relPath, key: item.key, size: item.stat.size, mtimeMs: item.stat.mtimeMs, inode: item.stat.inode, ctimeMs: item.stat.ctimeMs, bornMs: item.stat.bornMs ?? 0, sha256 });
    }
  };
  const n = Math.max(1, Math.min(opts.hashConcurrency ?? 4, queue.length));
  await Promise.all(Array.from({ length: n }, worker));
}

/**
 * The smallest set of subtrees covering `dirs` (a directory inside another listed one is dropped); [''] when
 * the root itself is listed.
 */
export function coveringSubtrees(dirs: Iterable<string>): string[] {
  const sorted = [...new Set(dirs)].sort();
  if (sorted.includes('')) return [''];
  const out: string[] = [];
  for (const d of sorted) if (!out.some((o) => d === o || d.startsWith(`${o}/`))) out.push(d);
  return out;
}

/** Replaces everything `previous` says about the given subtrees with what `partial` (a scan of them) found. */
export function mergeScan(previous: LocalObservation, partial: LocalObservation, subtrees: readonly string[]): LocalObservation {
  const inside = (relPath: string) => subtrees.some((s) => s === '' || relPath === s || relPath.startsWith(`${s}/`));
  const files = new Map<PathKey, LocalFile>();
  for (const [k, f] of previous.files) if (!inside(f.relPath)) files.set(k, f);
  for (const [k, f] of partial.files) files.set(k, f);
  const dirs = new Map<PathKey, string>();
  for (const [k, d] of previous.dirs) if (!inside(d)) dirs.set(k, d);
  for (const [k, d] of partial.dirs) dirs.set(k, d);
  const dirInodes = new Map<PathKey, number>();
  for (const [k, ino] of previous.dirInodes ?? []) if (dirs.has(k) && !partial.dirs.has(k)) dirInodes.set(k, ino);
  for (const [k, ino] of partial.dirInodes ?? []) dirInodes.set(k, ino);
  const problems = previous.problems.filter((p) => !inside(p.relPath)).concat(partial.problems);
  return { files, dirs, dirInodes, problems };
}
