// Pure filters applied to a plan before it runs: which groups wait for metadata rules, which wait until the
// local file they read has stopped changing. No I/O; the clock is a parameter.
import type { IgnoreMatcher } from '../local/ignore.js';
import type { MetadataResolver } from './metadata-rules.js';
import { changedAt, type Action, type Issue, type LocalFile, type Plan, type RemoteObservation, type UploadTarget } from './model.js';
import { parentOf, pathKey } from './path-key.js';
import { writesOf } from './reconcile-builder.js';
import type { HeldUpload } from './upload.js';

/** The action sends local content to the service (an upload, or a conflict that uploads a copy or the local side). */
export function wantsUpload(a: Action): boolean {
  return a.kind === 'upload' || (a.kind === 'conflict' && (a.uploadConflictCopy || a.policy === 'local-wins'));
}

/**
 * The groups whose items `keep` keeps. A group is one item's steps, which depend on one another: kept or dropped
 * whole. A group led by a move-dir-local is the directory's move followed by one step per item at its new path
 * (model.ts): each of those is an item of its own, held back alone (its file's change is seen at its new path next
 * pass), while the move is held back with everything after it. Returns `groups` itself when nothing was dropped.
 */
export function keepItems(groups: Action[][], keep: (steps: Action[]) => boolean): Action[][] {
  let dropped = false;
  const out: Action[][] = [];
  for (const group of groups) {
    const move = group[0];
    if (move?.kind !== 'move-dir-local') {
      if (keep(group)) out.push(group);
      else dropped = true;
      continue;
    }
    if (!keep([move])) {
      dropped = true;
      continue;
    }
    const after = group.slice(1).filter((a) => keep([a]));
    if (after.length < group.length - 1) dropped = true;
    out.push(after.length < group.length - 1 ? [move, ...after] : group);
  }
  return dropped ? out : groups;
}

/** How far ahead of the clock a change time may be and still count as recent (see deferRecentlyWritten). */
const CLOCK_AHEAD_TOLERANCE_MS = 60_000;


/**
 * Drops the groups that would read a local file changed less than minAgeMs ago (uploads and conflicts): a file
 * still being written is never uploaded half-done, and rsync's or sed's temp files are gone by the next look.
 * A change time up to a minute ahead of the clock counts as recent (a file server's clock, which sets ctimes on
 * network filesystems, may run a little ahead); one further ahead is taken as a clock set back, and nothing
 * waits for it.
 */
export function deferRecentlyWritten(plan: Plan, minAgeMs: number, nowMs: number): { plan: Plan; deferred: string[]; recheckInMs: number | null } {
  const deferred: string[] = [];
  const issues: Issue[] = [];
  let recheckAt = Infinity;
  const groups = keepItems(plan.groups, (group) => {
    const reads = group.flatMap((a) => (a.kind === 'upload' || a.kind === 'conflict' ? [{ f: a.local, quiet: quietPeriodFor(a, minAgeMs) }] : []));
    const recent = reads.filter(({ f, quiet }) => quiet > 0 && nowMs - changedAt(f) < quiet && changedAt(f) <= nowMs + CLOCK_AHEAD_TOLERANCE_MS);
    if (recent.length === 0) return true;
    for (const { f, quiet } of recent) {
      deferred.push(f.relPath);
      const until = changedAt(f) + quiet;
      recheckAt = Math.min(recheckAt, until);
      // A minute is long enough to be asked about: `status` lists such a file with why it waits (round 26, P3).
      const inS = `${Math.max(1, Math.ceil((until - nowMs) / 1000))} s from now`;
      if (looksLikeTransferTemp(f.relPath)) {
        issues.push({ relPath: f.relPath, code: 'changing', detail: `held: its name looks like a program's temp file (rsync, sed -i, mktemp, Excel, Python, GLib), which is renamed away when done; uploaded if it is still there, unchanged, ${inS}` });
      } else if (quiet > minAgeMs) {
        issues.push({ relPath: f.relPath, code: 'changing', detail: `held: emptied, as a program writing it anew does first (\`cmd > file\`); uploaded as an empty version if it is still empty ${inS}` });
      }
    }
    return false;
  });
  if (deferred.length === 0) return { plan, deferred, recheckInMs: null };
  return { plan: { ...plan, groups, issues: issues.length === 0 ? plan.issues : [...plan.issues, ...issues] }, deferred, recheckInMs: Math.max(50, recheckAt - nowMs + 50) };
}

