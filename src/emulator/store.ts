// The emulator's state: tenants, clients, binders, folders, documents, versions and upload slots, with the
// domain rules shared by the API and the control interface. With a dataDir every change is written to
// state.json atomically (temp file + fsync + rename) before the caller answers.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { HttpProblem } from './http-util.js';
import { binderId as newBinderId, BINDER_ID_PATTERN, guid } from './ids.js';
import type { BlobStore } from './blobs.js';
import type {
  BinderRecord,
  ClientRecord,
  DocumentRecord,
  EmulatorCredentials,
  FolderRecord,
  MetadataElement,
  MetadataValue,
  UploadRecord,
  VersionRecord,
} from './types.js';

export const GLOBAL_BINDER = 'GLOBAL_BinderId';
export const GLOBAL_TAB = 'GLOBAL_TabId';
export const GLOBAL_CATEGORY = 'GLOBAL_Category';

interface StateFile {
  format: 1;
  signingKey: string;
  tokenGeneration: number;
  seq: number;
  defaultCredentials: EmulatorCredentials;
  tenants: string[];
  clients: ClientRecord[];
  binders: BinderRecord[];
  folders: FolderRecord[];
  documents: DocumentRecord[];
  versions: VersionRecord[];
  uploads: UploadRecord[];
}

export class Store {
  signingKey: Buffer;
  /** Tokens carry the generation they were issued in; expireTokens() bumps it. */
  tokenGeneration = 0;
  defaultCredentials: EmulatorCredentials;
  readonly tenants = new Set<string>();
  readonly clients = new Map<string, ClientRecord>();
  readonly binders = new Map<string, BinderRecord>();
  readonly folders = new Map<string, FolderRecord>();
  readonly documents = new Map<string, DocumentRecord>();
  readonly versions = new Map<string, VersionRecord>();
  readonly uploads = new Map<string, UploadRecord>();
  /**
   * How far the search index lags behind commits (ms; 0: none). The spec says nothing of when a commit shows in
   * POST /documents: a search index that lags (as search engines behind such services do) lists a document as it
   * was that long ago, at its version of then, or not at all when it is newer. A test sets it (control.setSearchLag).
   */
  searchLagMs = 0;
  /**
   * Whether search answers a request without SortBy in a new order each time. The spec states no order then: a
   * server whose index is sharded or reordered by concurrent writes may answer so, and a paged walk of it
   * overlaps and skips documents. A test sets it (control.setSearchShuffled).
   */
  searchShuffled = false;
  private seq = 0;
  private batchDepth = 0;
  private readonly statePath: string | undefined;

  constructor(
    readonly blobs: BlobStore,
    dataDir: string | undefined,
  ) {
    this.statePath = dataDir ? join(dataDir, 'state.json') : undefined;
    if (this.statePath && existsSync(this.statePath)) {
      const s = JSON.parse(readFileSync(this.statePath, 'utf8')) as StateFile;
      this.signingKey = Buffer.from(s.signingKey, 'base64');
      this.tokenGeneration = s.tokenGeneration;
      this.seq = s.seq;
      this.defaultCredentials = s.defaultCredentials;
      for (const t of s.tenants) this.tenants.add(t);
      for (const c of s.clients) this.clients.set(c.clientId, c);
      for (const b of s.binders) this.binders.set(b.id, b);
      for (const f of s.folders) this.folders.set(f.id, f);
      for (const d of s.documents) this.documents.set(d.id, d);
      for (const v of s.versions) this.versions.set(v.id, v);
      for (const u of s.uploads) {
        // A PUT that was streaming when the process stopped never finished: its slot is spent.
        if (u.state === 'receiving') u.state = 'failed';
        this.uploads.set(u.id, u);
      }
    } else {
      this.signingKey = randomBytes(32);
      this.defaultCredentials = this.createTenant();
    }
  }

  get isEmpty(): boolean {
    return this.binders.size === 0;
  }

  nextSeq(): number {
    return ++this.seq;
  }

  get inBatch(): boolean {
    return this.batchDepth > 0;
  }

