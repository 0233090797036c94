// Three-way reconcile (pure): compares the base (last agreed state) with both observations and plans the
// steps that bring the sides together without losing data. No I/O, no clock, no randomness, inputs untouched.
// Invariants: modified beats deleted; unknown is never deleted; no base + both present is never "remote wins".
import type {
  Action,
  ActionKind,
  BaseEntry,
  Issue,
  LocalFile,
  LocalObservation,
  PathKey,
  Plan,
  ReconcileContext,
  RemoteDoc,
  RemoteObservation,
} from './model.js';
import { IN_DOUBT_PREFIX, movedSameFile, notUploadingBecause, putBackWithOldTime, sameFile, statOf } from './model.js';
import { parentOf } from './path-key.js';
import { PlanBuilder } from './reconcile-builder.js';
import { foldDirMoves } from './reconcile-dir-moves.js';
import { checkGates } from './reconcile-gates.js';
import {
  conflict, download, forget, moveLocal, movedTo, trashLocal, upload, versionOf,
} from './reconcile-steps.js';
import {
  collision, localEntryInTheWay, occupancy, planFolders, planLocalFile, planLocalNew, planRemoteNew, unbasedPair, unobservedDetail, waitingForFolder, type PassState,
} from './reconcile-unbased.js';
import { ReconcileView, type LocalState, type RemoteState } from './reconcile-view.js';

export type { LocalState, RemoteState } from './reconcile-view.js';

const PROBLEM_CODES: Record<LocalObservation['problems'][number]['reason'], Issue['code']> = {
  unreadable: 'unreadable',
  symlink: 'symlink',
  'special-file': 'special-file',
  'name-not-representable': 'name-not-representable',
  changing: 'changing',
};

/**
 * The issues of the remote items that could not be placed locally. What lies inside a folder that an ignore rule
 * leaves out is not listed item by item (a remote `node_modules/` would be thousands of lines): the folder's own
 * line stands for it, with a count.
 */
function unmappableIssues(unmappable: RemoteObservation['unmappable'], base: ReadonlyMap<string, BaseEntry>): Issue[] {
  const ignoredDirs = new Set<string>();
  for (const u of unmappable) if (u.ignored === true && u.folderId !== undefined && u.path !== undefined) ignoredDirs.add(u.path);
  const inside = new Map<string, number>();
  const outermostIgnoredAbove = (p: string): string | undefined => {
    let top: string | undefined;
    for (let d = parentOf(p); d !== ''; d = parentOf(d)) if (ignoredDirs.has(d)) top = d;
    return top;
  };
  const kept: Array<RemoteObservation['unmappable'][number]> = [];
  for (const u of unmappable) {
    const top = u.ignored === true && u.path !== undefined ? outermostIgnoredAbove(u.path) : undefined;
    if (top === undefined) kept.push(u);
    else inside.set(top, (inside.get(top) ?? 0) + 1);
  }
  return kept.map((u) => {
    // An item with no place in the tree has no path of its own: a synced document is named by its local path.
    const relPath = u.path ?? (u.documentId !== undefined ? base.get(u.documentId)?.relPath : undefined) ?? u.name;
    const n = u.folderId !== undefined ? inside.get(relPath) : undefined;
    const inconsistent = u.ignored !== true && u.inconsistent === true;
    const detail = n === undefined ? u.reason : `${u.reason} (with the ${n} item${n === 1 ? '' : 's'} inside)`;
    const issue: Issue = {
      relPath,
      code: u.ignored === true ? 'ignored' : inconsistent ? 'remote-tree-inconsistent' : 'name-not-representable',
      detail: inconsistent ? `${detail}: the binder changed while it was listed, or the service lists it so; nothing is done with it until a listing places it` : detail,
    };
    return u.documentId === undefined ? issue : { ...issue, documentId: u.documentId };
  });
}

export function reconcile(
  base: ReadonlyMap<string, BaseEntry> /* by documentId */,
  local: LocalObservation,
  remote: RemoteObservation,
  ctx: ReconcileContext,
): Plan {
  const view = new ReconcileView(base, local, remote, ctx.ignoredLocally, ctx.followedFolders, ctx.direction !== 'upload', ctx.restoredVersions, ctx.waitingMoves);
  const s: PassState = {
    view,
    ctx,
    out: new PlanBuilder(ctx.caseInsensitive, view.takenKeys(), ctx.conflictTag),
    consumedLocal: new Set(),
    consumedDocs: new Set(),
    decided: new Set(),
    vacated: new Set(),
    orphans: new Map(),
    forgetting: new Set(),
  };
  for (const p of local.problems) s.out.issue({ relPath: p.relPath, code: PROBLEM_CODES[p.reason], detail: p.detail });
  for (const issue of unmappableIssues(remote.unmappable, base)) s.out.issue(issue);
  planBaseEntries(s);
  for (const [key, o] of s.orphans)
    if (!s.consumedLocal.has(key)) collision(s, o.file.relPath, o.detail, o.documentId);
  for (const doc of view.docs) if (!base.has(doc.documentId)) planRemoteNew(s, doc);
  for (const file of view.localFiles) planLocalNew(s, file);
  planFolders(s);

  const { groups, issues } = foldDirMoves(s, s.out.build());
  const blocked = checkGates(base, local, remote, groups, ctx);
  if (blocked === null) return { groups, issues, blocked };
  const held: Partial<Record<ActionKind, number>> = {};
  for (const a of groups.flat()) held[a.kind] = (held[a.kind] ?? 0) + 1;
  // A row "no longer synced" is a forget this held pass does not make: said, it contradicted the gate's "nothing
  // was changed" (black-box round 41b, an upload-only root emptied).
  return { groups: [], issues: issues.filter((i) => i.code !== 'local-delete-not-propagated'), blocked: { ...blocked, held } };
}

/**
 * Every base entry in key order. An entry whose remote move targets a path still held by another entry
 * waits until that entry is decided; chains resolve in a few rounds. A cycle (files that swapped names
 * remotely) is broken at its first entry: see breakCycle.
 */
