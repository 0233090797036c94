// The chokidar 5 backend: fs.watch on every directory and file (one inotify watch each on Linux), events
// mapped to raw coalescer events. The default for small and medium trees.
import { watch, type FSWatcher } from 'chokidar';
import type { Stats } from 'node:fs';
import type { RawEvent } from './coalesce.js';
import { createHintPump, resolveWatchRoot, toRelPath, watchErrorFrom, watcherHandle, type LocalWatcher, type WatchOptions } from './watcher.js';

const EVENT_TYPES = new Set<RawEvent['type']>(['add', 'change', 'unlink', 'addDir', 'unlinkDir']);

/**
 * Starts watching and resolves once chokidar's initial crawl is done. Hitting the inotify watch limit
 * during that crawl closes the watcher and rejects with WATCH_LIMIT, so the caller can try the native
 * backend or fall back to periodic rescans; any other error goes to onError (with a full-rescan hint).
 */
export async function startChokidarWatcher(opts: WatchOptions): Promise<LocalWatcher> {
  const root = await resolveWatchRoot(opts.root);
  const pump = createHintPump(opts, 'chokidar', root);
  let ready = false;
  let startError: unknown;

  const watcher: FSWatcher = watch(root, {
    // chokidar 5 has no globs: `ignored` is a function, called once with the path alone and again with its
    // stats. Without stats we only know the name, so only rules that apply to files and dirs alike can match.
    ignored: (p: string, stats?: Stats) => {
      const rel = toRelPath(root, p);
      if (rel === null) return true;
      if (rel === '') return false;
      return opts.ignore.ignores(rel, stats?.isDirectory() ?? false);
    },
    ignoreInitial: true, // the daemon scans at start; we only want changes
    followSymlinks: false, // the scanner never follows symlinks either
    // No write-finish detection: events are only hints. The settle window delays the rescan past most
    // writes, the scanner checks that a file's stat did not move while it was hashed (else "changing",
    // retried next pass), and the executor refuses to upload a file that changes during the upload. Polling
    // sizes for 2 s per file (awaitWriteFinish) would only add latency and a stat storm on bursts.
    awaitWriteFinish: false,
    // 'atomic' would turn unlink+add within 100 ms into 'change' and silently drop editor temp names;
    // the coalescer folds both into the same dir anyway, and the ignore rules handle temp names.
    atomic: false,
    persistent: true,
    // An unreadable folder is the scanner's to report (as a problem); it must not stop the watcher.
    ignorePermissionErrors: true,
  });

  watcher.on('all', (event, p) => {
    if (!EVENT_TYPES.has(event as RawEvent['type'])) return;
    const rel = toRelPath(root, p);
    if (rel === null) return;
    pump.push({ type: event as RawEvent['type'], relPath: rel });
  });
  watcher.on('error', (err) => {
    if (!ready) {
      startError ??= err;
      return;
    }
    pump.error(err);
  });

  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  if (startError !== undefined) {
    const mapped = watchErrorFrom(startError, 'chokidar', root);
    // Out of watches while setting up: this tree is too big for chokidar; let the caller choose.
    if (mapped.code === 'WATCH_LIMIT') {
      pump.close();
      await watcher.close();
      throw mapped;
    }
    pump.error(startError);
  }
  ready = true;
  return watcherHandle('chokidar', pump, () => watcher.close());
}
