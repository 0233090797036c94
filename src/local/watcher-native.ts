// The @parcel/watcher backend: one inotify watch per folder (not per file), events batched in native code.
// Loaded dynamically so a platform without its prebuilt binary can fall back to chokidar.
// Caveat: its inotify backend drops IN_Q_OVERFLOW silently (as libuv's fs.watch does for chokidar), so a
// kernel queue overflow loses events unseen: the daemon's periodic full rescan is the safety net.
import fs from 'node:fs';
import type { RawEvent } from './coalesce.js';
import {
  createHintPump,
  resolveWatchRoot,
  toRelPath,
  watchErrorFrom,
  watcherHandle,
  type LocalWatcher,
  type NativeModule,
  type WatchOptions,
} from './watcher.js';

async function defaultLoad(): Promise<NativeModule> {
  const mod = (await import('@parcel/watcher')) as NativeModule & { default?: NativeModule };
  // A CommonJS module: its exports arrive as `default` (and, via Node's static analysis, as names).
  return mod.default ?? mod;
}

/** Parcel reports no file/dir kind; a created path is stat'ed so a new folder hints its own subtree. */
function rawEventOf(type: 'create' | 'update' | 'delete', abs: string, relPath: string): RawEvent {
  if (type === 'create') {
    let isDir = false;
    try {
      isDir = fs.lstatSync(abs, { throwIfNoEntry: false })?.isDirectory() ?? false;
    } catch {
      // Gone or unreadable already: the parent's rescan will tell.
    }
    return { type: isDir ? 'addDir' : 'add', relPath };
  }
  // A deleted path may have been a file or a folder: as a file event it dirties its parent, whose subtree
  // covers it either way.
  return { type: type === 'update' ? 'change' : 'unlink', relPath };
}

/**
 * Subscribes with @parcel/watcher and resolves once the watches are in place. Throws the loader's error
 * when the module cannot load, and WATCH_LIMIT/WATCH_FAILED when the subscription cannot be set up.
 * Ignore rules are applied in JS: ignored folders still get a watch (the native ignore option takes
 * globs/regexes of another dialect, and matching twice in two dialects invites disagreement).
 */
export async function startNativeWatcher(
  opts: WatchOptions,
  load: () => Promise<NativeModule> = defaultLoad,
): Promise<LocalWatcher> {
  const root = await resolveWatchRoot(opts.root);
  const native = await load();
  const pump = createHintPump(opts, 'native', root);
  let sub: { unsubscribe(): Promise<void> };
  try {
    sub = await native.subscribe(root, (err, events) => {
      if (err) pump.error(err);
      for (const ev of events ?? []) {
        const rel = toRelPath(root, ev.path);
        if (rel === null) continue;
        pump.push(rawEventOf(ev.type, ev.path, rel));
      }
    });
  } catch (err) {
    pump.close();
    throw watchErrorFrom(err, 'native', root);
  }
  return watcherHandle('native', pump, () => sub.unsubscribe());
}
