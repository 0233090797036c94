// Read-only indexes over reconcile's three inputs (by key, by document, sorted) and the per-entry state
// classification (unchanged / modified / moved / deleted / unknown on each side).
import type {
  BaseEntry,
  LocalFile,
  LocalObservation,
  LocalProblem,
  PathKey,
  RemoteDoc,
  RemoteFolder,
  RemoteObservation,
  WaitingPlace,
} from './model.js';
import { looseName } from './plan-filters.js';
import { cmp } from './reconcile-builder.js';
import { movedSameFile, sameFile, sameStat } from './model.js';
import { baseNameOf, parentOf } from './path-key.js';

export type LocalState = 'unchanged' | 'modified' | 'deleted' | 'unknown';
export type RemoteState = 'unchanged' | 'modified' | 'moved' | 'moved-modified' | 'deleted' | 'unknown';

export class ReconcileView {
  /** Base entries sorted by key, then document id (input Map order never leaks into the plan). */
  readonly bases: BaseEntry[];
  readonly baseByKey = new Map<PathKey, BaseEntry>();
  /** Remote docs sorted by key, then id. */
  readonly docs: RemoteDoc[];
  readonly docsByKey = new Map<PathKey, RemoteDoc[]>();
  readonly folders: RemoteFolder[];
  readonly folderByKey = new Map<PathKey, RemoteFolder>();
  readonly localFiles: LocalFile[];
  private readonly problemKeys: Map<PathKey, LocalProblem>;
  /** Local directory key -> the remote folders the base last saw there (built on first use). */
  private foldersOfBaseDirs: Map<PathKey, Set<string>> | null = null;
  /** Every directory key with a base row somewhere below it (built on first use). */
  private dirsWithBase: Set<PathKey> | null = null;
  /** Remote folder id + loose file name of every document (built on first use). */
  private docsByFolderName: Set<string> | null = null;
  /** Local files with no base row at their key, by their whole path in loose form (built on first use). */
  private unbasedByLoosePath: Map<string, LocalFile[]> | null = null;
  /** Documents listed but not placed locally, by id (built on first use). */
  private unmappableById: Map<string, RemoteObservation['unmappable'][number]> | null = null;
  /** Local files that are a synced document's own file renamed alike on both sides, by key (built on first use). */
  private renamedAlikeByKey: Map<PathKey, BaseEntry> | null = null;
  /** Base rows by the directory key they lie in (built on first use). */
  private rowsByDir: Map<PathKey, BaseEntry[]> | null = null;
  /** Base rows with a birth time, by inode (built on first use). */
  private rowsByInode: Map<number, BaseEntry[]> | null = null;
  /** Local files that are a synced document's own file moved with its folder, to be moved on, by key (first use). */
  private movedWithFolderByKey: Map<PathKey, BaseEntry> | null = null;
  /** Local files no row holds, by inode (built on first use). */
  private unbasedByInode: Map<number, LocalFile[]> | null = null;
  /** The local directories by inode (see waitedKey). */
  private dirsByInode: Map<number, Array<[PathKey, number]>> | null = null;
  /** movedDirPlace's answers, by directory key (built on use). */
  private movedDirPlaces: Map<PathKey, PathKey | null> | null = null;
  /** movedAwayKeys (built on first use). */
  private movedAwayKeySet: Set<PathKey> | null = null;

  constructor(
    readonly base: ReadonlyMap<string, BaseEntry>,
    readonly local: LocalObservation,
    readonly remote: RemoteObservation,
    private readonly ignoredLocally?: (relPath: string) => boolean,
    private readonly followedFolders?: ReadonlyMap<PathKey, string>,
    /** False in an upload-only pair, which follows no remote rename: no file moves on with its folder (movingWithFolderAt). */
    private readonly followsRenames = true,
    /** ReconcileContext.restoredVersions. */
    private readonly restoredVersions?: ReadonlyMap<string, string>,
    /** ReconcileContext.waitingMoves. */
    private readonly waitingMoves?: ReadonlyMap<string, WaitingPlace>,
  ) {
    this.bases = [...base.values()].sort((a, b) => cmp(a.key, b.key) || cmp(a.documentId, b.documentId));
    // Two base rows on one key: a crash between two steps of one group (a row written onto a key that another
    // row was to leave in a later step: a rename cycle broken in one group). The key is the row's whose file is
    // there (its inode), else the one whose document is listed there, else the first by id; reconcile plans the
    // other as having no file there, or reports a collision when its document is listed there too.
    for (const b of this.bases) {
      const held = this.baseByKey.get(b.key);
      if (held === undefined || this.claimOnKey(b) > this.claimOnKey(held)) this.baseByKey.set(b.key, b);
    }
    this.docs = [...remote.docs.values()].sort((a, b) => cmp(a.key, b.key) || cmp(a.documentId, b.documentId));
    for (const d of this.docs) {
      const list = this.docsByKey.get(d.key) ?? [];
      list.push(d);
      this.docsByKey.set(d.key, list);
    }
    this.folders = [...remote.folders.values()].sort((a, b) => cmp(a.key, b.key) || cmp(a.folderId, b.folderId));
    for (const f of this.folders) if (!this.folderByKey.has(f.key)) this.folderByKey.set(f.key, f);
    this.localFiles = [...local.files.values()].sort((a, b) => cmp(a.key, b.key));
    this.problemKeys = new Map(local.problems.map((p) => [p.key, p]));
  }

