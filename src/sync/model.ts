// The sync model: the plain data that flows scan -> reconcile -> propagate.
// Everything here is data only (no I/O). Paths are relative to the sync root, '/'-separated, in the
// original bytes used on disk; `key` is the comparison form of a path (see pathKey in sync/path-key.ts).

/** Comparison key of a relative path: NFC, and lower-cased when the local filesystem ignores case. */
export type PathKey = string;

/** What a file looked like on disk: enough to tell "unchanged" without reading it. */
export interface FileStat {
  size: number;
  mtimeMs: number;
  inode: number;
  /**
   * Inode change time. The kernel sets it on every write and every metadata change, and no program can set it
   * back: `cp -p`, `tar x` and `rsync -a --inplace` restore an mtime, and a file written over in place keeps
   * its inode, so a rewrite of the same size under the same mtime shows only here. 0: not known (a row
   * recorded before the state DB kept it, see sameStat).
   */
  ctimeMs: number;
  /**
   * Birth time, where the filesystem reports one (ext4, btrfs, xfs): kept by a rename, new for every new file. It
   * tells a file moved elsewhere from a new file that was handed its inode number (sameFile). Absent or 0: not known.
   */
  bornMs?: number;
}

/** A FileStat from an fs.Stats (or anything with its fields); the birth time only where the filesystem gives one. */
export function fileStatOf(st: { size: number; mtimeMs: number; ino: number; ctimeMs: number; birthtimeMs: number }): FileStat {
  const out: FileStat = { size: st.size, mtimeMs: st.mtimeMs, inode: st.ino, ctimeMs: st.ctimeMs };
  if (st.birthtimeMs > 0) out.bornMs = st.birthtimeMs;
  return out;
}

/**
 * Is `file` the very file `recorded` was: the same inode, and the same birth time where both are known? By its
 * inode alone a new file could pass for a synced file moved there: ext4 hands a freed inode number to the next new
 * file at once, and `sed -i a.txt b.txt` frees a.txt's as it renames its temp file over it, just before it makes
 * b.txt's temp file (black-box round 39b: an upload-only pair followed such a file and put one document's edit
 * into another; a two-way pair planned a conflict, or with a chain of renames a wrong document's version).
 */
export function sameFile(recorded: FileStat, file: FileStat): boolean {
  return recorded.inode !== 0 && file.inode === recorded.inode && (!recorded.bornMs || !file.bornMs || recorded.bornMs === file.bornMs);
}

/**
 * Is `file`, found at another path than the recorded one, the recorded file moved there? Its inode, and its birth
 * time where both are known; where not, its content unchanged too. Without a birth time an inode number says
 * little across `sed -i`, which hands a freed number to the next new file at once (ext4 does, and so does ext2,
 * which keeps no birth time): read as the recorded file, another document's edit went up as this one's version
 * (black-box round 40b, A3). Read.
 */
export function movedSameFile(recorded: FileStat & { sha256: string }, file: FileStat & { sha256: string | null }): boolean {
  return sameFile(recorded, file) && file.sha256 !== null && ((!!recorded.bornMs && !!file.bornMs) || file.sha256 === recorded.sha256);
}

/**
 * Is the file as it was recorded, as far as a stat can tell? Size, mtime, inode and ctime must all be equal.
 * A recorded ctime of 0 (a row from before ctimes were kept) is not compared: the other three decide once, as
 * they did when it was written, and the row takes the file's ctime at the next pass (reconcile's adopt).
 */
export function sameStat(now: FileStat, recorded: FileStat): boolean {
  return (
    now.size === recorded.size &&
    now.mtimeMs === recorded.mtimeMs &&
    now.inode === recorded.inode &&
    (recorded.ctimeMs === 0 || now.ctimeMs === recorded.ctimeMs)
  );
}

