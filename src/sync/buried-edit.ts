// An edit committed over a colleague's: the service has no conditional commit (spec 4.9), so a version someone
// commits after our last look (assertCommitFits, just after the PUT) and before our commit ends up under ours.
// Nobody would see it: our version is the latest, the colleague's daemon downloads ours over their edit, and no
// conflict is said (black-box round 30b, F1: two people saving one file at once lost one edit in 2 of 8 rounds).
// It cannot be prevented, only found after the commit: the versions listed between the one the edit was made
// from and ours. Their edit is then kept as a conflict copy beside the file (downloaded, and uploaded as its own
// document), as keep-both does when the race is seen before the commit.
import fs from 'node:fs/promises';
import { describeError } from '../errors.js';
import { commitTempFile, lstatOrNull, resolveInside } from '../local/fs-ops.js';
import type { DocumentVersion } from '../service/index.js';
import { downloadToTemp } from './download.js';
import type { ExecutorDeps } from './executor-deps.js';
import type { ExecutionReport } from './executor.js';
import type { BaseEntry, ConflictPolicy, LocalFile } from './model.js';
import { baseNameOf, pathKey } from './path-key.js';
import { conflictName, conflictTag } from './reconcile-builder.js';
import { uploadLocalFile } from './upload.js';
import { versionsBetween } from './version-order.js';

/**
 * The versions of documentId listed strictly between `editedFrom` and `ours`, the newest first (version-order.ts).
 * Best effort: a listing that fails, or lacks either version, finds nothing (the commit is done and recorded
 * either way).
 */
export async function versionsBuriedUnder(d: ExecutorDeps, documentId: string, editedFrom: string, ours: string): Promise<DocumentVersion[]> {
  let versions: DocumentVersion[];
  try {
    versions = await d.client.listVersions(documentId);
  } catch (err) {
    d.log.debug({ documentId, err: describeError(err) }, 'could not list the versions after a commit to look for one made meanwhile');
    return [];
  }
  return versionsBetween(versions, editedFrom, ours) ?? [];
}

/** How many free conflict-copy names are tried before giving up (each is only taken if nothing is there). */
const COPY_NAMES_TRIED = 20;

/**
 * Keeps `buried` (the newest version someone committed under ours) as a conflict copy beside relPath: written as
 * a new file (temp, fsync, link: never over anything), uploaded as its own document, and recorded as a conflict.
 * Under local-wins nothing is copied: our version on top of theirs, theirs in the history, is what local-wins
 * asks for; the conflict is recorded and said. Under remote-wins both are kept too: making theirs the latest
 * again would take another commit of their bytes over ours, and a copy loses nothing. A failure here is said
 * and leaves their version where it is (in the history), never failing the upload that is already committed.
 */
export async function keepBuriedVersion(
  d: ExecutorDeps,
  ours: BaseEntry,
  buried: DocumentVersion[],
  policy: ConflictPolicy,
  report: ExecutionReport,
): Promise<void> {
  const theirs = buried[0]!;
  const at = d.now();
  const said = { relPath: ours.relPath, documentId: ours.documentId, version: theirs.id, label: theirs.version, meanwhile: buried.length };
  if (policy === 'local-wins') {
    const detail = 'a version made on the service during the upload is under ours in the history (local-wins)';
    d.store.addConflict({ relPath: ours.relPath, conflictPath: null, documentId: ours.documentId, policy, detail, at: at.toISOString() });
    report.conflicts.push({ relPath: ours.relPath, conflictPath: null, outcome: 'local won; the version made meanwhile is in the version history' });
    d.log.warn(said, 'conflict: a version was committed on the service during our upload; ours is the latest (local-wins), theirs is in the version history');
    return;
  }
  let kept: LocalFile | null = null;
  try {
    kept = await downloadAsCopy(d, ours, theirs, conflictTag(at));
  } catch (err) {
    d.log.warn({ ...said, err: describeError(err) }, 'conflict: a version was committed on the service during our upload and could not be kept as a conflict copy; it is in the version history');
  }
  const copy = kept?.relPath ?? null;
  const detail = copy !== null ? 'a version made on the service during the upload was under ours; kept as the conflict copy' : 'a version made on the service during the upload is under ours in the history (the conflict copy could not be written)';
  d.store.addConflict({ relPath: ours.relPath, conflictPath: copy, documentId: ours.documentId, policy, detail, at: at.toISOString() });
  report.conflicts.push({ relPath: ours.relPath, conflictPath: copy, outcome: copy !== null ? 'kept both (their version was committed during our upload)' : 'their version, committed during our upload, is in the version history' });
  if (kept === null) return;
  d.log.warn({ ...said, conflictCopy: copy }, 'conflict: a version was committed on the service during our upload; kept both (theirs as the conflict copy)');
  // Uploaded at once, as keep-both uploads its copy: both edits are on the service when the pass ends. A
  // failure leaves the copy local, and the next pass uploads it as any new file.
  try {
    const { bytes } = await uploadLocalFile(d, {
      relPath: kept.relPath,
      key: kept.key,
      abs: resolveInside(d.root, kept.relPath),
      local: kept,
      target: { documentId: null, folderId: ours.folderId, fileName: baseNameOf(kept.relPath) },
      reason: 'new-local',
    });
    report.bytesUploaded += bytes;
  } catch (err) {
    d.log.info({ relPath: copy, err: describeError(err) }, 'the conflict copy was not uploaded now; the next pass uploads it');
  }
}

/** Downloads `version` to the first free conflict-copy name of `ours`; returns the file as written (stat, hash). */
async function downloadAsCopy(d: ExecutorDeps, ours: BaseEntry, version: DocumentVersion, tag: string): Promise<LocalFile> {
  for (let n = 1; n <= COPY_NAMES_TRIED; n++) {
    const relPath = conflictName(ours.relPath, tag, n);
    const abs = resolveInside(d.root, relPath);
    if ((await lstatOrNull(abs)) !== null) continue;
    const tmp = await downloadToTemp(d, { documentId: ours.documentId, versionId: version.id, relPath }, abs);
    try {
      const stat = await commitTempFile(tmp.tempPath, abs, null, { synced: true });
      return { relPath, key: pathKey(relPath, d.caseInsensitive), ...stat, sha256: tmp.sha256 };
    } catch (err) {
      await fs.rm(tmp.tempPath, { force: true });
      // Taken between the look and the link (linkNoClobber refused): the next name.
      if ((await lstatOrNull(abs)) !== null) continue;
      throw err;
    }
  }
  throw new Error(`no free conflict-copy name beside ${ours.relPath} after ${COPY_NAMES_TRIED} tries`);
}
