// Walks the local sync root into a LocalObservation: every regular file with its stat and SHA-256, every
// directory, and every path that could not be observed (a problem, never mistaken for a deletion).
import fs from 'node:fs';
import path from 'node:path';
import { BinderSyncError } from '../errors.js';
import type { FileStat, LocalFile, LocalObservation, LocalProblem, PathKey } from '../sync/model.js';
import { joinRel, pathKey } from '../sync/path-key.js';
import { hashFile } from './hash.js';
import type { IgnoreMatcher } from './ignore.js';

export interface PriorFile extends FileStat {
  sha256: string;
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
   * Walk only these directories (relative to root, '' = root) and everything under them; the result then
   * describes just those subtrees (see mergeScan). A listed directory that no longer exists yields nothing.
   * Used after watcher hints, so a 100k-file tree is not walked for one saved file.
   */
  subtrees?: string[];
}

const UNREADABLE = new Set(['EACCES', 'EPERM', 'EIO']);

/** Directories walked between two yields to the event loop. */
const YIELD_EVERY_DIRS = 32;

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

function statOf(st: fs.Stats): FileStat {
  return { size: st.size, mtimeMs: st.mtimeMs, inode: st.ino };
}

function sameStat(a: FileStat, b: FileStat): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.inode === b.inode;
}

/**
 * Scans `root`. The walk is synchronous (readdirSync + lstatSync is several times faster than async
 * stat storms for 100k files); only files whose (size, mtimeMs, inode) differ from `prior` are hashed,
 * streaming, a few at a time. Symlinks are reported, never followed.
 * Throws LOCAL_ROOT when the root is missing, not a directory or unreadable, and the abort reason when
 * `signal` fires. Everything else becomes a LocalProblem.
 */