function planBaseEntries(s: PassState): void {
  let waiting: BaseEntry[] = [];
  for (const b of s.view.bases) {
    // A second row on a key whose document is elsewhere now (or gone) is planned as a file deleted there: a crash
    // left it behind while the group that moved the other row there was to move or forget it next (soak seed
    // -713498096: reported as a collision on every pass after, its document never synced again).
    if (s.view.baseByKey.get(b.key) !== b && !leftItsKey(s, b)) {
      collision(s, b.relPath, 'two synced documents map to this path', b.documentId);
      s.decided.add(b.documentId);
    } else if (!planBase(s, b)) waiting.push(b);
  }
  while (waiting.length > 0) {
    const still = waiting.filter((b) => !planBase(s, b));
    if (still.length === waiting.length) {
      // Prefer an entry whose path can be freed now (unchanged or deleted locally) over a modified one.
      if (followSwapAlike(s, still)) {
        waiting = still.filter((b) => !s.decided.has(b.documentId));
        continue;
      }
      const open = still.filter((b) => !s.vacated.has(b.documentId));
      const next = open.find((b) => cycleFileOf(s, b).l !== 'modified') ?? open[0];
      if (!next) {
        for (const b of still) {
          s.decided.add(b.documentId);
          collision(s, b.relPath, 'cannot follow the remote rename: its new path stays occupied', b.documentId);
        }
        return;
      }
      breakCycle(s, next);
    }
    waiting = still.filter((b) => !s.decided.has(b.documentId));
  }
}

/** b's document is no longer listed at b's key: moved or renamed, or deleted on the service. */
function leftItsKey(s: PassState, b: BaseEntry): boolean {
  const r = s.view.remoteState(b);
  return r === 'moved' || r === 'moved-modified' || r === 'deleted';
}

/**
 * Names swapped alike on both sides (`mv x t; mv y x; mv t y` locally, the same renames on the service): a rename
 * cycle in which every document's new path holds that document's own file (renamedAlikeLocally). Nothing needs to
 * move: the base rows follow the files, all in one step (one transaction: row by row, two rows would share a key
 * in between), then each file's own changes are planned at its new path, as for one rename made alike. Broken
 * like any other cycle instead, each document got the other file's content as a new version (black-box round 6).
 * Returns false, planning nothing, when no waiting cycle is alike throughout.
 */
function followSwapAlike(s: PassState, still: readonly BaseEntry[]): boolean {
  const waiting = new Set(still.map((b) => b.documentId));
  for (const start of still) {
    const cycle = renameCycleFrom(s, start, waiting);
    if (cycle === null) continue;
    const docs = cycle.map((b) => must(s.view.remote.docs.get(b.documentId)));
    const files = docs.map((d) => s.view.local.files.get(d.key));
    // Its document's file by its inode, or by its bytes: exactly the document's last synced content at the name the
    // document has now (the files saved since by a program that writes a new file, unchanged or back to what they
    // were: crash-sim soak seed -1922096553). Read as the other document's edits instead, each got the other's
    // content as a version and a conflict copy made a second document of one of them.
    // Not a file that is another row's own, unchanged: its bytes are its row's (documents with equal content).
    const byInode = cycle.map((b, i) => files[i] !== undefined && (renamedAlikeLocally(b, files[i]) ||
      (files[i].sha256 !== null && files[i].sha256 === b.sha256 && !s.view.isRowsUnchangedFile(files[i], b))));
    // A file with none of the cycle's inodes, where the others are theirs by inode, is its document's own file
    // saved since by a program that writes a new file (`mv a t; mv b a; mv t b`, then `sed -i a`): what else the
    // swap left there; an edit at worst, as with the place rule (the content stays in the version history). Read
    // as a stranger's, its edit became a keep-both conflict copy (black-box round 37c, F2's rename cycles).
    // So is the one file left when names were swapped by copying onto the files (`cp y x` keeps x's inode) and it
    // was edited in place since: its inode is a member's whose bytes were found at that member's new name, so the
    // file is what the copies left here, by elimination (black-box round 41b, B1 with an edit: each document got
    // the other's content as a version, and the local swap was undone).
    const movedByBytes = cycle.filter((b, i) => byInode[i] && !renamedAlikeLocally(b, must(files[i])));
    const leftByCopies = (i: number, there: LocalFile) =>
      byInode.filter((m) => !m).length === 1 && movedByBytes.some((c) => c !== cycle[i] && sameFile(c, there));
    const alike = byInode.some(Boolean) && cycle.every((_, i) => {
      const there = files[i];
      return there !== undefined && !s.consumedLocal.has(there.key) && there.sha256 !== null &&
        (byInode[i] || (there.inode !== 0 && !cycle.some((c) => sameFile(c, there))) || leftByCopies(i, there));
    });
    if (!alike) continue;
    const rows = cycle.map((b, i) => {
      const there = must(files[i]);
      const doc = docs[i]!;
      // An edited file keeps the base's stat and hash, so the edit is still seen if its step below does not run.
      const stat = there.sha256 === b.sha256 ? statOf(there) : {};
      return { ...b, ...stat, relPath: there.relPath, key: there.key, fileName: doc.fileName, folderId: doc.folderId };
    });
    const steps = cycle.flatMap((b, i) => {
      const there = must(files[i]);
      return contentStepsAt(s, b, there, there.sha256 !== b.sha256, docs[i]!.versionId !== b.versionId, docs[i]!);
    });
    const adopt: Action = { kind: 'adopt', base: rows[0]!, alongside: rows.slice(1), reason: 'renamed-alike' };
    commitBase(s, cycle[0]!, [adopt, ...steps], false);
    cycle.forEach((b, i) => {
      s.decided.add(b.documentId);
      s.consumedLocal.add(must(files[i]).key);
      s.consumedDocs.add(docs[i]!.documentId);
    });
    return true;
  }
  return false;
}

/**
 * The waiting entries from `start` on, each one's document now at the path of the next one, when that chain
 * comes back to `start` (a rename cycle); null when it leaves the waiting entries or loops elsewhere.
 */
function renameCycleFrom(s: PassState, start: BaseEntry, waiting: ReadonlySet<string>): BaseEntry[] | null {
  const cycle: BaseEntry[] = [];
  for (let b: BaseEntry | undefined = start; cycle.length <= waiting.size; ) {
    cycle.push(b);
    const doc = s.view.remote.docs.get(b.documentId);
    const next: BaseEntry | undefined = doc === undefined ? undefined : s.view.baseByKey.get(doc.key);
    if (next === undefined || next === b || !waiting.has(next.documentId)) return null;
    if (next === start) return cycle;
    if (cycle.includes(next)) return null;
    b = next;
  }
  return null;
}

/**
 * Breaks a rename cycle at entry b. Unchanged local copy: trash it (its content is a remote version), which
 * frees its path; b is then downloaded at its new path once that is free. Locally deleted: its path holds
 * nothing, so it is free at once. Modified: the local content is uploaded as b's new version where the
 * document now is (nothing is lost), the cycle is reported, and the next pass finds b unchanged.
 */