  /** How strongly row b holds its key (see the constructor): 2 its file is there, 1 its document is listed there. */
  private claimOnKey(b: BaseEntry): number {
    if (this.atOwnPath(b)) return 2;
    return this.remote.docs.get(b.documentId)?.key === b.key ? 1 : 0;
  }

  /** A synced file that an ignore rule hides from the scan (so its local state is unknown). */
  hiddenByIgnore(b: BaseEntry): boolean {
    return !this.local.files.has(b.key) && this.ignoredLocally?.(b.relPath) === true;
  }

  /** Why a listed document could not be placed locally (an ignore rule, a bad name), if it could not. */
  unmappableDoc(documentId: string): RemoteObservation['unmappable'][number] | undefined {
    if (this.unmappableById === null) {
      this.unmappableById = new Map();
      for (const u of this.remote.unmappable) if (u.documentId !== undefined) this.unmappableById.set(u.documentId, u);
    }
    return this.unmappableById.get(documentId);
  }

  /** Unknown when the key itself or any ancestor directory could not be observed this pass. */
  isUnknown(key: PathKey): boolean {
    return this.problemAt(key) !== undefined;
  }

  /** The scan's problem at key or at its nearest ancestor that has one (what makes the key unknown). */
  problemAt(key: PathKey): LocalProblem | undefined {
    for (let k = key; k !== ''; k = parentOf(k)) {
      const p = this.problemKeys.get(k);
      if (p !== undefined) return p;
    }
    return undefined;
  }

  /** A local file sits where this key needs a directory (some ancestor of key is a file). */
  ancestorIsFile(key: PathKey): boolean {
    for (let k = parentOf(key); k !== ''; k = parentOf(k)) if (this.local.files.has(k)) return true;
    return false;
  }

  /** The remote folder a new document at relative key `key` would go into ('' parent = the sync root). */
  folderForParentOf(key: PathKey): RemoteFolder | undefined {
    return this.folderByKey.get(parentOf(key));
  }

  /**
   * Where a remote folder that was renamed or moved now lives, for a local directory it left behind: `dirKey`
   * (or its nearest ancestor that does) has no remote folder any more, the base saw exactly one remote folder
   * there, and that folder exists now at another key. Returns the directory's key translated into the
   * folder's new place (`B/sub` -> `B renamed/sub` when folder B was renamed). Null when nothing says so.
   * New local files in such a directory are uploaded into the folder where it now is, instead of waiting
   * forever for a folder the service cannot create, and moved there locally right after (the upload's thenMoveTo).
   */
  followedFolderKey(dirKey: PathKey): PathKey | null {
    this.foldersOfBaseDirs ??= this.indexBaseDirs();
    for (let k = dirKey; k !== ''; k = parentOf(k)) {
      if (this.folderByKey.has(k)) return null; // a folder is there: the path is not stranded from here up
      const ids = this.foldersOfBaseDirs.get(k);
      if (ids === undefined) continue;
      if (ids.size !== 1) return null;
      const folder = this.remote.folders.get([...ids][0]!);
      if (folder === undefined || folder.key === k) return null;
      // The directory itself moved there too (its synced files, by their inodes, are in the folder's new place): a
      // directory here now is a new one, whose files wait for a folder of their own. Followed, a new file in it was
      // said as colliding with the moved file of its name (black-box round 38b, F5a).
      if (this.movedAlongFrom(k)) return null;
      return folder.key + dirKey.slice(k.length);
    }
    return null;
  }

