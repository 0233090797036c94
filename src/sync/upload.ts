// Uploads through the three-step flow with a crash-safe outbox: each stage is recorded before it is taken,
// so a restart finishes a verified upload with the same uploadId (no duplicate version) and drops one
// that was never verified (nothing was committed for it).
import fs, { createReadStream } from 'node:fs';
import { BinderSyncError } from '../errors.js';
import { statMatches, toFileStat } from '../local/fs-ops.js';
import { failpoint } from '../failpoints.js';
import { ServiceError } from '../service/index.js';
import type { DocumentVersion } from '../service/schemas.js';
import type { OutboxRow } from '../state/store.js';
import type { BaseEntry, LocalFile, UploadTarget } from './model.js';
import { nextVersionLabel } from './version-label.js';
import type { ExecutorDeps } from './executor-deps.js';

export interface UploadRequest {
  relPath: string;
  key: string;
  abs: string;
  local: LocalFile;
  target: UploadTarget;
  reason: string;
}

/**
 * Size of the reads feeding an upload of a large file (the default is 64 KiB): 16x fewer reads, hash updates
 * and socket writes, each a round trip through the event loop (reads through the thread pool too). Not for
 * small files: the stream allocates a buffer of this size for every read, whatever the file's size.
 */
const READ_BUFFER = 1 << 20;

function readBufferFor(size: number): number {
  return size > READ_BUFFER ? READ_BUFFER : 64 * 1024;
}

/** Uploads one local file as planned. Returns the new base entry (already stored). */
export async function uploadLocalFile(d: ExecutorDeps, req: UploadRequest): Promise<{ base: BaseEntry; bytes: number }> {
  assertUnchanged(req.abs, req.local, 'before upload');
  const metadata = d.metadata.forPath(req.relPath);
  const labels = req.target.documentId ? (await d.client.listVersions(req.target.documentId)).map((v) => v.version ?? '') : [];
  const versionLabel = nextVersionLabel(labels.filter((l) => l !== ''), d.versionLabelScheme, d.now());
  // Each outbox stage is group committed (transactionSoon) with the other uploads' and awaited before the
  // step it records is taken: as durable as a transaction of its own, for a fraction of the commits.
  const id = await d.store.transactionSoon(() => d.store.addOutbox({
    relPath: req.relPath,
    key: req.key,
    documentId: req.target.documentId,
    folderId: req.target.folderId,
    fileName: req.target.fileName,
    sha256: req.local.sha256,
    size: req.local.size,
    mtimeMs: req.local.mtimeMs,
    inode: req.local.inode,
    versionLabel,
    reason: req.reason,
  }));
  let sent;
  try {
    sent = await d.client.uploadContent(() => createReadStream(req.abs, { highWaterMark: readBufferFor(req.local.size) }), req.local.size, {
      onSlot: async (uploadId) => {
        await d.store.transactionSoon(() => d.store.setOutboxStage(id, 'slot', { uploadId }));
        failpoint('upload-after-slot');
      },
      ...(d.onBytes ? { onBytes: d.onBytes } : {}),
    });
    // What was PUT must be exactly what was planned: a file that changed while uploading is never committed.
    if (sent.sha256 !== req.local.sha256 || sent.bytes !== req.local.size) {
      throw changedError(req.abs, 'its content changed while uploading');
    }
    assertUnchanged(req.abs, req.local, 'while uploading');
    failpoint('upload-after-put');
  } catch (err) {
    d.store.deleteOutbox(id);
    throw err;
  }
  const row = await d.store.transactionSoon(() => {
    d.store.setOutboxStage(id, 'committing', { uploadId: sent.uploadId });
    return d.store.getOutbox(id);
  });
  failpoint('upload-before-commit');
  if (!row) throw new Error(`outbox row ${id} vanished`);
  const version = await commitOutbox(d, row);
  failpoint('upload-after-commit');
  if (version === null) {
    d.store.deleteOutbox(id);
    throw new BinderSyncError(`${req.relPath}: the service refused to commit the upload`, {
      code: 'COMMIT_REFUSED',
      retryable: true,
      context: { pair: d.pair, relPath: req.relPath },
    });
  }
  return { base: await d.store.transactionSoon(() => finishOutbox(d, row, version)), bytes: sent.bytes };
}

/**
 * Finishes or drops the uploads a previous run left in the outbox. Stages 'planned' and 'slot' were never
 * verified (the PUT may be partial or torn), so they are dropped and the next plan uploads again; 'committing'
 * (content PUT and verified) is committed with the same uploadId, which the service makes idempotent.
 */
