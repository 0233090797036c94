// The walk of the local tree shared by the scanner and the tree digest: depth first, each directory's entries
// in name order (the same tree always yields the same observation, the same collision winner and the same
// digest), ignored entries pruned, symlinks reported and never followed.
import { isUtf8 } from 'node:buffer';
import { createHash, hash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BinderSyncError } from '../errors.js';
import { fileStatOf, type FileStat, type LocalProblem, type PathKey } from '../sync/model.js';
import { joinRel, pathKey } from '../sync/path-key.js';
import { DAEMON_FILE_PREFIX, type IgnoreMatcher } from './ignore.js';

/**
 * Errors that make one path unreadable, reported for that path while the walk goes on: permissions, I/O, and a
 * path past the system's limits (ENAMETOOLONG: over 4096 bytes, as deep build trees made with relative mkdir
 * reach; ELOOP).
 */
export const UNREADABLE = new Set(['EACCES', 'EPERM', 'EIO', 'ENAMETOOLONG', 'ELOOP']);

/**
 * The walk yields to the event loop once it has run this long: a response that arrives meanwhile (the listing
 * runs beside the walk) waits at most this long for each of its chunks. Counted in directories (32, ~3,000 files)
 * a 400 KB search page of 7 chunks waited up to 0.3 s behind a walk on a busy 2-core machine.
 */
const YIELD_AFTER_MS = 4;

export function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

export function statOf(st: fs.Stats): FileStat {
  return fileStatOf(st);
}

/**
 * The tree digest's entry for one directory: the digest is the SHA-256 of these in walk order. A directory's
 * entry is the SHA-256 of its names (`D<dir>`, then `d<name>` or `f<name>`, each ended by NUL, which no name
 * holds) followed by each file's size, mtime, inode and ctime as float64 in machine order. Each directory is
 * hashed as soon as it is walked, so no walk holds the text of the whole tree (at 100k files ~35 MB of strings,
 * which every young-generation collection had to copy: a third of the walk's time); the numbers are not written
 * out as text (two float-to-string conversions per file were a tenth of the walk's CPU).
 */
function chunkDigest(names: string, stats: Float64Array): Buffer {
  if (stats.length === 0) return hash('sha256', names, 'buffer');
  return createHash('sha256').update(names).update(new Uint8Array(stats.buffer, stats.byteOffset, stats.byteLength)).digest();
}

/** Scratch space for one directory's file stats (dir() is synchronous, so one per thread is enough). */
const SCRATCH_LENGTH = 4 * 1024;
let statScratch = new Float64Array(SCRATCH_LENGTH);

/** A directory to walk (relative to the root) and its entries as listed. */
export interface WalkFrame {
  rel: string;
  entries: fs.Dirent[];
}

export interface WalkVisitor {
  /** `inode`: the directory's, from the lstat the walk made anyway (what a directory move checks it still moves). */
  dir(relPath: string, key: PathKey, inode: number): void;
  file(relPath: string, key: PathKey, stat: FileStat): void;
  problem(relPath: string, key: PathKey, reason: LocalProblem['reason'], detail: string): void;
}

export interface WalkOptions {
  /** Absolute path of the sync root. */
  root: string;
  caseInsensitive: boolean;
  ignore: IgnoreMatcher;
  signal?: AbortSignal;
}

/**
 * One walk: what it has seen so far (for collisions) and whether it met a file of the daemon's own (a temp
 * file a crash left). Each directory yields its digest (chunkDigest: every entry's name and each file's stat):
 * the digests in walk order are what the tree digest hashes.
 */
export class TreeWalker {
  private readonly rootPrefix: string;
  daemonFiles = false;

  constructor(
    private readonly opts: WalkOptions,
    private readonly visit: WalkVisitor,
  ) {
    // Entry names from readdir never contain a separator, '.' or '..': prefix + relPath is what path.join
    // would return, without normalizing 100k strings.
    this.rootPrefix = opts.root.endsWith(path.sep) ? opts.root : opts.root + path.sep;
  }

  /** Walks `stack` to the end, depth first; `sink` gets each directory's digest in walk order. */
  async walk(stack: WalkFrame[], sink: (digest: Buffer) => void): Promise<void> {
    let lastYield = performance.now();
    while (stack.length > 0) {
      // The walk is synchronous (fast), but lets the event loop run every few milliseconds: the remote listing
      // proceeds meanwhile, and a daemon stays responsive to signals during a 100k-file rescan.
      if (performance.now() - lastYield >= YIELD_AFTER_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        lastYield = performance.now();
      }
      this.opts.signal?.throwIfAborted();
      const { digest, children } = this.dir(stack.pop() as WalkFrame);
      sink(digest);
      stack.push(...children);
    }
  }

