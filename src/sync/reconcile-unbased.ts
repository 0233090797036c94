// Reconcile for items without a base row (new local files, new remote documents, remote folders) and the
// shared "who holds this path" check that every step writing a local path goes through.
import type { Action, BaseEntry, FileStat, Issue, LocalFile, LocalProblem, PathKey, ReconcileContext, RemoteDoc, RemoteFolder } from './model.js';
import { newLocalNotUploaded, sameFile, statOf, WAITING_PREFIX } from './model.js';
import { baseNameOf, joinRel, parentOf, pathKey } from './path-key.js';
import { localNameFor } from '../remote/names.js';
import { looseName } from './plan-filters.js';
import type { PlanBuilder } from './reconcile-builder.js';
import { conflict, download, upload } from './reconcile-steps.js';
import type { ReconcileView } from './reconcile-view.js';

/** Mutable bookkeeping of one reconcile pass (never visible outside reconcile). */
export interface PassState {
  view: ReconcileView;
  ctx: ReconcileContext;
  out: PlanBuilder;
  /** Unbased local files already answered by some step (a conflict against a remote claim). */
  consumedLocal: Set<PathKey>;
  /** Unbased remote documents already answered. */
  consumedDocs: Set<string>;
  /** Base documents whose decision is final (possibly "nothing"). */
  decided: Set<string>;
  /** Base documents that no longer hold a local file at their key (a rename cycle was broken there). */
  vacated: Set<string>;
  /** Files whose base row is forgotten in group `group` but which stay on disk, waiting for a remote claim. */
  /** `detail`: why the file could not go up (said when no document claims it). */
  orphans: Map<PathKey, { file: LocalFile; group: number; documentId: string; detail: string }>;
  /** Base documents this pass forgets because their local file was deleted (localDeletePolicy forget). */
  forgetting: Set<string>;
}

export type Occupancy =
  | { kind: 'free'; after?: number }
  | { kind: 'unbased-local'; file: LocalFile; after?: number }
  | { kind: 'defer' }
  | { kind: 'blocked'; code: Issue['code']; detail: string };

/**
 * Why no file can be written at `key` whatever this pass does: a local directory has that name, or a local file
 * has the name of one of its folders. Null when neither.
 */
export function localEntryInTheWay(view: PassState['view'], key: PathKey): string | null {
  if (view.local.dirs.has(key)) return 'a local directory has this name';
  if (view.ancestorIsFile(key)) return 'a local file has the name of a parent folder';
  return null;
}

/** Why a local path could not be observed, after "the local path" or "the local folder X". */
const UNOBSERVED_BECAUSE: Record<LocalProblem['reason'], string> = {
  unreadable: 'cannot be read',
  symlink: 'is a symlink (never followed)',
  'special-file': 'is not a regular file',
  'name-not-representable': 'has a name that cannot be synced',
  changing: 'was changing while it was scanned (looked at again next pass)',
};

/**
 * What the scan met at key or at the folder above it that hides it, e.g. "the local folder C is a symlink
 * (never followed)": the same words wherever a step cannot use the path.
 */
export function unobservedDetail(view: PassState['view'], key: PathKey): string {
  const p = view.problemAt(key);
  const where = p === undefined || p.key === key ? 'the local path' : `the local folder ${p.relPath}`;
  // A bad name's detail says which (another name on this path, and how the two differ; not valid UTF-8).
  const why = p === undefined ? 'could not be observed this pass' : p.reason === 'name-not-representable' ? `${UNOBSERVED_BECAUSE[p.reason]} (${p.detail})` : UNOBSERVED_BECAUSE[p.reason];
  return `${where} ${why}`;
}

/**
 * Can a step write local path `key`? `self` is the base entry asking (its own key never blocks it).
 * A key held by another base entry is usable only once that entry's group frees it; the step then runs after
 * that group ("after"). Until that entry is decided the answer is "defer".
 */