  /** Runs `fn` with one state write at the end instead of one per change (seeding). */
  batch<T>(fn: () => T): T {
    this.batchDepth++;
    try {
      return fn();
    } finally {
      this.batchDepth--;
      this.changed();
    }
  }

  /** Set by close(): a request still settling must not overwrite the file a restarted emulator now owns. */
  closed = false;

  /**
   * Bumped by every mutation (see changed()): what was computed from the store at one generation is still
   * true while the generation is the same (the search handler memoizes its sorted result on it).
   */
  generation = 0;

  /** Call after every mutation: persists when a dataDir is set. */
  changed(): void {
    this.generation++;
    if (!this.statePath || this.batchDepth > 0 || this.closed) return;
    const state: StateFile = {
      format: 1,
      signingKey: this.signingKey.toString('base64'),
      tokenGeneration: this.tokenGeneration,
      seq: this.seq,
      defaultCredentials: this.defaultCredentials,
      tenants: [...this.tenants],
      clients: [...this.clients.values()],
      binders: [...this.binders.values()],
      folders: [...this.folders.values()],
      documents: [...this.documents.values()],
      versions: [...this.versions.values()],
      uploads: [...this.uploads.values()],
    };
    const tmp = `${this.statePath}.tmp`;
    writeFileSync(tmp, JSON.stringify(state));
    const fd = openSync(tmp, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.statePath);
  }

  // ---- tenants and clients -------------------------------------------------------------------------

  createTenant(): EmulatorCredentials {
    const tenantId = guid();
    const rw: ClientRecord = { clientId: `rw-${guid()}`, clientSecret: randomBytes(24).toString('base64url'), tenantId, access: 'readwrite' };
    const ro: ClientRecord = { clientId: `ro-${guid()}`, clientSecret: randomBytes(24).toString('base64url'), tenantId, access: 'read' };
    this.tenants.add(tenantId);
    this.clients.set(rw.clientId, rw);
    this.clients.set(ro.clientId, ro);
    this.changed();
    return { tenantId, clientId: rw.clientId, clientSecret: rw.clientSecret, readOnlyClientId: ro.clientId, readOnlyClientSecret: ro.clientSecret };
  }

  // ---- binders and metadata ------------------------------------------------------------------------

  createBinder(input: { tenantId?: string; name: string; type?: string; id?: string }): BinderRecord {
    const tenantId = input.tenantId ?? this.defaultCredentials.tenantId;
    if (!this.tenants.has(tenantId)) throw new HttpProblem(404, `unknown tenant ${tenantId}`);
    const id = input.id ?? newBinderId();
    if (!BINDER_ID_PATTERN.test(id)) throw new HttpProblem(400, 'a binder id is 9 characters of [A-Za-z0-9_-]');
    if (this.binders.has(id)) throw new HttpProblem(409, `binder ${id} exists`);
    const binder: BinderRecord = {
      id,
      tenantId,
      name: input.name,
      type: input.type ?? 'Project',
      createdAt: new Date().toISOString(),
      metadataElements: [
        { id: GLOBAL_BINDER, label: 'Binder', dataType: 'Binder', allowedValues: [{ id, label: input.name }], required: true },
        // Tab ids are the binder's folder ids; they are not listed here (the set changes with the tree).
        { id: GLOBAL_TAB, label: 'Tab', dataType: 'Tab', allowedValues: [], required: true },
        {
          id: GLOBAL_CATEGORY,
          label: 'Category',
          dataType: 'Enum',
          allowedValues: [
            { id: 'contract', label: 'Contract' },
            { id: 'correspondence', label: 'Correspondence' },
            { id: 'drawing', label: 'Drawing' },
            { id: 'report', label: 'Report' },
          ],
          required: false,
        },
      ],
    };
    this.binders.set(id, binder);
    this.changed();
    return binder;
  }