function breakCycle(s: PassState, b: BaseEntry): void {
  // An upload-only pair moves no file: its rows follow files renamed alike (names swapped alike on both sides), so
  // b's path is free for the row of the file there; nothing local is trashed (a change of the local side).
  if (s.ctx.direction === 'upload') {
    s.vacated.add(b.documentId);
    return;
  }
  const doc = must(s.view.remote.docs.get(b.documentId));
  const { l, file } = cycleFileOf(s, b);
  if (l === 'unchanged' && file) {
    commitBase(s, b, [trashLocal(file, b.documentId, 'replaced-by-remote-move')], true, undefined, file.key !== b.key ? file.key : undefined);
    s.consumedLocal.add(file.key);
    s.vacated.add(b.documentId);
  } else if (l === 'deleted') {
    s.vacated.add(b.documentId);
  } else {
    collision(s, file?.relPath ?? b.relPath, `renamed remotely to "${doc.relPath}", which another synced file is leaving; local changes uploaded, retried next pass`, b.documentId);
    const reason = s.view.remoteState(b) === 'moved-modified' ? 'local-wins' : 'local-modified'; // remote keeps its version
    if (file && s.ctx.direction === 'both') commitBase(s, b, [upload(file, versionOf(doc), reason, b.documentId)], false);
    s.decided.add(b.documentId);
  }
}

/**
 * The file a rename cycle is broken at for b, and its state: b's own file moved with b's folder, where b's path
 * holds nothing (names swapped on the service inside a folder renamed alike: the cycle runs through the files' new
 * places, black-box round 39b, F7); else whatever is at b's path.
 */
function cycleFileOf(s: PassState, b: BaseEntry): { l: LocalState; file: LocalFile | undefined } {
  if (!s.view.local.files.has(b.key)) {
    const located = locateOwnFile(s, b, s.view.remote.docs.get(b.documentId), false);
    if (located.file !== undefined && located.file.key !== b.key) return { l: located.l, file: located.file };
  }
  return { l: s.view.localState(b), file: s.view.local.files.get(b.key) };
}

type Cell = `${LocalState}/${RemoteState}`;

/**
 * Where b's own file is, and so b's local and remote states: at b's path, or found elsewhere (renamed alike,
 * moved with its folder, by its place), with the file left at b's path that is not b's (`stranger`) and the
 * copy a pass restored there (`oldCopy`).
 */
interface Located {
  l: LocalState;
  r: RemoteState;
  file: LocalFile | undefined;
  stranger?: LocalFile;
  oldCopy?: LocalFile;
}

function locateOwnFile(s: PassState, b: BaseEntry, doc: RemoteDoc | undefined, vacated: boolean): Located {
  // An entry whose file was trashed to break a rename cycle is planned as "locally deleted".
  let l = vacated ? 'deleted' : s.view.localState(b);
  let r = s.view.remoteState(b);
  // 'deleted' with a file at the key: that file is another document's, renamed there alike (localState).
  let file = l === 'deleted' ? undefined : s.view.local.files.get(b.key);
  // Renamed on both sides alike: b's own file (its inode) is at the document's new path, and is followed there,
  // also once b was vacated to break a rename cycle. A file still at b's old path is then not b's (another file
  // renamed or written there): once b's row has left, a new local file, as any local rename makes one.
  let stranger: LocalFile | undefined;
  const alike = doc && (r === 'moved' || r === 'moved-modified') ? s.view.ownFileRenamedAlike(b) : undefined;
  if (alike && !s.consumedLocal.has(alike.key)) {
    stranger = file;
    file = alike;
    l = s.view.contentState(b, alike);
  } else if ((l === 'deleted' || (l !== 'unknown' && notOwnFile(b, file))) && !vacated && doc && (r === 'moved' || r === 'moved-modified') && s.ctx.direction !== 'upload') {
    // Renamed on both sides to names that differ only in case (or Unicode form): the remote name wins, as the
    // local rename cannot be sent; the file is moved to it like any followed rename (black-box round 30b, F9).
    // Likewise b's file found in its folder's new place under its old name (ownFileMovedWithFolder): moved on to
    // the document's new path, or, where a new local file holds that path, trashed when unchanged (a remote
    // version) while that file is compared with the document. Left a new local file, its bytes went up as a
    // second document (crash-sim soak seed -211469890).
    // Another file made at the old path since (`mkdir A; echo > A/a.txt` after `mv A S`) is then a stranger's,
    // kept as a new local file; read as b's edit, b's own file went up as a second document (crash-sim soak
    // seed 1758635529).
    const own = s.view.ownFileRenamedLoosely(b, doc) ?? s.view.ownFileMovedWithFolder(b);
    if (own && !s.consumedLocal.has(own.key)) {
      if (l !== 'deleted') stranger = file;
      file = own;
      l = s.view.contentState(b, own);
    }
  }
  // An upload-only pair follows no remote rename, but where the user moved b's file alike (its folder renamed here
  // as on the service, the document perhaps renamed too), the row follows the file, which stays where it is: read
  // as a new file colliding with its own document, it was said as such and b as deleted here (black-box round 38b, F5b).
  // So is a file with no row at the document's new path, where b's is gone (renamed alike, then saved by `sed -i`:
  // another inode): such a pair compares it with the document all the same, a pass later, after saying b "no longer
  // synced" and the file a path-collision (round 39b, F10). An edit at worst, as with the place rule.
  // A file at b's path that is another file (another inode) where the service put another document: the user's
  // renames made alike and the files saved by `sed -i` since (`mv x w; mv y x`, the same on the service): with b's
  // own file found at its document's new path, the one at b's path is a stranger's, kept as a new local file (the
  // document listed there then compares it). Read as b's edit, y's edit went up as x's version (round 39c, N).
  const strangerAtPath = l !== 'unknown' && l !== 'deleted' && notOwnFile(b, file) && (s.view.docsByKey.get(b.key) ?? []).some((d) => d.documentId !== b.documentId);
  if ((l === 'deleted' || strangerAtPath) && !alike && !vacated && doc && (r === 'moved' || r === 'moved-modified') && s.ctx.direction === 'upload') {
    // The row-less file only where the document stayed in b's directory: where its folder moved, the file of b's
    // name in the folder's new place is b's (the place rule below), and the one at the document's new name may be
    // another document's edit (a chain of renames, round 39b F2).
    const own = s.view.ownFileMovedWithFolder(b) ?? (parentOf(doc.key) === parentOf(b.key) ? strangerFileAt(s, b, doc.key) : undefined);
    if (own && !s.consumedLocal.has(own.key)) {
      if (l !== 'deleted') stranger = file;
      file = own;
      l = s.view.contentState(b, own);
    } else if (strangerAtPath && renamedHereToo(s, b)) {
      // b's own file not found, but the local side made the service's renames too (a file of the chain is at its
      // document's new path by inode): the file at b's path is the other document's, compared with it once b's
      // row has gone (the next pass). Uploaded as b's edit, it was that document's content in b (round 39c, N-B).
      l = 'deleted';
      file = undefined;
    }
  }
  // The document is still listed at b's path, but in another folder of that name (b's folder renamed away, another
  // renamed to its old name) while b's own file moved with b's folder here: the file follows the document, as for a
  // remote move. Restored instead, the own file went up as a second document (crash-sim soak seed -543948209).
  if (l === 'deleted' && !vacated && doc && (r === 'unchanged' || r === 'modified') && s.ctx.direction !== 'upload') {
    const own = s.view.ownFileMovedWithFolder(b);
    if (own && !s.consumedLocal.has(own.key)) {
      file = own;
      l = s.view.contentState(b, own);
      r = r === 'modified' ? 'moved-modified' : 'moved';
    }
  }
  // Found by neither its inode nor a loose name: b's file by its place, a name in its folder's new place
  // (ReconcileView.ownFileByPlace). The copy a pass restored at the old path goes to the trash first.
  let oldCopy: LocalFile | undefined;
  if (doc && !vacated && (file === undefined || file.key === b.key) && (l === 'deleted' || l === 'unchanged') && (r === 'moved' || r === 'moved-modified')) {
    const placed = placedFile(s, b, doc);
    if (placed) {
      oldCopy = file;
      file = placed;
      l = s.view.contentState(b, placed);
    }
  }
  // Nor by its place, which holds another row's own file (names swapped alike in a folder renamed alike): b's by
  // elimination, the file the swap left at its document's new path (ReconcileView.ownFileLeftBySwap). Read as a
  // stranger's, its edit became a keep-both conflict copy, or, in an upload-only pair, b was "no longer synced" for
  // a pass (black-box round 39c, N-D).
  if (doc && !vacated && file === undefined && l === 'deleted' && (r === 'moved' || r === 'moved-modified')) {
    const left = s.view.ownFileLeftBySwap(b, doc);
    if (left && !s.consumedLocal.has(left.key)) {
      file = left;
      l = s.view.contentState(b, left);
    }
  }
  return { l, r, file, stranger, oldCopy };
}