  /** Whether a synced file of directory `dirKey` (its inode) is found where its folder or its document is now. */
  private movedAlongFrom(dirKey: PathKey): boolean {
    this.rowsByDir ??= this.indexRowsByDir();
    return (this.rowsByDir.get(dirKey) ?? []).some((b) => this.ownFileMovedWithFolder(b) !== undefined || this.ownFileRenamedAlike(b) !== undefined);
  }

  private indexRowsByDir(): Map<PathKey, BaseEntry[]> {
    return groupBy(this.bases, (b) => parentOf(b.key));
  }

  /**
   * Does a remote document in folder `folderId` have the name `fileName`, exactly or but for case or Unicode
   * form (as a commit by name might match it: plan-filters.ts looseName)?
   */
  nameTakenInFolder(folderId: string, fileName: string): boolean {
    const nameKey = (folder: string, name: string) => `${folder}\u0000${looseName(name)}`;
    this.docsByFolderName ??= new Set(this.docs.map((d) => nameKey(d.folderId, d.fileName)));
    return this.docsByFolderName.has(nameKey(folderId, fileName));
  }

  /** Is b's own file (model.ts sameFile) still at b's path? */
  private atOwnPath(b: BaseEntry): boolean {
    const file = this.local.files.get(b.key);
    return file !== undefined && sameFile(b, file);
  }

  /**
   * b's own file (its inode), renamed locally to a path that differs from its document's new remote path only in
   * case or Unicode form (`file.txt` became `File.txt` here and `FILE.txt` on the service; a folder likewise). A
   * local rename cannot be sent, and the two names cannot both be documents of one folder on a service that
   * compares names loosely (plan-filters.ts withheldForAmbiguousNames): uploaded as a new document, the file
   * waited forever. Undefined when there is no such file (an inode of 0 says nothing).
   */
  ownFileRenamedLoosely(b: BaseEntry, doc: RemoteDoc): LocalFile | undefined {
    if (b.inode === 0) return undefined;
    if (this.unbasedByLoosePath === null) {
      this.unbasedByLoosePath = groupBy(this.localFiles, (f) => (this.baseByKey.has(f.key) ? undefined : looseName(f.relPath)));
    }
    return this.unbasedByLoosePath.get(looseName(doc.relPath))?.find((f) => movedSameFile(b, f) && f.key !== doc.key);
  }

  /**
   * b's own file (its inode, read) under its folder's new place with its old name: the local directory moved
   * with the folder (by a directory move whose rows and intent a crash lost, or by the user renaming it alike)
   * while the document itself was renamed or moved on the service too. The file is then b's, followed to the
   * document's new path; read as a new file, it was uploaded as a second document beside the renamed one's
   * download (crash-sim soak, seeds 605684698 and 2004505021). Undefined when none, or when a row holds that path.
   */
  ownFileMovedWithFolder(b: BaseEntry): LocalFile | undefined {
    const there = this.fileAtFolderPlace(b);
    if (there !== undefined && (movedSameFile(b, there) || this.waitedFileByInode(b) === there)) return there;
    // Or the file an earlier pass found waiting there as b's (moved here before the service had the folder), saved
    // since as a new file: where the folder now is, under b's name (black-box round 41b, B3). A place, not an inode:
    // refused where another document listed there owns it, a cycle of such places among them (the files swapped
    // here too, or not: nothing tells). Taken, each document of names swapped alike got the other's edit (black-box
    // round 42a, FAIL 1).
    const waited = this.waitedPlaceOf(b);
    return waited !== undefined && !this.placeHeldByOthers(b, waited.key, new Set([b.documentId])) ? waited : undefined;
  }

  /**
   * The file at b's waited place (waitedKey) that ownFileMovedWithFolder refuses because a document listed there now
   * owns that place (a cycle of such places: names swapped on the service, the waiting files saved by `sed -i`):
   * b's, or the other's if the user swapped them here too, nothing tells. Undefined when there is none.
   */
  waitedPlaceInDoubt(b: BaseEntry): LocalFile | undefined {
    const key = this.waitedKey(b);
    const there = key === undefined ? undefined : this.waitedFileAt(b, key);
    return there !== undefined && this.placeHeldByOthers(b, there.key, new Set([b.documentId])) ? there : undefined;
  }

  /** The file at `key`, a place b's file waited at, where it can be b's: read, at no row's path, no other row's file. */
  private waitedFileAt(b: BaseEntry, key: PathKey): LocalFile | undefined {
    if (key === b.key || this.baseByKey.has(key) || this.isUnknown(key)) return undefined;
    const there = this.local.files.get(key);
    return there === undefined || there.sha256 === null || this.isRowsFile(there, b) ? undefined : there;
  }

