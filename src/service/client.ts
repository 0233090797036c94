// ServiceClient: one method per endpoint of the spec (section 4) plus the storage transfers, in terms of
// validated types. Learns the server's download-link suffix and commit spelling at runtime (capabilities).
import type { Readable, Writable } from 'node:stream';
import { pino } from 'pino';
import { z } from 'zod';
import type { Logger } from '../log.js';
import { ServiceError } from './errors.js';
import { HttpCore } from './http.js';
import type { ServiceSettings } from './settings.js';
import {
  BinderListSchema,
  DocumentSchema,
  DocumentVersionSchema,
  DownloadLinkSchema,
  FolderSchema,
  MetadataElementSchema,
  PresignedUploadSchema,
  SearchPageSchema,
  VersionItemSchema,
  type Binder,
  type Document,
  type DocumentVersion,
  type DownloadLink,
  type Folder,
  type MetadataElement,
  type PresignedUpload,
  type SearchPage,
  type VersionItem,
} from './schemas.js';
import { downloadToStream, putStream, uploadWithSlots } from './transfers.js';

export interface SearchQuery {
  /** AND-combined. Enumerated elements take valueId; free-form elements may take value (spec 4.3 rules 2-3). */
  filters?: { metadataElementId: string; valueId?: string; value?: string }[];
  sortBy?: { metadataElementId: string; direction: 'asc' | 'desc' }[];
  pageSize?: number;
  /** 1-based. */
  pageNumber?: number;
  searchTerm?: string;
}

/** A search page whose pageNumber/pageSize are always set (from the answer, else from the request). */
export type SearchResult = SearchPage & { pageNumber: number; pageSize: number };

export interface CommitBody {
  fileName: string;
  versionLabel: string;
  uploadId: string;
  metadata: { metadataElementId: string; value: string }[];
}

export interface ServiceCapabilities {
  /** Which download-link suffix the server has; null until the first link was fetched. */
  downloadLinkSuffix: 'raw' | 'downloadlink' | null;
  /** Which commit body spelling the server accepted; null until the first commit succeeded. */
  commitSpelling: 'reference' | 'walkthrough' | null;
}

export class ServiceClient {
  readonly capabilities: ServiceCapabilities = { downloadLinkSuffix: null, commitSpelling: null };
  private readonly core: HttpCore;

  constructor(settings: ServiceSettings, opts: { logger?: Logger; signal?: AbortSignal } = {}) {
    const log = (opts.logger ?? pino({ level: 'silent' })).child({ component: 'service' });
    this.core = new HttpCore(settings, log, opts.signal);
  }

  /** GET /binders; accepts a bare array or {items: [...]} (spec 4.1). */
  listBinders(): Promise<Binder[]> {
    return this.core.api({ method: 'GET', template: '/binders', schema: BinderListSchema });
  }

  getMetadataElements(binderId: string): Promise<MetadataElement[]> {
    return this.core.api({ method: 'GET', template: '/binders/{id}/metadataelements', params: { id: binderId }, schema: z.array(MetadataElementSchema) });
  }

  /** POST /documents: one page. Read-only, so it is retried like a GET. */
  async searchDocuments(q: SearchQuery): Promise<SearchResult> {
    return (await this.searchPage(q, undefined)).page as SearchResult;
  }

  /**
   * One search page, and the digest of its body. `sameAs` is the digest of an earlier answer: a body identical
   * to it is not parsed again and `page` is null (see HttpCore.apiUnlessSame); the listing of a quiet binder
   * then costs little more than the transfer.
   */
  async searchPage(q: SearchQuery, sameAs: string | undefined): Promise<{ digest: string; page: SearchResult | null }> {
    const { digest, value: page } = await this.core.apiUnlessSame(
      {
        method: 'POST',
        template: '/documents',
        query: { pageSize: q.pageSize, pageNumber: q.pageNumber, searchTerm: q.searchTerm },
        json: {
          // The spec spells the body keys with capital first letters (4.3).
          MetadataFilters: (q.filters ?? []).map((f) => ({
            metadataElementId: f.metadataElementId,
            ...(f.valueId !== undefined ? { valueId: f.valueId } : {}),
            ...(f.value !== undefined ? { value: f.value } : {}),
          })),
          SortBy: (q.sortBy ?? []).map((s) => ({ metadataElementId: s.metadataElementId, direction: s.direction })),
        },
        schema: SearchPageSchema,
      },
      sameAs,
    );
    if (page === null) return { digest, page: null };
    return { digest, page: { ...page, pageNumber: page.pageNumber ?? q.pageNumber ?? 1, pageSize: page.pageSize ?? q.pageSize ?? page.items.length } };
  }