/** Decides one base entry. Returns false when it must wait for another entry (see planBaseEntries). */
function planBase(s: PassState, b: BaseEntry): boolean {
  const vacated = s.vacated.has(b.documentId);
  const doc = s.view.remote.docs.get(b.documentId);
  const { l, r, file, stranger, oldCopy } = locateOwnFile(s, b, doc, vacated);
  const cell = `${l}/${r}` as Cell;
  let done = true;
  switch (cell) {
    case 'unknown/unchanged': case 'unknown/modified': case 'unknown/moved': case 'unknown/moved-modified':
    case 'unknown/deleted': case 'unknown/unknown':
      localUnknown(s, b);
      break;
    case 'unchanged/unknown': case 'deleted/unknown':
      break; // the remote state is unknown this pass: do nothing, decide next pass
    case 'modified/unknown':
      localEditWaits(s, b); // nothing planned either, but a change is pending
      break;
    case 'unchanged/unchanged':
      keepOrAdopt(s, b, must(file), must(doc));
      break;
    case 'unchanged/modified':
      pullRemoteChange(s, b, must(file), must(doc));
      break;
    case 'modified/unchanged':
      pushLocalChange(s, b, must(file), must(doc));
      break;
    case 'modified/modified':
      bothChanged(s, b, must(file), must(doc));
      break;
    case 'unchanged/moved': case 'unchanged/moved-modified': case 'modified/moved': case 'modified/moved-modified':
    case 'deleted/moved': case 'deleted/moved-modified':
      done = followRemoteMove(s, b, l, r === 'moved-modified', file, must(doc), stranger, oldCopy);
      break;
    case 'unchanged/deleted': case 'modified/deleted':
      remoteDeleted(s, b, l === 'modified', must(file));
      break;
    case 'deleted/unchanged':
      localDeleted(s, b, must(doc));
      break;
    case 'deleted/modified':
      localDeletedRemoteModified(s, b, must(doc));
      break;
    case 'deleted/deleted':
      commitBase(s, b, [forget(b, 'deleted-both')], true);
      break;
    default:
      return assertNever(cell);
  }
  if (done) {
    s.decided.add(b.documentId);
    // Taken by this entry's step (a deferred one may come back and take it then).
    if (file !== undefined && file.key !== b.key) s.consumedLocal.add(file.key);
  }
  return done;
}

/** A file at b's path that is another file than b's (both inodes known and different). */
function notOwnFile(b: BaseEntry, file: LocalFile | undefined): boolean {
  return file !== undefined && b.inode !== 0 && file.inode !== 0 && !sameFile(b, file);
}

/**
 * Did the local side make the service's renames around b's path too: the row of a document now listed at b's path
 * has, at its own path, another synced file renamed there alike (by inode)?
 */
function renamedHereToo(s: PassState, b: BaseEntry): boolean {
  return (s.view.docsByKey.get(b.key) ?? []).some((d) => {
    const row = d.documentId === b.documentId ? undefined : s.view.base.get(d.documentId);
    const there = row === undefined ? undefined : s.view.renamedAlikeAt(row.key);
    return there !== undefined && there !== row;
  });
}

/**
 * The local file at `key` that no row holds, no other step claimed, and that is no other synced file (its inode).
 * A row whose own file was renamed alike elsewhere leaves `key` (names swapped alike on both sides, and the file
 * left at `key` saved since by `sed -i`): its file then counts as held by none, and b waits for that row to go
 * (followSwapAlike). Held, an upload-only pair said b "no longer synced" and the file a path collision, one pass
 * before it got it right (black-box round 39b, F10, case F).
 */
function strangerFileAt(s: PassState, b: BaseEntry, key: PathKey): LocalFile | undefined {
  const file = s.view.local.files.get(key);
  const holder = s.view.baseByKey.get(key);
  const leaving = holder !== undefined && holder !== b && (s.view.ownFileRenamedAlike(holder) !== undefined || renamedAlikeByContent(s, holder));
  if (file === undefined || (holder !== undefined && !leaving) || s.consumedLocal.has(key) || s.view.isUnknown(key)) return undefined;
  return s.view.isRowsFile(file, b) ? undefined : file;
}

/**
 * Is row h's document at another path now, where a file holds exactly h's last synced bytes? Its file renamed alike
 * with no inode left to tell (names swapped by copying, an overlayfs copy-up, which gives a new birth time): h leaves
 * its path. Read as the edit of the document listed where it was, an upload-only pair gave each document of a swap
 * the other's content (black-box round 40b, A2).
 */