  /** The local files at paths no row holds, by inode. */
  private groupUnbasedByInode(): Map<number, LocalFile[]> {
    return groupBy(this.localFiles, (f) => (f.inode === 0 || this.baseByKey.has(f.key) ? undefined : f.inode));
  }

  /** The file at b's name in its folder's new place (none where a row holds that path or it is b's own path). */
  private fileAtFolderPlace(b: BaseEntry): LocalFile | undefined {
    const folder = this.remote.folders.get(b.folderId);
    if (b.inode === 0 || folder === undefined || folder.key === '') return undefined;
    const key = `${folder.key}/${baseNameOf(b.key)}`;
    if (key === b.key || this.baseByKey.has(key) || this.isUnknown(key)) return undefined;
    return this.local.files.get(key);
  }

  /** The file at b's name in its folder's new place, where an earlier pass found b's file waiting (waitingMoves). */
  private waitedPlaceOf(b: BaseEntry): LocalFile | undefined {
    const there = this.fileAtFolderPlace(b);
    return there !== undefined && this.waitedKey(b) === there.key ? this.waitedFileAt(b, there.key) : undefined;
  }

  /**
   * Where an earlier pass found b's file waiting (waitingMoves), followed with its directory: the directory gone from
   * that path and one directory of its inode elsewhere (renamed since), the same name in it. A `sed -i` of every file
   * there and the folder's next rename, seen by one pass (a script), left neither the files' inodes nor the path, and
   * the rows were forgotten: adopted by path after the service's renames, one document got another's edit (black-box
   * round 43a, F1). Undefined when no file of b's waited.
   */
  private waitedKey(b: BaseEntry): PathKey | undefined {
    const was = this.waitingMoves?.get(b.documentId);
    if (was === undefined) return undefined;
    const dir = parentOf(was.key);
    const inodes = this.local.dirInodes;
    // Its directory still there (whatever its inode now), or not known: the place as recorded.
    if (was.dirInode === 0 || dir === '' || inodes === undefined || this.local.dirs.has(dir)) return was.key;
    this.dirsByInode ??= groupBy(inodes, ([, inode]) => (inode === 0 ? undefined : inode));
    const now = this.dirsByInode.get(was.dirInode) ?? [];
    return now.length === 1 ? `${now[0]![0]}/${baseNameOf(was.key)}` : was.key;
  }

  /**
   * The synced document whose own file, moved with its folder (ownFileMovedWithFolder), sits at `key` and is to move
   * on to where its document is now (renamed on the service too): a file that leaves this path in this pass.
   */
  movingWithFolderAt(key: PathKey): BaseEntry | undefined {
    if (this.movedWithFolderByKey === null) {
      this.movedWithFolderByKey = new Map();
      for (const b of this.followsRenames ? this.bases : []) {
        if (this.isUnknown(b.key)) continue;
        // By its inode, or by its place (saved by `sed -i` since: round 38c, M4). A file still at b's path is b's,
        // unless it is the copy a pass restored there, which the file at the folder's new place supersedes (the
        // rename made here first: black-box round 39b, F6).
        const own = this.atOwnPath(b) ? this.ownFileByPlace(b) : (this.ownFileMovedWithFolder(b) ?? this.ownFileByPlace(b));
        const doc = this.remote.docs.get(b.documentId);
        if (own !== undefined && doc !== undefined && doc.key !== own.key && !this.movedWithFolderByKey.has(own.key)) this.movedWithFolderByKey.set(own.key, b);
      }
    }
    return this.movedWithFolderByKey.get(key);
  }

  /**
   * b's file recognised by its place, not its inode: b's folder was renamed or moved on the service, b's old
   * directory is gone here, and a file of b's name sits in the folder's new place with no row and no other document
   * listed there. The directory was renamed alike on both sides, and the file saved since by an editor that writes
   * a new file (`sed -i`, vim's rename of a backup): read as a stranger's, its edit became a keep-both conflict copy,
   * or a second document when the document was renamed too (black-box round 37c, F2). Compared with its base, an
   * edit at worst, as with the inode rule: the document's content stays in its version history. (Another synced
   * file's inode there says nothing: `sed -i` on several files hands each freed inode to the next one's new file.)
   * Not while b's old path or directory is there: a copy the daemon restored there meanwhile (the rename made here
   * first) may have taken a colleague's newer version since, which the file at the new place never saw: compared as
   * b's edit, it went up over that version with no conflict (black-box round 38b, F1). Unless that copy is the one
   * a pass restored (restored-versions.ts), unchanged, and b is still at the version it restored (the base's own version when the
   * file went missing: the version the file renamed away holds or was edited from): with the daemon running, the
   * common order of events (the rename made here, then on the service) made every edit a conflict copy (round 38c).
   * Undefined when none.
   */
  ownFileByPlace(b: BaseEntry): LocalFile | undefined {
    const there = this.placeOf(b);
    if (there === undefined) return undefined;
    // Another document listed there is that file's owner, unless its own file is found elsewhere (a chain of
    // renames in a folder renamed alike: `y -> w`, `x -> y` on the service, x's file at x.txt, y's saved by
    // `sed -i` at y.txt): y's edit became a conflict copy, w.txt stayed at y's original (black-box round 38c, M4).
    return this.placeHeldByOthers(b, there.key, new Set([b.documentId])) ? undefined : there;
  }