/**
 * The path of a step that answers a local delete: restoring the file (also with a newer remote version, or at
 * the path a remote rename gave it), re-creating the directory synced files lay in, or forgetting the
 * document (localDeletePolicy).
 */
function localDeleteAnswered(a: Action): string | null {
  if (a.kind === 'download' && (a.reason === 'restore-local-delete' || (a.reason === 'remote-modified' && a.expectLocal === null))) return a.relPath;
  if (a.kind === 'mkdir-local' && a.reason === 'restore-local-delete') return a.relPath;
  if (a.kind === 'forget' && a.reason === 'local-deleted-forget') return a.relPath;
  return null;
}

/**
 * Steps that answer a local delete wait until the file has been missing for minAgeMs (the daemon's quietPeriod):
 * editors save by renaming the original away and the new file in (Word, LibreOffice, `vim` without
 * backupcopy), and a pass between the two would restore the old content only to have it replaced a moment
 * later, or, with localDeletePolicy forget, drop the document and then meet the new file as a conflict. A
 * newer remote version waits too: written into the gap, the save would replace it with no conflict reported.
 * A directory moved out and back (`mv d /tmp; mv /tmp/d .`) must not find a re-created one and nest inside it.
 * `missingSince` (path -> when a pass first saw it missing) is kept by the caller across passes and pruned
 * here of paths no longer missing. minAgeMs 0 (`sync`) defers nothing.
 */
export function deferFreshDeletes(
  plan: Plan,
  missingSince: Map<string, number>,
  minAgeMs: number,
  nowMs: number,
): { plan: Plan; deferred: string[]; recheckInMs: number | null } {
  const seen = new Set<string>();
  const deferred: string[] = [];
  let recheckAt = Infinity;
  const forgetsHeld = new Set<string>();
  // Folders gone locally (re-created by this plan) and everything put back under them wait longer: moving a
  // folder out and back by hand takes seconds, and the move back must not find a re-created folder to nest in.
  const goneDirs = new Set<string>();
  if (minAgeMs > 0) for (const g of plan.groups) for (const a of g) if (a.kind === 'mkdir-local' && a.reason === 'restore-local-delete') goneDirs.add(a.relPath);
  const underGoneDir = (relPath: string): boolean => {
    for (let p = relPath; p !== ''; p = parentOf(p)) if (goneDirs.has(p)) return true;
    return false;
  };
  const holdFor = (relPath: string) => (goneDirs.size > 0 && underGoneDir(relPath) ? Math.max(minAgeMs, FOLDER_RESTORE_QUIET_MS) : minAgeMs);
  const groups = minAgeMs <= 0 ? plan.groups : keepItems(plan.groups, (group) => {
    const missing = group.map(localDeleteAnswered).filter((p) => p !== null);
    let fresh = false;
    for (const relPath of missing) {
      seen.add(relPath);
      const since = missingSince.get(relPath) ?? nowMs;
      missingSince.set(relPath, since);
      const hold = holdFor(relPath);
      if (nowMs - since >= hold) continue;
      fresh = true;
      deferred.push(relPath);
      recheckAt = Math.min(recheckAt, since + hold);
    }
    if (fresh) for (const a of group) if (a.kind === 'forget') forgetsHeld.add(a.relPath);
    return !fresh;
  });
  for (const relPath of missingSince.keys()) if (!seen.has(relPath)) missingSince.delete(relPath);
  if (deferred.length === 0) return { plan, deferred, recheckInMs: null };
  // A forget held back has not happened: its note ("no longer synced") waits with it.
  const issues = plan.issues.filter((i) => !(i.code === 'local-delete-not-propagated' && forgetsHeld.has(i.relPath)));
  return { plan: { ...plan, groups, issues }, deferred, recheckInMs: Math.max(50, recheckAt - nowMs + 50) };
}

