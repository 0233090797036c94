// One process per sync root, whatever its config and stateDir. The stateDir's lock (state/lock.ts) keeps two
// processes off one state; it cannot see two configs whose stateDirs differ but whose localPaths are one folder.
// Those two would each upload every local change (two identical versions: black-box round 10, F2) and trash each
// other's downloads. So a process that syncs a root also holds a Linux abstract unix socket named after the root's
// real path: nothing is written into the root or anywhere on disk, it is seen across users and configs on the
// machine, and the kernel drops it when the process ends, however it ends (no stale lock after a crash). A second
// process finds the name taken and asks the holder who it is (pid, pair, stateDir) to say so.
// Nested roots are one tree too (a root inside another process's root: each would upload the other binder's
// files, black-box round 11, F3): a holder also marks each folder above its root with a name of its own, and a
// process refuses a root below a held one (the held root's name answers) or above one (a marker of it is listed
// in /proc/net/unix, where the kernel shows every abstract socket of this network namespace).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { BinderSyncError } from '../errors.js';

const HolderSchema = z.object({ pid: z.number().int(), pair: z.string(), stateDir: z.string() });
export type RootHolder = z.infer<typeof HolderSchema>;

/**
 * The names this process holds, by name, with the pairs holding each: holding one again (a reopened pair, a
 * reload) adds nothing, and the socket closes when its last pair lets go (releaseRoot).
 */
const held = new Map<string, { server: net.Server; pairs: Set<string> }>();

/** The names each hold took, by root and pair: released as taken, whatever the root is by then (moved, gone). */
const holds = new Map<string, string[]>();
const holdKey = (root: string, pair: string) => `${path.resolve(root)}\0${pair}`;

/** How long the holder has to say who it is. */
const ASK_TIMEOUT_MS = 1000;

/**
 * Holds `root` for this process until releaseRoot (or the process's end). Throws ROOT_LOCKED (retryable: the other
 * process may stop) when another process holds it. Where abstract sockets do not exist (not Linux) or cannot be
 * made, it holds nothing.
 */
export async function holdRoot(root: string, me: Omit<RootHolder, 'pid'>): Promise<void> {
  if (process.platform !== 'linux') return;
  const answer = `${JSON.stringify({ pid: process.pid, ...me })}\n`;
  const taken: string[] = [];
  const names = namesOf(root);
  await refuseNested(root);
  for (const name of names) {
    const mine = held.get(name);
    if (mine !== undefined) {
      mine.pairs.add(me.pair);
      continue;
    }
    const server = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end(answer);
    });
    const inUse = await new Promise<boolean>((resolve) => {
      server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE'));
      server.listen(name, () => resolve(false));
    });
    if (server.listening) {
      server.unref(); // held for as long as the pair runs, without keeping the process alive
      held.set(name, { server, pairs: new Set([me.pair]) });
      taken.push(name);
      continue;
    }
    if (!inUse) continue; // no abstract sockets here (a sandbox without AF_UNIX): nothing to hold
    for (const t of taken) releaseName(t, me.pair);
    throw rootLocked(root, await askHolder(name), 'is being synced by another binder-sync process');
  }
  // Checked again once held: two processes that took nested roots at the same instant both saw nothing before.
  await refuseNested(root).catch((err: unknown) => {
    for (const t of taken) releaseName(t, me.pair);
    throw err;
  });
  const key = holdKey(root, me.pair);
  holds.set(key, [...new Set([...(holds.get(key) ?? []), ...names.filter((n) => held.get(n)?.pairs.has(me.pair) === true)])]);
}

/** Lets go of `root` for `pair` (a pair removed or changed by a reload): another process may sync it then. */
export function releaseRoot(root: string, pair: string): void {
  const key = holdKey(root, pair);
  for (const name of holds.get(key) ?? []) releaseName(name, pair);
  holds.delete(key);
}

/**
 * Who holds `dir` as a sync root by the directory itself (device, inode, birth time), other than `pair` of this
 * process: another pair of this process (by name), another process (what it says of itself), or null.
 */
export async function dirHeldByOther(dir: string, pair: string): Promise<string | null> {
  if (process.platform !== 'linux') return null;
  const name = dirName(realPathOf(dir));
  if (name === null) return null;
  const mine = held.get(name);
  if (mine !== undefined) return mine.pairs.has(pair) ? null : `pair ${[...mine.pairs].join(', ')} of this process`;
  const other = await askHolder(name);
  return other === null ? null : `pair ${other.pair} of process ${other.pid} (stateDir ${other.stateDir})`;
}

/**
 * The process that holds `root` (by its real path) as its sync root, as it says of itself (pid, pair, stateDir);
 * null when none does, or it does not answer. Read-only: `status` looks for the daemon that syncs a pair.
 */
export async function rootHolder(root: string): Promise<RootHolder | null> {
  if (process.platform !== 'linux') return null;
  return askHolder(rootName(realPathOf(root)));
}

function releaseName(name: string, pair: string): void {
  const h = held.get(name);
  if (h === undefined) return;
  h.pairs.delete(pair);
  if (h.pairs.size > 0) return;
  h.server.close();
  held.delete(name);
}

function rootLocked(root: string, other: RootHolder | null, what: string): BinderSyncError {
  const who = other ? ` (pid ${other.pid}, pair ${other.pair}, stateDir ${other.stateDir})` : '';
  return new BinderSyncError(`the local root ${root} ${what}${who}`, {
    code: 'ROOT_LOCKED',
    retryable: true,
    context: { localPath: root, ...(other ? { holder: other } : {}) },
    hint:
      'two processes syncing one folder (or one inside the other) with different stateDirs would upload every change ' +
      'twice, or each other\'s files into their binders: stop the other one, or run both pairs from one config (one ' +
      'daemon then syncs them all; a config refuses overlapping roots). Nothing was changed.',
  });
}

