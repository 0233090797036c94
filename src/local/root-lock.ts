// One process per sync root, whatever its config and stateDir. The stateDir's lock (state/lock.ts) keeps two
// processes off one state; it cannot see two configs whose stateDirs differ but whose localPaths are one folder.
// Those two would each upload every local change (two identical versions: black-box round 10, F2) and trash each
// other's downloads. So a process that syncs a root also holds a Linux abstract unix socket named after the root's
// real path: nothing is written into the root or anywhere on disk, it is seen across users and configs on the
// machine, and the kernel drops it when the process ends, however it ends (no stale lock after a crash). A second
// process finds the name taken and asks the holder who it is (pid, pair, stateDir) to say so.
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
    const other = await askHolder(name);
    const who = other ? ` (pid ${other.pid}, pair ${other.pair}, stateDir ${other.stateDir})` : '';
    throw new BinderSyncError(`the local root ${root} is being synced by another binder-sync process${who}`, {
      code: 'ROOT_LOCKED',
      retryable: true,
      context: { localPath: root, ...(other ? { holder: other } : {}) },
      hint:
        'two processes syncing one folder with different stateDirs would upload every change twice: stop the other one, ' +
        'or run both from one config (one stateDir: the second then waits for the first). Nothing was changed.',
    });
  }
  const key = holdKey(root, me.pair);
  holds.set(key, [...new Set([...(holds.get(key) ?? []), ...names.filter((n) => held.get(n)?.pairs.has(me.pair) === true)])]);
}

/** Lets go of `root` for `pair` (a pair removed or changed by a reload): another process may sync it then. */
export function releaseRoot(root: string, pair: string): void {
  const key = holdKey(root, pair);
  for (const name of holds.get(key) ?? []) releaseName(name, pair);
  holds.delete(key);
}

function releaseName(name: string, pair: string): void {
  const h = held.get(name);
  if (h === undefined) return;
  h.pairs.delete(pair);
  if (h.pairs.size > 0) return;
  h.server.close();
  held.delete(name);
}

/**
 * The socket names of a root: one for its real path (through symlinks; its path as configured while it does not
 * exist yet), and one for the directory itself (device and inode) when it exists, which a bind mount of it shares.
 */
function namesOf(root: string): string[] {
  let real = path.resolve(root);
  try {
    real = fs.realpathSync(real);
  } catch {
    // not created yet: its path as configured
  }
  const hash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 32);
  const names = [`\0binder-sync-root-${hash(real)}`];
  const st = fs.statSync(real, { throwIfNoEntry: false, bigint: true });
  if (st?.isDirectory() === true) names.push(`\0binder-sync-dir-${hash(`${st.dev}:${st.ino}`)}`);
  return names;
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
