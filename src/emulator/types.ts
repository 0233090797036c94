// Public and internal types of the emulator: options, credentials, the stored records and the control API.
// Stored records are plain JSON-serialisable objects so the whole state can be written to one file.

export type RouteName =
  | 'token'
  | 'binders'
  | 'metadataelements'
  | 'search'
  | 'folders'
  | 'subfolders'
  | 'folderdocuments'
  | 'presignedupload'
  | 'commit'
  | 'document'
  | 'versions'
  | 'version'
  | 'downloadlink'
  | 'storage-get'
  | 'storage-put';

export const ROUTE_NAMES = [
  'token',
  'binders',
  'metadataelements',
  'search',
  'folders',
  'subfolders',
  'folderdocuments',
  'presignedupload',
  'commit',
  'document',
  'versions',
  'version',
  'downloadlink',
  'storage-get',
  'storage-put',
] as const satisfies readonly RouteName[];

export interface EmulatorOptions {
  /** 0 (default) = random free port; the host is always 127.0.0.1. */
  port?: number;
  /** Persist state + blobs across restarts; default: metadata in memory, blobs in a temp dir removed on close. */
  dataDir?: string;
  /** 'demo' seeds the "Project Atlas" binder (only into an empty state); default 'none'. */
  seed?: 'demo' | 'none';
  tokenLifetimeSeconds?: number;
  downloadUrlLifetimeSeconds?: number;
  /** Lifetime of a presigned upload URL; default 3600 (the spec does not show one). */
  uploadUrlLifetimeSeconds?: number;
  /** GET /binders answers a bare array (default) or {items:[...]}. */
  bindersShape?: 'array' | 'items';
  /** Which download-link suffixes exist; default both. */
  downloadLinkPaths?: Array<'raw' | 'downloadlink'>;
  /**
   * Which commit body spelling is accepted; default 'both'. 'both' takes either, or a body carrying both
   * spellings in full when they agree; 'reference' / 'walkthrough' refuse any key of the other (a strict server).
   */
  commitSpelling?: 'reference' | 'walkthrough' | 'both';
  /**
   * With commitSpelling 'reference' or 'walkthrough': a lenient server (ASP.NET-style model binding) that
   * ignores unknown commit keys instead of a 400, and numbers a version whose label key it did not find.
   * A body in the other spelling then "succeeds" without label and metadata. Default false.
   */
  ignoreUnknownCommitKeys?: boolean;
  /**
   * How a second commit of an already committed uploadId answers ("not shown" by the spec, 4.9): 200 with the
   * version (default), 204 with no body, 409, 200 with the document's latest version, whoever made it
   * ('latest': a server that answers "the document as it is now"), or 200 with a version id it does not have
   * ('unknown'). It never creates anything.
   */
  repeatCommitAnswer?: 'version' | 'no-content' | 'conflict' | 'latest' | 'unknown';
  /** Clamp pageSize (the answer carries the clamped value); default no clamp. */
  maxPageSize?: number;
  /** pageSize when the query does not give one; default 50. */
  defaultPageSize?: number;
  /** How a top-level folder shows its parent: null (default), the key left out, or the binder id. */
  topLevelParentId?: 'null' | 'absent' | 'binderId';
  /**
   * gzip every JSON answer whose request allows it (RFC 9110 12.5.3: any coding when there is no
   * Accept-Encoding; otherwise only a listed one), as a server or a proxy in front of it may. Default false.
   */
  compressJson?: boolean;
  /**
   * The status GET /documents/{documentId} answers for a document that does not exist (spec 7: error statuses
   * not shown): 404 (default), or 400 / 403 as some servers answer. Other routes keep their 404.
   */
  missingDocumentStatus?: 404 | 400 | 403;
  /** Seed of the PRNG behind fault probabilities; default 1 (reproducible runs). */
  faultSeed?: number;
  quiet?: boolean;
}

export interface EmulatorCredentials {
  tenantId: string;
  clientId: string;
  clientSecret: string;
  readOnlyClientId: string;
  readOnlyClientSecret: string;
}

export interface MetadataValue {
  metadataElementId: string;
  valueId: string;
}

export interface AllowedValue {
  id: string;
  label: string;
}

export interface MetadataElement {
  id: string;
  label: string;
  dataType: string;
  allowedValues: AllowedValue[];
  required: boolean;
}

export interface ClientRecord {
  clientId: string;
  clientSecret: string;
  tenantId: string;
  access: 'read' | 'readwrite';
}

export interface BinderRecord {
  id: string;
  tenantId: string;
  name: string;
  type: string;
  createdAt: string;
  metadataElements: MetadataElement[];
}

export interface FolderRecord {
  id: string;
  binderId: string;
  name: string;
  type: string;
  parentId: string | null;
  createdAt: string;
}

export interface DocumentRecord {
  id: string;
  binderId: string;
  folderId: string;
  fileName: string;
  /** Metadata other than GLOBAL_BinderId / GLOBAL_TabId, which are derived when the document is shown. */
  metadata: MetadataValue[];
  latestVersionId: string;
  /** Creation order; the versions' and the default search order rely on it. */
  seq: number;
}

