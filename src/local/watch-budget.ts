// `binder-sync check`'s inotify line: how many watches the configured watchers need (one per folder; chokidar
// one per file too), against the per-user limit. Past it, a daemon finds local changes by rescans only.
import fs from 'node:fs';
import path from 'node:path';
import type { PairConfig } from '../config/schema.js';
import { createIgnoreMatcher } from '../local/ignore.js';

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

/** The verdict for `needed` watches against `limit`: a warning from 80% of it (other programs use watches too). */
export function watchBudget(needed: number, limit: number | null): { outcome: 'PASS' | 'WARN' | 'SKIP'; message: string; hint?: string } {
  if (limit === null) return { outcome: 'SKIP', message: `${needed} needed; no inotify limit to compare with on this system` };
  const hint = `raise it, e.g. \`echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/90-binder-sync.conf && sudo sysctl --system\` (docs/OPERATIONS.md, section 8)`;
  const text = `${needed} needed, the limit is ${limit} per user`;
  if (needed > limit) return { outcome: 'WARN', message: `${text}: local changes would be found by rescans only`, hint };
  if (needed > limit * 0.8) return { outcome: 'WARN', message: `${text}: close to it (editors and other programs of this user use watches too)`, hint };
  return { outcome: 'PASS', message: text };
}
