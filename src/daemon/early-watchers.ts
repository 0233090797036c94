// Watchers started before the daemon's heavier modules load (the sync engine, the HTTP client, the state DB:
// ~0.3 s). A daemon restart over a large tree reaches its digest walk, which must wait for the watcher (see
// PassOptions.localReady), that much sooner: the native watcher sets itself up on its own thread meanwhile
// (it stats every file: ~0.35 s at 100k files), chokidar and the folders backend (~50 ms there) before it.
// Each pair's worker adopts its watcher on its first pass; what the watcher reports before then is held for it.
import type { Config, PairConfig } from '../config/schema.js';
import type { BinderSyncError } from '../errors.js';
import { createIgnoreMatcher } from '../local/ignore.js';
import { createWatcher, rootIdentity, type LocalWatcher, type WatchHints } from '../local/watcher.js';
import type { Logger } from '../log.js';
import type { DaemonTiming } from './timing.js';

/** What the worker hands its watcher: the callbacks it would have given createWatcher. */
export interface WatchHandlers {
  onHints: (h: WatchHints) => void;
  onError: (err: BinderSyncError) => void;
}

/** A watcher started for a pair before its worker existed. */
export interface EarlyWatcher {
  /** The pair config it was started for: a worker with another config does not adopt it. */
  readonly pair: PairConfig;
  /** The root's identity when the watcher was started on it (rootIdentity). */
  readonly rootId: string | null;
  /**
   * Hands the watcher to its worker: held hints and errors are delivered to `handlers` now, later ones as
   * they come. Resolves with the watcher once it watches (rejects as createWatcher would).
   */
  adopt(handlers: WatchHandlers): Promise<LocalWatcher>;
  /** Resolves once it watches (or failed to start), without adopting it. */
  ready(): Promise<void>;
  /** For a watcher nobody adopts (the daemon did not start, the pair was stopped first). */
  close(): Promise<void>;
}

/**
 * Starts the watcher of every pair whose root exists, with the settings its worker would use, and returns them
 * by pair name. Nothing is written (the daemon has not taken the stateDir lock yet). Never throws: a pair whose
 * watcher cannot start early is simply started by its worker.
 */
export function startEarlyWatchers(config: Config, timing: Pick<DaemonTiming, 'watchSettleMs'>, log: Logger): Map<string, EarlyWatcher> {
  const out = new Map<string, EarlyWatcher>();
  for (const pair of config.pairs) {
    const rootId = pair.watcher === 'off' ? null : rootIdentity(pair.localPath);
    if (rootId === null) continue;
    out.set(pair.name, startEarly(pair, rootId, timing, log.child({ pair: pair.name })));
  }
  return out;
}

function startEarly(pair: PairConfig, rootId: string, timing: Pick<DaemonTiming, 'watchSettleMs'>, log: Logger): EarlyWatcher {
  let handlers: WatchHandlers | null = null;
  // Held until adoption: the union of the hinted dirs (the coalescer already bounds each hint), and the errors.
  const heldDirs = new Set<string>();
  let heldFull = false;
  const heldErrors: BinderSyncError[] = [];
  const watcher = createWatcher({
    root: pair.localPath,
    ignore: createIgnoreMatcher(pair.ignore),
    backend: pair.watcher === 'off' ? 'auto' : pair.watcher,
    log,
    ...(timing.watchSettleMs !== undefined ? { settleMs: timing.watchSettleMs } : {}),
    onHints: (h) => {
      if (handlers !== null) return handlers.onHints(h);
      if (h.full) heldFull = true;
      for (const d of h.dirs) heldDirs.add(d);
    },
    onError: (err) => {
      if (handlers !== null) handlers.onError(err);
      else heldErrors.push(err);
    },
  });
  watcher.catch(() => undefined); // adopt() or close() takes the outcome
  return {
    pair,
    rootId,
    adopt(h) {
      handlers = h;
      for (const err of heldErrors.splice(0)) h.onError(err);
      if (heldFull) h.onHints({ dirs: [''], full: true });
      else if (heldDirs.size > 0) h.onHints({ dirs: outermost(heldDirs), full: false });
      heldDirs.clear();
      return watcher;
    },
    ready: () => watcher.then(() => undefined, () => undefined),
    async close() {
      handlers = { onHints: () => undefined, onError: () => undefined };
      await (await watcher.catch(() => null))?.close();
    },
  };
}

/** The dirs none of which is inside another, sorted (what WatchHints.dirs promises). */
export function outermost(dirs: Iterable<string>): string[] {
  const sorted = [...new Set(dirs)].sort();
  if (sorted.includes('')) return [''];
  const out: string[] = [];
  for (const d of sorted) {
    const last = out[out.length - 1];
    if (last === undefined || !d.startsWith(`${last}/`)) out.push(d);
  }
  return out;
}