export interface VersionRecord {
  id: string;
  documentId: string;
  version: string;
  status: string;
  modifiedAt: string;
  description: string;
  metadata: MetadataValue[];
  blobId: string;
  size: number;
  seq: number;
  uploadId: string | null;
}

export interface UploadRecord {
  id: string;
  tenantId: string;
  blobId: string;
  /** issued -> receiving -> stored -> committed; a PUT that breaks off leaves 'failed' (the slot is spent). */
  state: 'issued' | 'receiving' | 'stored' | 'failed' | 'committed';
  size: number;
  expiresAtMs: number;
  versionId: string | null;
}

/** What the document and version endpoints answer (spec 2.4 and 2.5). */
export interface DocumentView {
  id: string;
  fileName: string;
  folderId: string;
  binderId: string;
  metadata: MetadataValue[];
  latestVersionId: string;
}

export interface VersionView {
  id: string;
  documentId: string;
  version: string;
  status: string;
  modifiedAt: string;
  description: string;
  metadata: MetadataValue[];
  downloadUrl: string;
  thumbnailUrl: string;
}

export interface BinderView {
  id: string;
  name: string;
  type: string;
  createdAt: string;
}

export interface FolderView {
  id: string;
  name: string;
  type: string;
  parentId?: string | null;
}

export interface Fault {
  route: RouteName | '*';
  status?: number;
  retryAfterSeconds?: number;
  latencyMs?: number;
  drop?: boolean;
  truncate?: boolean;
  invalidBody?: boolean;
  /** Answers a list route 200 with `[]` (a valid answer that lies: the binder's folders missing at once). */
  emptyList?: boolean;
  /** How many matching requests it hits; default unlimited. */
  times?: number;
  /** 0..1, drawn from the seeded PRNG. */
  probability?: number;
}

export interface RateLimit {
  requestsPerSecond: number;
  burst?: number;
}

export interface RequestRecord {
  method: string;
  /** Path without the query string (presigned signatures never land here). */
  path: string;
  route: RouteName | null;
  /** 0 when the socket was destroyed before an answer. */
  status: number;
  authorization: boolean;
  tenantHeader: boolean;
  at: string;
}

export interface EmulatorControl {
  createTenant(): EmulatorCredentials;
  createBinder(input: { tenantId?: string; name: string; type?: string; id?: string }): BinderView;
  addMetadataElement(
    binderId: string,
    element: { id: string; label: string; dataType: string; allowedValues?: AllowedValue[]; required?: boolean },
  ): MetadataElement;
  createFolder(binderId: string, input: { name: string; parentId?: string | null; type?: string }): FolderView;
  renameFolder(folderId: string, name: string): FolderView;
  moveFolder(folderId: string, newParentId: string | null): FolderView;
  deleteFolder(folderId: string): void;
  addDocument(
    binderId: string,
    folderId: string,
    fileName: string,
    content: Buffer | string,
    opts?: { versionLabel?: string; metadata?: MetadataValue[] },
  ): { document: DocumentView; version: VersionView };
  addVersion(documentId: string, content: Buffer | string, opts?: { versionLabel?: string }): VersionView;
  renameDocument(documentId: string, fileName: string): DocumentView;
  moveDocument(documentId: string, folderId: string): DocumentView;
  /** Points the document's latestVersionId back at an earlier version (Store.makeVersionLatest). */
  makeVersionLatest(documentId: string, versionId: string): DocumentView;
  deleteDocument(documentId: string): void;
  getDocument(documentId: string): DocumentView;
  listDocuments(binderId: string): DocumentView[];
  listVersions(documentId: string): VersionView[];
  readContent(documentId: string, versionId?: string): Buffer;
  listFolders(binderId: string): Array<FolderView & { parentId: string | null }>;
  injectFault(fault: Fault): string;
  clearFaults(): void;
  setRateLimit(limit: RateLimit | null): void;
  /** Makes search (POST /documents) lag behind commits by `ms` (0: none): see Store.searchLagMs. */
  setSearchLag(ms: number): void;
  /** Makes search answer each request without SortBy in a new order (Store.searchShuffled). */
  setSearchShuffled(on: boolean): void;
  expireTokens(): void;
  /**
   * Download links of these documents (every document when none are given) are issued already expired, so
   * storage refuses each with 403, as when the service's clock runs behind storage's or a proxy rewrites the
   * links; null ends it. Not saved with a dataDir.
   */
  expireDownloadLinks(documentIds?: readonly string[] | null): void;
  /**
   * Presigned upload URLs are issued already expired, so storage refuses the PUT to each with 403, as when the
   * service's clock runs behind storage's or a proxy rewrites the URLs: every one from now on (none given), or the
   * next `slots` ones; null ends it. The slot stays unused (a PUT to it is refused, not spent). Not saved with a
   * dataDir.
   */
  expireUploadUrls(slots?: number | null): void;
  counters(): Record<RouteName, number>;
  resetCounters(): void;
  lastRequests(n: number): RequestRecord[];
}