/** How long a folder gone locally (and what lay in it) waits before it is put back, at least (deferFreshDeletes). */
export const FOLDER_RESTORE_QUIET_MS = 10_000;

/**
 * Names other programs give a file while they write it, then rename it away: rsync's `.<name>.XXXXXX`, sed -i's
 * `sedXXXXXX`, mktemp's `tmp.XXXXXXXXXX`, Excel's `1A2B3C4D` (eight hex digits, no extension), Python's
 * tempfile `tmpab1_cd2x`, GLib's (gedit, GNOME apps) `.goutputstream-XXXXXX`. Such a file is left alone until it
 * has been still for TRANSFER_TEMP_QUIET_MS, also by `sync` (whose quiet period is 0): a writer may pause for
 * seconds, and uploaded, the file would become a document that, once renamed away locally, is restored as a
 * deleted file (black-box round 29b, finding 2: Excel's). A real file of that shape syncs a minute late.
 */
const TRANSFER_TEMP_NAMES = [
  /^\..+\.[A-Za-z0-9]{6}$/,
  /^sed[A-Za-z0-9]{6}$/,
  /^tmp\.[A-Za-z0-9]{10}$/,
  /^[0-9A-F]{8}$/,
  /^tmp[a-z0-9_]{8}$/,
  /^\.goutputstream-[A-Za-z0-9]{6}$/,
];
export const TRANSFER_TEMP_QUIET_MS = 60_000;

function looksLikeTransferTemp(relPath: string): boolean {
  const name = relPath.slice(relPath.lastIndexOf('/') + 1);
  return TRANSFER_TEMP_NAMES.some((r) => r.test(name));
}

/**
 * How long the local file a step reads must have been still. A temp file's name: a minute, even for `sync`. A
 * synced file emptied (to 0 bytes): a minute too, in the daemon: `cmd > file` truncates first and writes when cmd
 * has output, so a pause of a second uploaded an empty version of the document before its new content
 * (black-box round 29b, finding 3). A file really emptied is uploaded a minute late.
 */
function quietPeriodFor(a: Extract<Action, { kind: 'upload' | 'conflict' }>, minAgeMs: number): number {
  // A file that is already a synced document is no program's temp file, whatever its name (an Excel temp is
  // always new; `20241127` or `CAFEBABE` as a synced name waited a minute on every edit: black-box round 30a, F5).
  const synced = a.kind === 'upload' ? a.reason === 'local-modified' : a.base !== null;
  if (!synced && looksLikeTransferTemp(a.local.relPath)) return Math.max(minAgeMs, TRANSFER_TEMP_QUIET_MS);
  // Emptied: also when a colleague's version makes it a conflict meanwhile, or its empty conflict copy was
  // uploaded as a version of its own before the program's output came (round 30a, F4).
  const emptied = synced && a.local.size === 0;
  return emptied && minAgeMs > 0 ? Math.max(minAgeMs, TRANSFER_TEMP_QUIET_MS) : minAgeMs;
}

/**
 * Uploads of new documents whose required metadata no rule supplies are withheld before anything runs: the group
 * is dropped and an issue says which element is missing (the rest of the pass goes on). A new version of an
 * existing document carries the document's own values, which the listing does not show: the upload checks
 * those before it sends anything (upload.ts), so that an edit of a document whose metadata was set on the
 * service needs no rule (it was withheld for want of one).
 */
export function withheldForMetadata(plan: Plan, metadata: MetadataResolver): Plan {
  const issues = [...plan.issues];
  // A conflict still runs (equal sides are settled, the remote content comes down), its copy kept local: the copy is
  // then a new file the next pass holds back, by its real name. Held whole, the conflict was said under a copy name
  // that did not exist and changed with every pass (black-box round 31b, F5).
  const copyHeld = (a: Action) => a.kind === 'conflict' && a.uploadConflictCopy && metadataHold(a.conflictPath, true, metadata) !== null;
  const groups = keepItems(plan.groups.map((group) => (group.some(copyHeld) ? group.map((a) => (copyHeld(a) ? { ...a, uploadConflictCopy: false } : a)) : group)), (group) => {
    const uploads = group.flatMap((a: Action) =>
      a.kind === 'upload' ? [{ relPath: a.relPath, newDocument: a.target.documentId === null }] : a.kind === 'conflict' && a.uploadConflictCopy ? [{ relPath: a.conflictPath, newDocument: true }] : [],
    );
    for (const { relPath, newDocument } of uploads) {
      const held = metadataHold(relPath, newDocument, metadata);
      if (held !== null) {
        issues.push(held);
        return false;
      }
    }
    return true;
  });
  return { ...plan, groups, issues };
}