  /**
   * Is a document other than b listed at `key` that owns the file there: one whose own file is not found elsewhere
   * (ownFileElsewhere). `claimants`: the documents whose places this look came through.
   */
  private placeHeldByOthers(b: BaseEntry, key: PathKey, claimants: ReadonlySet<string>): boolean {
    return (this.docsByKey.get(key) ?? []).some((d) => d.documentId !== b.documentId && !this.ownFileElsewhere(d, key, claimants));
  }

  /** The file of b's name in its folder's new place, where b's old path and directory are gone (see ownFileByPlace). */
  private placeOf(b: BaseEntry): LocalFile | undefined {
    const folder = this.remote.folders.get(b.folderId);
    if (folder === undefined || folder.key === '' || folder.key === parentOf(b.key)) return undefined;
    const copy = this.local.files.get(b.key);
    const state = this.localState(b);
    const restored = this.restoredVersions?.get(b.documentId) === b.versionId;
    const restoredCopy = restored && copy !== undefined && sameFile(b, copy) && state === 'unchanged';
    // That copy gone, b still at the version restored: trashed by the pass that took this file, which stopped before
    // its upload was recorded (a crash): the old directory it leaves says nothing (black-box round 39b, F9).
    const restoredGone = restored && copy === undefined && state === 'deleted';
    // The old directory still there says nothing in an upload-only pair, which restores nothing into it: b's file
    // moved alone into the folder's new place (`mkdir G; mv F/x G/`, the service's F -> G) and saved by `sed -i`
    // since was "no longer synced" and a path collision, one pass before the file was compared with b's document
    // all the same (black-box round 39b, F10, case E).
    const oldDirSays = this.followsRenames && this.local.dirs.has(parentOf(b.key));
    if (!restoredCopy && !restoredGone && (state !== 'deleted' || oldDirSays || copy !== undefined)) return undefined;
    const key = `${folder.key}/${baseNameOf(b.key)}`;
    if (this.baseByKey.has(key) || this.isUnknown(key)) return undefined;
    const there = this.local.files.get(key);
    if (there === undefined || there.sha256 === null) return undefined;
    // Another synced file by its inode and its birth time (a rename keeps both: names swapped alike on both sides):
    // that file's, not b's. Its inode alone says nothing here (`sed -i` hands freed inode numbers on), so a row
    // without a birth time does not refuse it (black-box round 39c, N-A: an upload-only pair gave b's name to the
    // other document's file, and each document got the other's content).
    return this.anotherRowsFile(b, there) ? undefined : there;
  }

  /**
   * b's file by elimination where names were swapped (or rotated) alike on both sides in a folder renamed alike, and
   * b's file saved since by `sed -i` (another inode): the row of b's folder whose name is that of b's document now
   * has its own file found, by its inode, at its own document's new path, and the file left at b's document's
   * path is no synced file (by inode) and held by no row. What else the swap left there; at worst a new file becomes
   * b's next version, its content in the history, as with the place rule. Undefined when none.
   */
  ownFileLeftBySwap(b: BaseEntry, doc: RemoteDoc): LocalFile | undefined {
    const folder = this.remote.folders.get(b.folderId);
    if (folder === undefined || folder.key === '' || folder.key !== parentOf(doc.key)) return undefined;
    const there = this.local.files.get(doc.key);
    if (there === undefined || there.sha256 === null || this.baseByKey.has(doc.key) || this.isUnknown(doc.key)) return undefined;
    this.rowsByDir ??= this.indexRowsByDir();
    const siblings = this.rowsByDir.get(parentOf(b.key)) ?? [];
    const left = siblings.find((o) => o !== b && o.folderId === b.folderId && baseNameOf(o.key) === baseNameOf(doc.key));
    const itsFile = left === undefined ? undefined : this.ownFileRenamedAlike(left);
    if (itsFile === undefined || itsFile.key === doc.key) return undefined;
    return this.isRowsFile(there) ? undefined : there;
  }