export function occupancy(s: PassState, key: PathKey, self: BaseEntry | null): Occupancy {
  const { view, out } = s;
  if (view.isUnknown(key)) return { kind: 'blocked', code: 'unknown-state', detail: unobservedDetail(view, key) };
  if (out.isClaimed(key)) return { kind: 'blocked', code: 'path-collision', detail: 'another change in this pass writes the same path' };
  const inTheWay = localEntryInTheWay(view, key);
  if (inTheWay !== null) return { kind: 'blocked', code: 'path-collision', detail: inTheWay };
  const holder = view.baseByKey.get(key);
  if (holder && holder !== self) {
    const after = out.releasedBy(key);
    if (after !== undefined) return { kind: 'free', after };
    // Vacated to break a rename cycle: free when nothing is there, or when the file there is self's own, renamed
    // there alike (crash-sim soak seed -1397763815: else the cycle was broken again at self, whose old path held
    // a stranger's file, and that file went up as self's next version).
    if (s.vacated.has(holder.documentId) && (!view.local.files.has(key) || (self !== null && view.renamedAlikeAt(key) === self))) return { kind: 'free' };
    if (!s.decided.has(holder.documentId)) return { kind: 'defer' };
    const orphan = s.orphans.get(key);
    if (orphan && !s.consumedLocal.has(key)) return { kind: 'unbased-local', file: orphan.file, after: orphan.group };
    return { kind: 'blocked', code: 'path-collision', detail: 'the path is held by another synced file' };
  }
  const file = view.local.files.get(key);
  if (file && holder !== self) {
    // Another document's own file, moved with its folder, that moves on in this pass to a free path (a chain of
    // renames in a folder renamed alike, `y -> w` then `x -> y`): free once it has (as for a row leaving its path).
    // Compared with self's document instead, it was kept both ways as a duplicate (black-box round 38b, F4).
    const mover = view.movingWithFolderAt(key);
    if (mover !== undefined && mover !== self) {
      const after = out.releasedBy(key);
      if (after !== undefined) return { kind: 'free', after };
      // Also when the movers' way comes back to self's own file (names swapped on the service inside a folder
      // renamed alike): all wait, and the pass breaks the cycle (breakCycle) as for rows (black-box round 39b, F7).
      if (!s.decided.has(mover.documentId) && moversClear(s, mover, self)) return { kind: 'defer' };
      // That document was decided and its file stays there this pass (its own move blocked, a cycle broken at its
      // edit): the file is still its, not one to compare self's document with. Compared, a rotation of three names
      // on the service, in a folder renamed alike with every file saved by `sed -i`, kept two edits both ways as
      // conflict copies (black-box round 39c, C1 cycle3).
      if (s.decided.has(mover.documentId)) return { kind: 'blocked', code: 'path-collision', detail: 'the file there is another synced document\'s, which cannot move on in this pass; retried next pass' };
    }
    if (s.consumedLocal.has(key)) return { kind: 'blocked', code: 'path-collision', detail: 'the local file there is already claimed' };
    return { kind: 'unbased-local', file };
  }
  return { kind: 'free' };
}

/**
 * Does the file `mover` (moved with its folder) find its way to where its document is now: a path with no file, no
 * row and no claim, or one that the file there leaves in turn (a chain of renames of any length in a folder
 * renamed alike: `c -> w`, `b -> c`, `a -> b`), or that comes back to `self`'s own file (a cycle the pass breaks)?
 * Another cycle does not (black-box round 39b, F5: a chain of three was compared with the next document and kept
 * both ways, a duplicate).
 */
function moversClear(s: PassState, mover: BaseEntry, self: BaseEntry | null): boolean {
  const { view, out } = s;
  const seen = new Set<string>();
  let m: BaseEntry | undefined = mover;
  while (m !== undefined && !seen.has(m.documentId)) {
    if (m === self) return true;
    seen.add(m.documentId);
    const to = view.remote.docs.get(m.documentId)?.key;
    if (to === undefined) return false;
    // Claimed by another step of this pass (an edit uploaded where it is, to break a cycle): that mover stays where
    // it is, which the wait makes plain once it is decided (occupancy), instead of comparing self with its file.
    if (out.isClaimed(to)) return true;
    // A row's path: the way goes on with that row where its document moved too (self's own closes a cycle: the
    // files of names swapped or rotated on the service found by their places, after a pass that uploaded one edit
    // where it was, black-box round 39c C1 cycle2 and cycle3, every file saved by `sed -i`).
    const holder = view.baseByKey.get(to);
    if (holder !== undefined) {
      const moved = view.remote.docs.get(holder.documentId);
      if (holder !== self && (moved === undefined || moved.key === holder.key)) return false;
      m = holder;
      continue;
    }
    if (!view.local.files.has(to) || out.releasedBy(to) !== undefined) return true;
    m = view.movingWithFolderAt(to);
  }
  return false;
}