function renamedAlikeByContent(s: PassState, h: BaseEntry): boolean {
  const doc = s.view.remote.docs.get(h.documentId);
  const there = doc === undefined || doc.key === h.key ? undefined : s.view.local.files.get(doc.key);
  return there !== undefined && there.sha256 === h.sha256 && !s.view.isRowsUnchangedFile(there, h);
}

/** b's file by its place (ReconcileView.ownFileByPlace), if it is at doc's path or can be moved on to it (or stays). */
function placedFile(s: PassState, b: BaseEntry, doc: RemoteDoc): LocalFile | undefined {
  const file = s.view.ownFileByPlace(b);
  if (file === undefined || s.consumedLocal.has(file.key)) return undefined;
  // An upload-only pair moves nothing: the row follows the file where it is (followedInUploadPair).
  if (file.key === doc.key || s.ctx.direction === 'upload') return file;
  const occ = occupancy(s, doc.key, b).kind;
  return occ === 'free' || occ === 'defer' ? file : undefined;
}

/** Commits b's actions at its key; false when another change of this pass holds the key (reported). */
function commitBase(s: PassState, b: BaseEntry, actions: Action[], releasesKey: boolean, after?: number, alsoFrees?: PathKey): boolean {
  const g = s.out.commit(b.key, actions, after);
  if (g === null) {
    if (actions.length > 0) collision(s, b.relPath, 'another change in this pass writes the same path', b.documentId);
    return false;
  }
  // A second row on a key (see leftItsKey) frees nothing there: the row that holds the key stays.
  if (releasesKey && s.view.baseByKey.get(b.key) === b) s.out.release(b.key, g);
  if (alsoFrees !== undefined) s.out.release(alsoFrees, g);
  return true;
}

function issue(s: PassState, relPath: string, code: Issue['code'], detail: string, documentId: string): void {
  s.out.issue({ relPath, documentId, code, detail });
}

function localUnknown(s: PassState, b: BaseEntry): void {
  if (s.view.hiddenByIgnore(b)) {
    hiddenSyncedFile(s, b);
    return;
  }
  // Resolved: every cell with an unknown local state reports it (the table demands it for unchanged
  // remote; a pending remote change is even more worth showing), and nothing is planned. The detail says what
  // the scan met there: a symlink or a bad name stays until someone changes it, a file being written does not.
  const p = s.view.problemAt(b.key);
  // The scan met something at this very path (a file being written, a symlink, a twin name, no read access):
  // its own issue for the path says so, once; a second line here would only repeat it.
  if (p !== undefined && p.key === b.key) return;
  issue(s, b.relPath, 'unknown-state', `${unobservedDetail(s.view, b.key)}: the synced file and its document are left as they are`, b.documentId);
}

/**
 * A synced file that an ignore rule now hides: nothing is planned on either side while the rule is there (a
 * remote rename, edit or delete is applied once the file is looked at again). Its document, if the rule hides
 * it too, has its own 'ignored' line; one the rule does not hide (renamed on the service to a name it allows)
 * gets one here, informational like the rule itself.
 */
function hiddenSyncedFile(s: PassState, b: BaseEntry): void {
  const doc = s.view.remote.docs.get(b.documentId);
  if (doc === undefined) return;
  const change = doc.key !== b.key ? `renamed or moved on the service to "${doc.relPath}"` : doc.versionId !== b.versionId ? 'edited on the service' : 'on the service';
  issue(s, b.relPath, 'ignored', `an ignore rule hides the synced file; its document (${change}) is left as it is until the rule changes`, b.documentId);
}

/**
 * A local edit whose document is listed but cannot be placed locally: renamed on the service to a name an ignore
 * rule leaves out, or to one that cannot be a local name. Nothing is planned (where the edit belongs is unknown),
 * but it is said, as a pending change: the document's own line may be informational ('ignored'), and a pass with
 * an edit left behind is not in sync. Without a listed reason (no such document this pass) nothing is said here.
 */
function localEditWaits(s: PassState, b: BaseEntry): void {
  const u = s.view.unmappableDoc(b.documentId);
  if (u === undefined) return;
  const where = u.path !== undefined && u.path !== b.relPath ? `its document, now "${u.path}" on the service,` : 'its document';
  const [why, fix] = u.ignored === true
    ? ['is left out by an ignore rule', 'rename the document on the service or change the ignore list']
    : ['cannot be placed locally', 'rename the document on the service'];
  issue(s, b.relPath, 'local-change-not-uploaded', `${where} ${why} (${u.reason}): the local change waits; ${fix}`, b.documentId);
}

function keepOrAdopt(s: PassState, b: BaseEntry, file: LocalFile, doc: RemoteDoc): void {
  const changed: string[] = [];
  // Compared field by field, not with sameStat: a row without a ctime (0) takes the file's here, and so does a row
  // without a birth time (written before schema 8), so that sameFile can tell a reused inode from then on.
  const born = !!file.bornMs && file.bornMs !== b.bornMs;
  if (file.size !== b.size || file.mtimeMs !== b.mtimeMs || file.inode !== b.inode || file.ctimeMs !== b.ctimeMs || born) changed.push('local-stat');
  if (file.relPath !== b.relPath) changed.push('local-name');
  if (doc.fileName !== b.fileName || doc.folderId !== b.folderId) changed.push('remote-name');
  if (changed.length === 0) return;
  const next: BaseEntry = {
    ...b, ...statOf(file), relPath: file.relPath, fileName: doc.fileName, folderId: doc.folderId,
  };
  commitBase(s, b, [{ kind: 'adopt', base: next, reason: changed.join(',') }], false);
}

function pullRemoteChange(s: PassState, b: BaseEntry, file: LocalFile, doc: RemoteDoc): void {
  if (s.ctx.direction === 'upload') {
    issue(s, doc.relPath, 'upload-only', 'direction is upload: the remote change is not downloaded', b.documentId);
    commitBase(s, b, bornTaken(b, file), false);
    return;
  }
  commitBase(s, b, [download(doc, statOf(file), 'remote-modified')], false);
}

function pushLocalChange(s: PassState, b: BaseEntry, file: LocalFile, doc: RemoteDoc): void {
  if (s.ctx.direction === 'download') {
    const check = localChangeKept(s, b, file, doc);
    if (check.length > 0) commitBase(s, b, check, false);
    return;
  }
  commitBase(s, b, [upload(file, versionOf(doc), 'local-modified', b.documentId)], false);
}

