// Handlers of the twelve API endpoints (spec section 4). Each checks access first (auth.ts), then path
// objects (404 for anything missing or owned by another tenant), then the body, and returns a Reply.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { authorize, type Caller } from './auth.js';
import { HttpProblem, json, readJson, type FieldErrors, type Reply } from './http-util.js';
import { fieldErrors, referenceCommitSchema, searchBodySchema, walkthroughCommitSchema } from './schemas.js';
import { isEnumerated, matchingSorted, pageOf, parsePageQuery, shuffle } from './search.js';
import type { Signer } from './signing.js';
import { GLOBAL_BINDER, GLOBAL_TAB, type Store } from './store.js';
import type { BinderRecord, DocumentRecord, DocumentView, MetadataElement, MetadataValue } from './types.js';
import { binderView, documentView, downloadUrl, folderView, uploadUrlLifetimeMs, versionView, type ViewContext } from './views.js';

export interface ApiSettings {
  bindersShape: 'array' | 'items';
  downloadLinkPaths: Array<'raw' | 'downloadlink'>;
  commitSpelling: 'reference' | 'walkthrough' | 'both';
  ignoreUnknownCommitKeys: boolean;
  repeatCommitAnswer: 'version' | 'no-content' | 'conflict' | 'latest' | 'unknown';
  maxPageSize: number | undefined;
  defaultPageSize: number;
  uploadUrlLifetimeMs: number;
  missingDocumentStatus: 404 | 400 | 403;
}

export type Params = Record<string, string>;
export type Handler = (req: IncomingMessage, params: Params, url: URL) => Promise<Reply>;

const READ = { tenantHeader: 'required', write: false } as const;
const WRITE = { tenantHeader: 'required', write: true } as const;

/**
 * The documents as a search index that lags behind commits shows them: each at the latest version committed by
 * `asOf` (its name and folder as they are now), and none whose first version is newer (Store.searchLagMs).
 */
function indexedLagging(docs: DocumentRecord[], store: Store, asOf: number): DocumentView[] {
  const out: DocumentView[] = [];
  for (const d of docs) {
    const then = store.versionsOf(d.id).filter((v) => Date.parse(v.modifiedAt) <= asOf).at(-1);
    if (then !== undefined) out.push(documentView({ ...d, latestVersionId: then.id }));
  }
  return out;
}