/** Why an upload to relPath is held back for its metadata (the elements unread, a required one no rule gives), if it is. */
export function metadataHold(relPath: string, newDocument: boolean, metadata: MetadataResolver): Issue | null {
  if (metadata.blockedBecause !== undefined) return { relPath, code: 'metadata-missing', detail: `not uploaded: ${metadata.blockedBecause}` };
  const missing = newDocument ? metadata.missingFor(relPath) : [];
  if (missing.length === 0) return null;
  return { relPath, code: 'metadata-missing', detail: `required metadata without a value: ${missing.join(', ')}; add a metadata rule for it` };
}

/** Content the service refused to commit for good (400/422), by path key: what to hold back and why. */
export type RefusedUploads = ReadonlyMap<string, { content: string; detail: string }>;

/**
 * What identifies a local file's content for withheldAsRefused: its SHA-256, or for a file not read yet
 * (sha256 null) its stat, which changes with any edit, as the scanner trusts it to.
 */
export function contentIdOf(f: LocalFile): string {
  return f.sha256 ?? `stat:${f.size}:${f.mtimeMs}:${f.inode}:${f.ctimeMs}`;
}

/**
 * Uploads of exactly the content the service refused before (same path, same SHA-256) are withheld with an
 * issue: the same bytes under the same name would be refused again, and sending them on every poll wastes the
 * bandwidth. A changed file is tried again (how long a refusal lasts otherwise: refused-uploads.ts).
 */
export function withheldAsRefused(plan: Plan, refused: RefusedUploads): Plan {
  if (refused.size === 0) return plan;
  const issues = [...plan.issues];
  const groups = keepItems(plan.groups, (group) => {
    for (const a of group) {
      if (a.kind !== 'upload') continue;
      const r = refused.get(a.key);
      if (r !== undefined && r.content === contentIdOf(a.local)) {
        issues.push({ relPath: a.relPath, code: 'upload-refused', detail: r.detail });
        return false;
      }
    }
    return true;
  });
  return { ...plan, groups, issues };
}

/**
 * A download-only pair's look at a file put back with an old time (the executor's checkPutBack) is left out when
 * the same content was looked at against the same latest version already and was none of its earlier versions:
 * the answer would be the same, at the cost of a version listing on every poll. The file's issue stays.
 * `lookedAt`: by path key, putBackLook of what was looked at.
 */
export function withheldAsLookedAt(plan: Plan, lookedAt: ReadonlyMap<string, string>): Plan {
  if (lookedAt.size === 0) return plan;
  const again = (a: Action) => a.kind === 'download' && a.reason === 'earlier-version-put-back' && lookedAt.get(a.key) === putBackLook(a.localSha256 ?? '', a.doc.versionId);
  if (!plan.groups.some((g) => g.some(again))) return plan;
  return { ...plan, groups: plan.groups.map((g) => g.filter((a) => !again(a))).filter((g) => g.length > 0) };
}

/** What a look at a file put back with an old time depends on: its content and the document's latest version. */
export function putBackLook(sha256: string, versionId: string): string {
  return `${sha256}@${versionId}`;
}

/**
 * Leaves out of the plan every step at the path of an upload an earlier pass left unfinished whose commit could
 * not be settled now (recoverOutbox's held rows: the service answered 5xx, or did not answer): nothing may be
 * planned for a file before its first commit is settled, or a second upload could make a second version. Each is
 * said as the file's issue; the rest of the plan runs (black-box round 31a, F6: one such commit stopped the pair).
 */
