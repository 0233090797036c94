// ServiceClient: one method per endpoint of the spec (section 4) plus the storage transfers, in terms of
// validated types. Learns the server's download-link suffix and commit spelling at runtime (capabilities).
import type { Readable, Writable } from 'node:stream';
import { pino } from 'pino';
import { z } from 'zod';
import type { Logger } from '../log.js';
import type { CommitSpelling, ServiceCapabilities } from './capabilities-file.js';
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
import { downloadToStream, putStream, uploadWithSlots, type DownloadOptions, type UploadOptions } from './transfers.js';

export interface SearchQuery {
  /** AND-combined. Enumerated elements take valueId; free-form elements may take value (spec 4.3 rules 2-3). */
  filters?: { metadataElementId: string; valueId?: string; value?: string }[];
  sortBy?: { metadataElementId: string; direction: 'asc' | 'desc' }[];
  pageSize?: number;
  /** 1-based. */
  pageNumber?: number;
  searchTerm?: string;
  /** Ends the request (a pass cancelled at shutdown), beside the client-wide signal. */
  signal?: AbortSignal;
}

/** The {domain} of the folder-tree paths (spec 4.4-4.6): binders are the only drive this client syncs. */
const DRIVE_DOMAIN = 'binders';

/** A search page whose pageNumber/pageSize are always set (from the answer, else from the request). */
export type SearchResult = SearchPage & { pageNumber: number; pageSize: number };

export interface CommitBody {
  fileName: string;
  versionLabel: string;
  uploadId: string;
  metadata: { metadataElementId: string; value: string }[];
}

export type { CommitSpelling, ServiceCapabilities };

/** A service as a pair's state and the capabilities file name it: its API address and tenant. */
export function serviceIdentityOf(baseUrl: string, tenantId: string): string {
  return `${baseUrl} (tenant ${tenantId})`;
}

/**
 * The service settings an error was met with, as `status` compares them with the config's: the addresses, tenant
 * and client id (never the secret, nor anything derived from it; the addresses carry no password: config/schema.ts).
 */
export function settingsIdentityOf(s: { baseUrl: string; authUrl: string; tenantId: string; clientId: string }): string {
  const bare = (url: string) => url.replace(/\/+$/, '');
  return `${serviceIdentityOf(bare(s.baseUrl), s.tenantId)}, client ${s.clientId} of ${bare(s.authUrl)}`;
}

/** What the client was told or found about the server: hints from an earlier process, and who to tell. */
export interface CapabilityMemory {
  /** Spellings an earlier process found (capabilities-file.ts): tried first, but still verified. */
  hints?: Partial<ServiceCapabilities>;
  /** Called when a capability is found that the hints did not already say. */
  onLearned?: (caps: Readonly<ServiceCapabilities>) => void;
}

export class ServiceClient {
  readonly capabilities: ServiceCapabilities = { downloadLinkSuffix: null, commitSpelling: null };
  /** The call finding out a capability, while one does (see oneProbeAtATime). */
  private readonly probes = new Map<keyof ServiceCapabilities, Promise<void>>();
  private readonly core: HttpCore;
  private readonly log: Logger;
  private readonly memory: CapabilityMemory;

  constructor(settings: ServiceSettings, opts: { logger?: Logger; signal?: AbortSignal; memory?: CapabilityMemory } = {}) {
    this.log = (opts.logger ?? pino({ level: 'silent' })).child({ component: 'service' });
    this.core = new HttpCore(settings, this.log, opts.signal);
    this.memory = opts.memory ?? {};
  }

  /** Which service this client speaks to: its API address and tenant (what a pair's state was synced with). */
  get serviceIdentity(): string {
    return serviceIdentityOf(this.core.settings.baseUrl, this.core.settings.tenantId);
  }

  /** See settingsIdentityOf. */
  get settingsIdentity(): string {
    return settingsIdentityOf(this.core.settings);
  }

  /** New bandwidth caps (bytes/s, null: none) for the transfers from now on, and those in flight that had one. */
  setTransferRates(upload: number | null, download: number | null): void {
    this.core.setTransferRates(upload, download);
  }