  /** Is `file` a row's own file (other than `except`) by inode, and birth time where both are known (sameFile)? */
  isRowsFile(file: LocalFile, except?: BaseEntry): boolean {
    return this.bases.some((o) => o !== except && sameFile(o, file));
  }

  /**
   * Is `file` a row's own file (other than `except`) holding that row's last synced bytes? Then its bytes say
   * nothing of a swap: two documents with the same content (a template copied twice, two empty files) each hold
   * the other's bytes too (black-box round 41b, B2).
   */
  isRowsUnchangedFile(file: LocalFile, except?: BaseEntry): boolean {
    return file.sha256 !== null && this.bases.some((o) => o !== except && o.sha256 === file.sha256 && sameFile(o, file));
  }

  /** Is `file` another row's own file, by inode and birth time both (model.ts sameFile, with the birth times known)? */
  private anotherRowsFile(b: BaseEntry, file: LocalFile): boolean {
    if (!file.bornMs) return false;
    this.rowsByInode ??= groupBy(this.bases, (row) => (row.bornMs ? row.inode : undefined));
    return (this.rowsByInode.get(file.inode) ?? []).some((row) => row !== b && row.bornMs === file.bornMs);
  }

  /**
   * b's own file moved by the user to a path no row holds: same inode and birth time, read; where the filesystem
   * keeps no birth time, also b's content (a moved file keeps it, while a new file handed a freed inode number
   * most often does not). Undefined when none.
   */
  ownFileMovedAway(b: BaseEntry): LocalFile | undefined {
    if (b.inode === 0) return undefined;
    this.unbasedByInode ??= this.groupUnbasedByInode();
    const found = (this.unbasedByInode.get(b.inode) ?? []).filter((f) => movedSameFile(b, f));
    // Two of them (hard links made since): neither is told from the other.
    return found.length === 1 ? found[0] : undefined;
  }

  /**
   * b's file by its place where the user moved its directory: b's old directory is gone here, and the other synced
   * files of that directory that are found by their inodes (ownFileMovedAway) all went to one directory, where a
   * file of b's name no row holds and no other row's file (inode and birth time) is: b's file, saved since by an
   * editor that writes a new file (`sed -i`). Undefined when none, or when nothing says where the directory went.
   */
  ownFileMovedAwayByPlace(b: BaseEntry): LocalFile | undefined {
    const dir = parentOf(b.key);
    if (dir === '' || this.local.dirs.has(dir) || this.local.files.has(b.key)) return undefined;
    const place = this.movedDirPlace(dir);
    const key = place === null ? undefined : `${place}/${baseNameOf(b.key)}`;
    const there = key === undefined || this.baseByKey.has(key) || this.isUnknown(key) ? undefined : this.local.files.get(key);
    if (there === undefined || there.sha256 === null || this.anotherRowsFile(b, there)) return undefined;
    const byInode = this.ownFileMovedAway(b);
    return this.movedAwayKeys().has(there.key) && byInode?.key !== there.key ? undefined : there;
  }

  /**
   * b's file where an earlier pass found it waiting for a folder the service does not have (ReconcileContext.
   * waitingMoves), with nothing at b's own path: the file there, unless another row holds that path or it is
   * another row's own file. Every file of a moved folder saved since by `sed -i` leaves no inode to find them by,
   * and no sibling to tell the folder's place: the rows were forgotten, and when the service renamed the folder
   * alike with renames inside, one document got another's edit (black-box round 41b, B3).
   */
  ownFileWaitingAt(b: BaseEntry): LocalFile | undefined {
    const was = this.waitingMoves?.get(b.documentId);
    if (was === undefined || this.local.files.has(b.key)) return undefined;
    const moved = this.waitedFileByInode(b);
    if (moved !== undefined) return moved;
    const there = this.waitedFileAt(b, this.waitedKey(b) ?? was.key);
    return there === undefined || this.movedAwayKeys().has(there.key) ? undefined : there;
  }