export function withheldForUnfinishedUploads(plan: Plan, held: readonly HeldUpload[], caseInsensitive: boolean): Plan {
  if (held.length === 0) return plan;
  const keys = new Set(held.map((h) => h.key));
  // A directory move touches every file it takes along, at its old path and its new one.
  const touches = (a: Action) => writesOf(a, caseInsensitive).some((k) => keys.has(k)) || keys.has(pathKey(ownPathOf(a), caseInsensitive))
    || (a.kind === 'move-dir-local' && a.files.some((f) => keys.has(pathKey(f.from, caseInsensitive))));
  const issues: Issue[] = [
    ...plan.issues,
    ...held.map((h): Issue => ({
      relPath: h.relPath,
      code: 'local-change-not-uploaded',
      detail: heldDetail(h),
    })),
  ];
  return { ...plan, groups: keepItems(plan.groups, (g) => !g.some(touches)), issues };
}

/**
 * Why an unfinished upload's file waits. A row behind the first held one was not tried: it names that row's
 * commit, not its own, as the error is that row's (black-box round 34a, F7: it quoted the other file's error as
 * if it were its own).
 */
function heldDetail(h: HeldUpload): string {
  const said = h.error instanceof Error ? h.error.message : String(h.error);
  if (h.behind === undefined) return `its upload, which an earlier pass left unfinished, could not be committed now (${said}): it is tried again next pass, and the file waits for it`;
  const reason = said.startsWith(`${h.behind}: `) ? said.slice(h.behind.length + 2) : said;
  return `its upload, which an earlier pass left unfinished, waits: the commit of ${h.behind} before it could not be settled now (${reason}), so the service was not asked again this pass; both are tried next pass`;
}

/** The path an action starts from. */
function ownPathOf(a: Action): string {
  if (a.kind === 'move-local' || a.kind === 'move-dir-local') return a.from;
  if (a.kind === 'adopt') return a.base.relPath;
  return a.relPath;
}

/**
 * A file name as a service might compare it when it looks a document up by name: Unicode NFC, lower case. The
 * spec does not show how a commit (4.9: folder + fileName) picks the document it adds a version to.
 */
export function looseName(fileName: string): string {
  return fileName.normalize('NFC').toLowerCase();
}

/** Where an action's upload goes, if it uploads onto a name: an upload, or a conflict settled local-wins. */
function uploadTargetOf(a: Action): (UploadTarget & { relPath: string }) | null {
  if (a.kind === 'upload') return { ...a.target, relPath: a.relPath };
  if (a.kind === 'conflict' && a.policy === 'local-wins') return { documentId: a.doc.documentId, folderId: a.doc.folderId, fileName: a.doc.fileName, relPath: a.relPath };
  return null;
}

/**
 * Withholds, with an 'ambiguous-remote-name' issue, every upload whose name another document of the same remote
 * folder also has, exactly or but for case or Unicode form: the service takes a commit by folder and file name
 * (4.9), so with two candidates the version could land on the other document (an independent server did just
 * that with two documents named alike). Two new files of one folder whose names differ only so are the same
 * case: the first in plan order goes, the others wait (and then meet the first's document). Nothing is lost:
 * the local file stays as it is and `status` says which remote document to rename.
 */
