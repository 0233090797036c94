// Renders stored records as the spec's response shapes (sections 2.1-2.6). Presigned URLs are minted at
// render time, so every answer carries a fresh, short-lived downloadUrl.
import type { Signer } from './signing.js';
import { GLOBAL_BINDER, GLOBAL_TAB } from './store.js';
import type { BinderRecord, BinderView, DocumentRecord, DocumentView, FolderRecord, FolderView, VersionRecord, VersionView } from './types.js';

export interface ViewContext {
  signer: Signer;
  /** http://127.0.0.1:PORT */
  origin: string;
  downloadUrlLifetimeMs: number;
  /**
   * Documents whose download links are issued already expired ('all': every document; null: none), as by a
   * service whose clock runs behind storage's: storage refuses each link with its 403 (expireDownloadLinks).
   */
  expiredLinks: ReadonlySet<string> | 'all' | null;
  /**
   * Presigned upload URLs issued already expired ('all': every one; a number: that many more; null: none), as by a
   * service whose clock runs behind storage's: storage refuses the PUT to each with its 403 (expireUploadUrls).
   */
  expiredUploadUrls: number | 'all' | null;
  topLevelParentId: 'null' | 'absent' | 'binderId';
}

export const STORAGE_PREFIX = '/storage';

export function binderView(b: BinderRecord): BinderView {
  return { id: b.id, name: b.name, type: b.type, createdAt: b.createdAt };
}

export function folderView(ctx: ViewContext, f: FolderRecord): FolderView {
  const view: FolderView = { id: f.id, name: f.name, type: f.type };
  if (f.parentId !== null) view.parentId = f.parentId;
  else if (ctx.topLevelParentId === 'null') view.parentId = null;
  else if (ctx.topLevelParentId === 'binderId') view.parentId = f.binderId;
  return view;
}

/** GLOBAL_BinderId and GLOBAL_TabId are derived from where the document is, so they never go stale. */
export function documentView(d: DocumentRecord): DocumentView {
  return {
    id: d.id,
    fileName: d.fileName,
    folderId: d.folderId,
    binderId: d.binderId,
    metadata: [
      { metadataElementId: GLOBAL_BINDER, valueId: d.binderId },
      { metadataElementId: GLOBAL_TAB, valueId: d.folderId },
      ...d.metadata,
    ],
    latestVersionId: d.latestVersionId,
  };
}

/**
 * How long the next presigned upload URL lives: `lifetimeMs`, or already past while expireUploadUrls holds (which
 * spends one of its count).
 */
export function uploadUrlLifetimeMs(ctx: ViewContext, lifetimeMs: number): number {
  if (ctx.expiredUploadUrls === null) return lifetimeMs;
  if (ctx.expiredUploadUrls !== 'all') ctx.expiredUploadUrls = ctx.expiredUploadUrls > 1 ? ctx.expiredUploadUrls - 1 : null;
  return -5_000;
}

export function downloadUrl(ctx: ViewContext, v: VersionRecord): { url: string; expiresAt: string } {
  const expired = ctx.expiredLinks === 'all' || (ctx.expiredLinks?.has(v.documentId) ?? false);
  const expiresAtMs = Date.now() + (expired ? -5_000 : ctx.downloadUrlLifetimeMs);
  return {
    url: ctx.signer.presign('GET', ctx.origin, `${STORAGE_PREFIX}/blobs/${v.blobId}`, expiresAtMs),
    expiresAt: new Date(expiresAtMs).toISOString(),
  };
}

export function versionView(ctx: ViewContext, v: VersionRecord): VersionView {
  return {
    id: v.id,
    documentId: v.documentId,
    version: v.version,
    status: v.status,
    modifiedAt: v.modifiedAt,
    description: v.description,
    metadata: v.metadata,
    downloadUrl: downloadUrl(ctx, v).url,
    // The emulator renders no thumbnails; the field is present (a string) but empty.
    thumbnailUrl: '',
  };
}