  /**
   * The file an earlier pass found waiting as b's (waitingMoves), by the inode it had then and its birth time (where
   * not known, its content then), wherever it is now at a path no row holds: moved on since, as when the user
   * renames the folder again during the wait (black-box round 42b, F1). Undefined when none, or not one only.
   */
  private waitedFileByInode(b: BaseEntry): LocalFile | undefined {
    const was = this.waitingMoves?.get(b.documentId);
    if (was === undefined || was.inode === 0) return undefined;
    this.unbasedByInode ??= this.groupUnbasedByInode();
    const found = (this.unbasedByInode.get(was.inode) ?? []).filter(
      (f) => f.sha256 !== null && (was.bornMs !== null && f.bornMs ? f.bornMs === was.bornMs : f.sha256 === was.sha256),
    );
    return found.length === 1 && !this.isRowsFile(found[0]!, b) ? found[0] : undefined;
  }

  /** Where the synced files of directory `dir` found by their inodes went, when all went to one directory. */
  private movedDirPlace(dir: PathKey): PathKey | null {
    this.movedDirPlaces ??= new Map();
    let place = this.movedDirPlaces.get(dir);
    if (place === undefined) {
      this.rowsByDir ??= this.indexRowsByDir();
      const places = new Set<PathKey>();
      for (const row of this.rowsByDir.get(dir) ?? []) {
        const moved = this.ownFileMovedAway(row);
        if (moved !== undefined) places.add(parentOf(moved.key));
      }
      place = places.size === 1 ? [...places][0]! : null;
      this.movedDirPlaces.set(dir, place);
    }
    return place;
  }

  /** Keys of the files that are a row's own file moved away (ownFileMovedAway). */
  private movedAwayKeys(): Set<PathKey> {
    if (this.movedAwayKeySet === null) {
      this.movedAwayKeySet = new Set();
      for (const row of this.bases) {
        const moved = this.ownFileMovedAway(row);
        if (moved !== undefined) this.movedAwayKeySet.add(moved.key);
      }
    }
    return this.movedAwayKeySet;
  }

  /**
   * Is synced document d's own file found somewhere other than `key`: at its row's path or moved with its folder, by
   * inode; or by its place, where that place is not itself another's (placeHeldByOthers). A way of places that comes
   * back to a document it came through is a cycle, which no place tells: names swapped or rotated inside a folder
   * renamed alike, every file saved by `sed -i` since, read the same whether the user made the swap here too or not.
   * Taken by their places, each document got the other's edit as its version when the user had (black-box round
   * 40b, A6/A7); refused, the files are kept both ways (a conflict copy), as nothing tells whose each one is.
   */
  private ownFileElsewhere(d: RemoteDoc, key: PathKey, claimants: ReadonlySet<string> = new Set()): boolean {
    const row = this.base.get(d.documentId);
    if (row === undefined) return false;
    const moved = this.fileAtFolderPlace(row);
    const byInode = (this.atOwnPath(row) ? this.local.files.get(row.key) : undefined) ?? (moved !== undefined && movedSameFile(row, moved) ? moved : undefined) ?? this.waitedFileByInode(row);
    if (byInode !== undefined) return byInode.key !== key;
    if (claimants.has(d.documentId)) return false;
    const place = this.placeOf(row) ?? this.waitedPlaceOf(row);
    if (place === undefined || place.key === key) return false;
    return !this.placeHeldByOthers(row, place.key, new Set([...claimants, d.documentId]));
  }

  /**
   * b's own file at its document's new path, where the user renamed it too (the same rename on both sides): the
   * file there has b's inode and was read, b's old path no longer holds that inode, and the row at the new path
   * (if any) had another. Undefined when none.
   * Inode numbers are reused, so a new file that got a deleted synced file's inode reads as that document's file:
   * compared with its base, an edit at worst, which loses nothing (the remote content stays in its history).
   */
  ownFileRenamedAlike(b: BaseEntry): LocalFile | undefined {
    const doc = this.remote.docs.get(b.documentId);
    return doc !== undefined && this.renamedAlikeAt(doc.key) === b ? this.local.files.get(doc.key) : undefined;
  }

