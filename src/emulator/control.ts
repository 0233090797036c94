// The in-process control interface (EmulatorControl): arrange state behind the API's back, inject faults,
// read counters and recent requests. Methods are synchronous and return plain data; bad input throws
// HttpProblem (a BinderSyncError) with the status the HTTP control interface answers.
import { HttpProblem } from './http-util.js';
import { guid } from './ids.js';
import type { FaultInjector, RateLimiter } from './faults.js';
import type { Store } from './store.js';
import { ROUTE_NAMES, type EmulatorControl, type RequestRecord, type RouteName } from './types.js';
import { binderView, documentView, folderView, versionView, type ViewContext } from './views.js';

export class RequestLog {
  private counts = new Map<RouteName, number>();
  private recent: RequestRecord[] = [];

  count(route: RouteName): void {
    this.counts.set(route, (this.counts.get(route) ?? 0) + 1);
  }

  record(r: RequestRecord): void {
    this.recent.push(r);
    if (this.recent.length > 1000) this.recent.splice(0, this.recent.length - 1000);
  }

  counters(): Record<RouteName, number> {
    const out = {} as Record<RouteName, number>;
    for (const r of ROUTE_NAMES) out[r] = this.counts.get(r) ?? 0;
    return out;
  }

  reset(): void {
    this.counts.clear();
    this.recent = [];
  }

  last(n: number): RequestRecord[] {
    return n <= 0 ? [] : this.recent.slice(-n).map((r) => ({ ...r }));
  }
}

export function createControl(store: Store, view: ViewContext, faults: FaultInjector, limiter: RateLimiter, log: RequestLog): EmulatorControl {
  const toBuffer = (content: Buffer | string) => (typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
  return {
    createTenant: () => store.createTenant(),
    createBinder: (input) => binderView(store.createBinder(input)),
    addMetadataElement: (binderId, element) => store.addMetadataElement(binderId, element),
    createFolder: (binderId, input) => folderView(view, store.createFolder(binderId, input)),
    renameFolder: (folderId, name) => folderView(view, store.renameFolder(folderId, name)),
    moveFolder: (folderId, parentId) => folderView(view, store.moveFolder(folderId, parentId)),
    deleteFolder: (folderId) => store.deleteFolder(folderId),
    addDocument(binderId, folderId, fileName, content, opts = {}) {
      const folder = store.folder(folderId, store.binder(binderId).id);
      if (store.findByName(folderId, fileName)) throw new HttpProblem(409, `a document named ${fileName} exists in that folder; use addVersion`);
      const blobId = guid();
      const bytes = toBuffer(content);
      store.blobs.writeSync(blobId, bytes, !store.inBatch);
      const { document, version } = store.addContent({
        folder,
        fileName,
        versionLabel: opts.versionLabel,
        blobId,
        size: bytes.length,
        metadata: opts.metadata ?? [],
        uploadId: null,
      });
      return { document: documentView(document), version: versionView(view, version) };
    },
    addVersion(documentId, content, opts = {}) {
      const doc = store.document(documentId);
      const blobId = guid();
      const bytes = toBuffer(content);
      store.blobs.writeSync(blobId, bytes, !store.inBatch);
      const { version } = store.addContent({
        folder: store.folder(doc.folderId),
        fileName: doc.fileName,
        versionLabel: opts.versionLabel,
        blobId,
        size: bytes.length,
        metadata: [],
        uploadId: null,
      });
      return versionView(view, version);
    },
    renameDocument: (documentId, fileName) => documentView(store.renameDocument(documentId, fileName)),
    moveDocument: (documentId, folderId) => documentView(store.moveDocument(documentId, folderId)),
    makeVersionLatest: (documentId, versionId) => documentView(store.makeVersionLatest(documentId, versionId)),
    deleteDocument: (documentId) => store.deleteDocument(documentId),
    getDocument: (documentId) => documentView(store.document(documentId)),
    listDocuments(binderId) {
      store.binder(binderId);
      return [...store.documents.values()].filter((d) => d.binderId === binderId).sort((a, b) => a.seq - b.seq).map(documentView);
    },
    listVersions: (documentId) => store.versionsOf(store.document(documentId).id).map((v) => versionView(view, v)),
    readContent(documentId, versionId) {
      const doc = store.document(documentId);
      return store.blobs.read(store.version(doc.id, versionId ?? doc.latestVersionId).blobId);
    },
    listFolders(binderId) {
      store.binder(binderId);
      return [...store.folders.values()].filter((f) => f.binderId === binderId).map((f) => ({ ...folderView(view, f), parentId: f.parentId }));
    },
    injectFault: (fault) => faults.add(fault),
    clearFaults: () => faults.clear(),
    setRateLimit: (limit) => limiter.set(limit),
    setSearchLag(ms) {
      if (!Number.isFinite(ms) || ms < 0) throw new HttpProblem(400, 'search lag must be a number of ms, at least 0');
      store.searchLagMs = ms;
    },
    setSearchShuffled(on) {
      store.searchShuffled = on;
    },
    expireTokens() {
      store.tokenGeneration++;
      store.changed();
    },
    expireDownloadLinks(documentIds) {
      view.expiredLinks = documentIds === null ? null : documentIds === undefined ? 'all' : new Set(documentIds);
    },
    expireUploadUrls(slots) {
      if (slots !== undefined && slots !== null && !(Number.isInteger(slots) && slots >= 1)) throw new HttpProblem(400, 'slots must be a whole number, at least 1');
      view.expiredUploadUrls = slots === undefined ? 'all' : slots;
    },
    counters: () => log.counters(),
    resetCounters: () => log.reset(),
    lastRequests: (n) => log.last(n),
  };
}