export function collision(s: PassState, relPath: string, detail: string, documentId?: string, code: Issue['code'] = 'path-collision'): void {
  s.out.issue(documentId === undefined ? { relPath, code, detail } : { relPath, documentId, code, detail });
}

/** Both sides hold a path and nothing says how they relate: compare first (conflict), or in upload mode overwrite remotely as a new version. */
export function unbasedPair(s: PassState, file: LocalFile, doc: RemoteDoc): Action {
  s.consumedLocal.add(file.key);
  s.consumedDocs.add(doc.documentId);
  // Upload-only: compared, then the local content goes on top (conflictPolicyFor); an identical file is only
  // recorded, never a second version of the same bytes (black-box round 30b, F3).
  return conflict(file, doc, null, s.ctx, s.out.conflictPathFor(file.relPath));
}

/**
 * A local file that no document stands for (new, or kept after its document was deleted remotely): the
 * steps that give it a document, or the issue saying why it waits. Never a delete. `was` names the base row
 * it used to belong to (its remote fileName is kept when the folder is the same and that name is listed at the
 * file's path).
 */
export function planLocalFile(
  s: PassState,
  file: LocalFile,
  reason: 'new-local' | 'recreate-remote-deleted',
  was: BaseEntry | null,
): { actions: Action[]; issue: Issue | null } {
  const none = (code: Issue['code'], detail: string) => ({ actions: [], issue: { relPath: file.relPath, code, detail } });
  const parentKey = parentOf(file.key);
  if (parentKey === '') return none('root-files-unsupported', 'documents live in folders; files directly in the sync root are not uploaded');
  const atKey = (s.view.docsByKey.get(file.key) ?? []).filter((d) => !s.consumedDocs.has(d.documentId));
  const remoteNew = atKey.find((d) => !s.view.base.has(d.documentId));
  if (remoteNew && !s.out.isClaimed(file.key)) return { actions: [unbasedPair(s, file, remoteNew)], issue: null };
  if (atKey.length > 0) {
    // An upload-only pair, the document renamed on the service to a name where the user made a hard link to its
    // file (`ln x.txt w.txt`, the service's x -> w): the same file under the document's new name, nothing to send
    // (the row stays with the name it has; the rename is an upload-only note). A collision, it was said on every pass
    // with exit 1 (black-box round 39c, N-E).
    if (s.ctx.direction === 'upload' && atKey.every((d) => hardLinkOfOwnFile(s, d, file))) return { actions: [], issue: null };
    // An upload-only pair, a copy made to follow the service's rename (`cp x w`: a new file of the document's synced
    // bytes at its new name) while its own file is untouched at the row's name: the document's file under its new
    // name, its row moves here; the untouched file at the old name is then a new file of the next pass. A file there
    // with other bytes stays a path collision: the link above saved by `sed -i` could be the document's next version,
    // but so reads an unrelated file that only got that name, and taken as one it replaced the document's content
    // (black-box round 43b, F1; 41b, B4 wanted the link's edit taken).
    const renamedRow = s.ctx.direction === 'upload' && atKey.length === 1 ? followedByNewFile(s, atKey[0]!, file) : undefined;
    if (renamedRow !== undefined) return { actions: [conflict(file, atKey[0]!, renamedRow, s.ctx, s.out.conflictPathFor(file.relPath))], issue: null };
    return none('path-collision', 'a synced remote document already uses this path');
  }
  // A folder was replaced by a file of its name (rm -r d; echo > d): uploaded, the document would sit beside
  // the folder, and map back to this path as "d (dup-<id>)", renaming the user's file.
  // planFolders reports it, except in upload mode.
  if (s.view.folderByKey.has(file.key)) return s.ctx.direction === 'upload' ? none('path-collision', FOLDER_NAMED_LIKE_FILE) : { actions: [], issue: null };
  if (s.ctx.direction === 'download') return none('local-change-not-uploaded', newLocalNotUploaded(s.ctx));
  const here = s.view.folderForParentOf(file.key);
  const followed = here === undefined ? followedFolder(s, file) : undefined;
  if (followed !== undefined && 'issue' in followed) return { actions: [], issue: followed.issue };
  const folder = here ?? followed?.folder;
  if (!folder) return none('waiting-for-remote-folder', waitingDetail(s, file));
  // A file that was synced keeps its document's remote name (which its local name may encode: `a／b.txt`, a long
  // name shortened), unless a document of that folder has that name now: a "(dup-<id>)" file whose namesake
  // stayed, or whose own document, still there, took the plain name. Its own local name then, as for any new
  // file, so that it neither waits forever as ambiguous nor lands on the other document. Likewise when that name
  // would list the new document at another path than the file's (a remote rename its base row took while the file
  // stayed, as when a rename cycle is broken at an edited file; a "(dup-<id>)" file whose namesake went): the next
  // pass would move the file there, after this one said "in sync".
  const keepsName = was !== null && was.folderId === folder.folderId && was.key === file.key && !s.view.nameTakenInFolder(folder.folderId, was.fileName)
    && listedAt(s, was.fileName, followed?.to.key ?? file.key);
  const fileName = keepsName ? was.fileName : baseNameOf(file.relPath);
  const step = upload(file, { documentId: null, folderId: folder.folderId, fileName }, reason, null);
  // Into a followed folder: the file goes where its document will be listed in the same step, so that the pass
  // does not end "in sync" with the file still in the folder's old place (black-box round 32b, F3).
  // Not in an upload-only pair, which moves no local file (its synced neighbours stay too): moved, the file left
  // them, and a program writing it again at the user's path met a path collision for ever (black-box round 42c, F1).
  return { actions: [followed === undefined || s.ctx.direction === 'upload' ? step : { ...step, thenMoveTo: followed.to }], issue: null };
}