  addMetadataElement(binderId: string, el: { id: string; label: string; dataType: string; allowedValues?: MetadataElement['allowedValues']; required?: boolean }): MetadataElement {
    const binder = this.binder(binderId);
    if (el.id.startsWith('GLOBAL_')) throw new HttpProblem(400, 'GLOBAL_ keys are defined by the service');
    if (binder.metadataElements.some((m) => m.id === el.id)) throw new HttpProblem(409, `metadata element ${el.id} exists`);
    const element: MetadataElement = { id: el.id, label: el.label, dataType: el.dataType, allowedValues: el.allowedValues ?? [], required: el.required ?? false };
    binder.metadataElements.push(element);
    this.changed();
    return element;
  }

  binder(id: string, tenantId?: string): BinderRecord {
    const b = this.binders.get(id);
    // Another tenant's binder is indistinguishable from a missing one.
    if (!b || (tenantId !== undefined && b.tenantId !== tenantId)) throw new HttpProblem(404, `binder ${id} not found`);
    return b;
  }

  // ---- folders -------------------------------------------------------------------------------------

  folder(id: string, binderId?: string): FolderRecord {
    const f = this.folders.get(id);
    if (!f || (binderId !== undefined && f.binderId !== binderId)) throw new HttpProblem(404, `folder ${id} not found`);
    return f;
  }

  createFolder(binderId: string, input: { name: string; parentId?: string | null; type?: string }): FolderRecord {
    this.binder(binderId);
    const parentId = input.parentId ?? null;
    if (parentId !== null) this.folder(parentId, binderId);
    assertName(input.name, 'folder name');
    const f: FolderRecord = {
      id: guid(),
      binderId,
      name: input.name,
      type: input.type ?? (parentId === null ? 'Tab' : 'Folder'),
      parentId,
      createdAt: new Date().toISOString(),
    };
    this.folders.set(f.id, f);
    this.changed();
    return f;
  }

  renameFolder(folderId: string, name: string): FolderRecord {
    const f = this.folder(folderId);
    assertName(name, 'folder name');
    f.name = name;
    this.changed();
    return f;
  }

  moveFolder(folderId: string, newParentId: string | null): FolderRecord {
    const f = this.folder(folderId);
    if (newParentId !== null) {
      this.folder(newParentId, f.binderId);
      for (let p: string | null = newParentId; p !== null; p = this.folders.get(p)?.parentId ?? null) {
        if (p === folderId) throw new HttpProblem(400, 'a folder cannot move into itself');
      }
    }
    f.parentId = newParentId;
    this.changed();
    return f;
  }

  deleteFolder(folderId: string): void {
    const f = this.folder(folderId);
    for (const child of this.childFolders(f.binderId, f.id)) this.deleteFolder(child.id);
    for (const d of this.documentsIn(f.id)) this.deleteDocument(d.id);
    this.folders.delete(f.id);
    this.changed();
  }

  /** Folders of a binder under `parentId` (null = top level), in creation order. */
  childFolders(binderId: string, parentId: string | null): FolderRecord[] {
    return [...this.folders.values()].filter((f) => f.binderId === binderId && f.parentId === parentId);
  }

  // ---- documents and versions ----------------------------------------------------------------------

  document(id: string, tenantId?: string): DocumentRecord {
    const d = this.documents.get(id);
    if (!d || (tenantId !== undefined && this.binders.get(d.binderId)?.tenantId !== tenantId)) {
      throw new HttpProblem(404, `document ${id} not found`);
    }
    return d;
  }

  version(documentId: string, versionId: string): VersionRecord {
    const v = this.versions.get(versionId);
    if (!v || v.documentId !== documentId) throw new HttpProblem(404, `version ${versionId} not found`);
    return v;
  }

  documentsIn(folderId: string): DocumentRecord[] {
    return [...this.documents.values()].filter((d) => d.folderId === folderId).sort((a, b) => a.seq - b.seq);
  }

  /** Versions of a document by creation, oldest first. */
  versionsOf(documentId: string): VersionRecord[] {
    return [...this.versions.values()].filter((v) => v.documentId === documentId).sort((a, b) => a.seq - b.seq);
  }

  /** The document named `fileName` in the folder (exact, case-sensitive match), if any. */
  findByName(folderId: string, fileName: string): DocumentRecord | undefined {
    return [...this.documents.values()].find((d) => d.folderId === folderId && d.fileName === fileName);
  }

