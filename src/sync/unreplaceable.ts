// Downloads that failed because the local file could not be put in place: an immutable or append-only file
// (chattr +i / +a), a folder that refuses the rename, a read-only mount. The failure comes only at the end, after
// the whole version was fetched, hashed and fsynced, and it fails the same way every pass: a 1 GiB immutable file
// was fetched again every poll, for as long as the attribute stayed (black-box round 28a, T2). Such a download is
// held back, with an issue, until the local file changes (`chattr -i` changes its ctime), the document gets
// another version, or a hold that doubles with each failure (10 min up to 6 h) runs out. The daemon rescans the
// folders of held files every pass (a watcher does not report an attribute change). Kept in this process only: a
// `binder-sync sync` tries once per run, like any failed step.
import type { ActionFailure } from './executor.js';
import type { Action, FileStat, Issue, Plan } from './model.js';

/** errno of a local step that will fail again the same way until someone changes the file or its folder: why. */
const UNREPLACEABLE_ERRNOS: ReadonlyMap<string, string> = new Map([
  ['EPERM', 'is it immutable or append-only? lsattr shows it, chattr -i / -a clears it; or a file of another user in a sticky folder'],
  ['EACCES', 'no permission to replace it in its folder'],
  ['EROFS', 'its file system is mounted read-only'],
  ['ENAMETOOLONG', 'its path, or the path of its copy in the trash, is longer than the file system allows'],
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
}

/** Whether the trash `dir` can take `bytes` now, after it failed with `errno` (writable; room, after ENOSPC). */
export type TrashCheck = (dir: string, errno: string, bytes: number) => boolean;

/** By path key. */
export type UnreplaceableDownloads = Map<string, Unreplaceable>;

type Download = Extract<Action, { kind: 'download' }>;

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

function why(f: ActionFailure): string {
  if (f.code === 'LOCAL_TRASH') return `${f.errno ?? ''}: the pair's trash ${f.trash ?? ''} cannot take the local file's old content`;
  return `${f.errno ?? ''}: ${UNREPLACEABLE_ERRNOS.get(f.errno ?? '') ?? ''}`;
}

/**
 * Remembers the downloads of this pass that failed for want of a replaceable file; forgets those that went
 * through. Returns whether anything was added.
 */
export function rememberUnreplaceable(memo: UnreplaceableDownloads, plan: Plan, failures: readonly ActionFailure[], at: number): boolean {
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
      memo.set(a.key, { relPath: a.relPath, versionId: a.doc.versionId, local: statId(a.expectLocal), detail: why(f), at, tries: again ? before.tries + 1 : 1, ...(trash ? { trash } : {}) });
      added = true;
    }
  }
  return added;
}

/**
 * Downloads that failed before for want of a replaceable file, onto the same local file and of the same version,
 * within their hold: withheld, each with an issue saying why and until when. Entries that no longer match
 * anything planned are dropped.
 */
export function withheldAsUnreplaceable(plan: Plan, memo: UnreplaceableDownloads, now: number, trashReady: TrashCheck = () => false): Plan {
  if (memo.size === 0) return plan;
  const issues: Issue[] = [...plan.issues];
  const planned = new Set(plan.groups.flatMap((g) => g.filter((a) => a.kind === 'download').map((a) => a.key)));
  for (const key of [...memo.keys()]) if (!planned.has(key)) memo.delete(key);
  const groups = plan.groups.filter((group) => {
    for (const a of group) {
      if (a.kind !== 'download') continue;
      const held = heldBy(memo.get(a.key), a, now, trashReady);
      if (held === null) continue;
      issues.push({ relPath: a.relPath, documentId: a.doc.documentId, code: 'remote-change-not-downloaded', detail: held });
      return false;
    }
    return true;
  });
  return groups.length === plan.groups.length ? plan : { ...plan, groups, issues };
}

function heldBy(m: Unreplaceable | undefined, a: Download, now: number, trashReady: TrashCheck): string | null {
  if (m === undefined || m.versionId !== a.doc.versionId || m.local !== statId(a.expectLocal)) return null;
  const until = m.at + holdMs(m.tries);
  if (now >= until || now < m.at) return null; // a clock set back counts as a hold run out
  const minutes = Math.max(1, Math.ceil((until - now) / 60_000));
  if (m.trash !== undefined) {
    if (trashReady(m.trash.dir, m.trash.errno, m.trash.bytes)) return null;
    return `the local file's old content could not be kept in the trash (${m.detail}), so it was not replaced; not downloaded again until the trash can take it (looked at every pass; else tried again in ${minutes} min)`;
  }
  return `the local file could not be replaced (${m.detail}); not downloaded again until the file changes or the document gets another version (else tried again in ${minutes} min)`;
}