export function withheldForAmbiguousNames(plan: Plan, remote: Pick<RemoteObservation, 'docs'>): Plan {
  if (!plan.groups.some((g) => g.some((a) => uploadTargetOf(a) !== null))) return plan;
  const byName = new Map<string, Array<{ documentId: string; fileName: string }>>();
  const nameKey = (folderId: string, fileName: string) => `${folderId}\u0000${looseName(fileName)}`;
  for (const d of remote.docs.values()) {
    const k = nameKey(d.folderId, d.fileName);
    const list = byName.get(k);
    if (list) list.push(d);
    else byName.set(k, [d]);
  }
  const newNames = new Map<string, string>(); // name key -> the relPath of the new upload that took it
  const issues: Issue[] = [...plan.issues];
  const groups = keepItems(plan.groups, (group) => {
    for (const a of group) {
      const t = uploadTargetOf(a);
      if (t === null) continue;
      const k = nameKey(t.folderId, t.fileName);
      const other = (byName.get(k) ?? []).find((d) => d.documentId !== t.documentId);
      const sibling = t.documentId === null ? newNames.get(k) : undefined;
      if (other === undefined && sibling === undefined) continue;
      // A new file can simply be renamed here: often it was renamed here, from the other document's name (a
      // case-only `mv`), which the service cannot follow.
      const fix = t.documentId === null
        ? 'rename this file (a local rename cannot be sent to the service: to rename the document, name the file back and rename it on the service), or rename that document on the service'
        : 'rename one of the two on the service';
      const detail =
        other === undefined
          ? `a new file in the same folder, "${sibling}", differs from this name only in case or Unicode form: a service that compares names so would merge the two documents; it waits until that one is uploaded`
          : other.fileName === t.fileName
            ? `another document in this remote folder (${other.documentId}) has the same name "${other.fileName}": the service takes an upload by folder and file name, so it could land on that one; ${fix}`
            : `another document in this remote folder (${other.documentId}) is named "${other.fileName}", which differs only in case or Unicode form: a service that compares names so would put this upload on it; ${fix}`;
      // An edit that was to follow its document's remote move: the move waits too, so the file is still where it
      // was; named there (status named a path that did not exist: black-box round 29b, finding 6).
      const moved = group.find((x): x is Extract<Action, { kind: 'move-local' }> => x.kind === 'move-local' && x.to === t.relPath);
      const issue: Issue = moved === undefined
        ? { relPath: t.relPath, code: 'ambiguous-remote-name', detail }
        : { relPath: moved.from, code: 'ambiguous-remote-name', detail: `its document was moved on the service to "${t.relPath}", where ${detail}; the file and its local change stay here until then` };
      issues.push(t.documentId === null ? issue : { ...issue, documentId: t.documentId });
      return false;
    }
    for (const a of group) {
      const t = uploadTargetOf(a);
      if (t !== null && t.documentId === null) newNames.set(nameKey(t.folderId, t.fileName), t.relPath);
    }
    return true;
  });
  return groups === plan.groups ? plan : { ...plan, groups, issues };
}


/**
 * Withholds, with a 'path-collision' issue, every step that would put a file or folder at a local path where
 * something the pair ignores already is: an ignored folder ("private/" in the ignore list) is not in the local
 * observation, so reconcile cannot see it, and a remote document renamed (or added) under its name made the
 * same step fail on every pass, as a local filesystem failure (black-box round 26, Q1). Only names that would be
 * ignored as a folder but not as a file are looked at (`occupied` is asked for those alone): any other ignored
 * name is ignored on the remote side as well, and never planned.
 */
export function withheldForIgnoredOccupants(plan: Plan, ignore: Pick<IgnoreMatcher, 'ignores' | 'ruleFor'>, occupied: (relPath: string) => boolean): Plan {
  const issues: Issue[] = [...plan.issues];
  const targetOf = (a: Action): { target: string; relPath: string; verb: string } | null => {
    if (a.kind === 'move-local' || a.kind === 'move-dir-local') return { target: a.to, relPath: a.from, verb: 'cannot follow the remote rename or move to' };
    if (a.kind === 'upload' && a.thenMoveTo !== undefined) return { target: a.thenMoveTo.relPath, relPath: a.relPath, verb: 'cannot follow its remote folder to' };
    if (a.kind === 'download' && a.expectLocal === null) return { target: a.relPath, relPath: a.relPath, verb: 'cannot download to' };
    if (a.kind === 'mkdir-local') return { target: a.relPath, relPath: a.relPath, verb: 'cannot create the folder' };
    return null;
  };
  const groups = keepItems(plan.groups, (group) => {
    for (const a of group) {
      const t = targetOf(a);
      if (t === null || !ignore.ignores(t.target, true) || ignore.ignores(t.target, false) || !occupied(t.target)) continue;
      const rule = ignore.ruleFor(t.target, true);
      issues.push({
        relPath: t.relPath,
        code: 'path-collision',
        detail: `${t.verb} "${t.target}": a local folder the pair ignores${rule !== undefined ? ` (${rule})` : ''} has this name; rename the document or folder on the service, or the local folder`,
      });
      return false;
    }
    return true;
  });
  return groups === plan.groups ? plan : { ...plan, groups, issues };
}
