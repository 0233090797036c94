// An edit committed over a colleague's: the service has no conditional commit (spec 4.9), so a version someone
// commits after our last look (assertCommitFits, just after the PUT) and before our commit ends up under ours.
// Nobody would see it: our version is the latest, the colleague's daemon downloads ours over their edit, and no
// conflict is said (black-box round 30b, F1: two people saving one file at once lost one edit in 2 of 8 rounds).
// It cannot be prevented, only found after the commit: the versions listed between the one the edit was made
// from and ours. Their edit is then kept as a conflict copy beside the file (downloaded, and uploaded as its own
// document), as keep-both does when the race is seen before the commit.
// The check is recorded with the edit's base row (finishOutbox), so a crash, a lost commit answer or a failed
// listing after the commit leaves it to the next pass, never skips it (black-box round 31a, F1); it is done at once
// after the upload, and at the start of each pass for those left over.
import fs from 'node:fs/promises';
import { describeError } from '../errors.js';
import { commitTempFile, lstatOrNull, resolveInside, toFileStat } from '../local/fs-ops.js';
import { hashFile } from '../local/hash.js';
import { ServiceError, type DocumentVersion } from '../service/index.js';
import type { BuriedCheck } from '../state/store.js';
import { downloadToTemp } from './download.js';
import type { ExecutorDeps } from './executor-deps.js';
import type { ExecutionReport } from './executor.js';
import type { LocalFile } from './model.js';
import { baseNameOf, pathKey } from './path-key.js';
import { conflictName, conflictTag } from './reconcile-builder.js';
import { uploadLocalFile } from './upload.js';
import { versionsBetween, versionsBeyond } from './version-order.js';

/** Passes that try a check before it is given up (recorded as "in the version history"). */
export const BURIED_CHECK_ATTEMPTS = 5;

/** How many free conflict-copy names are tried before giving up (each is only taken if nothing is there). */
const COPY_NAMES_TRIED = 20;

/**
 * Does the buried-version checks still to do (all, or documentId's), oldest first. Each one's failure is said and
 * leaves it for the next pass; none fails the pass (the commits are done and recorded).
 */
export async function settleBuriedChecks(d: ExecutorDeps, report: ExecutionReport, documentId?: string): Promise<void> {
  for (const check of d.store.listBuriedChecks(documentId)) {
    if (d.signal?.aborted === true) return;
    // The service in trouble (an outage, the network): the others wait with this one for the next pass.
    if ((await settle(d, check, report)) === 'service-trouble') return;
  }
}