  listTopFolders(binderId: string, domain = 'binders'): Promise<Folder[]> {
    return this.core.api({ method: 'GET', template: '/documents/drives/{domain}/{id}', params: { domain, id: binderId }, schema: z.array(FolderSchema) });
  }

  listSubFolders(binderId: string, folderId: string, domain = 'binders'): Promise<Folder[]> {
    return this.core.api({ method: 'GET', template: '/documents/drives/{domain}/{id}/{folderId}', params: { domain, id: binderId, folderId }, schema: z.array(FolderSchema) });
  }

  listFolderDocuments(binderId: string, folderId: string, domain = 'binders'): Promise<Document[]> {
    return this.core.api({ method: 'GET', template: '/documents/drives/{domain}/{id}/{folderId}/documents', params: { domain, id: binderId, folderId }, schema: z.array(DocumentSchema) });
  }

  /** GET presigned upload (step 1). The slot accepts exactly one PUT. */
  getPresignedUpload(): Promise<PresignedUpload> {
    return this.core.api({ method: 'GET', template: '/documents/uploads/personalstorage/presignedupload', schema: PresignedUploadSchema });
  }

  /**
   * Commits an uploaded slot as a new version (step 3). Idempotent by uploadId (spec 3), hence retried.
   * Spelling: the spec shows two bodies and does not say which the server takes. The remembered spelling (else
   * the reference one) goes first; on 400 the other is tried (a 400 creates nothing). If both are refused with
   * 400, the first error is thrown. A 409 throws COMMIT_CONFLICT: "already committed" on some servers, or
   * "content missing"; the caller reconciles by looking for the version.
   */
  async commitUpload(binderId: string, folderId: string, body: CommitBody, domain = 'binders'): Promise<DocumentVersion> {
    const first = this.capabilities.commitSpelling ?? 'reference';
    const second = first === 'reference' ? 'walkthrough' : 'reference';
    // 422 is treated like 400: some servers use it for body validation, and it also creates nothing.
    const refused = (e: unknown) => e instanceof ServiceError && (e.status === 400 || e.status === 422);
    try {
      return await this.commitAs(first, binderId, folderId, body, domain);
    } catch (err) {
      if (!refused(err)) throw err;
      try {
        return await this.commitAs(second, binderId, folderId, body, domain);
      } catch (err2) {
        throw refused(err2) ? err : err2;
      }
    }
  }

  private async commitAs(spelling: 'reference' | 'walkthrough', binderId: string, folderId: string, body: CommitBody, domain: string): Promise<DocumentVersion> {
    const json =
      spelling === 'reference'
        ? { fileName: body.fileName, version: body.versionLabel, uploadId: body.uploadId, additionalMetadata: body.metadata.map((m) => ({ metadataElementId: m.metadataElementId, value: m.value })) }
        : {
            fileName: body.fileName,
            versionLabel: body.versionLabel,
            uploadId: body.uploadId,
            // The walkthrough leaves metadata optional; omit it when there is none.
            ...(body.metadata.length > 0 ? { metadata: body.metadata.map((m) => ({ metadataElementId: m.metadataElementId, valueId: m.value })) } : {}),
          };
    try {
      const version = await this.core.api({
        method: 'POST',
        template: '/documents/drives/{domain}/{id}/{folderId}/upload',
        params: { domain, id: binderId, folderId },
        json,
        schema: DocumentVersionSchema,
      });
      this.capabilities.commitSpelling = spelling;
      return version;
    } catch (err) {
      if (err instanceof ServiceError && err.status === 409) {
        throw new ServiceError(err.message, {
          code: 'COMMIT_CONFLICT',
          retryable: false,
          request: err.request,
          status: 409,
          context: { ...err.context, uploadId: body.uploadId },
          hint: 'the upload was already committed (or its content is missing); look the version up by folder, file name and label',
          ...(err.traceId ? { traceId: err.traceId } : {}),
          ...(err.problem ? { problem: err.problem } : {}),
          cause: err,
        });
      }
      throw err;
    }
  }