/** Is `file` another name of synced document d's own file, still at its row's path (a hard link: one inode, both live)? */
function hardLinkOfOwnFile(s: PassState, d: RemoteDoc, file: LocalFile): boolean {
  const row = s.view.base.get(d.documentId);
  const own = row === undefined || s.view.isUnknown(row.key) ? undefined : s.view.local.files.get(row.key);
  return row !== undefined && own !== undefined && own.key !== file.key && sameFile(row, own) && own.inode === file.inode && sameFile(row, file);
}

/**
 * Synced document d's row, when its own file is untouched at the row's path (its inode and its synced bytes: an edit
 * made there is that document's, and stays a collision to resolve) and `file` is another file (another inode) of the
 * same synced bytes: a copy.
 */
function followedByNewFile(s: PassState, d: RemoteDoc, file: LocalFile): BaseEntry | undefined {
  const row = s.view.base.get(d.documentId);
  const own = row === undefined || s.view.isUnknown(row.key) ? undefined : s.view.local.files.get(row.key);
  if (row === undefined || own === undefined || own.key === file.key || !sameFile(row, own) || own.sha256 !== row.sha256 || own.inode === file.inode) return undefined;
  if (file.sha256 === null || file.sha256 !== row.sha256) return undefined;
  // Not along a chain of renames on the service (y -> v, x -> y): the old name is then another synced document's new
  // one, and the file left there, d's own, was taken by the next pass as that document's next version: each got the
  // other's bytes (black-box round 43a, F3). It stays a path collision to resolve.
  if ((s.view.docsByKey.get(row.key) ?? []).some((other) => other.documentId !== d.documentId && s.view.base.has(other.documentId))) return undefined;
  return s.out.isClaimed(row.key) ? undefined : row;
}

/**
 * Whether a document named `fileName`, in the folder of local path `key`, is listed at `key` itself: its name's
 * local form (remote/names.ts) is the last segment of `key`, as path-map places a name no sibling shares.
 */
function listedAt(s: PassState, fileName: string, key: PathKey): boolean {
  const local = localNameFor(fileName);
  return !('error' in local) && pathKey(joinRel(parentOf(key), local.name), s.ctx.caseInsensitive) === key;
}

/**
 * Why a local file with no row would wait for a remote folder (planLocalFile), or null when it would not (or
 * when anything else would decide it first: a document or folder listed at its path). Without side effects.
 */