  /**
   * One directory: its digest and its sub-directories, in the order they were found. A depth-first walk pops
   * the last one first, so the walk visits the sub-trees in the reverse of this order.
   */
  dir(frame: WalkFrame): { digest: Buffer; children: WalkFrame[] } {
    const { caseInsensitive, ignore } = this.opts;
    const { rel, entries } = frame;
    const children: WalkFrame[] = [];
    // Keys taken in this directory (file or dir) -> relPath, to report collisions. Per directory is enough:
    // two paths with one key have parents with one key, and of two colliding directories only the first is
    // walked. Kept for the whole walk, 100k keys would be copied through every young-generation collection.
    const taken = new Map<PathKey, string>();
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    // One digest update per directory: a string per entry costs less than a hash call per entry.
    let names = `D${rel}\0`;
    let n = 0;
    // Names holding U+FFFD, looked at as bytes: listed on the first such name (rare: nothing for most directories).
    let replaced: ReplacementNames | undefined;
    for (const ent of entries) {
      if (ent.name.startsWith(DAEMON_FILE_PREFIX)) this.daemonFiles = true;
      const relPath = joinRel(rel, ent.name);
      const key = pathKey(relPath, caseInsensitive);
      if (ignore.ignoresEntry(relPath, ent.isDirectory())) continue;
      if (ent.name.includes('\uFFFD')) {
        // U+FFFD is a valid character (a bad conversion leaves it in names; a remote name may hold it) and also
        // what a name that is not UTF-8 decodes with: only the bytes tell the two apart (black-box round 30b, F4).
        if (replaced === undefined) {
          replaced = replacementNames(this.rootPrefix + rel);
          for (const bad of replaced.invalid) {
            if (ignore.ignoresEntry(joinRel(rel, bad.decoded), bad.isDir)) continue;
            // Shown with its bad bytes escaped: a valid name that reads the same (U+FFFD) may sit beside it.
            const shown = joinRel(rel, bad.shown);
            this.visit.problem(shown, pathKey(shown, caseInsensitive), 'name-not-representable', NOT_UTF8);
          }
        }
        // The valid name of this spelling (and type), once; any other entry of it is one of the invalid names.
        if (replaced.valid.get(ent.name) !== ent.isDirectory()) continue;
        replaced.valid.delete(ent.name);
      }
      if (UNSYNCABLE_CHAR.test(ent.name)) {
        this.visit.problem(relPath, key, 'name-not-representable', unsyncableName(ent.name));
        continue;
      }
      const prev = taken.get(key);
      if (prev !== undefined) {
        // Two names the sync treats as one path (case or Unicode normalization): the first one wins.
        this.visit.problem(relPath, key, 'name-not-representable', nameCollision(relPath, prev));
        continue;
      }
      const abs = this.rootPrefix + relPath;
      let st: fs.Stats | undefined;
      try {
        st = fs.lstatSync(abs, { throwIfNoEntry: false });
      } catch (err) {
        if (UNREADABLE.has(errnoOf(err) ?? '')) {
          this.problem(taken, relPath, key, 'unreadable', `cannot stat: ${errnoOf(err)}`);
          continue;
        }
        throw err;
      }
      if (st === undefined) continue; // removed since readdir: simply not there any more
      if (st.isSymbolicLink()) {
        this.problem(taken, relPath, key, 'symlink', 'symbolic links are not followed');
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
          this.visit.problem(relPath, key, UNREADABLE.has(code ?? '') ? 'unreadable' : 'changing', `cannot list: ${code}`);
          continue;
        }
        this.visit.dir(relPath, key, st.ino);
        names += `d${ent.name}\0`;
        children.push({ rel: relPath, entries: sub });
      } else if (st.isFile()) {
        taken.set(key, relPath);
        const stat = statOf(st);
        names += `f${ent.name}\0`;
        if (n + 4 > statScratch.length) {
          const grown = new Float64Array(statScratch.length * 2);
          grown.set(statScratch);
          statScratch = grown;
        }
        statScratch[n++] = stat.size;
        statScratch[n++] = stat.mtimeMs;
        statScratch[n++] = stat.inode;
        statScratch[n++] = stat.ctimeMs;
        this.visit.file(relPath, key, stat);
      } else {
        this.problem(taken, relPath, key, 'special-file', 'sockets, FIFOs and devices are not synced');
      }
    }
    const digest = chunkDigest(names, statScratch.subarray(0, n));
    // Grown for a large folder (a million files: 32 MB): not kept for the rest of a daemon's life.
    if (statScratch.length > SCRATCH_LENGTH) statScratch = new Float64Array(SCRATCH_LENGTH);
    return { digest, children };
  }

  private problem(taken: Map<PathKey, string>, relPath: string, key: PathKey, reason: LocalProblem['reason'], detail: string): void {
    taken.set(key, relPath);
    this.visit.problem(relPath, key, reason, detail);
  }
}

