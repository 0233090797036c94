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

/** The roots this process holds, by key: holding one again (a reopened pair, a reload) is a no-op. */
const held = new Map<string, net.Server>();

/** How long the holder has to say who it is. */
const ASK_TIMEOUT_MS = 1000;

/**
 * Holds `root` for this process until it exits. Throws ROOT_LOCKED (retryable: the other process may stop) when
 * another process holds it. Where abstract sockets do not exist (not Linux) or cannot be made, it holds nothing.
 */
export async function holdRoot(root: string, me: Omit<RootHolder, 'pid'>): Promise<void> {
  if (process.platform !== 'linux') return;
  const key = rootKey(root);
  if (held.has(key)) return;
  const name = `\0binder-sync-root-${key}`;
  const answer = `${JSON.stringify({ pid: process.pid, ...me })}\n`;
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.end(answer);
  });
  const taken = await new Promise<boolean>((resolve) => {
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE'));
    server.listen(name, () => resolve(false));
  });
  if (!server.listening) {
    if (!taken) return; // no abstract sockets here (a sandbox without AF_UNIX): nothing to hold
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
  server.unref(); // held for as long as the process lives, without keeping it alive
  held.set(key, server);
}

/** The root's real path (the folder it names, through symlinks), hashed to fit a socket name. */
function rootKey(root: string): string {
  let real = path.resolve(root);
  try {
    real = fs.realpathSync(real);
  } catch {
    // not created yet: its path as configured
  }
  return createHash('sha256').update(real).digest('hex').slice(0, 32);
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