export function waitingForFolder(s: PassState, file: LocalFile): string | null {
  if (parentOf(file.key) === '' || s.view.docsByKey.has(file.key) || s.view.folderByKey.has(file.key) || s.ctx.direction === 'download') return null;
  if (s.view.folderForParentOf(file.key) !== undefined || followedFolder(s, file) !== undefined) return null;
  return waitingDetail(s, file);
}

/**
 * Why a file waits: the outermost of its folders that has no remote folder (a git work tree's ".git", not each of
 * its hundreds of object folders), so that its files read, and are grouped (issue-groups.ts), as one (round 26, P4).
 */
function waitingDetail(s: PassState, file: LocalFile): string {
  // Keys and paths have the same segments (a key is the path, case-folded on a case-insensitive disk).
  let missing = parentOf(file.relPath);
  let missingKey = parentOf(file.key);
  for (let up = parentOf(missingKey); up !== '' && !s.view.folderByKey.has(up); up = parentOf(up)) {
    missing = parentOf(missing);
    missingKey = up;
  }
  return `${WAITING_PREFIX}"${missing}" yet; the service cannot create folders${twinHint(s, missingKey)}`;
}

/**
 * A remote folder beside the missing one whose name differs from its name only in case or Unicode form (`reports`
 * beside the service's `Reports`, a copy from a case-insensitive disk): named, as the likely home of the files
 * (black-box round 40c: only "waiting" was said). Looked up once per directory and pass.
 */
function twinHint(s: PassState, missingKey: PathKey): string {
  let byView = twinsSeen.get(s.view);
  if (byView === undefined) twinsSeen.set(s.view, (byView = new Map()));
  let hint = byView.get(missingKey);
  if (hint === undefined) {
    const name = looseName(baseNameOf(missingKey));
    const twin = s.view.folders.find((f) => f.key !== missingKey && parentOf(f.key) === parentOf(missingKey) && looseName(baseNameOf(f.key)) === name);
    hint = twin === undefined ? '' : ` (the service has "${twin.relPath}" beside it, a name that differs only in case or Unicode form: move the files there to sync them)`;
    byView.set(missingKey, hint);
  }
  return hint;
}

const twinsSeen = new WeakMap<object, Map<PathKey, string>>();

/**
 * A new local file in a directory whose remote folder was renamed or moved (see ReconcileView.followedFolderKey):
 * the folder it goes into where that folder is now, with the local path the file is moved to once its document
 * exists there (the same name in the folder's new local place), or why it cannot go there. Undefined when no
 * folder was renamed away from here, or the place it moved to has no folder for this file's own directory.
 */
function followedFolder(s: PassState, file: LocalFile): { folder: RemoteFolder; to: { relPath: string; key: PathKey } } | { issue: Issue } | undefined {
  const dir = s.view.followedFolderKey(parentOf(file.key));
  const folder = dir === null ? undefined : s.view.folderByKey.get(dir);
  if (dir === null || folder === undefined) return undefined;
  // The document will be listed at folder/name, and the file moved there: nothing may be there on either side,
  // nor be written there by another step, nor a remote folder be there.
  const target = joinRel(dir, baseNameOf(file.key));
  if (s.view.docsByKey.has(target) || s.view.folderByKey.has(target) || s.view.local.files.has(target) || localEntryInTheWay(s.view, target) !== null || s.out.isClaimed(target)) {
    return { issue: { relPath: file.relPath, code: 'path-collision', detail: `its remote folder is now "${folder.relPath}", where something of this name already is` } };
  }
  // A place the scan could not look at (a symlink or an unreadable directory there) cannot take the file.
  if (s.view.isUnknown(target)) {
    return { issue: { relPath: file.relPath, code: 'unknown-state', detail: `its remote folder is now "${folder.relPath}", and ${unobservedDetail(s.view, target)}` } };
  }
  return { folder, to: { relPath: joinRel(folder.relPath, baseNameOf(file.relPath)), key: target } };
}

