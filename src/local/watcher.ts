// Local change watching for the daemon: the small interface it uses, the settle/max-delay timer around the
// pure coalescer, watcher error mapping, and backend choice (chokidar, fs.watch per folder, or @parcel/watcher)
// with fallback.
import fs from 'node:fs';
import path from 'node:path';
import { BinderSyncError } from '../errors.js';
import type { Logger } from '../log.js';
import { HintCoalescer, type CoalesceLimits, type RawEvent, type WatchHints } from './coalesce.js';
import type { IgnoreMatcher } from './ignore.js';

export type { WatchHints, RawEvent } from './coalesce.js';

export type WatcherBackend = 'chokidar' | 'folders' | 'native';

export interface LocalWatcher {
  readonly backend: WatcherBackend;
  /** Resolves when the initial watch is set up (createWatcher already waited for it). */
  ready(): Promise<void>;
  /** Stops watching; no onHints/onError call happens after the returned promise resolves. Idempotent. */
  close(): Promise<void>;
}

export interface WatchOptions {
  /** Absolute path of the sync root. */
  root: string;
  /** Never report ignored paths (the daemon's own .binder-sync-tmp-* files among them). */
  ignore: IgnoreMatcher;
  /**
   * Called after a quiet period (settleMs) with everything coalesced since the last call; a burst is held
   * until quiet, but never more than maxDelayMs after its first event.
   */
  onHints: (h: WatchHints) => void;
  /**
   * Watcher trouble. WATCH_LIMIT (inotify limits; not retryable: the daemon falls back to periodic
   * rescans) or WATCH_FAILED. Each code is reported once per watcher; a full-rescan hint follows each.
   */
  onError: (err: BinderSyncError) => void;
  /** Quiet period before hints are delivered (default 300 ms). */
  settleMs?: number;
  /** Longest a burst is held after its first event (default 2000 ms). */
  maxDelayMs?: number;
  /** Where fallback warnings go (e.g. "native watcher unavailable, using chokidar"). */
  log?: Logger;
  /** Coalescing thresholds (tests). */
  limits?: Partial<CoalesceLimits>;
}

export interface CreateWatcherOptions extends WatchOptions {
  backend: 'auto' | WatcherBackend;
  /** Loads @parcel/watcher; tests replace it to exercise the fallback. */
  loadNative?: () => Promise<NativeModule>;
}

/** The part of @parcel/watcher we use. */
export type NativeModule = Pick<typeof import('@parcel/watcher'), 'subscribe'>;

/**
 * The sync root's identity (dev:ino), null when it is not a directory: a root moved away and back, or a disk
 * mounted again, is another directory for a watcher (see PairWorker.rewatchIfRootChanged).
 */
export function rootIdentity(localPath: string): string | null {
  try {
    const st = fs.statSync(localPath);
    return st.isDirectory() ? `${st.dev}:${st.ino}` : null;
  } catch {
    return null;
  }
}

/** Converts a backend's absolute path to a root-relative '/' path; null when it is outside the root. */
export function toRelPath(root: string, abs: string): string | null {
  const rel = path.relative(root, abs);
  if (rel === '') return '';
  if (rel.startsWith('..') || path.isAbsolute(rel)) return null;
  return path.sep === '/' ? rel : rel.split(path.sep).join('/');
}

/**
 * Maps a backend error. ENOSPC from inotify_add_watch means max_user_watches is exhausted; EMFILE from
 * inotify_init means max_user_instances (or the open-files limit). @parcel/watcher reports them only as
 * message text, so the message is matched too.
 */
export function watchErrorFrom(err: unknown, backend: WatcherBackend, root: string): BinderSyncError {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const text = err instanceof Error ? err.message : String(err);
  const context = { root, backend, errno: code };
  if (code === 'ENOSPC' || /no space left on device|ENOSPC/i.test(text)) {
    return new BinderSyncError(`Cannot watch ${root}: the inotify watch limit was reached`, {
      code: 'WATCH_LIMIT',
      retryable: false,
      context,
      hint:
        'raise fs.inotify.max_user_watches, e.g. `sudo sysctl fs.inotify.max_user_watches=524288` (persist it in ' +
        '/etc/sysctl.d/); until then changes are found by periodic rescans',
      cause: err,
    });
  }
  if (code === 'EMFILE' || /too many open files|EMFILE/i.test(text)) {
    return new BinderSyncError(`Cannot watch ${root}: too many inotify instances or open files`, {
      code: 'WATCH_LIMIT',
      retryable: false,
      context,
      hint:
        'raise fs.inotify.max_user_instances, e.g. `sudo sysctl fs.inotify.max_user_instances=1024` (persist it ' +
        'in /etc/sysctl.d/), or the open-files limit (LimitNOFILE=); until then changes are found by periodic rescans',
      cause: err,
    });
  }
  return new BinderSyncError(`Watching ${root} failed: ${text}`, {
    code: 'WATCH_FAILED',
    retryable: true,
    context,
    hint: 'changes are found by periodic rescans meanwhile',
    cause: err,
  });
}

/** What every backend feeds: raw events and errors; the pump turns them into timed, coalesced hints. */
export interface HintPump {
  push(ev: RawEvent): void;
  error(err: unknown): void;
  /** Drops pending hints and stops the timer; nothing is delivered afterwards. */
  close(): void;
}

