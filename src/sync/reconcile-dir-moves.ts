// Folds the moves that follow a remote folder renamed or moved on the service into ONE rename of its local
// directory (a move-dir-local step), where that is safe; everywhere else the plan stays exactly as reconcile made
// it, a move-local per file. One move per file split a program writing in the folder between two directories,
// and made 5,000 steps and log lines of a folder of 5,000 files (black-box round 32a, F3).
// Pure, as the rest of reconcile: it looks at the three observations and at the plan already built, and rewrites
// only the groups of the directories it folds. Every condition below is one under which the per-file plan is
// known to be the directory's rename in disguise; anything it cannot vouch for keeps the per-file plan.
import type { Action, BaseEntry, DirMoveFile, Issue, LocalFile, PathKey } from './model.js';
import { statOf } from './model.js';
import { parentOf, pathKey } from './path-key.js';
import { cmpIssues } from './reconcile-builder.js';
import { planLocalFile, type PassState } from './reconcile-unbased.js';
import type { ReconcileView } from './reconcile-view.js';

interface Built {
  groups: Action[][];
  issues: Issue[];
}

/** A directory reconcile's plan moves file by file, and how it folds into one move. */
interface Fold {
  /** The group index the folded group takes (the first of those it replaces: the plan's order stays sorted). */
  at: number;
  group: Action[];
  /** Groups the folded one replaces. */
  absorbed: number[];
  /** Issues of the new files that moved along, said again at their new paths. */
  dropIssues: Set<Issue>;
  addIssues: Issue[];
}

/**
 * The plan with every directory that can move whole folded into one move-dir-local (the outermost such directory:
 * its sub-directories move with it). An upload-only pair never changes local files (no move is planned at all).
 */
export function foldDirMoves(s: PassState, built: Built): Built {
  if (s.ctx.direction === 'upload') return built;
  const candidates = candidateDirs(s.view);
  if (candidates.length === 0) return built;
  const index = new PathIndex(built.groups, s.ctx.caseInsensitive);
  const issueKeys = built.issues.map((i) => pathKey(i.relPath, s.ctx.caseInsensitive));
  const folds: Fold[] = [];
  const absorbed = new Set<number>();
  const folded: PathKey[] = [];
  for (const dir of candidates) {
    if (folded.some((d) => isUnder(dir.key, d))) continue; // moves with the directory above it
    const fold = foldDir(s, dir, built, index, issueKeys, absorbed);
    if (fold === null) continue;
    folds.push(fold);
    folded.push(dir.key);
    for (const g of fold.absorbed) absorbed.add(g);
  }
  if (folds.length === 0) return built;
  const replaced = new Map(folds.map((f) => [f.at, f.group]));
  const groups = built.groups.flatMap((g, i) => (replaced.has(i) ? [replaced.get(i)!] : absorbed.has(i) ? [] : [g]));
  const drop = new Set(folds.flatMap((f) => [...f.dropIssues]));
  const issues = [...built.issues.filter((i) => !drop.has(i)), ...folds.flatMap((f) => f.addIssues)].sort(cmpIssues);
  return { groups, issues };
}

/**
 * Local directories whose remote folder is no longer at their path while synced files lie under them: the only
 * ones a remote folder rename or move can have left behind. Shallowest first, so the outermost folds.
 */
