// How many inotify watches a pair's watcher needs (one per folder; chokidar one per file too), and the per-user
// limit (`binder-sync check` compares them). Past the limit, a daemon finds local changes by rescans only.
import fs from 'node:fs';
import path from 'node:path';
import type { PairConfig } from '../config/schema.js';
import { createIgnoreMatcher } from './ignore.js';

const LIMIT_FILE = '/proc/sys/fs/inotify/max_user_watches';

/** The per-user inotify watch limit; null where there is none to read (not Linux). */
export function inotifyWatchLimit(file = LIMIT_FILE): number | null {
  try {
    const n = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10);
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

/**
 * Watches a pair's watcher needs: its folders that are not ignored (the root included), plus its files for
 * chokidar; 0 for `watcher: off` or a root that does not exist yet.
 */
export function watchesNeeded(pair: Pick<PairConfig, 'localPath' | 'ignore' | 'watcher'>): number {
  if (pair.watcher === 'off' || !fs.existsSync(pair.localPath)) return 0;
  const ignore = createIgnoreMatcher(pair.ignore);
  const perFile = pair.watcher === 'chokidar';
  let n = 0;
  const stack = [''];
  while (stack.length > 0) {
    const rel = stack.pop()!;
    n++;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(rel === '' ? pair.localPath : path.join(pair.localPath, rel), { withFileTypes: true });
    } catch {
      continue; // unreadable: the local root check reports it
    }
    for (const e of entries) {
      const child = rel === '' ? e.name : `${rel}/${e.name}`;
      if (ignore.ignoresEntry(child, e.isDirectory())) continue;
      if (e.isDirectory()) stack.push(child);
      else if (perFile) n++;
    }
  }
  return n;
}