export function createApiHandlers(store: Store, signer: Signer, view: ViewContext, settings: ApiSettings) {
  const auth = (req: IncomingMessage, rule: Parameters<typeof authorize>[3]) => authorize(req, signer, store, rule);

  /** The binder behind /documents/drives/{domain}/{id}: only the `binders` domain exists here. */
  const drive = (caller: Caller, domain: string, id: string): BinderRecord => {
    if (domain !== 'binders') throw new HttpProblem(404, `drive domain ${domain} not found`);
    return store.binder(id, caller.tenantId);
  };

  let searchMemo: { generation: number; key: string; matching: DocumentView[]; pages: Map<string, Buffer> } | null = null;
  const tenantBinders = (tenantId: string) => [...store.binders.values()].filter((b) => b.tenantId === tenantId);

  const handlers: Record<string, Handler> = {
    async binders(req) {
      const caller = auth(req, READ);
      const items = tenantBinders(caller.tenantId).map(binderView);
      return json(200, settings.bindersShape === 'items' ? { items } : items);
    },

    async metadataelements(req, p) {
      const caller = auth(req, READ);
      return json(200, store.binder(p.id!, caller.tenantId).metadataElements);
    },

    async search(req, _p, url) {
      const caller = auth(req, READ);
      const page = parsePageQuery(url.searchParams, settings);
      const parsed = searchBodySchema.safeParse(await readJson(req));
      if (!parsed.success) throw new HttpProblem(400, 'invalid search body', { errors: fieldErrors(parsed.error) });
      const binders = tenantBinders(caller.tenantId);
      const ids = new Set(binders.map((b) => b.id));
      const elements = new Map<string, MetadataElement>();
      for (const b of binders) for (const el of b.metadataElements) if (!elements.has(el.id)) elements.set(el.id, el);
      // GLOBAL_ keys exist on all binders, also for a tenant that has none yet.
      for (const id of [GLOBAL_BINDER, GLOBAL_TAB, 'GLOBAL_Category']) {
        if (!elements.has(id)) elements.set(id, { id, label: id, dataType: 'Enum', allowedValues: [], required: false });
      }
      // Walking a big binder asks for the same result page after page: the sorted result is kept while the
      // store is unchanged (same generation, tenant, body and term), so a page costs a slice, not a sort.
      const key = JSON.stringify([caller.tenantId, parsed.data, page.searchTerm]);
      if (store.searchLagMs > 0) searchMemo = null; // the index of then changes with the clock, not the store
      const shuffled = store.searchShuffled && (parsed.data.SortBy ?? []).length === 0;
      if (shuffled) searchMemo = null; // every request its own order
      if (searchMemo?.generation !== store.generation || searchMemo.key !== key) {
        const inBinders = [...store.documents.values()].filter((d) => ids.has(d.binderId));
        const docs = store.searchLagMs > 0 ? indexedLagging(inBinders, store, Date.now() - store.searchLagMs) : inBinders.map(documentView);
        const matching = matchingSorted(docs, elements, parsed.data, page.searchTerm);
        searchMemo = { generation: store.generation, key, matching: shuffled ? shuffle(matching) : matching, pages: new Map() };
      }
      // Each page's body is kept serialized too: a client that polls a 100k-document binder asks for the same
      // 100 pages (~40 MB of JSON) again and again, and serializing them made the emulator the slowest part of
      // a quiet poll (benchmarks measure the client, not the emulator).
      const body = pageOf(searchMemo.matching, page);
      const pageKey = `${page.pageNumber}/${page.pageSize}`;
      let payload = searchMemo.pages.get(pageKey);
      if (payload === undefined) {
        payload = Buffer.from(JSON.stringify(body));
        searchMemo.pages.set(pageKey, payload);
      }
      return { kind: 'json', status: 200, body, payload };
    },

    async folders(req, p) {
      const caller = auth(req, READ);
      const binder = drive(caller, p.domain!, p.id!);
      return json(200, store.childFolders(binder.id, null).map((f) => folderView(view, f)));
    },

    async subfolders(req, p) {
      const caller = auth(req, READ);
      const binder = drive(caller, p.domain!, p.id!);
      const folder = store.folder(p.folderId!, binder.id);
      return json(200, store.childFolders(binder.id, folder.id).map((f) => folderView(view, f)));
    },

    async folderdocuments(req, p) {
      const caller = auth(req, READ);
      const binder = drive(caller, p.domain!, p.id!);
      const folder = store.folder(p.folderId!, binder.id);
      return json(200, store.documentsIn(folder.id).map(documentView));
    },

    async presignedupload(req) {
      const caller = auth(req, { tenantHeader: 'optional', write: true });
      const upload = store.issueUpload(caller.tenantId, uploadUrlLifetimeMs(view, settings.uploadUrlLifetimeMs));
      const presignedUrl = signer.presign('PUT', view.origin, `/storage/uploads/${upload.id}`, upload.expiresAtMs);
      return json(200, { presignedUrl, uploadId: upload.id });
    },

    async commit(req, p) {
      const caller = auth(req, WRITE);
      const binder = drive(caller, p.domain!, p.id!);
      const folder = store.folder(p.folderId!, binder.id);
      const body = parseCommitBody(await readJson(req), settings.commitSpelling, settings.ignoreUnknownCommitKeys);
      const upload = store.uploads.get(body.uploadId);
      if (!upload || upload.tenantId !== caller.tenantId) throw new HttpProblem(404, `upload ${body.uploadId} not found`);
      if (upload.state === 'committed') {
        // Idempotency (spec 4.9): a repeat creates nothing and answers 200 with the version it created.
        const existing = upload.versionId ? store.versions.get(upload.versionId) : undefined;
        if (!existing) throw new HttpProblem(409, 'this upload was committed; its version has since been deleted');
        if (settings.repeatCommitAnswer === 'conflict') throw new HttpProblem(409, `upload ${body.uploadId} was already committed`);
        if (settings.repeatCommitAnswer === 'no-content') return { kind: 'empty', status: 204 };
        if (settings.repeatCommitAnswer === 'latest') {
          const latest = store.versions.get(store.document(existing.documentId).latestVersionId);
          return json(200, versionView(view, latest ?? existing));
        }
        if (settings.repeatCommitAnswer === 'unknown') return json(200, versionView(view, { ...existing, id: randomUUID() }));
        return json(200, versionView(view, existing));
      }
      if (upload.state !== 'stored') throw new HttpProblem(409, 'upload content missing: PUT the bytes to the presignedUrl first');
      const isNew = store.findByName(folder.id, body.fileName) === undefined;
      const metadata = checkMetadata(binder, body.metadata, isNew);
      const { version, created } = store.addContent({
        folder,
        fileName: body.fileName,
        versionLabel: body.versionLabel,
        blobId: upload.blobId,
        size: upload.size,
        metadata,
        uploadId: upload.id,
      });
      upload.state = 'committed';
      upload.versionId = version.id;
      store.changed();
      return json(201, versionView(view, version), created ? { 'x-emulator-created': 'document' } : { 'x-emulator-created': 'version' });
    },

    async document(req, p) {
      const caller = auth(req, READ);
      try {
        return json(200, documentView(store.document(p.documentId!, caller.tenantId)));
      } catch (err) {
        if (err instanceof HttpProblem && err.status === 404 && settings.missingDocumentStatus !== 404) {
          throw new HttpProblem(settings.missingDocumentStatus, err.message);
        }
        throw err;
      }
    },

    async versions(req, p) {
      const caller = auth(req, READ);
      const doc = store.document(p.documentId!, caller.tenantId);
      // Ascending: oldest first, the latest version last (the spec leaves the direction open).
      return json(200, store.versionsOf(doc.id).map((v) => versionView(view, v)));
    },

    async version(req, p) {
      const caller = auth(req, READ);
      const doc = store.document(p.documentId!, caller.tenantId);
      return json(200, versionView(view, store.version(doc.id, p.versionId!)));
    },

    async downloadlink(req, p) {
      if (!settings.downloadLinkPaths.includes(p.suffix as 'raw' | 'downloadlink')) {
        throw new HttpProblem(404, `this server has no /${p.suffix} path`);
      }
      const caller = auth(req, READ);
      const doc = store.document(p.documentId!, caller.tenantId);
      return json(200, downloadUrl(view, store.version(doc.id, p.versionId!)));
    },
  };
  return handlers;
}