/**
 * The local file's time is older than the synced file's: put back from a backup with its times (tar -xp, rsync -a,
 * cp -p), not edited since the sync. Its content may be one of the document's earlier versions, a stale copy and
 * not an edit (the executor's restoredEarlierVersion looks).
 */
export function putBackWithOldTime(local: FileStat, base: FileStat | undefined): boolean {
  return base !== undefined && local.mtimeMs < base.mtimeMs;
}

/**
 * When the file last changed: its ctime, which every write sets to the kernel's clock. Not its mtime, which
 * `tar x`, `cp -p` or `touch -d` set to any date, the future included (a file from another clock would wait
 * until then). A stat without a ctime (0) falls back to the mtime.
 */
export function changedAt(f: FileStat): number {
  return f.ctimeMs > 0 ? f.ctimeMs : f.mtimeMs;
}

/** The stat fields alone (a LocalFile or a BaseEntry carries more). */
export function statOf(f: FileStat): FileStat {
  const out: FileStat = { size: f.size, mtimeMs: f.mtimeMs, inode: f.inode, ctimeMs: f.ctimeMs };
  if (f.bornMs) out.bornMs = f.bornMs;
  return out;
}

/** A local file as observed by the scanner, with its content hash. */
export interface LocalFile extends FileStat {
  relPath: string;
  key: PathKey;
  /**
   * SHA-256 of the content; null when it has not been read yet: a large file without a base row
   * (scanner.ts LAZY_HASH_FROM_BYTES). Its upload hashes what it sends, and a conflict compares the
   * content after hashing it first, so a new 50 GB folder is read once, by its upload, not twice.
   */
  sha256: string | null;
}

/** A path the scanner saw but could not observe (unreadable, symlink, special file...). */
export interface LocalProblem {
  relPath: string;
  key: PathKey;
  reason: 'unreadable' | 'symlink' | 'special-file' | 'name-not-representable' | 'changing';
  detail: string;
}

/** One complete walk of the local root. */
export interface LocalObservation {
  files: Map<PathKey, LocalFile>;
  /** Directories (not the root itself), key -> relPath. */
  dirs: Map<PathKey, string>;
  /**
   * The inode of each directory in `dirs`, where the scan knows it: a directory move (move-dir-local) is planned
   * only for a directory whose inode is known, and the executor moves it only while it is still that directory.
   */
  dirInodes?: Map<PathKey, number>;
  /** Paths whose state is unknown this pass: never treated as deleted. */
  problems: LocalProblem[];
  /**
   * Set by a scan of the whole tree that met no problem and no daemon file: the digest of everything it saw
   * (local/scanner.ts digestLocalTree). What the in-sync mark records so a new process can check the tree
   * without loading the base.
   */
  digest?: string;
}

/** A remote folder (tab) mapped to a local relative directory path. */
export interface RemoteFolder {
  folderId: string;
  name: string;
  parentId: string | null;
  relPath: string;
  key: PathKey;
}

/** A remote document (its latest version) mapped to a local relative path. */
export interface RemoteDoc {
  documentId: string;
  fileName: string;
  folderId: string;
  versionId: string;
  relPath: string;
  key: PathKey;
}

/**
 * The remote side as seen by one complete listing. Only complete listings are ever turned into an
 * observation: a failed or partial listing aborts the pass before reconcile (never "empty").
 */
export interface RemoteObservation {
  /** Every document of the binder, by document id. */
  docs: Map<string, RemoteDoc>;
  /** Every folder of the binder, by folder id. */
  folders: Map<string, RemoteFolder>;
  /** Base documents absent from the listing AND confirmed gone (GET /documents/{id} -> 404 or moved out). */
  gone: Set<string>;
  /** Remote items that exist but cannot be placed locally (reported, never deleted). */
  /** `path`: where it would be (the parent's local path and the remote name), when its parent is placed. */
  /** `ignored`: left out by a local ignore rule (the user's list or a built-in rule), not for a bad name. */
  /** `inconsistent`: not placed for the shape of the listed tree (a folder not listed, listed twice, a cycle), not a name. */
  unmappable: Array<{ documentId?: string; folderId?: string; name: string; reason: string; path?: string; ignored?: boolean; inconsistent?: boolean }>;
}