/** Does one check; 'service-trouble' when it failed for a reason that passes (it is then not counted as a try). */
async function settle(d: ExecutorDeps, check: BuriedCheck, report: ExecutionReport): Promise<'done' | 'service-trouble'> {
  let versions: DocumentVersion[];
  try {
    versions = await d.client.listVersions(check.documentId);
  } catch (err) {
    // A document deleted since: nothing of it is left to keep.
    if (err instanceof ServiceError && err.status === 404) {
      d.store.deleteBuriedCheck(check.id);
      return 'done';
    }
    return attemptFailed(d, check, report, 'list its versions', err);
  }
  // Either version missing from the list (a server that prunes history): nothing can be said to lie between.
  // Versions known to be older than the one the edit was made from are not from during the upload, wherever the
  // list puts them: one our row held before. Two versions of one second listed either way put our own earlier
  // version between, and the next edit made a conflict copy of it (black-box rounds 41a, FAIL 2 and 41c, F4). Not
  // told by modifiedAt: the spec does not say it is the creation time, nor its precision.
  const known = d.store.heldBefore(check.documentId);
  const olderThanBase = (v: DocumentVersion) => known.has(v.id);
  let buried = (versionsBetween(versions, check.editedFrom, check.ours) ?? []).filter((v) => !olderThanBase(v));
  const beyond = (versionsBeyond(versions, check.editedFrom, check.ours) ?? []).filter((v) => !olderThanBase(v));
  if (buried.length > 0 || beyond.length > 0) {
    // The document's latest version is not under ours, wherever the list puts it: versions made in one second (or
    // one millisecond) tie in creation time, and a server may list such a tie either way. A colleague's commit just
    // after ours, listed before it, was taken for one made during our upload: kept as a conflict copy, marked older
    // than ours, and the document's real latest was read as a lagging listing for good, the local file never
    // brought to it (black-box round 40c, F1). It is a remote change after ours: the next pass downloads it.
    let latest: string | null;
    try {
      latest = (await d.client.getDocument(check.documentId))?.latestVersionId ?? null;
    } catch (err) {
      return attemptFailed(d, check, report, 'look at the document', err);
    }
    if (latest === null) {
      d.store.deleteBuriedCheck(check.id);
      return 'done';
    }
    // Ours is the latest: every version the list puts after it was made before it, in the same instant (a tie the
    // list put either way). One made during our upload was taken for one after ours, and superseded unsaid (black-
    // box round 41b, B4). Another is the latest, and the list puts it before ours: the list's order is wrong
    // around ours (a tie), so no version after the one edited from is known to come after ours: each but the
    // latest is kept (a duplicate copy at worst, never an edit superseded unsaid).
    if (latest === check.ours || buried.some((v) => v.id === latest)) buried = [...buried, ...beyond];
    if (latest !== check.ours) buried = buried.filter((v) => v.id !== latest);
  }
  // Older than ours, though our base row never held them: a lagging search index that still lists one is not a
  // change either (remote/older-than-synced.ts).
  if (buried.length > 0 && d.store.getBase(check.documentId)?.versionId === check.ours) d.store.addSuperseded(check.documentId, buried.map((v) => v.id));
  if (buried.length === 0) {
    d.store.deleteBuriedCheck(check.id);
    return 'done';
  }
  const policy = d.conflictPolicy ?? 'keep-both';
  const said = { relPath: check.relPath, documentId: check.documentId, version: buried[0]!.id, label: buried[0]!.version, meanwhile: buried.length };
  const at = d.now().toISOString();
  if (policy === 'local-wins') {
    // Our version on top of theirs, theirs in the history, is what local-wins asks for: recorded and said only.
    const detail = 'a version made on the service during the upload is under ours in the history (local-wins)';
    d.store.transaction(() => {
      d.store.addConflict({ relPath: check.relPath, conflictPath: null, documentId: check.documentId, policy, detail, at });
      d.store.deleteBuriedCheck(check.id);
    });
    report.conflicts.push({ relPath: check.relPath, conflictPath: null, outcome: 'local won; the version made meanwhile is in the version history' });
    d.log.warn(said, 'conflict: a version was committed on the service during our upload; ours is the latest (local-wins), theirs is in the version history');
    return 'done';
  }
  // Under keep-both and remote-wins, each buried version with content of its own is kept as a conflict copy
  // (remote-wins too: making theirs the latest again would take another commit of their bytes over ours).
  let copies: LocalFile[];
  try {
    copies = await keepAsCopies(d, check, buried);
  } catch (err) {
    return attemptFailed(d, check, report, 'keep it as a conflict copy', err);
  }
  d.store.transaction(() => {
    for (const copy of copies) {
      const detail = 'a version made on the service during the upload was under ours; kept as the conflict copy';
      d.store.addConflict({ relPath: check.relPath, conflictPath: copy.relPath, documentId: check.documentId, policy, detail, at });
    }
    d.store.deleteBuriedCheck(check.id);
  });
  if (copies.length === 0) {
    // Their bytes are ours (two people saving the same content): nothing to keep (black-box round 31a, F7).
    d.log.info(said, 'a version with the same content as ours was committed on the service during our upload: nothing to keep');
    return 'done';
  }
  for (const copy of copies) {
    report.conflicts.push({ relPath: check.relPath, conflictPath: copy.relPath, outcome: 'kept both (their version was committed during our upload)' });
    d.log.warn({ ...said, conflictCopy: copy.relPath }, 'conflict: a version was committed on the service during our upload; kept both (theirs as the conflict copy)');
  }
  // Uploaded at once, as keep-both uploads its copy: both edits are on the service when the pass ends. A failure
  // leaves the copy local, and the next pass uploads it as any new file.
  for (const copy of copies) {
    try {
      const { bytes } = await uploadLocalFile(d, {
        relPath: copy.relPath,
        key: copy.key,
        abs: resolveInside(d.root, copy.relPath),
        local: copy,
        target: { documentId: null, folderId: d.store.getBase(check.documentId)?.folderId ?? check.folderId, fileName: baseNameOf(copy.relPath) },
        reason: 'new-local',
      });
      report.bytesUploaded += bytes;
    } catch (err) {
      d.log.info({ relPath: copy.relPath, err: describeError(err) }, 'the conflict copy was not uploaded now; the next pass uploads it');
    }
  }
  return 'done';
}

/**
 * A try that failed: left for the next pass, said at info; given up at the last try, when their version is said
 * (and recorded) to be only in the version history (black-box round 31a, F11: one failed download gave up at once).
 */
