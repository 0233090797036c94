// Downloads that failed because the local file could not be put in place: an immutable or append-only file
// (chattr +i / +a), a folder that refuses the rename, a read-only mount. The failure comes only at the end, after
// the whole version was fetched, hashed and fsynced, and it fails the same way every pass: a 1 GiB immutable file
// was fetched again every poll, for as long as the attribute stayed (black-box round 28a, T2). Such a download is
// held back, with an issue, until the local file changes (`chattr -i` changes its ctime), the document gets
// another version, or a hold that doubles with each failure (10 min up to 6 h) runs out. When its folder was what
// refused (EACCES, EROFS; EPERM while the folder refuses writing: immutable), the hold also ends once that folder
// changes and lets this process write (chmod, chown, an ACL, chattr -i, a read-write remount): black-box round
// 32a, F2, where `chmod 755` of the folder the message pointed at left the download held for 10 min. The daemon
// rescans the folders of held files every pass (a watcher does not report an attribute change), so their plans,
// and this check, are made again at each poll. Kept in this process only: a `binder-sync sync` tries once per
// run, like any failed step.
import fs from 'node:fs';
import path from 'node:path';
import type { ActionFailure } from './executor.js';
import type { Action, FileStat, Issue, Plan } from './model.js';
import { parentOf } from './path-key.js';
import { keepItems } from './plan-filters.js';

/** errno of a local step that will fail again the same way until someone changes the file or its folder: why. */
const UNREPLACEABLE_ERRNOS: ReadonlyMap<string, string> = new Map([
  ['EPERM', 'is it immutable or append-only? lsattr shows it, chattr -i / -a clears it; or a file of another user in a sticky folder'],
  ['EACCES', 'no permission to replace it in its folder'],
  ['EROFS', 'its file system is mounted read-only'],
  ['ENAMETOOLONG', 'its path, or the path of its copy in the trash, is longer than the file system allows'],
]);

/**
 * errno of a step that its folder refused: creating the temp file or a missing folder, or the rename into it (no
 * write or search permission, a read-only mount). EPERM counts only while the folder refuses writing (an
 * immutable or append-only folder): otherwise it is the file's (immutable) or a sticky folder's, which a change
 * of the file mends.
 */
const FOLDER_ERRNOS: ReadonlyMap<string, string> = new Map([
  ['EACCES', 'no permission to write in its folder'],
  ['EPERM', 'its folder refuses to be written: is it immutable or append-only? lsattr -d shows it, chattr -i / -a clears it'],
  ['EROFS', 'its file system is mounted read-only'],
]);

/** The first hold after a failure; each further failure of the same download doubles it, up to MAX_HOLD_MS. */
export const FIRST_HOLD_MS = 10 * 60_000;
export const MAX_HOLD_MS = 6 * 60 * 60_000;

export interface Unreplaceable {
  relPath: string;
  /** The version that could not be put in place. */
  versionId: string;
  /** The local file as the failed download found it (statId). */
  local: string;
  /** The errno and what it likely means. */
  detail: string;
  /** When it last failed (ms), and how many times in a row. */
  at: number;
  tries: number;
  /**
   * Set when the pair's trash could not take the old content (LOCAL_TRASH): the hold ends as soon as the trash
   * can take it again (TrashCheck), which no change of the file would show.
   */
  trash?: { dir: string; errno: string; bytes: number };
  /**
   * Set when the file's folder refused the step (FOLDER_ERRNOS): the folder (relative; the nearest one that
   * exists, for a file whose folder could not be created) and its state then (FolderState.state). The hold ends
   * as soon as that state is another and the folder lets this process write.
   */
  folder?: { dir: string; state: string };
}

/**
 * A file's folder as a held download sees it: the nearest existing folder of relPath (relative), a digest of its
 * stat (device, inode, mode, owner, group, ctime: a chmod, chown, ACL or chattr moves the ctime) and of whether
 * this process may write in it now (a remount read-write moves nothing of the stat), and that verdict.
 */
export interface FolderState {
  dir: string;
  state: string;
  writable: boolean;
}

/** Looks at the folder of a file (by its relative path) as it is now. */
export type FolderCheck = (relPath: string) => FolderState;

