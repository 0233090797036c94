// Accumulates one reconcile pass: ordered action groups, which local keys each group writes or frees, the
// issues, and fresh conflict-copy names. It enforces "no two groups write the same key".
import type { Action, Issue, PathKey } from './model.js';
import { baseNameOf, joinRel, parentOf, pathKey } from './path-key.js';
import { fitName } from '../local/name-limits.js';

interface Group {
  sortKey: string;
  actions: Action[];
}

/** Keys a step writes locally (or claims remotely, for uploads: the remote slot of that path). */
export function writesOf(a: Action, caseInsensitive: boolean): PathKey[] {
  switch (a.kind) {
    case 'upload':
      return a.thenMoveTo === undefined ? [a.key] : [a.key, a.thenMoveTo.key];
    case 'download':
    case 'mkdir-local':
      return [a.key];
    case 'move-local':
      return [a.toKey];
    case 'move-dir-local':
      // The directory made at `to`, and the path each synced file takes there.
      return [a.toKey, ...a.files.map((f) => f.toKey)];
    case 'conflict':
      return [a.key, pathKey(a.conflictPath, caseInsensitive)];
    case 'trash-local':
    case 'adopt':
    case 'forget':
      return [];
  }
}

/** "2026-11-22 001623" in UTC: sortable, greppable, safe in file names. */
export function conflictTag(d: Date): string {
  const iso = d.toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19).replace(/:/g, '')}`;
}

/**
 * `<dir>/<stem> (conflict <tag>)<ext>`; ext is the last '.suffix' unless the name starts with '.'. The stem is
 * shortened when the whole would pass 255 bytes.
 */
export function conflictName(relPath: string, tag: string, n: number): string {
  const name = baseNameOf(relPath);
  const dot = name.lastIndexOf('.');
  const hasExt = dot > 0; // a leading '.' (dotfile) is part of the stem, not an extension
  const stem = hasExt ? name.slice(0, dot) : name;
  const ext = hasExt ? name.slice(dot) : '';
  // Resolved: the uniqueness counter goes inside the parentheses so every copy still greps as "(conflict ".
  const suffix = n === 1 ? ` (conflict ${tag})` : ` (conflict ${tag} ${n})`;
  // A long name gives up the end of its stem, never the suffix: the copy must fit in 255 bytes.
  return joinRel(parentOf(relPath), fitName(stem, suffix, ext));
}

export class PlanBuilder {
  private readonly groups: Group[] = [];
  /** key -> index of the group that writes it. */
  private readonly claims = new Map<PathKey, number>();
  /** Base key -> index of the group after which no base row and no local file remain at that key. */
  private readonly released = new Map<PathKey, number>();
  private readonly issueList: Issue[] = [];

  /** @param taken every key that exists on either side (files, dirs, problems, remote docs and folders). */
  constructor(
    private readonly caseInsensitive: boolean,
    private readonly taken: ReadonlySet<PathKey>,
    private readonly conflictTag: string,
  ) {}

  isClaimed(key: PathKey): boolean {
    return this.claims.has(key);
  }

  releasedBy(key: PathKey): number | undefined {
    return this.released.get(key);
  }

  /**
   * Adds the steps of one item as a new group, or appended to group `after` (when they depend on that group
   * freeing a key). All-or-nothing: returns null, adding nothing, when a key is already written by another group.
   */
  commit(sortKey: string, actions: Action[], after?: number): number | null {
    if (actions.length === 0) return null;
    const keys = actions.flatMap((a) => writesOf(a, this.caseInsensitive));
    const target = after ?? this.groups.length;
    if (keys.some((k) => this.claims.has(k) && this.claims.get(k) !== target)) return null;
    if (after === undefined) this.groups.push({ sortKey, actions: [...actions] });
    else this.groups[after]?.actions.push(...actions);
    for (const k of keys) this.claims.set(k, target);
    return target;
  }

  /** Records that after group `group` runs, `key` holds neither a base row nor a local file. */
  release(key: PathKey, group: number): void {
    this.released.set(key, group);
  }

  issue(issue: Issue): void {
    this.issueList.push(issue);
  }

  /** A conflict-copy path free on both sides and among this pass's writes (" 2", " 3"... when needed). */
  conflictPathFor(relPath: string): string {
    for (let n = 1; ; n++) {
      const candidate = conflictName(relPath, this.conflictTag, n);
      const key = pathKey(candidate, this.caseInsensitive);
      if (!this.taken.has(key) && !this.claims.has(key)) return candidate;
    }
  }

  /** Groups sorted by item key; issues sorted by path (then code, then document) for a deterministic plan. */
  build(): { groups: Action[][]; issues: Issue[] } {
    const groups = [...this.groups].sort((a, b) => cmp(a.sortKey, b.sortKey)).map((g) => g.actions);
    const issues = [...this.issueList].sort(cmpIssues);
    return { groups, issues };
  }
}

/** The order of a plan's issues: by path, then code, then document. */
export function cmpIssues(a: Issue, b: Issue): number {
  return cmp(a.relPath, b.relPath) || cmp(a.code, b.code) || cmp(a.documentId ?? '', b.documentId ?? '');
}

/** Code-unit order: locale-independent, so plans are identical on every machine. */
export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
