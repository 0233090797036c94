// Small constructors for plan steps, so reconcile's decision functions read as "what", not "how".
import { statOf, type Action, type BaseEntry, type ConflictPolicy, type FileStat, type LocalFile, type ReconcileContext, type RemoteDoc, type UploadTarget } from './model.js';

/** The local file as it will be after a move-local to the remote doc's path (rename keeps its stat). */
export function movedTo(file: LocalFile, doc: RemoteDoc): LocalFile {
  return { ...file, relPath: doc.relPath, key: doc.key };
}

/** Upload target "new version of this document, where it is now". */
export function versionOf(doc: RemoteDoc): UploadTarget {
  return { documentId: doc.documentId, folderId: doc.folderId, fileName: doc.fileName };
}

export function download(
  doc: RemoteDoc,
  expectLocal: FileStat | null,
  reason: Extract<Action, { kind: 'download' }>['reason'],
): Action {
  return { kind: 'download', relPath: doc.relPath, key: doc.key, doc, expectLocal, reason };
}

export function upload(
  local: LocalFile,
  target: UploadTarget,
  reason: Extract<Action, { kind: 'upload' }>['reason'],
  replacesBase: string | null,
): Extract<Action, { kind: 'upload' }> {
  return { kind: 'upload', relPath: local.relPath, key: local.key, local, target, reason, replacesBase };
}

export function moveLocal(file: LocalFile, doc: RemoteDoc): Action {
  return { kind: 'move-local', from: file.relPath, to: doc.relPath, toKey: doc.key, doc, expectLocal: statOf(file), sha256: file.sha256 };
}

export function trashLocal(
  file: LocalFile,
  documentId: string,
  reason: Extract<Action, { kind: 'trash-local' }>['reason'],
): Action {
  return { kind: 'trash-local', relPath: file.relPath, key: file.key, expectLocal: statOf(file), documentId, reason };
}

export function forget(b: BaseEntry, reason: Extract<Action, { kind: 'forget' }>['reason']): Action {
  return { kind: 'forget', documentId: b.documentId, relPath: b.relPath, reason };
}

/**
 * Policy a conflict carries. Resolved: in download-only mode 'local-wins' would need an upload, which that
 * mode never does, so it becomes 'keep-both' (local content kept as a local conflict copy, not uploaded).
 * With no base (first sync, lost state DB) nothing says which side is newer: always keep both
 * (onedrive #1714: a missing DB must never let one side overwrite the other).
 */
export function conflictPolicyFor(ctx: ReconcileContext, base: BaseEntry | null): ConflictPolicy {
  // An upload-only pair never changes local files: its content becomes the latest version, the remote edit stays
  // in the history. Still a conflict (compared first: equal content makes no version; recorded for status).
  if (ctx.direction === 'upload') return 'local-wins';
  if (base === null) return 'keep-both';
  return ctx.direction === 'download' && ctx.conflictPolicy === 'local-wins' ? 'keep-both' : ctx.conflictPolicy;
}

export function conflict(
  local: LocalFile,
  doc: RemoteDoc,
  base: BaseEntry | null,
  ctx: ReconcileContext,
  conflictPath: string,
): Action {
  return {
    kind: 'conflict',
    relPath: local.relPath,
    key: local.key,
    local,
    doc,
    base,
    policy: conflictPolicyFor(ctx, base),
    conflictPath,
    uploadConflictCopy: ctx.direction === 'both',
    keepLocal: ctx.direction === 'upload',
  };
}