  /**
   * Adds content as a version: a new version of the document with the same fileName in the folder, else a
   * new document. `metadata` is attached to the version and merged into the document's metadata.
   */
  addContent(input: {
    folder: FolderRecord;
    fileName: string;
    versionLabel: string | undefined;
    blobId: string;
    size: number;
    metadata: MetadataValue[];
    uploadId: string | null;
  }): { document: DocumentRecord; version: VersionRecord; created: boolean } {
    assertName(input.fileName, 'fileName');
    const existing = this.findByName(input.folder.id, input.fileName);
    const docId = existing?.id ?? guid();
    const label = input.versionLabel ?? String((existing ? this.versionsOf(existing.id).length : 0) + 1);
    const version: VersionRecord = {
      id: guid(),
      documentId: docId,
      version: label,
      status: 'Published',
      modifiedAt: new Date().toISOString(),
      description: '',
      metadata: input.metadata,
      blobId: input.blobId,
      size: input.size,
      seq: this.nextSeq(),
      uploadId: input.uploadId,
    };
    let document: DocumentRecord;
    if (existing) {
      document = existing;
      document.metadata = mergeMetadata(document.metadata, input.metadata);
      document.latestVersionId = version.id;
    } else {
      document = {
        id: docId,
        binderId: input.folder.binderId,
        folderId: input.folder.id,
        fileName: input.fileName,
        metadata: input.metadata,
        latestVersionId: version.id,
        seq: version.seq,
      };
      this.documents.set(docId, document);
    }
    this.versions.set(version.id, version);
    this.changed();
    return { document, version, created: !existing };
  }

  renameDocument(documentId: string, fileName: string): DocumentRecord {
    const d = this.document(documentId);
    assertName(fileName, 'fileName');
    d.fileName = fileName;
    this.changed();
    return d;
  }

  /**
   * Makes an earlier version the document's latest again by moving its pointer (no new version): what a "make this
   * version current" in a service's own interface may do. The spec calls latestVersionId a pointer and does not show
   * how such a restore is made; a client must not take the older version it then lists for a lagging index.
   */
  makeVersionLatest(documentId: string, versionId: string): DocumentRecord {
    const d = this.document(documentId);
    this.version(documentId, versionId);
    d.latestVersionId = versionId;
    this.changed();
    return d;
  }

  moveDocument(documentId: string, folderId: string): DocumentRecord {
    const d = this.document(documentId);
    this.folder(folderId, d.binderId);
    d.folderId = folderId;
    this.changed();
    return d;
  }

  deleteDocument(documentId: string): void {
    const d = this.document(documentId);
    for (const v of this.versionsOf(d.id)) {
      this.versions.delete(v.id);
      this.blobs.remove(v.blobId);
    }
    this.documents.delete(d.id);
    this.changed();
  }

  // ---- upload slots --------------------------------------------------------------------------------

  issueUpload(tenantId: string, lifetimeMs: number): UploadRecord {
    const u: UploadRecord = { id: guid(), tenantId, blobId: guid(), state: 'issued', size: 0, expiresAtMs: Date.now() + lifetimeMs, versionId: null };
    this.uploads.set(u.id, u);
    this.changed();
    return u;
  }
}

/** Later entries win per metadataElementId. */
export function mergeMetadata(base: MetadataValue[], update: MetadataValue[]): MetadataValue[] {
  const out = base.filter((m) => !update.some((u) => u.metadataElementId === m.metadataElementId));
  return [...out, ...update];
}

/** File and folder names: non-empty, no path separators or control characters, not "." or "..". */
export function assertName(name: string, field: string): void {
  // eslint-disable-next-line no-control-regex
  if (name.length === 0 || name.length > 255 || /[/\\\u0000-\u001f]/.test(name) || name === '.' || name === '..') {
    throw new HttpProblem(400, `invalid ${field}`, {
      errors: { [field]: ['Must be 1-255 characters without "/", "\\" or control characters, and not "." or "..".'] },
    });
  }
}