interface CommitBody {
  fileName: string;
  /** Undefined only on a lenient server (ignoreUnknownCommitKeys) that did not find its label key: it numbers the version. */
  versionLabel: string | undefined;
  uploadId: string;
  /** Normalised: the reference `value` and the walkthrough `valueId` both land in `value`. */
  metadata: Array<{ metadataElementId: string; value: string }>;
}

const REFERENCE_KEYS = ['fileName', 'version', 'uploadId', 'additionalMetadata'] as const;
const WALKTHROUGH_KEYS = ['fileName', 'versionLabel', 'uploadId', 'metadata'] as const;

/**
 * Accepts the spelling(s) allowed by `commitSpelling`; anything else is a 400 with `errors`. With 'both', a body
 * carrying both spellings completely (version + versionLabel, additionalMetadata + metadata) is taken when the
 * two say the same; a partial mix is a 400. `ignoreUnknownKeys` models a lenient server (ASP.NET-style model
 * binding): keys of the other spelling (and any unknown key) are dropped unread, and a missing label or
 * metadata array is no error: the label is then the server's own (the version's number).
 */
export function parseCommitBody(body: unknown, spelling: ApiSettings['commitSpelling'], ignoreUnknownKeys = false): CommitBody {
  if (ignoreUnknownKeys && spelling !== 'both') return parseLenient(body, spelling);
  let errors: FieldErrors = {};
  if (spelling !== 'walkthrough') {
    const r = referenceCommitSchema.safeParse(body);
    if (r.success) {
      return { fileName: r.data.fileName, versionLabel: r.data.version, uploadId: r.data.uploadId, metadata: r.data.additionalMetadata };
    }
    errors = fieldErrors(r.error);
  }
  if (spelling !== 'reference') {
    const w = walkthroughCommitSchema.safeParse(body);
    if (w.success) {
      const metadata = (w.data.metadata ?? []).map((m) => ({ metadataElementId: m.metadataElementId, value: m.valueId }));
      return { fileName: w.data.fileName, versionLabel: w.data.versionLabel, uploadId: w.data.uploadId, metadata };
    }
    // With 'both', report the errors of the spelling the body is closer to (fewer problems).
    const werrors = fieldErrors(w.error);
    if (spelling === 'walkthrough' || Object.keys(werrors).length < Object.keys(errors).length) errors = werrors;
  }
  if (spelling === 'both') {
    const dual = parseDual(body);
    if (dual) return dual;
  }
  throw new HttpProblem(400, 'invalid commit body', { errors });
}