export async function recoverOutbox(d: ExecutorDeps): Promise<{ finished: number; dropped: number }> {
  let finished = 0;
  let dropped = 0;
  for (const row of d.store.listOutbox()) {
    if (row.stage === 'planned' || row.stage === 'slot' || row.uploadId === null) {
      d.store.deleteOutbox(row.id);
      dropped++;
      continue;
    }
    const version = await commitOutbox(d, row);
    if (version === null) {
      d.store.deleteOutbox(row.id);
      dropped++;
    } else {
      finishOutbox(d, row, version);
      finished++;
      d.log.info({ relPath: row.relPath, documentId: version.documentId }, 'finished an upload interrupted by a restart');
    }
  }
  return { finished, dropped };
}

/**
 * Commits row.uploadId. Returns null when the service has no usable content for it (never PUT, unknown
 * uploadId): nothing was created. A 409 may mean "already committed" (what a second commit returns is not
 * shown by the spec): the version is then looked up by folder, file name and our label.
 */
async function commitOutbox(d: ExecutorDeps, row: OutboxRow): Promise<DocumentVersion | null> {
  const uploadId = row.uploadId as string;
  try {
    return await d.client.commitUpload(d.binderId, row.folderId, {
      fileName: row.fileName,
      versionLabel: row.versionLabel,
      uploadId,
      metadata: metadataOrNone(d, row.relPath),
    });
  } catch (err) {
    if (!(err instanceof ServiceError) || err.retryable) throw err;
    // "What the second call returns: not shown" (spec 4.9): a 2xx that is not a version (204, an empty or
    // other body) still means the uploadId is committed; the version is found by its label.
    const accepted = err.status !== undefined && err.status >= 200 && err.status <= 299;
    if (accepted) {
      const found = await findCommittedVersion(d, row);
      if (found) return found;
      throw err;
    }
    if (err.status === 409) {
      const found = await findCommittedVersion(d, row);
      if (found) return found;
      return null;
    }
    if (err.status === 404 || err.status === 400) return null;
    throw err;
  }
}

/**
 * The metadata of a commit being repeated after a restart. Rules may have changed since: a repeat of a done
 * commit needs none (nothing new is created), and a commit that never happened is refused for missing
 * metadata (400), dropped, and planned again under the current rules.
 */
function metadataOrNone(d: ExecutorDeps, relPath: string): Array<{ metadataElementId: string; value: string }> {
  try {
    return d.metadata.forPath(relPath);
  } catch {
    return [];
  }
}

async function findCommittedVersion(d: ExecutorDeps, row: OutboxRow): Promise<DocumentVersion | null> {
  // A new version of a known document: its versions tell, wherever the document was renamed or moved since.
  // A new document: found by folder and file name (it cannot have been renamed before anyone knew its id...
  // unless another user did it in between, in which case the upload is repeated: a duplicate, never a loss).
  let documentId = row.documentId;
  if (documentId === null) {
    const docs = await d.client.listFolderDocuments(d.binderId, row.folderId);
    documentId = docs.find((x) => x.fileName === row.fileName)?.id ?? null;
  }
  if (documentId === null) return null;
  const versions = await d.client.listVersions(documentId);
  return versions.find((v) => v.version === row.versionLabel) ?? null;
}

/** Records the committed version as the new base and clears the outbox row, in one transaction (nests). */
function finishOutbox(d: ExecutorDeps, row: OutboxRow, version: DocumentVersion): BaseEntry {
  const base: BaseEntry = {
    documentId: version.documentId,
    versionId: version.id,
    versionLabel: row.versionLabel,
    folderId: row.folderId,
    fileName: row.fileName,
    relPath: row.relPath,
    key: row.key,
    size: row.size,
    mtimeMs: row.mtimeMs,
    inode: row.inode,
    sha256: row.sha256,
  };
  d.store.transaction(() => {
    const previous = d.store.getBaseByKey(row.key);
    if (previous && previous.documentId !== base.documentId) d.store.deleteBase(previous.documentId);
    d.store.putBase(base);
    d.store.deleteOutbox(row.id);
  });
  return base;
}

/** Synchronous lstat, like the scanner's: microseconds, cheaper than a thread-pool round trip. */
function assertUnchanged(abs: string, expect: LocalFile, when: string): void {
  let st: fs.Stats | undefined;
  try {
    st = fs.lstatSync(abs, { throwIfNoEntry: false });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTDIR') throw err;
  }
  if (st === undefined || !st.isFile() || !statMatches(toFileStat(st), expect)) throw changedError(abs, `it changed ${when}`);
}

function changedError(abs: string, why: string): BinderSyncError {
  return new BinderSyncError(`${abs}: not uploaded, ${why}; the next pass uploads the new content`, {
    code: 'LOCAL_CHANGED',
    retryable: true,
    context: { path: abs },
  });
}