/** A remote document with no base row. */
export function planRemoteNew(s: PassState, doc: RemoteDoc): void {
  if (s.consumedDocs.has(doc.documentId)) return;
  if (s.ctx.forgotten?.get(doc.documentId) === doc.versionId) {
    const file = s.view.local.files.get(doc.key);
    // Forgotten under localDeletePolicy 'forget', or while the pair was upload-only: with the pair now restoring
    // local deletes (the policy or the direction changed since), the current setting applies and the file comes
    // back; it stayed forgotten, said in forget's words (black-box round 30b, F7).
    const restoresNow = s.ctx.localDeletePolicy === 'restore' && s.ctx.direction !== 'upload';
    if (file === undefined && !restoresNow) {
      // Deleted locally and unchanged remotely since: stays forgotten.
      s.out.issue({ relPath: doc.relPath, documentId: doc.documentId, code: 'local-delete-not-propagated', detail: 'deleted locally; the service cannot delete documents, so the remote document is kept and not downloaded again until it changes' });
      return;
    }
    if (file !== undefined && recreatedForgotten(s, file, doc)) return;
  }
  if (s.ctx.direction === 'upload') {
    const file = s.view.local.files.get(doc.key);
    const free = file && !s.view.baseByKey.has(doc.key) && !s.consumedLocal.has(doc.key) && !s.view.isUnknown(doc.key);
    if (file && free) commitOrCollide(s, doc.key, [unbasedPair(s, file, doc)], doc);
    // A document only the service has (a colleague's, in a shared binder) is no business of a pair that publishes
    // its folder: informational, so that it does not keep every pass "not in sync" (black-box round 37b, F1).
    else if (file === undefined) collision(s, doc.relPath, 'direction is upload: documents only the service has are not downloaded', doc.documentId, 'upload-only');
    // Nor is one whose path here holds another synced file (a document renamed onto that name on the service, or
    // one this pair forgot): said in the same words' code, not as a change left undone that kept `sync` at exit 1
    // (black-box round 39b, F11).
    else collision(s, doc.relPath, 'direction is upload: documents only the service has are not downloaded (another file is at this path here)', doc.documentId, 'upload-only');
    return;
  }
  const occ = occupancy(s, doc.key, null);
  switch (occ.kind) {
    case 'free':
      commitOrCollide(s, doc.key, [download(doc, null, 'new-remote')], doc, occ.after);
      return;
    case 'unbased-local':
      commitOrCollide(s, doc.key, [unbasedPair(s, occ.file, doc)], doc);
      return;
    case 'defer': // every base entry is decided before new remote docs are planned; cannot happen
      collision(s, doc.relPath, 'the path is held by another synced file', doc.documentId);
      return;
    case 'blocked':
      collision(s, doc.relPath, occ.detail, doc.documentId, occ.code);
      return;
  }
}

/** A base row's stat that no file has: the next scan takes the file as changed and hashes it. */
const NO_FILE_STAT = { size: -1, mtimeMs: 0, inode: 0, ctimeMs: 0 };

/**
 * A file at the path of a document forgotten after its local delete (localDeletePolicy 'forget'), the document
 * unchanged since: the file is that document again (a branch switched back and forth, an editor that saves by
 * delete and create), not a new file colliding with it. With the forgotten content it is simply synced again;
 * with other content it is the document's next version: the base row comes back at the forgotten version (with a
 * stat no file has), and the upload is an edit of it, committed only onto that version. Before, it was a
 * conflict: the old remote content was put back at the path and the new file became a conflict copy, so a git
 * checkout left another branch's content in the working tree (black-box round 29b, finding 1). False when the
 * path is not free for it (the usual planning then applies).
 */
function recreatedForgotten(s: PassState, file: LocalFile, doc: RemoteDoc): boolean {
  if (s.view.baseByKey.has(doc.key) || s.consumedLocal.has(doc.key) || s.view.isUnknown(doc.key) || s.out.isClaimed(doc.key)) return false;
  const forgottenSha = s.ctx.forgottenContent?.get(doc.documentId) ?? null;
  const row = (stat: FileStat, sha256: string): BaseEntry => ({
    documentId: doc.documentId, versionId: doc.versionId, versionLabel: null, folderId: doc.folderId, fileName: doc.fileName,
    relPath: file.relPath, key: file.key, ...stat, sha256,
  });
  const same = file.sha256 !== null && file.sha256 === forgottenSha;
  let actions: Action[];
  if (same) actions = [{ kind: 'adopt', base: row(statOf(file), file.sha256!), reason: 'recreated-forgotten' }];
  else if (s.ctx.direction === 'download') {
    s.out.issue({ relPath: file.relPath, documentId: doc.documentId, code: 'local-change-not-uploaded', detail: `re-created after its document was forgotten, with other content: ${newLocalNotUploaded(s.ctx)}` });
    s.consumedLocal.add(file.key);
    s.consumedDocs.add(doc.documentId);
    return true;
  } else {
    actions = [
      { kind: 'adopt', base: row(NO_FILE_STAT, forgottenSha ?? ''), reason: 'recreated-forgotten' },
      upload(file, { documentId: doc.documentId, folderId: doc.folderId, fileName: doc.fileName }, 'local-modified', doc.documentId),
    ];
  }
  s.consumedLocal.add(file.key);
  s.consumedDocs.add(doc.documentId);
  commitOrCollide(s, doc.key, actions, doc);
  return true;
}