  /** The synced document whose own file, renamed alike, sits at `key` (see ownFileRenamedAlike). */
  renamedAlikeAt(key: PathKey): BaseEntry | undefined {
    if (this.renamedAlikeByKey === null) {
      this.renamedAlikeByKey = new Map();
      // Also in an upload-only pair: a rename made alike on both sides moves nothing, the row just follows the file.
      for (const b of this.bases) {
        const doc = this.remote.docs.get(b.documentId);
        // b's old path must have been looked at: a file the scan could not see there may still be b's.
        if (doc === undefined || doc.key === b.key || b.inode === 0 || this.isUnknown(b.key) || this.atOwnPath(b)) continue;
        const there = this.local.files.get(doc.key);
        // By b's inode, or by the inode its file had when a pass found it waiting for a folder (saved by `sed -i`
        // since the sync, then moved on: black-box round 43a, F2, where both were kept as conflicts).
        if (there === undefined || !(movedSameFile(b, there) || this.waitedFileByInode(b) === there) || this.renamedAlikeByKey.has(doc.key)) continue;
        // An inode both rows had (hard links, a reused number): the file is the one of the row at its path.
        const held = this.baseByKey.get(doc.key);
        if (held === undefined || !sameFile(held, there)) this.renamedAlikeByKey.set(doc.key, b);
      }
    }
    return this.renamedAlikeByKey.get(key);
  }

  /** Did synced files lie under this directory? Then a remote folder missing here was removed locally. */
  hadSyncedFilesUnder(dirKey: PathKey): boolean {
    if (this.dirsWithBase === null) {
      this.dirsWithBase = new Set();
      for (const b of this.bases) {
        for (let d = parentOf(b.key); d !== '' && !this.dirsWithBase.has(d); d = parentOf(d)) this.dirsWithBase.add(d);
      }
    }
    return this.dirsWithBase.has(dirKey);
  }

  private indexBaseDirs(): Map<PathKey, Set<string>> {
    const out = new Map<PathKey, Set<string>>();
    for (const b of this.bases) {
      const dir = parentOf(b.key);
      const ids = out.get(dir) ?? new Set<string>();
      ids.add(b.folderId);
      out.set(dir, ids);
    }
    // A directory no synced file is left in, but that an earlier pass followed to its folder's new place.
    for (const [dir, folderId] of this.followedFolders ?? []) if (!out.has(dir)) out.set(dir, new Set([folderId]));
    return out;
  }

  /** Every key that exists on either side: a conflict copy must avoid all of them. */
  takenKeys(): Set<PathKey> {
    const keys = new Set<PathKey>([...this.local.files.keys(), ...this.local.dirs.keys(), ...this.problemKeys.keys()]);
    for (const d of this.docs) keys.add(d.key);
    for (const f of this.folders) keys.add(f.key);
    return keys;
  }

  localState(b: BaseEntry): LocalState {
    if (this.isUnknown(b.key)) return 'unknown';
    // Another row holds the key (two rows on one key, see the constructor): the file there is that row's.
    if (this.baseByKey.get(b.key) !== b) return 'deleted';
    const file = this.local.files.get(b.key);
    // Not in the scan because an ignore rule hides it (added after the file was synced): not looked at, so
    // unknown. Read as deleted, a remote rename or delete in that time would be lost when the rule goes.
    if (!file) return this.hiddenByIgnore(b) ? 'unknown' : 'deleted';
    // Another synced document's own file, renamed here alike on both sides (mv a b; mv c a, and the same renames
    // on the service): not this document's content. Read as its edit, that file became this document's next
    // version or its conflict copy, a second document of bytes the service has (soak seeds 878923488, -713498096).
    const other = this.renamedAlikeAt(b.key);
    if (other !== undefined && other !== b && !sameFile(b, file)) return 'deleted';
    return this.contentState(b, file);
  }

  /** Is `file` (b's own, wherever it is now) b's content? */
  contentState(b: BaseEntry, file: LocalFile): 'unchanged' | 'modified' {
    // A file the scan did not read (sha256 null: a large file it had no hash for) is unchanged when its stat is
    // the base's, the trust the scanner gives every file it does not re-hash: its upload just made that base.
    if (file.sha256 === null) return sameStat(file, b) ? 'unchanged' : 'modified';
    return file.sha256 === b.sha256 ? 'unchanged' : 'modified';
  }

  remoteState(b: BaseEntry): RemoteState {
    const doc = this.remote.docs.get(b.documentId);
    if (!doc) return this.remote.gone.has(b.documentId) ? 'deleted' : 'unknown';
    const moved = doc.key !== b.key;
    const modified = doc.versionId !== b.versionId;
    if (moved) return modified ? 'moved-modified' : 'moved';
    return modified ? 'modified' : 'unchanged';
  }
}

/** `items` by `keyOf`, each group in the items' order; an item whose key is undefined is left out. */
function groupBy<T, K>(items: Iterable<T>, keyOf: (item: T) => K | undefined): Map<K, T[]> {
  const out = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    if (key === undefined) continue;
    const list = out.get(key);
    if (list) list.push(item);
    else out.set(key, [item]);
  }
  return out;
}