export async function scanLocal(opts: ScanOptions): Promise<LocalObservation> {
  const { root, caseInsensitive, ignore, signal } = opts;
  const files = new Map<PathKey, LocalFile>();
  const dirs = new Map<PathKey, string>();
  const problems: LocalProblem[] = [];
  /** Every key taken so far (file or dir) -> its relPath, to report collisions. */
  const taken = new Map<PathKey, string>();
  const toHash: Array<{ relPath: string; key: PathKey; stat: FileStat }> = [];

  const problem = (relPath: string, key: PathKey, reason: LocalProblem['reason'], detail: string): void => {
    problems.push({ relPath, key, reason, detail });
  };

  // Entry names from readdir never contain a separator, '.' or '..': prefix + relPath is what path.join would
  // return, without normalizing 100k strings.
  const rootPrefix = root.endsWith(path.sep) ? root : root + path.sep;
  const rootEntries = readRoot(root);
  const stack: Array<{ rel: string; entries: fs.Dirent[] }> = [];
  if (opts.subtrees === undefined || opts.subtrees.includes('')) stack.push({ rel: '', entries: rootEntries });
  else {
    for (const sub of opts.subtrees) {
      let st: fs.Stats | undefined;
      try {
        st = fs.lstatSync(path.join(root, sub), { throwIfNoEntry: false });
      } catch {
        st = undefined;
      }
      if (st === undefined || !st.isDirectory()) continue; // gone (or replaced): its old entries are dropped
      try {
        stack.push({ rel: sub, entries: fs.readdirSync(path.join(root, sub), { withFileTypes: true }) });
        dirs.set(pathKey(sub, caseInsensitive), sub);
      } catch (err) {
        const code = errnoOf(err);
        if (code !== 'ENOENT') problem(sub, pathKey(sub, caseInsensitive), UNREADABLE.has(code ?? '') ? 'unreadable' : 'changing', `cannot list: ${code}`);
      }
    }
  }
  let dirsWalked = 0;
  while (stack.length > 0) {
    // The walk is synchronous (fast), but lets the event loop run every few directories: the remote listing
    // proceeds meanwhile, and a daemon stays responsive to signals during a 100k-file rescan.
    if (++dirsWalked % YIELD_EVERY_DIRS === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    signal?.throwIfAborted();
    const { rel, entries } = stack.pop() as { rel: string; entries: fs.Dirent[] };
    // Sorted so the same tree always yields the same observation (and the same collision winner).
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const ent of entries) {
      const relPath = joinRel(rel, ent.name);
      const key = pathKey(relPath, caseInsensitive);
      const isDirEnt = ent.isDirectory();
      if (ignore.ignoresEntry(relPath, isDirEnt)) continue;
      // Names that are not valid UTF-8 decode with U+FFFD: writing that string back would name another file.
      if (ent.name.includes('\uFFFD')) {
        problem(relPath, key, 'name-not-representable', 'the name is not valid UTF-8');
        continue;
      }
      const prev = taken.get(key);
      if (prev !== undefined) {
        // Two names the sync treats as one path (case or Unicode normalization): the first one wins.
        problem(relPath, key, 'name-not-representable', `collides with ${prev}`);
        continue;
      }
      const abs = rootPrefix + relPath;
      let st: fs.Stats | undefined;
      try {
        st = fs.lstatSync(abs, { throwIfNoEntry: false });
      } catch (err) {
        if (UNREADABLE.has(errnoOf(err) ?? '')) {
          taken.set(key, relPath);
          problem(relPath, key, 'unreadable', `cannot stat: ${errnoOf(err)}`);
          continue;
        }
        throw err;
      }
      if (st === undefined) continue; // removed since readdir: simply not there any more
      if (st.isSymbolicLink()) {
        taken.set(key, relPath);
        problem(relPath, key, 'symlink', 'symbolic links are not followed');
      } else if (st.isDirectory()) {
        taken.set(key, relPath);
        let sub: fs.Dirent[];
        try {
          sub = fs.readdirSync(abs, { withFileTypes: true });
        } catch (err) {
          const code = errnoOf(err);
          if (code === 'ENOENT') continue;
          // The subtree's state is unknown: the directory itself is the problem, so reconcile never
          // treats the files under it as deleted.
          problem(relPath, key, UNREADABLE.has(code ?? '') ? 'unreadable' : 'changing', `cannot list: ${code}`);
          continue;
        }
        dirs.set(key, relPath);
        stack.push({ rel: relPath, entries: sub });
      } else if (st.isFile()) {
        taken.set(key, relPath);
        const stat = statOf(st);
        const before = opts.prior(key);
        if (before !== undefined && sameStat(before, stat)) {
          // Every field in one literal (no spread): a spread object gets out-of-line property storage, ~40
          // bytes more per file for as long as the daemon keeps this observation.
          files.set(key, { relPath, key, size: stat.size, mtimeMs: stat.mtimeMs, inode: stat.inode, sha256: before.sha256 });
        } else {
          toHash.push({ relPath, key, stat });
        }
      } else {
        taken.set(key, relPath);
        problem(relPath, key, 'special-file', 'sockets, FIFOs and devices are not synced');
      }
    }
  }

  await hashAll(toHash, opts, files, problem);
  return { files, dirs, problems };
}

/** Lists the root, or throws LOCAL_ROOT (fatal: an unmounted disk must never look like "all deleted"). */
function readRoot(root: string): fs.Dirent[] {
  const fail = (why: string, cause?: unknown): never => {
    throw new BinderSyncError(`Sync root ${root} ${why}`, {
      code: 'LOCAL_ROOT',
      retryable: false,
      context: { root },
      hint: 'is the disk mounted? check that the local path in the config exists and is readable',
      cause,
    });
  };
  if (!path.isAbsolute(root)) fail('is not an absolute path');
  let st: fs.Stats | undefined;
  try {
    st = fs.statSync(root, { throwIfNoEntry: false }); // the root itself may be a symlink
  } catch (err) {
    fail(`cannot be read (${errnoOf(err)})`, err);
  }
  if (st === undefined) return fail('does not exist');
  if (!st.isDirectory()) fail('is not a directory');
  try {
    return fs.readdirSync(root, { withFileTypes: true });
  } catch (err) {
    return fail(`cannot be listed (${errnoOf(err)})`, err);
  }
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
        problem(item.relPath, item.key, 'changing', 'the file changed while it was being read');
        continue;
      }
      files.set(item.key, { relPath: item.relPath, key: item.key, size: item.stat.size, mtimeMs: item.stat.mtimeMs, inode: item.stat.inode, sha256 });
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
  const problems = previous.problems.filter((p) => !inside(p.relPath)).concat(partial.problems);
  return { files, dirs, problems };
}