function commitOrCollide(s: PassState, key: PathKey, actions: Action[], doc: RemoteDoc, after?: number): void {
  if (s.out.commit(key, actions, after) === null) collision(s, doc.relPath, 'another change in this pass writes the same path', doc.documentId);
}

/** A local file with no base row and not yet answered by a remote claim. */
export function planLocalNew(s: PassState, file: LocalFile): void {
  if (s.consumedLocal.has(file.key) || s.view.baseByKey.has(file.key) || s.view.isUnknown(file.key)) return;
  const { actions, issue } = planLocalFile(s, file, 'new-local', null);
  if (issue) s.out.issue(issue);
  if (actions.length > 0 && s.out.commit(file.key, actions) === null) collision(s, file.relPath, 'another change in this pass writes the same path');
}

/**
 * Remote folders deleted locally under localDeletePolicy forget: those holding documents forgotten after a
 * local delete (in an earlier pass, or in this one: `rm -r` of a synced folder) and no other document (nor any
 * below), and the folders under them with no document below. Re-created empty, they would undo half of the
 * user's delete.
 */
function forgottenFolders(s: PassState): (key: PathKey) => boolean {
  const forgotten = s.ctx.forgotten ?? new Map<string, string>();
  if (s.ctx.localDeletePolicy !== 'forget' || (forgotten.size === 0 && s.forgetting.size === 0)) return () => false;
  const withForgotten = new Set<PathKey>();
  const live = new Set<PathKey>();
  let indexed = false; // built on first use: most passes have no remote folder missing locally
  return (key) => {
    if (!indexed) {
      indexed = true;
      for (const d of s.view.docs) {
        const gone = (s.forgetting.has(d.documentId) || forgotten.get(d.documentId) === d.versionId) && !s.view.local.files.has(d.key);
        for (let k = parentOf(d.key); k !== ''; k = parentOf(k)) (gone ? withForgotten : live).add(k);
      }
    }
    if (live.has(key)) return false;
    for (let k = key; k !== ''; k = parentOf(k)) if (withForgotten.has(k) && !live.has(k)) return true;
    return false;
  };
}

const FOLDER_NAMED_LIKE_FILE = 'a local file has the name of this remote folder (the service cannot delete or rename folders): rename the file';

/** Remote folders missing locally become local directories (never in upload mode). */
export function planFolders(s: PassState): void {
  if (s.ctx.direction === 'upload') return;
  const forgottenOnly = forgottenFolders(s);
  for (const f of s.view.folders) {
    if (f.key === '' || s.view.local.dirs.has(f.key) || s.view.isUnknown(f.key)) continue;
    const fileHere = s.view.local.files.has(f.key);
    const fileAbove = !fileHere && s.view.ancestorIsFile(f.key);
    // Deleted locally under localDeletePolicy forget: stays deleted (a file in its place is still reported).
    if (!fileHere && !fileAbove && forgottenOnly(f.key)) continue;
    const reason = s.view.hadSyncedFilesUnder(f.key) ? 'restore-local-delete' : 'new-remote-folder';
    const action: Action = { kind: 'mkdir-local', relPath: f.relPath, key: f.key, folderId: f.folderId, reason };
    if (fileHere || fileAbove || s.out.commit(f.key, [action]) === null) {
      collision(s, f.relPath, fileAbove ? 'a local file has the name of a folder above this remote folder' : FOLDER_NAMED_LIKE_FILE);
    }
  }
}