  /** The API's base address (service.baseUrl). */
  get baseUrl(): string {
    return this.core.settings.baseUrl;
  }

  /** The configured upper bound on API requests per second. */
  get requestsPerSecond(): number {
    return this.core.settings.requestsPerSecond;
  }

  /** GET /binders; accepts a bare array or {items: [...]} (spec 4.1). */
  listBinders(): Promise<Binder[]> {
    return this.core.api({ method: 'GET', template: '/binders', schema: BinderListSchema });
  }

  getMetadataElements(binderId: string, signal?: AbortSignal): Promise<MetadataElement[]> {
    return this.core.api({ method: 'GET', template: '/binders/{id}/metadataelements', params: { id: binderId }, schema: z.array(MetadataElementSchema), ...(signal ? { signal } : {}) });
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
        ...(q.signal ? { signal: q.signal } : {}),
      },
      sameAs,
    );
    if (page === null) return { digest, page: null };
    return { digest, page: { ...page, pageNumber: page.pageNumber ?? q.pageNumber ?? 1, pageSize: page.pageSize ?? q.pageSize ?? page.items.length } };
  }

  // `signal` ends the request (a pass cancelled at shutdown), beside the client-wide one.
  listTopFolders(binderId: string, signal?: AbortSignal): Promise<Folder[]> {
    return this.core.api({ method: 'GET', template: '/documents/drives/{domain}/{id}', params: { domain: DRIVE_DOMAIN, id: binderId }, schema: z.array(FolderSchema), ...(signal ? { signal } : {}) });
  }

  listSubFolders(binderId: string, folderId: string, signal?: AbortSignal): Promise<Folder[]> {
    return this.core.api({ method: 'GET', template: '/documents/drives/{domain}/{id}/{folderId}', params: { domain: DRIVE_DOMAIN, id: binderId, folderId }, schema: z.array(FolderSchema), ...(signal ? { signal } : {}) });
  }

  listFolderDocuments(binderId: string, folderId: string, signal?: AbortSignal): Promise<Document[]> {
    return this.core.api({ method: 'GET', template: '/documents/drives/{domain}/{id}/{folderId}/documents', params: { domain: DRIVE_DOMAIN, id: binderId, folderId }, schema: z.array(DocumentSchema), ...(signal ? { signal } : {}) });
  }

  /** GET presigned upload (step 1). The slot accepts exactly one PUT. */
  getPresignedUpload(): Promise<PresignedUpload> {
    return this.core.api({ method: 'GET', template: '/documents/uploads/personalstorage/presignedupload', schema: PresignedUploadSchema });
  }

  /**
   * Commits an uploaded slot as a new version (step 3). Idempotent by uploadId (spec 3), hence retried.
   * Spelling: the spec shows two bodies and does not say which the server takes (4.9). Until one has worked,
   * the first body carries both (version + versionLabel, additionalMetadata + metadata): a server that ignores
   * unknown keys then finds its own and still gets label and metadata. A refusal (400/422 create nothing)
   * falls back to the reference spelling, then the walkthrough one (walkthrough first when the refusal named
   * only reference keys); the spelling that worked is remembered. A refusal that names reasons none of which
   * is about the spelling fields is thrown at once. When every spelling is refused, the thrown error is the
   * attempt that says most about why (see refusalReason). A 409 throws COMMIT_CONFLICT: "already committed" on
   * some servers, or "content missing"; the caller reconciles by looking for the version.
   */
  async commitUpload(binderId: string, folderId: string, body: CommitBody, domain = 'binders'): Promise<DocumentVersion> {
    // Until a spelling has worked, one commit at a time finds it: parallel uploads would each meet a strict
    // server's 400 first (noise in its logs, and round trips). The others wait for it, then use what it learned.
    return this.oneProbeAtATime('commitSpelling', () => this.commitLearning(binderId, folderId, body, domain));
  }

  /**
   * Runs `call` at once when the capability is known; otherwise one call at a time finds it out, and the calls
   * waiting meanwhile run with what it learned (or, when it failed for another reason, the next one probes).
   */
  private async oneProbeAtATime<T>(capability: keyof ServiceCapabilities, call: () => Promise<T>): Promise<T> {
    for (let probe = this.probes.get(capability); this.capabilities[capability] === null && probe !== undefined; probe = this.probes.get(capability)) await probe;
    if (this.capabilities[capability] !== null) return call();
    let settle = () => {};
    this.probes.set(capability, new Promise<void>((resolve) => (settle = resolve)));
    try {
      return await call();
    } finally {
      this.probes.delete(capability);
      settle();
    }
  }

  /**
   * The commit of commitUpload, from the spelling known (else the one an earlier process found, else 'both'),
   * falling back through the others.
   */
  private async commitLearning(binderId: string, folderId: string, body: CommitBody, domain: string): Promise<DocumentVersion> {
    const known = this.capabilities.commitSpelling;
    const tried: CommitSpelling[] = [];
    const refusals: ServiceError[] = [];
    for (let spelling: CommitSpelling | undefined = known ?? this.memory.hints?.commitSpelling ?? 'both'; spelling !== undefined; ) {
      tried.push(spelling);
      try {
        const version = await this.commitAs(spelling, binderId, folderId, body, domain);
        this.learned('commitSpelling', spelling);
        if (version.version !== undefined && version.version !== body.versionLabel) {
          this.log.debug({ request: COMMIT_REQUEST, spelling, sent: body.versionLabel, answered: version.version }, 'commit answered another version label than the one sent');
        }
        return version;
      } catch (err) {
        // 422 is treated like 400: some servers use it for body validation, and it also creates nothing.
        if (!(err instanceof ServiceError) || (err.status !== 400 && err.status !== 422)) throw err;
        refusals.push(err);
        const r = refusalReason(err);
        // Refused for reasons, none of them the spelling: another spelling would be refused the same way.
        if (r.named && r.other && !r.spelling) throw err;
        spelling = nextSpelling(tried, r);
      }
    }
    throw refusedEverySpelling(refusals, tried);
  }

  private async commitAs(spelling: CommitSpelling, binderId: string, folderId: string, body: CommitBody, domain: string): Promise<DocumentVersion> {
    const reference = { version: body.versionLabel, additionalMetadata: body.metadata.map((m) => ({ metadataElementId: m.metadataElementId, value: m.value })) };
    // The walkthrough leaves metadata optional; omit it when there is none.
    const walkthrough = {
      versionLabel: body.versionLabel,
      ...(body.metadata.length > 0 ? { metadata: body.metadata.map((m) => ({ metadataElementId: m.metadataElementId, valueId: m.value })) } : {}),
    };
    const json = {
      fileName: body.fileName,
      ...(spelling !== 'walkthrough' ? { version: reference.version } : {}),
      ...(spelling !== 'reference' ? walkthrough : {}),
      uploadId: body.uploadId,
      ...(spelling !== 'walkthrough' ? { additionalMetadata: reference.additionalMetadata } : {}),
    };
    const sends = { count: 0 };
    try {
      const version = await this.core.api({
        method: 'POST',
        template: COMMIT_TEMPLATE,
        params: { domain, id: binderId, folderId },
        json,
        schema: DocumentVersionSchema,
        sends,
      });
      if (sends.count > 1) answersToRepeat.add(version);
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
  async getDocument(documentId: string, signal?: AbortSignal): Promise<Document | null> {
    try {
      return await this.core.api({ method: 'GET', template: '/documents/{documentId}', params: { documentId }, schema: DocumentSchema, ...(signal ? { signal } : {}) });
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
   * worked, `/raw` goes first (or the suffix an earlier process found) and 404/405 falls back to the other; if
   * both fail, the first error is thrown.
   */
  getDownloadLink(documentId: string, versionId: string): Promise<DownloadLink> {
    const known = this.capabilities.downloadLinkSuffix;
    if (known) return this.linkAt(known, documentId, versionId);
    // Parallel first downloads would each meet a 404 at the suffix the server lacks: one finds it out.
    return this.oneProbeAtATime('downloadLinkSuffix', () => this.findDownloadLink(documentId, versionId));
  }

  private async findDownloadLink(documentId: string, versionId: string): Promise<DownloadLink> {
    const known = this.capabilities.downloadLinkSuffix;
    if (known) return this.linkAt(known, documentId, versionId);
    const first = this.memory.hints?.downloadLinkSuffix ?? 'raw';
    const second = first === 'raw' ? 'downloadlink' : 'raw';
    try {
      const link = await this.linkAt(first, documentId, versionId);
      this.learned('downloadLinkSuffix', first);
      return link;
    } catch (err) {
      if (!(err instanceof ServiceError) || (err.status !== 404 && err.status !== 405)) throw err;
      try {
        const link = await this.linkAt(second, documentId, versionId);
        this.learned('downloadLinkSuffix', second);
        return link;
      } catch {
        throw err;
      }
    }
  }

  /** Records a capability found; tells memory.onLearned when the hints did not already say it. */
  private learned<K extends keyof ServiceCapabilities>(capability: K, value: NonNullable<ServiceCapabilities[K]>): void {
    if (this.capabilities[capability] === value) return;
    this.capabilities[capability] = value;
    if (this.memory.hints?.[capability] === value || !this.memory.onLearned) return;
    // What is not found yet in this process stays as the hints had it.
    const hints = this.memory.hints ?? {};
    try {
      this.memory.onLearned({
        downloadLinkSuffix: this.capabilities.downloadLinkSuffix ?? hints.downloadLinkSuffix ?? null,
        commitSpelling: this.capabilities.commitSpelling ?? hints.commitSpelling ?? null,
      });
    } catch (err) {
      // Only a hint for the next process is lost: that process probes again.
      this.log.warn({ err, capability }, 'could not save what the service speaks for the next start');
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
  /**
   * Streams a version into dest. Its SHA-256 is computed on the way, except for a body of `hashBelowBytes` or more
   * (by its Content-Length): sha256 is then null and the caller hashes what it wrote (off the event loop).
   */
  downloadVersionTo(
    documentId: string,
    versionId: string,
    dest: Writable,
    opts: DownloadOptions = {},
  ): Promise<{ bytes: number; sha256: string | null }> {
    return downloadToStream(this.core, () => this.getDownloadLink(documentId, versionId), dest, opts);
  }

  /**
   * Gets a slot, awaits onSlot(uploadId) (persist it before any byte moves), PUTs `open()`. A failed PUT burns
   * the slot: the retry takes a new slot (onSlot again) and re-opens the stream. Returns what was actually sent.
   */
  uploadContent(
    open: () => Readable,
    size: number,
    opts: UploadOptions = {},
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

const COMMIT_TEMPLATE = '/documents/drives/{domain}/{id}/{folderId}/upload';

/** Commit answers that came back to a request sent more than once (see answersRepeatedCommit). */
const answersToRepeat = new WeakSet<DocumentVersion>();

/**
 * Whether commitUpload's answer came back to a commit sent more than once (a retry after a dropped connection
 * or a 5xx, a resend after a 401). The first send may have created the version, and what a repeated commit of
 * an uploadId answers is not shown (spec 4.9): it need not be the version that upload created (a server may
 * answer the document's latest, someone else's). Such an answer is a claim to check, not a fact.
 */
export function answersRepeatedCommit(version: DocumentVersion): boolean {
  return answersToRepeat.has(version);
}
/** How errors and logs name the commit request. */
export const COMMIT_REQUEST = `POST ${COMMIT_TEMPLATE}`;

/** The keys in which the two commit spellings differ (spec 4.9). */
const REFERENCE_KEYS = new Set(['version', 'additionalmetadata']);
const WALKTHROUGH_KEYS = new Set(['versionlabel', 'metadata']);
const SPELLING_FIELDS = new Set(['version', 'versionlabel', 'additionalmetadata', 'metadata', 'value', 'valueid']);

/** What a refused commit complains about. */
export interface RefusalReason {
  /** It names fields (an `errors` record), so `other`/`spelling` are read from field names, not guessed from text. */
  named: boolean;
  /** Something besides the spelling fields: the file name, a metadata value, the upload... */
  other: boolean;
  /** One of the spelling fields themselves (unknown, missing, wrong type). */
  spelling: boolean;
  /** The spelling complaints name keys of the reference / walkthrough spelling. */
  referenceKeys: boolean;
  walkthroughKeys: boolean;
}

/**
 * Reads a commit refusal: a field whose path is made of spelling fields only (`version`, `metadata[0].valueId`)
 * is a spelling complaint; an entry of a metadata array (`metadata.0`: "unknown element") or any other field
 * is a reason of its own. Without field names, texts that name a spelling field count as spelling complaints.
 */
export function refusalReason(err: ServiceError): RefusalReason {
  const out: RefusalReason = { named: false, other: false, spelling: false, referenceKeys: false, walkthroughKeys: false };
  const texts: string[] = [];
  for (const [key, messages] of Object.entries(err.problem?.errors ?? {})) {
    const segs = key
      .replace(/^\$\.?/, '')
      .split(/[.[\]/]+/)
      .filter((x) => x !== '');
    if (segs.length === 0) {
      texts.push(...messages);
      continue;
    }
    out.named = true;
    const names = segs.filter((x) => !/^\d+$/.test(x)).map((x) => x.toLowerCase());
    if (/^\d+$/.test(segs[segs.length - 1]!) || !names.every((n) => SPELLING_FIELDS.has(n))) {
      out.other = true;
      continue;
    }
    out.spelling = true;
    if (REFERENCE_KEYS.has(names[0]!)) out.referenceKeys = true;
    if (WALKTHROUGH_KEYS.has(names[0]!)) out.walkthroughKeys = true;
  }
  if (!out.named) texts.push(...[err.problem?.title, err.problem?.detail].filter((t): t is string => t !== undefined));
  for (const t of texts) {
    const ref = /\badditionalMetadata\b|["'`$.]version["'`]/i.test(t);
    const walk = /\bversionLabel\b|["'`$.]metadata["'`]/i.test(t);
    if (ref || walk || /\bvalueId\b|["'`$.]value["'`]/i.test(t)) {
      out.spelling = true;
      out.referenceKeys ||= ref;
      out.walkthroughKeys ||= walk;
    } else if (t.trim() !== '') out.other = true;
  }
  return out;
}

/**
 * The next spelling to try after a refusal. After one single spelling, the other: a server that refused it for
 * its keys wants the other one's (and takes it whether or not it also ignores unknown keys). After 'both':
 * reference before walkthrough, unless only reference keys were refused.
 */
function nextSpelling(tried: readonly CommitSpelling[], r: RefusalReason): CommitSpelling | undefined {
  const last = tried[tried.length - 1];
  const order: CommitSpelling[] =
    last === 'reference'
      ? ['walkthrough', 'both']
      : last === 'walkthrough'
        ? ['reference', 'both']
        : r.referenceKeys && !r.walkthroughKeys
          ? ['walkthrough', 'reference']
          : ['reference', 'walkthrough'];
  return order.find((s) => !tried.includes(s));
}

/**
 * Every spelling was refused: the error of the attempt that gives a reason beyond the spelling fields (the
 * file name, a metadata value), else the first one. Its message carries the server's reason (scrubbed).
 */
function refusedEverySpelling(refusals: readonly ServiceError[], tried: readonly CommitSpelling[]): ServiceError {
  const reasons = refusals.map(refusalReason);
  const pick = reasons.findIndex((r) => r.other && !r.spelling);
  const i = pick >= 0 ? pick : Math.max(0, reasons.findIndex((r) => r.other));
  const err = refusals[i]!;
  return new ServiceError(err.message, {
    code: err.code,
    retryable: err.retryable,
    request: err.request,
    ...(err.status !== undefined ? { status: err.status } : {}),
    ...(err.traceId ? { traceId: err.traceId } : {}),
    ...(err.problem ? { problem: err.problem } : {}),
    context: { ...err.context, commitSpellingsTried: [...tried] },
    hint: 'the service refused the commit in every body spelling; the reason above is its answer',
    cause: err,
  });
}
