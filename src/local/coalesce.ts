// Pure coalescing of raw watcher events into the smallest set of directories to rescan (Syncthing's
// "events are hints"; VS Code's coalescer). No timers and no I/O: the watcher owns the clock.
import type { IgnoreMatcher } from './ignore.js';

export type RawEventType = 'add' | 'change' | 'unlink' | 'addDir' | 'unlinkDir' | 'error' | 'overflow';

/** One event as a backend saw it; relPath is relative to the sync root, '/'-separated ('' = the root). */
export interface RawEvent {
  type: RawEventType;
  relPath: string;
}

/** What the daemon must rescan. A dir means "this directory and its whole subtree". */
export interface WatchHints {
  /** Relative dirs ('' = root) whose subtree must be rescanned; no dir is inside another; sorted. */
  dirs: string[];
  /** True when the watcher lost track (error, overflow, limit): do a full rescan. dirs is then ['']. */
  full: boolean;
}

export interface CoalesceLimits {
  /** More than this many dirty direct children of one dir fold into that dir (default 64). */
  maxChildrenPerDir: number;
  /** More than this many dirty dirs in total fold into their common ancestor (default 1000). */
  maxDirs: number;
}

export const DEFAULT_COALESCE_LIMITS: CoalesceLimits = { maxChildrenPerDir: 64, maxDirs: 1000 };

const FILE_EVENTS: ReadonlySet<RawEventType> = new Set(['add', 'change', 'unlink']);

function parentOf(relPath: string): string {
  const i = relPath.lastIndexOf('/');
  return i < 0 ? '' : relPath.slice(0, i);
}

function isInside(dir: string, ancestor: string): boolean {
  return ancestor === '' ? dir !== '' : dir.startsWith(ancestor + '/');
}

function commonAncestor(a: string, b: string): string {
  const pa = a === '' ? [] : a.split('/');
  const pb = b === '' ? [] : b.split('/');
  let n = 0;
  while (n < pa.length && n < pb.length && pa[n] === pb[n]) n++;
  return pa.slice(0, n).join('/');
}

/**
 * Accumulates events since the last take(). Memory stays bounded by the limits whatever the burst size:
 * only the folded dir set is kept, never the events.
 */
export class HintCoalescer {
  private readonly dirs = new Set<string>();
  private full = false;
  private readonly limits: CoalesceLimits;

  constructor(
    private readonly ignore?: IgnoreMatcher,
    limits: Partial<CoalesceLimits> = {},
  ) {
    this.limits = { ...DEFAULT_COALESCE_LIMITS, ...limits };
  }

  /** True when a take() would return something. */
  get pending(): boolean {
    return this.full || this.dirs.size > 0;
  }

  /**
   * Adds one event. Returns true when the event matters (it was not ignored), so the caller knows whether
   * to (re)arm its settle timer.
   */
  push(ev: RawEvent): boolean {
    if (ev.type === 'error' || ev.type === 'overflow') {
      this.full = true;
      this.dirs.clear();
      return true;
    }
    const isFile = FILE_EVENTS.has(ev.type);
    // Ignored paths are invisible to sync, so their events carry no information (the daemon's own
    // .binder-sync-tmp-* writes land here and must not wake it up in a loop).
    if (ev.relPath !== '' && this.ignore?.ignores(ev.relPath, !isFile) === true) return false;
    if (this.full) return true;
    // A file event dirties its directory; a dir event dirties the dir's subtree (it may have been created
    // with content already inside, before any watch could be placed on it).
    this.addDir(isFile ? parentOf(ev.relPath) : ev.relPath);
    return true;
  }

  /** Returns everything coalesced since the last call and starts afresh; null when nothing is pending. */
  take(): WatchHints | null {
    if (!this.pending) return null;
    const hints: WatchHints = this.full ? { dirs: [''], full: true } : { dirs: [...this.dirs].sort(), full: false };
    this.dirs.clear();
    this.full = false;
    return hints;
  }

  private covered(dir: string): boolean {
    if (this.dirs.has(dir)) return true;
    let d = dir;
    while (d !== '') {
      d = parentOf(d);
      if (this.dirs.has(d)) return true;
    }
    return false;
  }

  private addDir(dir: string): void {
    if (this.covered(dir)) return;
    // The new dir swallows any dirty dir inside it (a deleted or created folder swallows its children).
    for (const d of this.dirs) if (isInside(d, dir)) this.dirs.delete(d);
    this.dirs.add(dir);
    if (dir !== '') this.foldSiblings(parentOf(dir));
    if (this.dirs.size > this.limits.maxDirs) {
      let top: string | undefined;
      for (const d of this.dirs) top = top === undefined ? d : commonAncestor(top, d);
      this.dirs.clear();
      this.dirs.add(top ?? '');
    }
  }

  /** Too many dirty children of one dir: rescanning the dir once is cheaper than many small walks. */
  private foldSiblings(parent: string): void {
    let children = 0;
    for (const d of this.dirs) if (d !== parent && parentOf(d) === parent) children++;
    if (children <= this.limits.maxChildrenPerDir) return;
    this.addDir(parent); // removes the children and may cascade upwards
  }
}

/** Coalesces a whole list of events at once (what the accumulator would produce for them). */
export function coalesceEvents(
  events: Iterable<RawEvent>,
  ignore?: IgnoreMatcher,
  limits?: Partial<CoalesceLimits>,
): WatchHints | null {
  const c = new HintCoalescer(ignore, limits);
  for (const ev of events) c.push(ev);
  return c.take();
}