export function createHintPump(opts: WatchOptions, backend: WatcherBackend, watchRoot: string): HintPump {
  const settleMs = opts.settleMs ?? 300;
  const maxDelayMs = Math.max(opts.maxDelayMs ?? 2000, settleMs);
  const coalescer = new HintCoalescer(opts.ignore, opts.limits);
  const reported = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let firstAt = 0;
  let lastAt = 0;
  let closed = false;

  // One timer per burst, re-armed lazily on expiry (not on every event: a `tar x` sends thousands).
  const onTimer = (): void => {
    timer = undefined;
    if (closed) return;
    const now = Date.now();
    const wait = Math.min(lastAt + settleMs, firstAt + maxDelayMs) - now;
    if (wait > 0) {
      timer = setTimeout(onTimer, wait);
      return;
    }
    const hints = coalescer.take();
    if (hints === null) return;
    try {
      opts.onHints(hints);
    } catch (err) {
      // A bug in the handler: keep watching if it can be logged, else let it surface as uncaught.
      if (opts.log) opts.log.error({ err }, 'watch hint handler threw');
      else process.nextTick(() => {
        throw err;
      });
    }
  };

  const noteEvent = (): void => {
    lastAt = Date.now();
    if (timer === undefined) {
      firstAt = lastAt;
      timer = setTimeout(onTimer, settleMs);
    }
  };

  return {
    push(ev) {
      if (closed) return;
      if (ev.relPath === '' && ev.type === 'unlinkDir') {
        // The root itself went away (moved, deleted, unmounted): this watcher sees nothing from here on.
        opts.onError(new BinderSyncError(`the sync root ${opts.root} disappeared`, { code: 'WATCH_ROOT_GONE', retryable: true, context: { root: opts.root, backend } }));
        return;
      }
      if (coalescer.push(ev)) noteEvent();
    },
    error(err) {
      if (closed) return;
      const mapped = watchErrorFrom(err, backend, watchRoot);
      // Backends repeat an error per directory (ENOSPC for each one past the limit): report each kind once.
      if (!reported.has(mapped.code)) {
        reported.add(mapped.code);
        opts.onError(mapped);
      }
      coalescer.push({ type: 'error', relPath: '' });
      noteEvent();
    },
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}

/** The LocalWatcher of a backend that is set up: close() stops the pump, then the backend, once. */
export function watcherHandle(backend: WatcherBackend, pump: HintPump, stop: () => void | Promise<void>): LocalWatcher {
  let closing: Promise<void> | undefined;
  return {
    backend,
    ready: () => Promise.resolve(),
    close() {
      closing ??= (async () => {
        pump.close();
        await stop();
      })();
      return closing;
    },
  };
}

/** Resolves the root as the backends see it (a symlinked root is watched at its target). */
export async function resolveWatchRoot(root: string): Promise<string> {
  if (!path.isAbsolute(root)) {
    throw new BinderSyncError(`Watch root ${root} is not an absolute path`, { code: 'LOCAL_ROOT', retryable: false, context: { root } });
  }
  try {
    return await fs.promises.realpath(root);
  } catch (err) {
    throw new BinderSyncError(`Cannot watch ${root}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
      code: 'LOCAL_ROOT',
      retryable: false,
      context: { root },
      hint: 'is the disk mounted? check that the local path in the config exists and is readable',
      cause: err,
    });
  }
}

/**
 * The backends to try, in order. 'auto' is the folders backend, whatever the tree's size: it needs one inotify
 * watch per folder where chokidar needs one per file too, it is set up fastest (watcher-folders.ts), and it keeps
 * watching a folder deleted and created again at once, which chokidar 5 stops seeing when the new folder gets
 * the old one's inode number back (measured on ext4: `rm -r r; mkdir -p r/s`, then no event from r or r/s).
 * A backend that cannot start falls back to one that needs as few inotify watches or fewer: native (which needs
 * a prebuilt binary) and chokidar (out of watches) to folders, folders to native.
 */
export function backendOrder(backend: CreateWatcherOptions['backend']): WatcherBackend[] {
  if (backend === 'auto') return ['folders', 'native'];
  if (backend === 'folders') return ['folders'];
  return [backend, 'folders'];
}

/**
 * Starts a watcher and waits until it is ready, trying the next backend of backendOrder with a warning when
 * one cannot start (native module missing, watch limit hit while setting up). Throws the last backend's error
 * when none starts.
 */
export async function createWatcher(opts: CreateWatcherOptions): Promise<LocalWatcher> {
  const order = backendOrder(opts.backend);
  let lastErr: unknown;
  for (const backend of order) {
    try {
      if (backend === 'native') {
        const { startNativeWatcher } = await import('./watcher-native.js');
        return await startNativeWatcher(opts, opts.loadNative);
      }
      if (backend === 'folders') {
        const { startFolderWatcher } = await import('./watcher-folders.js');
        return await startFolderWatcher(opts);
      }
      const { startChokidarWatcher } = await import('./watcher-chokidar.js');
      return await startChokidarWatcher(opts);
    } catch (err) {
      if (err instanceof BinderSyncError && err.code === 'LOCAL_ROOT') throw err;
      lastErr = err;
      opts.log?.warn({ backend, err }, `the ${backend} watcher could not start; trying the next one`);
    }
  }
  throw lastErr instanceof BinderSyncError ? lastErr : watchErrorFrom(lastErr, order[order.length - 1] ?? 'chokidar', opts.root);
}