async function attemptFailed(d: ExecutorDeps, check: BuriedCheck, report: ExecutionReport, what: string, err: unknown): Promise<'done' | 'service-trouble'> {
  const said = { relPath: check.relPath, documentId: check.documentId, attempt: check.attempts + 1, err: describeError(err) };
  // Not counted: a service that is down or out of reach for a while must not use the tries up (nor an aborted pass).
  if ((err instanceof ServiceError && err.retryable) || d.signal?.aborted === true) {
    d.log.info(said, `could not yet look for a version made on the service during our upload (${what}): the next pass tries again`);
    return 'service-trouble';
  }
  if (d.store.countBuriedCheckAttempt(check.id) < BURIED_CHECK_ATTEMPTS) {
    d.log.info(said, `could not yet look for a version made on the service during our upload (${what}): the next pass tries again`);
    return 'done';
  }
  const detail = `a version may have been made on the service during the upload; after ${BURIED_CHECK_ATTEMPTS} tries to ${what}, it is left in the version history`;
  d.store.transaction(() => {
    d.store.addConflict({ relPath: check.relPath, conflictPath: null, documentId: check.documentId, policy: d.conflictPolicy ?? 'keep-both', detail, at: d.now().toISOString() });
    d.store.deleteBuriedCheck(check.id);
  });
  report.conflicts.push({ relPath: check.relPath, conflictPath: null, outcome: 'a version made during our upload may be under ours: look at the version history' });
  d.log.warn(said, `conflict: a version may have been committed on the service during our upload, but ${what} failed ${BURIED_CHECK_ATTEMPTS} times: look at the document's version history`);
  return 'done';
}

/**
 * Writes each buried version whose content is neither ours nor that of a newer one kept already to a conflict copy
 * beside the file (newest first; black-box round 31a, F10: only the newest was kept). The names come from the
 * check's time, so a try after a crash finds the copies an earlier try wrote (same name, same content) and writes
 * no second one. Returns the copies, as written (stat, hash).
 */
async function keepAsCopies(d: ExecutorDeps, check: BuriedCheck, buried: readonly DocumentVersion[]): Promise<LocalFile[]> {
  const relPath = d.store.getBase(check.documentId)?.relPath ?? check.relPath;
  const tag = conflictTag(new Date(check.createdAt));
  const kept = new Set<string>([check.oursSha256]);
  const copies: LocalFile[] = [];
  let n = 1;
  for (const version of buried) {
    const copy = await downloadAsCopy(d, check.documentId, version, relPath, tag, n, kept);
    if (copy === null) continue;
    copies.push(copy.file);
    kept.add(copy.file.sha256!);
    n = copy.n + 1;
  }
  return copies;
}

/**
 * Downloads `version` to the first conflict-copy name from the n-th on that is free or already holds its bytes;
 * null (nothing written) when its content is one of `kept`.
 */
async function downloadAsCopy(
  d: ExecutorDeps, documentId: string, version: DocumentVersion, relPath: string, tag: string, from: number, kept: ReadonlySet<string>,
): Promise<{ file: LocalFile; n: number } | null> {
  const tmp = await downloadToTemp(d, { documentId, versionId: version.id, relPath }, resolveInside(d.root, conflictName(relPath, tag, from)));
  try {
    if (kept.has(tmp.sha256)) return null;
    for (let n = from; n < from + COPY_NAMES_TRIED; n++) {
      const copyPath = conflictName(relPath, tag, n);
      const abs = resolveInside(d.root, copyPath);
      const there = await lstatOrNull(abs);
      if (there !== null) {
        // Written by an earlier try of this check (a crash after the copy): it is the copy.
        if (there.isFile() && (await hashFile(abs, d.signal).catch(() => null))?.sha256 === tmp.sha256) {
          return { file: { relPath: copyPath, key: pathKey(copyPath, d.caseInsensitive), ...toFileStat(there), sha256: tmp.sha256 }, n };
        }
        continue;
      }
      try {
        const stat = await commitTempFile(tmp.tempPath, abs, null, { synced: true, written: tmp.written });
        return { file: { relPath: copyPath, key: pathKey(copyPath, d.caseInsensitive), ...stat, sha256: tmp.sha256 }, n };
      } catch (err) {
        // Taken between the look and the link (linkNoClobber refused): the next name.
        if ((await lstatOrNull(abs)) !== null) continue;
        throw err;
      }
    }
    throw new Error(`no free conflict-copy name beside ${relPath} after ${COPY_NAMES_TRIED} tries`);
  } finally {
    await fs.rm(tmp.tempPath, { force: true });
  }
}