function bothChanged(s: PassState, b: BaseEntry, file: LocalFile, doc: RemoteDoc): void {
  // An upload-only pair's conflict is local-wins (conflictPolicyFor): overwriting remotely loses nothing, the
  // remote content stays in the document's version history, and equal content makes no version.
  commitBase(s, b, [conflict(file, doc, b, s.ctx, s.out.conflictPathFor(file.relPath))], false);
}

/**
 * Remote renamed/moved the document (maybe with a new version). Locally: move the file along, then apply
 * the content change; a local delete is treated as "restore at the new path" (the remote change wins).
 */
function followRemoteMove(
  s: PassState, b: BaseEntry, l: LocalState, remoteModified: boolean, file: LocalFile | undefined, doc: RemoteDoc, stranger?: LocalFile, oldCopy?: LocalFile,
): boolean {
  if (s.ctx.direction === 'upload') return uploadModeRemoteMove(s, b, l, remoteModified, file, doc, stranger);
  const occ = occupancy(s, doc.key, b);
  if (occ.kind === 'defer') return false;
  if (occ.kind === 'blocked') {
    // Said at b's path, and at its own file's where that was found elsewhere (moved with its folder): a file at
    // b's path then waits for b's row to leave it.
    const detail = `cannot follow the remote rename to "${doc.relPath}": ${occ.detail}`;
    issue(s, b.relPath, occ.code, detail, b.documentId);
    if (file !== undefined && file.key !== b.key) issue(s, file.relPath, occ.code, detail, b.documentId);
    return true;
  }
  // b's own file is at the new path already (renamed alike): nothing moves, the row follows it, once the entry
  // that held the path (if any) has left it.
  if (file !== undefined && file.key === doc.key) {
    followedLocally(s, b, doc, file, occ.after, stranger, oldCopy);
    return true;
  }
  if (occ.kind === 'unbased-local') {
    remoteMoveOntoLocalFile(s, b, l, file, doc, occ.file, occ.after, stranger);
    return true;
  }
  const actions = file
    ? [...trashedFirst(b, oldCopy), moveLocal(file, doc), ...contentStepsAt(s, b, movedTo(file, doc), l === 'modified', remoteModified, doc)]
    : [download(doc, null, 'remote-modified')];
  if (stranger !== undefined) keepAsLocalFile(s, b, stranger, actions, 'new-local', occ.after);
  // A file moved on from where it was found (its folder's new place) frees that path for another's move there.
  else commitBase(s, b, actions, true, occ.after, file !== undefined && file.key !== b.key ? file.key : undefined);
  return true;
}

/**
 * The steps for b's file once it is at its document's new path (moved there by the daemon, or by the user): a
 * newer remote version replaces an unchanged file, both changed is a conflict, a local edit goes up as the
 * next version (or is reported when this pair does not upload). None when neither side changed the content.
 */
function contentStepsAt(s: PassState, b: BaseEntry, at: LocalFile, edited: boolean, remoteModified: boolean, doc: RemoteDoc): Action[] {
  if (!edited && remoteModified && s.ctx.direction === 'upload') {
    // Names swapped alike in an upload-only pair (followSwapAlike): no download, as for any remote change.
    issue(s, doc.relPath, 'upload-only', 'direction is upload: the remote change is not downloaded', b.documentId);
    return [];
  }
  if (!edited) return remoteModified ? [download(doc, statOf(at), 'remote-modified')] : [];
  if (remoteModified) return [conflict(at, doc, b, s.ctx, s.out.conflictPathFor(at.relPath))];
  if (s.ctx.direction !== 'download') return [upload(at, versionOf(doc), 'local-modified', b.documentId)];
  return localChangeKept(s, b, at, doc);
}

/**
 * A local change this pair does not upload (download-only) is said so. One whose time is older than the synced
 * file's (put back from a backup with its times) is also checked by the executor against the document's earlier
 * versions: a stale copy takes the latest, as in a two-way pair, and the issue goes (black-box round 34a, F6: it
 * stayed stale and "not in sync" until a colleague's next version).
 */
function localChangeKept(s: PassState, b: BaseEntry, file: LocalFile, doc: RemoteDoc): Action[] {
  issue(s, file.relPath, 'local-change-not-uploaded', `${notUploadingBecause(s.ctx)}: the local change is not uploaded`, b.documentId);
  if (file.sha256 === null || !putBackWithOldTime(file, b)) return [];
  return [{ kind: 'download', relPath: doc.relPath, key: doc.key, doc, expectLocal: statOf(file), reason: 'earlier-version-put-back', localSha256: file.sha256 }];
}

/**
 * The remote move lands on a path where a local file with no base sits: the document's claim is compared
 * with that file (conflict, no base). The file at the old path is trashed when unchanged (its content is a
 * remote version) or kept as a new local file when modified.
 */
function remoteMoveOntoLocalFile(
  s: PassState, b: BaseEntry, l: LocalState, file: LocalFile | undefined, doc: RemoteDoc, there: LocalFile, after?: number, stranger?: LocalFile,
): void {
  const claim = unbasedPair(s, there, doc);
  // Unchanged old copy: trash it FIRST. Its base row stays until the claim records the document at its new
  // path, so a crash between the two steps leaves "deleted locally, moved remotely" (planned the same way
  // again), never an untracked old copy that would be uploaded as a second document.
  const actions: Action[] = file && l === 'unchanged' ? [trashLocal(file, b.documentId, 'replaced-by-remote-move'), claim] : [claim];
  // A modified file stays where it is, and so does a stranger's file at b's path: new local files.
  const kept = [...(file && l === 'modified' ? [file] : []), ...(stranger ? [stranger] : [])];
  if (kept.length > 0) keepAsLocalFile(s, b, kept, actions, 'new-local', after);
  else commitBase(s, b, actions, true, after);
}

/**
 * The user made the remote's rename locally too: the file at the document's new path is the base's own file
 * (its inode; the old path is gone) and the scan read its content. Not a stranger's file, so no conflict copy:
 * it is compared with the base, exactly as if the daemon had moved it there. Inode numbers are reused, so a
 * new file that got a deleted file's inode reads as an edit of that document, which loses nothing: the
 * remote content stays in the version history. Without a hash or an inode it stays a conflict.
 */
function renamedAlikeLocally(b: BaseEntry, there: LocalFile): boolean {
  return movedSameFile(b, there);
}

/**
 * The unchanged copy a pass restored at b's old path, when b's file is found elsewhere by its place: trashed
 * first (its content is b's version), so that a crash after it leaves b "deleted locally", which finds the file by
 * its place again.
 */