/** The last state both sides agreed on for one document (Unison's archive). */
export interface BaseEntry extends FileStat {
  documentId: string;
  versionId: string;
  /** Label of versionId when known (used to compute the next label), else null. */
  versionLabel: string | null;
  folderId: string;
  /** Remote file name (may differ from the local basename when the name had to be encoded). */
  fileName: string;
  relPath: string;
  key: PathKey;
  sha256: string;
}

export type Direction = 'both' | 'download' | 'upload';
export type ConflictPolicy = 'keep-both' | 'remote-wins' | 'local-wins';
export type LocalDeletePolicy = 'restore' | 'forget';

/** Everything reconcile needs besides the three observations. Deterministic inputs only. */
export interface ReconcileContext {
  direction: Direction;
  conflictPolicy: ConflictPolicy;
  localDeletePolicy: LocalDeletePolicy;
  caseInsensitive: boolean;
  /** Used in conflict-copy names, e.g. "2026-11-22 001623". Supplied by the caller (no clock inside). */
  conflictTag: string;
  /** Share (0..1] of the base's local files that a pass may trash before it stops; see safety gates. */
  maxDeleteShare: number;
  /** Skip the safety gates (CLI --force). */
  force: boolean;
  /**
   * Documents deleted locally under localDeletePolicy 'forget': documentId -> the remote version that was
   * deleted. Such a document is not downloaded again until its remote version changes.
   */
  forgotten?: ReadonlyMap<string, string>;
  /** The SHA-256 of a forgotten document's content when it was deleted locally, where known (by documentId). */
  forgottenContent?: ReadonlyMap<string, string>;
  /**
   * Why local changes are not uploaded when direction is 'download', for the issues that say so: the config's
   * direction by default; "the API client has read-only access" for a pair set to 'both' that may not write.
   */
  notUploadingBecause?: string;
  /**
   * The pair's ignore rules, for synced files missing from the scan: a path they hide was not looked at, so it
   * is not "deleted" (a deterministic predicate of the config; reconcile stays pure).
   */
  ignoredLocally?: (relPath: string) => boolean;
  /**
   * Local directories (by key) whose synced files an earlier pass moved away after their remote folder (renamed
   * or moved on the service), with that folder's id: where a new file left in one of them goes (followed-folders.ts).
   */
  followedFolders?: ReadonlyMap<PathKey, string>;
  /**
   * Documents whose file this process put back at its path because it was missing locally (restore-local-delete:
   * the base's own version), with that version: a file renamed away here is then known to hold that version or an
   * edit of it (ReconcileView.ownFileByPlace). Kept in the state DB (restored-versions.ts).
   */
  restoredVersions?: ReadonlyMap<string, string>;
  /**
   * Documents this client created that no listing has shown yet (never-listed.ts): one confirmed gone was never
   * made, and its file is uploaded again rather than trashed as deleted on the service.
   */
  neverListed?: ReadonlySet<string>;
  /**
   * Documents whose file an earlier pass found moved into a folder the service does not have yet, by the key where
   * it waits (waiting-moves.ts): still its file there when nothing else tells (every file of the moved folder saved
   * since as a new file, `sed -i *`).
   */
  waitingMoves?: ReadonlyMap<string, WaitingPlace>;
}

/** Where a synced document's file waited at the last pass (waiting-moves.ts), and that file as the scan saw it. */
export interface WaitingPlace {
  key: PathKey;
  /** 0: not known (a record of an older build). */
  inode: number;
  bornMs: number | null;
  sha256: string | null;
  /** The inode of the directory it waits in; 0: not known. */
  dirInode: number;
}