/** Whether the trash `dir` can take `bytes` now, after it failed with `errno` (writable; room, after ENOSPC). */
export type TrashCheck = (dir: string, errno: string, bytes: number) => boolean;

/** By path key. */
export type UnreplaceableDownloads = Map<string, Unreplaceable>;

type Download = Extract<Action, { kind: 'download' }>;

/**
 * The FolderCheck of the sync root `root`: lstat of the nearest existing folder of the file, and access(2) for
 * writing and searching it (which answers EPERM for an immutable folder and EROFS for a read-only mount, for
 * root too). A folder that cannot be looked at (a parent without search permission) has that errno as its state.
 */
export function folderCheckIn(root: string): FolderCheck {
  return (relPath) => {
    let dir = parentOf(relPath);
    for (;;) {
      const abs = path.join(root, dir);
      let st: fs.Stats | undefined;
      try {
        st = fs.lstatSync(abs, { throwIfNoEntry: false });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? 'unknown';
        if (code !== 'ENOTDIR' || dir === '') return { dir, state: `error:${code}`, writable: false };
      }
      if (st === undefined && dir !== '') {
        dir = parentOf(dir);
        continue;
      }
      if (st === undefined) return { dir, state: 'missing', writable: false };
      let writable = true;
      let verdict = 'w';
      try {
        fs.accessSync(abs, fs.constants.W_OK | fs.constants.X_OK);
      } catch (err) {
        writable = false;
        verdict = (err as NodeJS.ErrnoException).code ?? 'refused';
      }
      return { dir, state: `${st.dev}:${st.ino}:${st.mode}:${st.uid}:${st.gid}:${st.ctimeMs}:${verdict}`, writable };
    }
  };
}

function statId(s: FileStat | null): string {
  return s === null ? 'none' : `${s.size}:${s.mtimeMs}:${s.inode}:${s.ctimeMs}`;
}

export function holdMs(tries: number): number {
  return Math.min(MAX_HOLD_MS, FIRST_HOLD_MS * 2 ** Math.max(0, tries - 1));
}

function isUnreplaceable(f: ActionFailure): boolean {
  if (f.kind !== 'download') return false;
  if (f.code === 'LOCAL_TRASH') return f.trash !== undefined && f.errno !== undefined;
  return f.code === 'LOCAL_IO' && f.errno !== undefined && UNREPLACEABLE_ERRNOS.has(f.errno);
}

function why(f: ActionFailure, folder: boolean): string {
  if (f.code === 'LOCAL_TRASH') return `${f.errno ?? ''}: the pair's trash ${f.trash ?? ''} cannot take the local file's old content`;
  return `${f.errno ?? ''}: ${(folder ? FOLDER_ERRNOS : UNREPLACEABLE_ERRNOS).get(f.errno ?? '') ?? ''}`;
}

/** The folder that refused `f`, as it is now, when the folder is the cause (see FOLDER_ERRNOS); else undefined. */
function refusingFolder(f: ActionFailure, check: FolderCheck | undefined): FolderState | undefined {
  if (check === undefined || f.code !== 'LOCAL_IO' || f.errno === undefined || !FOLDER_ERRNOS.has(f.errno)) return undefined;
  const now = check(f.relPath);
  return f.errno === 'EPERM' && now.writable ? undefined : now;
}

/**
 * Remembers the downloads of this pass that failed for want of a replaceable file; forgets those that went
 * through. `folderCheck` tells a folder that refused from a file that did (without it, every hold is the file's).
 * Returns whether anything was added.
 */