function candidateDirs(view: ReconcileView): Array<{ key: PathKey; relPath: string }> {
  const out: Array<{ key: PathKey; relPath: string }> = [];
  for (const [key, relPath] of view.local.dirs) {
    if (key !== '' && !view.folderByKey.has(key) && view.hadSyncedFilesUnder(key)) out.push({ key, relPath });
  }
  const depth = (k: string) => k.split('/').length;
  return out.sort((a, b) => depth(a.key) - depth(b.key) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** The fold of directory `dir`, or null when any condition for moving it whole does not hold. */
function foldDir(
  s: PassState, dir: { key: PathKey; relPath: string }, built: Built, index: PathIndex, issueKeys: readonly PathKey[], taken: ReadonlySet<number>,
): Fold | null {
  const { view } = s;
  // The executor moves the directory only while it is the one the scan saw (same inode): unknown, no fold.
  const inode = view.local.dirInodes?.get(dir.key) ?? 0;
  if (inode === 0) return null;
  // A path the scan could not look at (a file being written, a symbolic link, an unreadable folder) is unknown:
  // it would move along unseen. Per-file moves leave it where it is, as they always did.
  if (view.isUnknown(dir.key) || problemUnder(view, dir.key)) return null;
  const rows = rangeUnder(view.bases, dir.key);
  const to = destinationOf(view, dir, rows);
  if (to === null || !destinationFree(view, dir.key, to)) return null;
  const folder = view.folderByKey.get(to.key)!;
  // New files under the directory move with it: each must land on a path where nothing remote is either (else the
  // per-file plan, which leaves it where it is, says why).
  const newFiles = rangeUnder(view.localFiles, dir.key).filter((f) => !view.baseByKey.has(f.key));
  for (const f of newFiles) {
    const k = translate(f.key, dir.key, to.key);
    if (!f.relPath.startsWith(`${dir.relPath}/`) || s.consumedLocal.has(f.key) || view.docsByKey.has(k) || view.folderByKey.has(k)) return null;
  }
  const steps = absorbGroups(s, dir, to, rows, newFiles, built.groups, index, taken);
  if (steps === null) return null;
  // Every issue under the directory must be a new file's (said again at its new path below): any other says
  // something about a path there that the per-file plan handles its own way.
  const newPaths = new Set(newFiles.map((f) => f.relPath));
  const dropIssues = new Set<Issue>();
  for (const [i, issue] of built.issues.entries()) {
    if (!isAtOrUnder(issueKeys[i]!, dir.key)) continue;
    if (issue.documentId !== undefined || !newPaths.has(issue.relPath)) return null;
    dropIssues.add(issue);
  }
  // Planned again where they will be: an upload into the folder (which is there), or why not.
  const addIssues: Issue[] = [];
  const newSteps: Action[] = [];
  for (const f of newFiles) {
    const moved: LocalFile = { ...f, relPath: translate(f.relPath, dir.relPath, to.relPath), key: translate(f.key, dir.key, to.key) };
    const { actions, issue } = planLocalFile(s, moved, 'new-local', null);
    newSteps.push(...actions);
    if (issue !== null) addIssues.push(issue);
  }
  const files: DirMoveFile[] = rows.map((b) => {
    const doc = view.remote.docs.get(b.documentId)!;
    const file = view.local.files.get(b.key)!;
    return { documentId: b.documentId, from: b.relPath, to: doc.relPath, toKey: doc.key, folderId: doc.folderId, fileName: doc.fileName, expectLocal: statOf(file), sha256: file.sha256 };
  });
  const move: Action = { kind: 'move-dir-local', from: dir.relPath, fromKey: dir.key, to: to.relPath, toKey: to.key, inode, folderId: folder.folderId, files };
  return { at: Math.min(...steps.absorbed), group: [move, ...steps.after, ...newSteps], absorbed: steps.absorbed, dropIssues, addIssues };
}

/**
 * Where the directory went: the path every synced file under it now has on the service, less its path under the
 * directory, when that is one path for all of them and a remote folder is there. Each file must be the document's
 * own (its row, its local path), still there locally (one deleted locally is planned file by file: restored, or
 * forgotten), in the same remote folder under the same name (the folder moved, not the document).
 */
function destinationOf(view: ReconcileView, dir: { key: PathKey; relPath: string }, rows: readonly BaseEntry[]): { key: PathKey; relPath: string } | null {
  if (rows.length === 0) return null;
  let to: { key: PathKey; relPath: string } | null = null;
  for (const b of rows) {
    const doc = view.remote.docs.get(b.documentId);
    const file = view.local.files.get(b.key);
    if (view.baseByKey.get(b.key) !== b || doc === undefined || file === undefined || file.relPath !== b.relPath) return null;
    if (doc.folderId !== b.folderId || doc.fileName !== b.fileName || !b.relPath.startsWith(`${dir.relPath}/`)) return null;
    const relTail = b.relPath.slice(dir.relPath.length);
    const keyTail = b.key.slice(dir.key.length);
    if (!doc.relPath.endsWith(relTail) || !doc.key.endsWith(keyTail)) return null;
    const here = { key: doc.key.slice(0, -keyTail.length), relPath: doc.relPath.slice(0, -relTail.length) };
    if (here.key === '' || (to !== null && (to.key !== here.key || to.relPath !== here.relPath))) return null;
    to = here;
  }
  const folder = to === null ? undefined : view.folderByKey.get(to.key);
  return folder !== undefined && folder.relPath === to!.relPath ? to : null;
}

/**
 * Nothing is at the destination on this side (no file, directory, unknown path or synced row: keys compare as the
 * disk does), it is neither inside the directory nor above it, and its parent directory is there. The executor
 * checks again (it makes the destination itself, refusing one that appeared), but a plan that knows it cannot
 * move the directory keeps its per-file moves.
 */
function destinationFree(view: ReconcileView, fromKey: PathKey, to: { key: PathKey }): boolean {
  if (to.key === fromKey || isUnder(to.key, fromKey) || isUnder(fromKey, to.key)) return false;
  const local = view.local;
  if (local.dirs.has(to.key) || local.files.has(to.key) || view.isUnknown(to.key) || problemUnder(view, to.key)) return false;
  if (rangeUnder(view.localFiles, to.key).length > 0 || view.baseByKey.has(to.key) || rangeUnder(view.bases, to.key).length > 0) return false;
  const parent = parentOf(to.key);
  return parent === '' || local.dirs.has(parent);
}

/**
 * The groups of the per-file plan that touch the directory or its destination, each of which must be one the fold
 * accounts for: a synced file's move (with at most one step after it, at the new path: a newer version, a
 * conflict, an edit's upload), a new file's upload (planned again at its new path), a remote folder or a new
 * document under the destination (after the move: its mkdir or download would make the destination first). The
 * mkdir of a folder the directory brings along goes. Null when any other step touches either place.
 */
function absorbGroups(
  s: PassState, dir: { key: PathKey; relPath: string }, to: { key: PathKey }, rows: readonly BaseEntry[], newFiles: readonly LocalFile[],
  groups: readonly Action[][], index: PathIndex, taken: ReadonlySet<number>,
): { absorbed: number[]; after: Action[] } | null {
  const byDoc = new Map(rows.map((b) => [b.documentId, b]));
  const newKeys = new Set(newFiles.map((f) => f.key));
  const moved = new Set<string>();
  const absorbed: number[] = [];
  const after: Action[] = [];
  const atNewPath = (a: Action) => pathKeysOf(a, s.ctx.caseInsensitive).every((k) => isAtOrUnder(k, to.key));
  for (const gi of [...new Set([...index.groupsUnder(dir.key), ...index.groupsUnder(to.key)])].sort((a, b) => a - b)) {
    const g = groups[gi]!;
    const first = g[0]!;
    if (taken.has(gi)) return null;
    if (first.kind === 'move-local') {
      const b = byDoc.get(first.doc.documentId);
      if (b === undefined || first.from !== b.relPath || first.toKey !== first.doc.key || g.length > 2 || moved.has(b.documentId)) return null;
      if (g.length === 2 && !atNewPath(g[1]!)) return null;
      moved.add(b.documentId);
      if (g.length === 2) after.push(g[1]!);
    } else if (g.length !== 1) {
      return null;
    } else if (first.kind === 'upload' && first.target.documentId === null && first.reason === 'new-local' && newKeys.has(first.key)) {
      // planned again at its new path by the caller
    } else if (first.kind === 'mkdir-local' && isAtOrUnder(first.key, to.key)) {
      const back = dir.key + first.key.slice(to.key.length);
      if (first.key !== to.key && !s.view.local.dirs.has(back)) after.push(first); // a folder new on the service: made after the move
    } else if (first.kind === 'download' && first.reason === 'new-remote' && first.expectLocal === null && isUnder(first.key, to.key)) {
      after.push(first);
    } else {
      return null;
    }
    absorbed.push(gi);
  }
  return moved.size === rows.length && absorbed.length > 0 ? { absorbed, after } : null;
}

/** Every local path an action names (as keys): what it reads, writes, moves or records. */
function pathKeysOf(a: Action, ci: boolean): PathKey[] {
  switch (a.kind) {
    case 'download':
    case 'trash-local':
    case 'mkdir-local':
      return [a.key];
    case 'upload':
      return a.thenMoveTo === undefined ? [a.key] : [a.key, a.thenMoveTo.key];
    case 'move-local':
      return [pathKey(a.from, ci), a.toKey];
    case 'move-dir-local':
      return [a.fromKey, a.toKey];
    case 'conflict':
      return [a.key, pathKey(a.conflictPath, ci)];
    case 'adopt':
      return [a.base, ...(a.alongside ?? [])].map((row) => row.key);
    case 'forget':
      return [pathKey(a.relPath, ci)];
  }
}

/** Every path key an action names, sorted, with its group: which groups touch a directory, by a range lookup. */
class PathIndex {
  private readonly entries: Array<[PathKey, number]> = [];

  constructor(groups: readonly Action[][], ci: boolean) {
    groups.forEach((g, gi) => {
      for (const a of g) for (const k of pathKeysOf(a, ci)) this.entries.push([k, gi]);
    });
    this.entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
  }

  /** Groups naming `dirKey` itself or a path under it. */
  groupsUnder(dirKey: PathKey): number[] {
    const out: number[] = [];
    for (let i = lowerBound(this.entries, dirKey, (e) => e[0]); i < this.entries.length && this.entries[i]![0].startsWith(dirKey); i++) {
      if (isAtOrUnder(this.entries[i]![0], dirKey)) out.push(this.entries[i]![1]);
    }
    return out;
  }
}

/** The items of a list sorted by key whose key is under `dirKey` (not the key itself). */
function rangeUnder<T extends { key: PathKey }>(sorted: readonly T[], dirKey: PathKey): T[] {
  const prefix = `${dirKey}/`;
  const out: T[] = [];
  for (let i = lowerBound(sorted, prefix, (x) => x.key); i < sorted.length && sorted[i]!.key.startsWith(prefix); i++) out.push(sorted[i]!);
  return out;
}

/** The first index whose key is not below `key` (code-unit order, as the view sorts). */
function lowerBound<T>(sorted: readonly T[], key: string, keyOf: (x: T) => string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keyOf(sorted[mid]!) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The scan met a problem at a path under `dirKey`. */
function problemUnder(view: ReconcileView, dirKey: PathKey): boolean {
  return view.local.problems.some((p) => isUnder(p.key, dirKey));
}

function isUnder(key: PathKey, dirKey: PathKey): boolean {
  return key.length > dirKey.length && key.startsWith(dirKey) && key.charCodeAt(dirKey.length) === 47 /* '/' */;
}

function isAtOrUnder(key: PathKey, dirKey: PathKey): boolean {
  return key === dirKey || isUnder(key, dirKey);
}

/** `p` (at or under `from`) as the same path under `to`. */
function translate(p: string, from: string, to: string): string {
  return to + p.slice(from.length);
}