/** Both spellings in one body (a server that knows both names binds both): taken only when they agree. */
function parseDual(body: unknown): CommitBody | undefined {
  if (typeof body !== 'object' || body === null || !('version' in body) || !('versionLabel' in body)) return undefined;
  const o = body as Record<string, unknown>;
  const r = referenceCommitSchema.safeParse(pick(o, REFERENCE_KEYS));
  const w = walkthroughCommitSchema.safeParse(pick(o, WALKTHROUGH_KEYS));
  const extra = Object.keys(o).filter((k) => !(REFERENCE_KEYS as readonly string[]).includes(k) && !(WALKTHROUGH_KEYS as readonly string[]).includes(k));
  if (!r.success || !w.success || extra.length > 0) return undefined;
  const fromW = (w.data.metadata ?? []).map((m) => ({ metadataElementId: m.metadataElementId, value: m.valueId }));
  const same = r.data.version === w.data.versionLabel && JSON.stringify(r.data.additionalMetadata) === JSON.stringify(fromW);
  if (!same) throw new HttpProblem(400, 'invalid commit body', { errors: { versionLabel: ['version and versionLabel, additionalMetadata and metadata must say the same.'] } });
  return { fileName: r.data.fileName, versionLabel: r.data.version, uploadId: r.data.uploadId, metadata: r.data.additionalMetadata };
}

function pick(o: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (k in o) out[k] = o[k];
  return out;
}

/** The lenient reading of one spelling: only its own keys are looked at; label and metadata may be missing. */
function parseLenient(body: unknown, spelling: 'reference' | 'walkthrough'): CommitBody {
  const o = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const own = pick(o, spelling === 'reference' ? REFERENCE_KEYS : WALKTHROUGH_KEYS);
  if (spelling === 'reference') {
    const r = referenceCommitSchema.partial({ version: true, additionalMetadata: true }).safeParse(own);
    if (!r.success) throw new HttpProblem(400, 'invalid commit body', { errors: fieldErrors(r.error) });
    return { fileName: r.data.fileName, versionLabel: r.data.version, uploadId: r.data.uploadId, metadata: r.data.additionalMetadata ?? [] };
  }
  const w = walkthroughCommitSchema.partial({ versionLabel: true }).safeParse(own);
  if (!w.success) throw new HttpProblem(400, 'invalid commit body', { errors: fieldErrors(w.error) });
  const metadata = (w.data.metadata ?? []).map((m) => ({ metadataElementId: m.metadataElementId, value: m.valueId }));
  return { fileName: w.data.fileName, versionLabel: w.data.versionLabel, uploadId: w.data.uploadId, metadata };
}

/**
 * Metadata of a commit: each element must exist on the binder and not be GLOBAL_BinderId/TabId (the service
 * sets those); enumerated values must be allowedValues ids; a new document needs every required element.
 */
function checkMetadata(binder: BinderRecord, entries: CommitBody['metadata'], isNew: boolean): MetadataValue[] {
  const errors: FieldErrors = {};
  entries.forEach((m, i) => {
    const el = binder.metadataElements.find((e) => e.id === m.metadataElementId);
    const key = `metadata.${i}`;
    if (!el) errors[key] = [`Unknown metadata element '${m.metadataElementId}' on this binder.`];
    else if (el.id === GLOBAL_BINDER || el.id === GLOBAL_TAB) errors[key] = [`${el.id} is set by the service.`];
    else if (isEnumerated(el) && !el.allowedValues.some((a) => a.id === m.value)) {
      errors[key] = [`'${m.value}' is not an allowed value of ${el.id}.`];
    }
  });
  if (isNew) {
    for (const el of binder.metadataElements) {
      if (el.required && !el.id.startsWith('GLOBAL_') && !entries.some((m) => m.metadataElementId === el.id)) {
        errors[el.id] = [`${el.id} is required.`];
      }
    }
  }
  if (Object.keys(errors).length > 0) throw new HttpProblem(400, 'invalid metadata', { errors });
  return entries.map((m) => ({ metadataElementId: m.metadataElementId, valueId: m.value }));
}