function trashedFirst(b: BaseEntry, oldCopy: LocalFile | undefined): Action[] {
  return oldCopy === undefined ? [] : [trashLocal(oldCopy, b.documentId, 'replaced-by-remote-move')];
}

/**
 * `stranger`: a file at b's old path that is not b's; kept there as a new local file once b's row has left.
 * `oldCopy`: the copy restored there (trashedFirst).
 */
function followedLocally(s: PassState, b: BaseEntry, doc: RemoteDoc, there: LocalFile, after?: number, stranger?: LocalFile, oldCopy?: LocalFile): void {
  s.consumedLocal.add(there.key);
  s.consumedDocs.add(doc.documentId);
  const edited = s.view.contentState(b, there) === 'modified';
  const steps = contentStepsAt(s, b, there, edited, doc.versionId !== b.versionId, doc);
  // Nothing to transfer: the base row alone moves to the file's new path. An edit this pair does not upload (a
  // download-only pair) keeps the base's stat and hash, so that it is still seen as an edit: with the file's stat
  // and the old hash, the next pass read it as unchanged, said "in sync", and a newer remote version replaced the
  // edit with no conflict copy (black-box round 38b, F2).
  const adopt: Action = {
    kind: 'adopt',
    base: { ...b, ...(edited ? {} : statOf(there)), relPath: there.relPath, key: there.key, fileName: doc.fileName, folderId: doc.folderId },
    reason: 'renamed-alike',
  };
  const own = [...trashedFirst(b, oldCopy), ...(steps.length > 0 ? steps : [adopt])];
  if (stranger !== undefined) keepAsLocalFile(s, b, stranger, own, 'new-local', after);
  else commitBase(s, b, own, true, after);
}

/**
 * Commits `before` plus the steps that turn each file into a file of its own (new document, or a report): b's
 * file, and a stranger's file at b's path when b's own was found elsewhere. When another synced document is
 * being renamed onto b's path, the file there is left as an orphan for that document to claim as a conflict in
 * this same pass; reported afterwards if nobody does.
 */
function keepAsLocalFile(
  s: PassState, b: BaseEntry, files: LocalFile | LocalFile[], before: Action[], reason: 'new-local' | 'recreate-remote-deleted', after?: number,
): void {
  const plans = (Array.isArray(files) ? files : [files]).map((file) => ({ file, kept: planLocalFile(s, file, reason, b) }));
  const orphan = plans.find((p) => p.file.key === b.key && p.kept.issue?.code === 'path-collision');
  for (const { kept } of plans) if (kept.issue && kept !== orphan?.kept) s.out.issue({ ...kept.issue, documentId: b.documentId });
  const g = s.out.commit(b.key, [...before, ...plans.flatMap((p) => p.kept.actions)], after);
  if (g === null) collision(s, b.relPath, 'another change in this pass writes the same path', b.documentId);
  else if (orphan) s.orphans.set(b.key, { file: orphan.file, group: g, documentId: b.documentId, detail: orphan.kept.issue?.detail ?? '' });
}

/** Upload mode never changes local files: a remote rename is reported, local content is still pushed. */
function uploadModeRemoteMove(
  s: PassState, b: BaseEntry, l: LocalState, remoteModified: boolean, file: LocalFile | undefined, doc: RemoteDoc, stranger?: LocalFile,
): boolean {
  if (l === 'deleted') {
    localDeleteNotPropagated(s, b);
    return true;
  }
  if (file !== undefined && file.key !== b.key) return followedInUploadPair(s, b, file, doc, stranger);
  // Names swapped alike by copying onto the files (`cp y x` writes into x: its inode stays): left to followSwapAlike.
  if (l === 'modified' && file !== undefined && swappedByCopyingOnto(s, b)) return false;
  issue(s, doc.relPath, 'upload-only', `direction is upload: the remote rename of "${b.relPath}" is not applied locally`, b.documentId);
  if (l === 'modified' && file) {
    commitBase(s, b, [upload(file, versionOf(doc), remoteModified ? 'local-wins' : 'local-modified', b.documentId)], false);
  } else if (file) commitBase(s, b, bornTaken(b, file), false);
  return true;
}

/**
 * Does b's own file, edited where it is, hold exactly the last synced bytes of the document the service now lists
 * at b's path, and so on round a rename cycle back to b? Names swapped alike by copying onto the files (`cp y x`
 * writes into x, whose inode stays): each row's own file at its own path reads as an edit made in place, and an
 * upload-only pair sent each document the other's content (black-box round 41b, B1). Such rows wait, and
 * followSwapAlike takes each file as its document's by its bytes. Any file of the cycle edited besides breaks it:
 * each file is then its path's, as when every file was saved anew.
 */
function swappedByCopyingOnto(s: PassState, b: BaseEntry): boolean {
  const seen = new Set<string>();
  for (let row = b; ; ) {
    if (seen.has(row.documentId) || s.decided.has(row.documentId)) return false;
    seen.add(row.documentId);
    const docsHere = (s.view.docsByKey.get(row.key) ?? []).filter((d) => d.documentId !== row.documentId);
    const next = docsHere.length === 1 ? s.view.base.get(docsHere[0]!.documentId) : undefined;
    const here = s.view.local.files.get(row.key);
    if (next === undefined || here === undefined || here.sha256 !== next.sha256 || here.sha256 === row.sha256 || !sameFile(row, here)) return false;
    if (next === b) return true;
    row = next;
  }
}

/**
 * A row written before the state DB kept birth times takes its file's where nothing else records the file (an
 * upload-only pair's note of a remote change): such a row kept none for as long as a colleague's version or a
 * rename on the service stayed newer, and sameFile read its inode alone, which `sed -i` hands on (black-box round
 * 40b, A1). Only the birth time: the rest of the row stays as synced.
 */
function bornTaken(b: BaseEntry, file: LocalFile): Action[] {
  if (b.bornMs || !file.bornMs || b.inode === 0 || file.inode !== b.inode) return [];
  return [{ kind: 'adopt', base: { ...b, bornMs: file.bornMs }, reason: 'local-stat' }];
}

/**
 * An upload-only pair, b's own file moved here as its document was on the service (renamed alike, or with its
 * folder): the row follows the file, nothing moves. An edit goes up as the document's next version; a remote
 * rename or version this pair does not apply is said as an upload-only note. False while the path waits for
 * another row to leave it.
 */