/** How the detail of a file kept in doubt begins (reconcile keptInDoubt): its place is remembered as a waiting one. */
export const IN_DOUBT_PREFIX = 'it waited here as the file of ';

/** How a waiting-for-remote-folder detail begins; the folder named after it is what issue-groups.ts groups by. */
export const WAITING_PREFIX = 'no remote folder for ';

/** The reason the issues of a download-only pass give for a local change left local. */
export function notUploadingBecause(ctx: ReconcileContext): string {
  return ctx.notUploadingBecause ?? 'direction is download';
}

/** The detail of a local file with no document that this pair does not upload (reconcile and the pass say it alike). */
export function newLocalNotUploaded(ctx: ReconcileContext): string {
  return `${notUploadingBecause(ctx)}: local changes are not uploaded`;
}

/** Where an upload goes: a new version of documentId, or a new document when documentId is null. */
export interface UploadTarget {
  documentId: string | null;
  folderId: string;
  fileName: string;
}

/** A synced file that a move-dir-local moves along with its directory. */
export interface DirMoveFile {
  documentId: string;
  from: string;
  to: string;
  toKey: PathKey;
  /** Its document's remote folder and name (unchanged by a folder rename, but recorded as listed). */
  folderId: string;
  fileName: string;
  /** The file as the scan saw it: an unchanged file's base row takes this stat (a rename of its directory keeps it). */
  expectLocal: FileStat;
  /** The scanned hash (the base takes the stat above only when this equals its hash, as for a move-local). */
  sha256: string | null;
}

/**
 * One step of a plan. Steps carry what the planner expected to find, so the executor can refuse to act
 * on a file that changed after the plan was made (`expectLocal`: null means "must not exist").
 */
export type Action =
  | {
      kind: 'download';
      relPath: string;
      key: PathKey;
      doc: RemoteDoc;
      expectLocal: FileStat | null;
      /**
       * 'earlier-version-put-back': a download-only pair's local change whose time is older than the synced
       * file's (putBackWithOldTime): the executor replaces it by the latest only if its content is one of the
       * document's earlier versions (a stale copy restored from a backup), else leaves it (said as not uploaded).
       */
      reason: 'new-remote' | 'remote-modified' | 'restore-local-delete' | 'earlier-version-put-back';
      /** 'earlier-version-put-back': the scanned hash of the file as expectLocal describes it. */
      localSha256?: string;
    }
  | {
      kind: 'upload';
      relPath: string;
      key: PathKey;
      local: LocalFile;
      target: UploadTarget;
      reason: 'new-local' | 'local-modified' | 'recreate-remote-deleted' | 'local-wins';
      /** Base row this upload replaces (null for a new document). */
      replacesBase: string | null;
      /**
       * Where the file goes locally once its document exists: its directory's remote folder was renamed or moved
       * on the service (ReconcileView.followedFolderKey), so the new document is listed there. The executor moves
       * the file there right after the commit (a move-local of the new document, which never overwrites), as the
       * next pass would: the pass ends with both sides in the same place.
       */
      thenMoveTo?: { relPath: string; key: PathKey };
    }
  | {
      kind: 'move-local';
      from: string;
      to: string;
      toKey: PathKey;
      doc: RemoteDoc;
      expectLocal: FileStat;
      /** The scanned hash of the file being moved (the base takes its stat only when this equals its hash). */
      sha256: string | null;
    }
  | {
      /**
       * A local directory whose remote folder was renamed or moved on the service, with everything under it: one
       * rename of the directory instead of a move-local per file (reconcile-dir-moves.ts says when it is planned).
       * A program writing in the folder meanwhile is not split between two directories, and the files keep their
       * inodes. The executor makes `to` itself (never over anything), moves `from` only while it is still the
       * directory of `inode`, then records every file of `files` at its new path in one transaction. The steps
       * after it in its group are one step each for an item at its new path (a content step of a moved file, the
       * upload of a new file that moved along, a remote folder or document new under `to`): independent of one
       * another, they run only once the directory has moved.
       */
      kind: 'move-dir-local';
      from: string;
      fromKey: PathKey;
      to: string;
      toKey: PathKey;
      /** The directory's inode as the scan saw it (LocalObservation.dirInodes). */
      inode: number;
      /** The remote folder now at `to`. */
      folderId: string;
      /** The synced files under `from`, each listed at the same sub-path under `to`. */
      files: DirMoveFile[];
    }
  | {
      kind: 'trash-local';
      relPath: string;
      key: PathKey;
      expectLocal: FileStat;
      documentId: string;
      reason: 'remote-deleted' | 'replaced-by-remote-move';
    }
  | {
      /**
       * Both sides hold content for one path and at least one changed (or there is no base).
       * The executor downloads the remote content to a temp file first: equal content is adopted as
       * base; different content is resolved by `policy`.
       */
      kind: 'conflict';
      relPath: string;
      key: PathKey;
      local: LocalFile;
      doc: RemoteDoc;
      base: BaseEntry | null;
      policy: ConflictPolicy;
      /** Free path for the local copy under keep-both (checked against both sides by the planner). */
      conflictPath: string;
      /** In download-only mode the conflict copy stays local and is not uploaded. */
      uploadConflictCopy: boolean;
      /** In upload-only mode the local file is never replaced, not even by the latest of an earlier version it holds. */
      keepLocal: boolean;
    }
  | {
      kind: 'adopt';
      base: BaseEntry;
      reason: string;
      /**
       * More rows recorded in the same transaction: names swapped alike on both sides move each row onto a key
       * another row still holds, so row by row a crash in between would leave two rows on one key.
       */
      alongside?: BaseEntry[];
    }
  | { kind: 'forget'; documentId: string; relPath: string; reason: 'deleted-both' | 'local-deleted-forget' | 'remote-deleted-kept-local' }
  /** restore-local-delete: synced files lay under this directory, so it went missing locally (see deferFreshDeletes). */
  | { kind: 'mkdir-local'; relPath: string; key: PathKey; folderId: string; reason: 'new-remote-folder' | 'restore-local-delete' };