const hashOf = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 32);
const rootName = (real: string) => `\0binder-sync-root-${hashOf(real)}`;
/** Marks `above` as a folder with a held root below it: one name per (folder, root), so sibling roots both mark it. */
const markerPrefix = (above: string) => `\0binder-sync-in-${hashOf(above)}-`;

function realPathOf(root: string): string {
  const resolved = path.resolve(root);
  try {
    return fs.realpathSync(resolved);
  } catch {
    return resolved; // not created yet: its path as configured
  }
}

/** The folders above a path, nearest first, up to and without the filesystem root. */
function foldersAbove(real: string): string[] {
  const out: string[] = [];
  for (let d = path.dirname(real); d !== path.dirname(d); d = path.dirname(d)) out.push(d);
  return out;
}

/**
 * A root's places: its real path, and its path inside the filesystem that holds it (`fs 8:1:/srv/share`, from
 * /proc/self/mountinfo), which a bind mount of it, or of a folder above or below it, shares: two roots nested
 * through a bind mount are nested there (black-box round 12, G2). Both are checked, as a root by path may hold
 * another filesystem's folder below it.
 */
function placesOf(real: string): Array<{ tag: string; path: string }> {
  const places = [{ tag: '', path: real }];
  const inFs = insideFilesystem(real);
  if (inFs !== null) places.push(inFs);
  return places;
}

/** Where `real` is inside its filesystem, by the mount that shows it (the longest mount point above it). */
function insideFilesystem(real: string): { tag: string; path: string } | null {
  let text: string;
  try {
    text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return null;
  }
  const unescape = (f: string) => f.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
  let best: { dev: string; root: string; at: string } | null = null;
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length < 5) continue;
    const m = { dev: f[2]!, root: unescape(f[3]!), at: unescape(f[4]!) };
    const under = m.at === '/' || real === m.at || real.startsWith(`${m.at}/`);
    if (under && (best === null || m.at.length >= best.at.length)) best = m; // a later mount on one point hides the earlier
  }
  if (best === null) return null;
  const rest = best.at === '/' ? real : real.slice(best.at.length); // '' for the mount point itself
  return { tag: `fs ${best.dev}:`, path: rest === '' ? best.root : path.posix.join(best.root, rest) }; // join('/a', '/') is '/a/'
}

/** Throws ROOT_LOCKED when another process holds a root above `root` or below it. */
async function refuseNested(root: string): Promise<void> {
  let listed: string[] | null = null; // read once, when a place gets that far
  for (const place of placesOf(realPathOf(root))) {
    for (const above of foldersAbove(place.path)) {
      const name = rootName(place.tag + above);
      if (held.has(name)) continue; // this process's own (one config cannot nest roots: config/checks.ts)
      const other = await askHolder(name);
      const where = place.tag === '' ? above : `${above} (on filesystem ${place.tag.slice(3, -1)}, through a bind mount)`;
      if (other !== null) throw rootLocked(root, other, `is inside ${where}, which is being synced by another binder-sync process`);
    }
    const prefix = markerPrefix(place.tag + place.path);
    listed ??= abstractNames();
    const below = listed.find((n) => n.startsWith(prefix) && !held.has(n));
    if (below !== undefined) throw rootLocked(root, await askHolder(below), 'holds a folder that is being synced by another binder-sync process');
  }
}

/** The abstract socket names of this network namespace (leading NUL kept); none when /proc cannot be read. */
function abstractNames(): string[] {
  let text: string;
  try {
    text = fs.readFileSync('/proc/net/unix', 'utf8');
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const at = line.indexOf(' @binder-sync-in-');
    // Node binds an abstract name padded with NULs to the whole address, which the kernel shows as '@'.
    if (at >= 0) out.push(`\0${line.slice(at + 2).trim().replace(/@+$/, '')}`);
  }
  return out;
}

/**
 * The socket names of a root: one for each of its places (placesOf: its real path, through symlinks, or its path
 * as configured while it does not exist yet; its path inside its filesystem), with a marker for each folder above
 * it there (refuseNested), and one for the directory itself (device, inode and birth time) when it exists.
 */
function namesOf(root: string): string[] {
  const real = realPathOf(root);
  const names: string[] = [];
  for (const place of placesOf(real)) {
    const key = place.tag + place.path;
    names.push(rootName(key));
    for (const above of foldersAbove(place.path)) names.push(`${markerPrefix(place.tag + above)}${hashOf(key)}`);
  }
  const dir = dirName(real);
  if (dir !== null) names.push(dir);
  return names;
}

/** The name of the directory itself, when it exists (birth time too: inode numbers are reused). */
function dirName(real: string): string | null {
  const st = fs.statSync(real, { throwIfNoEntry: false, bigint: true });
  return st?.isDirectory() === true ? `\0binder-sync-dir-${hashOf(`${st.dev}:${st.ino}:${st.birthtimeNs}`)}` : null;
}

/** What the holding process says of itself; null when it does not answer in time or says something else. */
function askHolder(name: string): Promise<RootHolder | null> {
  return new Promise((resolve) => {
    let text = '';
    const socket = net.connect(name);
    const done = (holder: RootHolder | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(holder);
    };
    const timer = setTimeout(() => done(null), ASK_TIMEOUT_MS);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > 4096) done(null);
    });
    socket.on('end', () => {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        return done(null);
      }
      const parsed = HolderSchema.safeParse(json);
      done(parsed.success ? parsed.data : null);
    });
    socket.on('error', () => done(null));
  });
}