function followedInUploadPair(s: PassState, b: BaseEntry, file: LocalFile, doc: RemoteDoc, stranger?: LocalFile): boolean {
  const occ = occupancy(s, file.key, b);
  if (occ.kind === 'defer') return false;
  if (occ.kind === 'blocked') {
    // Said at both paths, as for a followed rename: a file at b's path waits for b's row to leave it.
    const detail = `cannot record "${file.relPath}" as the document's file: ${occ.detail}`;
    issue(s, b.relPath, occ.code, detail, b.documentId);
    issue(s, file.relPath, occ.code, detail, b.documentId);
    return true;
  }
  if (file.key !== doc.key) issue(s, doc.relPath, 'upload-only', `direction is upload: the remote rename of "${b.relPath}" is not applied locally`, b.documentId);
  // Then as in a two-way pair whose file is at its document's path (contentStepsAt): an edit goes up, over a remote
  // version too as a conflict this pair settles local-wins (compared first, listed: black-box round 39b, F3); a
  // remote version of an unchanged file is noted; otherwise the row alone follows the file.
  followedLocally(s, b, doc, file, occ.after, stranger);
  return true;
}

/**
 * The document was deleted remotely. Unchanged local copy: trash it (download/both). Modified local copy:
 * modification wins, it becomes a new document (never in download mode). Upload mode recreates it either way.
 */
function remoteDeleted(s: PassState, b: BaseEntry, modified: boolean, file: LocalFile): void {
  // A document created here that no listing ever showed was never made (never-listed.ts): not a delete to follow.
  const neverMade = s.ctx.direction === 'both' && s.ctx.neverListed?.has(b.documentId) === true;
  const recreate = s.ctx.direction === 'upload' || (modified && s.ctx.direction === 'both') || neverMade;
  if (!modified && !recreate) {
    commitBase(s, b, [trashLocal(file, b.documentId, 'remote-deleted')], true);
    return;
  }
  // Forget first: if the pass stops after it, the file is simply a new local file next pass (no duplicate).
  keepAsLocalFile(s, b, file, [forget(b, 'remote-deleted-kept-local')], recreate ? 'recreate-remote-deleted' : 'new-local');
}

function localDeleted(s: PassState, b: BaseEntry, doc: RemoteDoc): void {
  if (s.ctx.direction === 'upload' || s.ctx.localDeletePolicy === 'forget') {
    localDeleteNotPropagated(s, b);
    return;
  }
  if (pathTakenByFolder(s, b, doc)) return;
  commitBase(s, b, [download(doc, null, 'restore-local-delete')], false);
}

/** Modification wins over the local delete: bring the new remote version back (except in upload mode). */
function localDeletedRemoteModified(s: PassState, b: BaseEntry, doc: RemoteDoc): void {
  if (s.ctx.direction === 'upload') {
    localDeleteNotPropagated(s, b);
    return;
  }
  if (pathTakenByFolder(s, b, doc)) return;
  commitBase(s, b, [download(doc, null, 'remote-modified')], false);
}

/**
 * The file is gone because a folder took its name (rm f; mkdir f), or a file took the name of one of its
 * folders: the document cannot be put back there. Reported, and nothing planned: the download would fail at
 * the commit on every pass, fetching the content again each time. The base stays, so nothing is forgotten.
 */
function pathTakenByFolder(s: PassState, b: BaseEntry, doc: RemoteDoc): boolean {
  const detail = localEntryInTheWay(s.view, doc.key);
  if (detail === null) return false;
  issue(s, doc.relPath, 'path-collision', `the document cannot be put back: ${detail}`, b.documentId);
  return true;
}

/** The service has no delete endpoint: the base row is dropped and the operator is told. */
function localDeleteNotPropagated(s: PassState, b: BaseEntry): void {
  if (movedToWaitingFolder(s, b) || keptInDoubt(s, b)) return;
  issue(s, b.relPath, 'local-delete-not-propagated', 'the service cannot delete documents; the remote document is kept and no longer synced', b.documentId);
  if (commitBase(s, b, [forget(b, 'local-deleted-forget')], true)) s.forgetting.add(b.documentId);
}

/**
 * An upload-only pair, b's file found at the place it waited, which the service has since given another document
 * (names swapped or rotated there, the files saved by `sed -i`): whether the user swapped them here too nothing tells.
 * Forgotten, the rows let the next pass adopt each file into the document listed at its path: each got another's
 * edit (black-box round 43a, F6). Kept instead, with the file, which is not uploaded, until the user settles it
 * (a two-way pair keeps both ways: ownFileMovedWithFolder).
 */
function keptInDoubt(s: PassState, b: BaseEntry): boolean {
  if (s.ctx.direction !== 'upload') return false;
  const file = s.view.waitedPlaceInDoubt(b);
  if (file === undefined || s.consumedLocal.has(file.key)) return false;
  s.consumedLocal.add(file.key);
  const listed = (s.view.docsByKey.get(file.key) ?? []).map((d) => d.relPath)[0] ?? file.relPath;
  issue(
    s,
    file.relPath,
    'unknown-state',
    `${IN_DOUBT_PREFIX}"${b.relPath}" before it was saved anew, and the service has since put another document at "${listed}": whose this file is nothing tells (were the names swapped here too?); nothing is uploaded until it is moved or renamed (then a new document) or its content is made one of theirs`,
    b.documentId,
  );
  return true;
}

/**
 * b's file moved here (by its inode) into a directory the service has no folder for yet, where it would wait as a
 * new file: the row is kept, and the file waits as b's. Nothing else can happen to it until the service has that
 * folder (the service cannot create one), and the service often follows: the same folder renamed there a moment
 * later, perhaps with renames of its documents. Forgotten at once (a daemon sees the local move first), the row
 * was gone when they came, and the files then met the renamed documents by path alone: a chain of renames put
 * one document's content in another, and a document stopped syncing (black-box round 39b, F4). Once the folder
 * exists, a file still where it was moved to is a new document there, and b is forgotten, as for any local move.
 */
function movedToWaitingFolder(s: PassState, b: BaseEntry): boolean {
  const moved = s.view.ownFileMovedAway(b) ?? s.view.ownFileMovedAwayByPlace(b) ?? s.view.ownFileWaitingAt(b);
  if (moved === undefined || s.consumedLocal.has(moved.key)) return false;
  const waits = waitingForFolder(s, moved);
  if (waits === null) return false;
  s.consumedLocal.add(moved.key);
  issue(s, moved.relPath, 'waiting-for-remote-folder', `${waits} (moved here from "${b.relPath}": its document stays this file's meanwhile)`, b.documentId);
  return true;
}

function must<T>(x: T | undefined): T {
  if (x === undefined) throw new Error('reconcile: state classification and lookup disagree (bug)');
  return x;
}

function assertNever(x: never): never {
  throw new Error(`reconcile: unhandled cell ${String(x)}`);
}