export type ActionKind = Action['kind'];

/** Something that will not be synced this pass, and why; shown in `status`, never turned into a delete. */
export interface Issue {
  relPath: string;
  documentId?: string;
  code:
    | 'waiting-for-remote-folder'
    | 'root-files-unsupported'
    | 'local-delete-not-propagated'
    | 'local-change-not-uploaded'
    | 'remote-change-not-downloaded'
    /**
     * A remote change (a document only the service has, a new version, a rename) that an upload-only pair does not
     * download, by its configuration: informational, as the pair publishes the local side and nothing is pending.
     */
    | 'upload-only'
    | 'name-not-representable'
    /**
     * A remote item the listing placed under a folder it did not list (or listed twice, or in a cycle): most often
     * a move made while the listing was read. Nothing is done with it this pass; the next listing decides.
     */
    | 'remote-tree-inconsistent'
    /** A remote item that a local ignore rule leaves out: by the user's own choice, so informational. */
    | 'ignored'
    | 'unreadable'
    | 'symlink'
    | 'special-file'
    | 'path-collision'
    | 'ambiguous-remote-name'
    | 'unknown-state'
    /** A file being written while it was scanned: looked at again next pass (informational). */
    | 'changing'
    | 'metadata-missing'
    | 'upload-refused';
  detail: string;
}

export interface Plan {
  /** Ordered groups: actions in one group touch one item and run in order; groups may run in parallel. */
  groups: Action[][];
  issues: Issue[];
  /**
   * Set when a safety gate stopped the pass: `groups` is then empty, and `held` counts the steps it held back
   * by kind (what `status` shows as pending).
   */
  blocked: { code: 'max-delete' | 'local-root-empty' | 'remote-empty'; message: string; held?: Partial<Record<ActionKind, number>> } | null;
}