/** Lists the root, or throws LOCAL_ROOT (fatal: an unmounted disk must never look like "all deleted"). */
export function readRoot(root: string): fs.Dirent[] {
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

/**
 * Why two local names are one path to the sync (its keys fold Unicode form, and case on a case-insensitive
 * disk): said so that two names that look the same on screen can be told apart. Neither is synced meanwhile.
 */
export function nameCollision(relPath: string, prev: string): string {
  const base = (p: string) => p.slice(p.lastIndexOf('/') + 1);
  const [a, b] = [base(relPath), base(prev)];
  const how =
    a.normalize('NFC') === b.normalize('NFC')
      ? 'the two names differ only in Unicode form (one composes accented letters, one decomposes them), so they look the same'
      : a.normalize('NFC').toLowerCase() === b.normalize('NFC').toLowerCase()
        ? 'the two names differ only in case, which this disk does not tell apart'
        : 'the two names are one path to the sync';
  return `collides with ${prev}: ${how}; neither is synced while both are there: rename one of the two`;
}

/** A directory's names that hold U+FFFD, by what their bytes are. */
interface ReplacementNames {
  /** Valid UTF-8 names holding U+FFFD -> whether a directory. */
  valid: Map<string, boolean>;
  /** Names that are not valid UTF-8: as decoded (U+FFFD for each bad sequence), and with each bad byte as \xNN. */
  invalid: Array<{ decoded: string; shown: string; isDir: boolean }>;
}

/**
 * Lists `dir` again with its names as bytes (the string listing has already replaced bad bytes with U+FFFD).
 * A name gone since the first listing is simply missing here (seen by the next pass).
 */
function replacementNames(dir: string): ReplacementNames {
  const out: ReplacementNames = { valid: new Map(), invalid: [] };
  let entries: Array<fs.Dirent<Buffer>>;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true, encoding: 'buffer' });
  } catch {
    return out; // gone or unreadable since the first listing: nothing under it is taken for valid
  }
  for (const ent of entries) {
    const decoded = ent.name.toString('utf8');
    if (isUtf8(ent.name)) {
      if (decoded.includes('\uFFFD')) out.valid.set(decoded, ent.isDirectory());
    } else out.invalid.push({ decoded, shown: showBytes(ent.name), isDir: ent.isDirectory() });
  }
  return out;
}

/** A name's bytes as text: its UTF-8 characters as they are, each byte that is not part of one as \xNN. */
function showBytes(name: Buffer): string {
  let out = '';
  let i = 0;
  while (i < name.length) {
    // UTF-8 is prefix-free: the shortest valid 1-4 byte prefix is the character (isUtf8 refuses overlong
    // forms and surrogates).
    let len = 1;
    while (len <= 4 && !isUtf8(name.subarray(i, i + len))) len++;
    if (len <= 4) {
      out += name.toString('utf8', i, i + len);
      i += len;
    } else {
      out += `\\x${(name[i] as number).toString(16).padStart(2, '0')}`;
      i += 1;
    }
  }
  return out;
}

/** Why a name that is not valid UTF-8 is not synced. */
const NOT_UTF8 =
  'the name is not valid UTF-8 (written in another encoding, such as Latin-1; each byte that is not UTF-8 is shown as \\xNN): rename it to sync it';

/**
 * A character that makes a local name unsyncable: the C0 controls (tab, newline, escape...). The service
 * takes a control character in a name, but a remote name comes down with it shown as its Control Picture
 * (remote/names.ts: "a<TAB>b" is the local file "a\u2409b"), so a file uploaded under its own name would be
 * renamed by the next pass to that form (black-box round 22, K5). Reported instead, like a name that is not UTF-8.
 * (U+FFFD is not one: a valid name may hold it, see replacementNames.)
 */
export const UNSYNCABLE_CHAR = /[\u0000-\u001f]/;

/** Why a name UNSYNCABLE_CHAR matches is not synced, naming the character and the name that would sync. */
export function unsyncableName(name: string): string {
  const c = (name.match(UNSYNCABLE_CHAR) as RegExpMatchArray)[0];
  const code = `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  const shown = name.replace(/[\u0000-\u001f]/g, (x) => String.fromCharCode(0x2400 + x.charCodeAt(0)));
  return `the name holds a control character (${code}), which would come back from the service as ${JSON.stringify(shown)}: rename the file (to ${JSON.stringify(shown)}, say) to sync it`;
}