export function rememberUnreplaceable(memo: UnreplaceableDownloads, plan: Plan, failures: readonly ActionFailure[], at: number, folderCheck?: FolderCheck): boolean {
  const failed = new Map(failures.filter(isUnreplaceable).map((f) => [f.relPath, f]));
  const failedAtAll = new Set(failures.map((f) => f.relPath));
  let added = false;
  for (const g of plan.groups) {
    for (const a of g) {
      if (a.kind !== 'download') continue;
      const f = failed.get(a.relPath);
      if (f === undefined) {
        if (!failedAtAll.has(a.relPath)) memo.delete(a.key);
        continue;
      }
      const before = memo.get(a.key);
      const again = before !== undefined && before.versionId === a.doc.versionId && before.local === statId(a.expectLocal);
      const trash = f.code === 'LOCAL_TRASH' ? { dir: f.trash!, errno: f.errno!, bytes: a.expectLocal?.size ?? 0 } : undefined;
      const refusing = refusingFolder(f, folderCheck);
      const folder = refusing ? { dir: refusing.dir, state: refusing.state } : undefined;
      memo.set(a.key, {
        relPath: a.relPath,
        versionId: a.doc.versionId,
        local: statId(a.expectLocal),
        detail: why(f, folder !== undefined),
        at,
        tries: again ? before.tries + 1 : 1,
        ...(trash ? { trash } : {}),
        ...(folder ? { folder } : {}),
      });
      added = true;
    }
  }
  return added;
}

/**
 * Downloads that failed before for want of a replaceable file, onto the same local file and of the same version,
 * within their hold: withheld, each with an issue saying why and until when. Entries that no longer match
 * anything planned are dropped. A hold its folder caused ends once `folderCheck` finds that folder changed and
 * writable (without the check, such a hold stands).
 */
export function withheldAsUnreplaceable(plan: Plan, memo: UnreplaceableDownloads, now: number, trashReady: TrashCheck = () => false, folderCheck?: FolderCheck): Plan {
  if (memo.size === 0) return plan;
  // One look per folder and call: many files held in one folder cost one lstat and one access.
  const looked = new Map<string, FolderState>();
  const folderNow: FolderCheck | undefined = folderCheck === undefined ? undefined : (relPath) => {
    const dir = parentOf(relPath);
    let seen = looked.get(dir);
    if (seen === undefined) looked.set(dir, (seen = folderCheck(relPath)));
    return seen;
  };
  const issues: Issue[] = [...plan.issues];
  const planned = new Set(plan.groups.flatMap((g) => g.filter((a) => a.kind === 'download').map((a) => a.key)));
  for (const key of [...memo.keys()]) if (!planned.has(key)) memo.delete(key);
  const groups = keepItems(plan.groups, (group) => {
    for (const a of group) {
      if (a.kind !== 'download') continue;
      const held = heldBy(memo.get(a.key), a, now, trashReady, folderNow);
      if (held === null) continue;
      issues.push({ relPath: a.relPath, documentId: a.doc.documentId, code: 'remote-change-not-downloaded', detail: held });
      return false;
    }
    return true;
  });
  return groups === plan.groups ? plan : { ...plan, groups, issues };
}

function heldBy(m: Unreplaceable | undefined, a: Download, now: number, trashReady: TrashCheck, folderCheck: FolderCheck | undefined): string | null {
  if (m === undefined || m.versionId !== a.doc.versionId || m.local !== statId(a.expectLocal)) return null;
  if (m.folder !== undefined && folderCheck !== undefined) {
    const folder = folderCheck(m.relPath);
    if (folder.writable && (folder.dir !== m.folder.dir || folder.state !== m.folder.state)) return null; // mended: at once
  }
  const until = m.at + holdMs(m.tries);
  if (now >= until || now < m.at) return null; // a clock set back counts as a hold run out
  const minutes = Math.max(1, Math.ceil((until - now) / 60_000));
  if (m.trash !== undefined) {
    if (trashReady(m.trash.dir, m.trash.errno, m.trash.bytes)) return null;
    return `the local file's old content could not be kept in the trash (${m.detail}), so it was not replaced; not downloaded again until the trash can take it (looked at every pass; else tried again in ${minutes} min)`;
  }
  if (m.folder !== undefined) {
    const where = m.folder.dir === '' ? 'the sync root' : `its folder ${m.folder.dir}`;
    const what = a.expectLocal === null ? 'the new file could not be written' : 'the local file could not be replaced';
    return `${what} (${m.detail}); not downloaded again until ${where} lets this process write in it (looked at every pass), the file changes or the document gets another version (else tried again in ${minutes} min)`;
  }
  return `the local file could not be replaced (${m.detail}); not downloaded again until the file changes or the document gets another version (else tried again in ${minutes} min)`;
}