  /** GET /documents/{documentId}; null on 404 only (the document is gone), every other failure throws. */
  async getDocument(documentId: string): Promise<Document | null> {
    try {
      return await this.core.api({ method: 'GET', template: '/documents/{documentId}', params: { documentId }, schema: DocumentSchema });
    } catch (err) {
      // 404 per the spec's usual reading; 410 Gone is the other way a server may say "deleted".
      if (err instanceof ServiceError && (err.status === 404 || err.status === 410)) return null;
      throw err;
    }
  }

  /**
   * Versions in the server's order (spec 4.11 leaves the direction open: do not rely on it). An item without
   * documentId gets the one of the path.
   */
  async listVersions(documentId: string): Promise<DocumentVersion[]> {
    const items = await this.core.api({ method: 'GET', template: '/documents/{documentId}/versions', params: { documentId }, schema: z.array(VersionItemSchema) });
    return items.map((v) => withDocumentId(v, documentId));
  }

  /** One version; without documentId in the answer, the one of the path. */
  async getVersion(documentId: string, versionId: string): Promise<DocumentVersion> {
    const v = await this.core.api({ method: 'GET', template: '/documents/{documentId}/versions/{versionId}', params: { documentId, versionId }, schema: VersionItemSchema });
    return withDocumentId(v, documentId);
  }

  /**
   * Download link: `/raw` is the reference path, the walkthrough uses `/downloadlink` (spec 4.13). Until one
   * worked, `/raw` goes first and 404/405 falls back to `/downloadlink`; if both fail, the first error is thrown.
   */
  async getDownloadLink(documentId: string, versionId: string): Promise<DownloadLink> {
    const known = this.capabilities.downloadLinkSuffix;
    if (known) return this.linkAt(known, documentId, versionId);
    try {
      const link = await this.linkAt('raw', documentId, versionId);
      this.capabilities.downloadLinkSuffix = 'raw';
      return link;
    } catch (err) {
      if (!(err instanceof ServiceError) || (err.status !== 404 && err.status !== 405)) throw err;
      try {
        const link = await this.linkAt('downloadlink', documentId, versionId);
        this.capabilities.downloadLinkSuffix = 'downloadlink';
        return link;
      } catch {
        throw err;
      }
    }
  }

  private linkAt(suffix: 'raw' | 'downloadlink', documentId: string, versionId: string): Promise<DownloadLink> {
    return this.core.api({ method: 'GET', template: `/documents/{documentId}/versions/{versionId}/${suffix}`, params: { documentId, versionId }, schema: DownloadLinkSchema });
  }

  /** One PUT to a presigned URL (Content-Length, x-ms-blob-type: BlockBlob, no Authorization). Not retried: the slot is one-shot. */
  async putContent(presignedUrl: string, body: () => Readable, size: number): Promise<void> {
    await putStream(this.core, presignedUrl, body, size, this.core.signal);
  }

  /**
   * Streams a version into `dest` (ended on success, destroyed on failure) and returns its size and SHA-256.
   * Failures before the first byte are retried here (new link when expired / 403); a failure mid-body throws a
   * retryable TRANSFER_INTERRUPTED or TRANSFER_INCOMPLETE: restart with a fresh temp file.
   */
  downloadVersionTo(documentId: string, versionId: string, dest: Writable, opts: { signal?: AbortSignal; onBytes?: (n: number) => void } = {}): Promise<{ bytes: number; sha256: string }> {
    return downloadToStream(this.core, () => this.getDownloadLink(documentId, versionId), dest, opts);
  }

  /**
   * Gets a slot, awaits onSlot(uploadId) (persist it before any byte moves), PUTs `open()`. A failed PUT burns
   * the slot: the retry takes a new slot (onSlot again) and re-opens the stream. Returns what was actually sent.
   */
  uploadContent(
    open: () => Readable,
    size: number,
    opts: { onSlot?: (uploadId: string) => void | Promise<void>; onBytes?: (n: number) => void; signal?: AbortSignal } = {},
  ): Promise<{ uploadId: string; sha256: string; bytes: number }> {
    return uploadWithSlots(this.core, () => this.getPresignedUpload(), open, size, opts);
  }

  /** Aborts whatever is in flight and releases the connection pool. */
  close(): Promise<void> {
    return this.core.close();
  }
}

/** A version item with documentId filled from the path when the server left it out. */
function withDocumentId(v: VersionItem, documentId: string): DocumentVersion {
  return v.documentId !== undefined ? (v as DocumentVersion) : { ...v, documentId };
}
