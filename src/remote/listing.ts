// Remote scan: the binder's folder tree (drives endpoints) and every document (paged search), turned into
// one RemoteObservation. A listing is used only when it is complete; anything else is an error, never "empty".
import { ServiceError, type Document, type ServiceClient } from '../service/index.js';
import { settleOlderThanSynced } from './older-than-synced.js';
import type { BaseEntry, RemoteObservation } from '../sync/model.js';
import { DocMerger, type PagePositions } from './doc-merge.js';
import { mapRemoteTree } from './path-map.js';
import { parentOf } from '../sync/path-key.js';

export type ListingClient = Pick<
  ServiceClient,
  'searchPage' | 'listTopFolders' | 'listSubFolders' | 'listFolderDocuments' | 'getDocument'
>;

export interface ListRemoteOptions {
  binderId: string;
  pageSize: number;
  caseInsensitive: boolean;
  base: ReadonlyMap<string, BaseEntry>;
  ignoredBy?: (relPath: string, isDir: boolean) => string | undefined;
  /** See RemoteTreeInput.maxPathBytes. */
  maxPathBytes?: number;
  /**
   * By document, versions its base row held before its present one: a document listed at one of them is taken as
   * listed at the synced version (older-than-synced.ts: a search index lagging behind commits).
   */
  supersededVersions?: ReadonlyMap<string, ReadonlySet<string>>;
  signal?: AbortSignal;
}

export interface RemoteListing {
  observation: RemoteObservation;
  /** How the documents were listed: paged search, or per-folder after search proved inconsistent. */
  method: 'search' | 'per-folder';
  requests: number;
  /** Documents listed at a version older than the one synced, taken as at the synced one (ListRemoteOptions.supersededVersions). */
  olderThanSynced?: string[];
}

export interface RawFolder {
  id: string;
  name: string;
  parentId: string | null;
}
export interface RawDoc {
  documentId: string;
  fileName: string;
  folderId: string;
  versionId: string;
}

/** The binder as fetched, before deletes are confirmed and names mapped (see observeRemote). */
export interface RawListing {
  folders: RawFolder[];
  docs: Map<string, RawDoc>;
  method: RemoteListing['method'];
  requests: number;
  /**
   * Exactly the same folders and documents (id, name, parent, version) as `previous`: a quiet poll needs
   * nothing more. Compared field by field, never by a hash that could hide a change.
   */
  unchanged: boolean;
  /** The documents alone are unchanged (decides whether a cached folder tree may stand in for a walk). */
  docsUnchanged: boolean;
  /** False when the folder tree was reused from `previous` instead of walked. */
  walkedTree: boolean;
  /**
   * Search was asked and answered inconsistent pages twice (its order changes between requests, or the binder
   * changed during both walks), so the documents were listed per folder (see FetchRemoteOptions.skipSearch).
   */
  searchInconsistent: boolean;
  /** The search pages this listing was made of (null when it was listed per folder). */
  pages: SearchPageMemo[] | null;
}

/**
 * One search page as answered: the digest of its body and what that body said. The next listing asks with
 * the digest, and a page that comes back byte for byte the same is merged from `recs` without being parsed
 * again: a quiet poll of 100k documents no longer parses and validates ~40 MB of JSON.
 */
export interface SearchPageMemo {
  digest: string;
  totalCount: number;
  pageSize: number;
  /** Items on the page, including any the binder filter dropped. */
  itemCount: number;
  /** The merged records of its items, in page order. */
  recs: RawDoc[];
  /** Cache of DocMerger.addPage: where `recs` sit in the previous map. */
  positions?: PagePositions;
}

export interface FetchRemoteOptions extends Pick<ListRemoteOptions, 'binderId' | 'pageSize' | 'signal'> {
  /**
   * The last complete listing. Its document records are reused where nothing changed (a quiet poll of a
   * 100k-document binder then allocates almost nothing that outlives it), and it is what `unchanged` compares to.
   */
  previous?: RawListing | null;
  /**
   * May the previous listing's folder tree stand in for a walk (one request per folder)? Only while the
   * documents are exactly as then and all sit in known folders; any document change walks again.
   */
  reuseFolders?: boolean;
  /**
   * List the documents per folder straight away, without asking search first: search answered inconsistent
   * pages lately. A service whose search order is not stable (the spec states none without SortBy, and
   * GLOBAL_Category, its only named sort key, is no total order) answers every walk so: each poll then paid two
   * whole searches before the per-folder listing it ended in anyway (black-box round 42c, O1).
   */
  skipSearch?: boolean;
}

/** Lists the whole binder. Throws (retryable) when the listing cannot be made complete. */
export async function listRemote(client: ListingClient, opts: ListRemoteOptions): Promise<RemoteListing> {
  return observeRemote(client, await fetchRemote(client, opts), opts);
}

/** Fetches the folder tree and every document; complete or a thrown error. */
export async function fetchRemote(client: ListingClient, opts: FetchRemoteOptions): Promise<RawListing> {
  const counter = { requests: 0 };
  const previous = opts.previous ?? null;
  const stopWalk = new AbortController();
  const walkSignal = opts.signal ? AbortSignal.any([opts.signal, stopWalk.signal]) : stopWalk.signal;
  let walking: Promise<RawFolder[]> | null = null;
  const walk = (): Promise<RawFolder[]> => (walking ??= listFolderTree(client, opts.binderId, counter, walkSignal));
  // A walk that happens whatever the documents say (no tree that may stand in) starts with the search. Both
  // share the request rate, but the search pages are bound by the server's time per page (a page of 1000
  // documents) and the walk by the rate (one small request per folder): side by side they take about as long
  // as the longer one (100k documents in 1,109 folders: ~1.1 s instead of ~2.0 s one after the other).
  if (opts.reuseFolders !== true || previous === null || opts.skipSearch === true) walk().catch(() => undefined); // awaited (and thrown) below
  let method: RemoteListing['method'] = 'search';
  let docs: Map<string, RawDoc>;
  let searched: Awaited<ReturnType<typeof listDocumentsBySearch>> = null;
  let searchInconsistent = false;
  try {
    if (opts.skipSearch !== true) {
      searched = await listDocumentsBySearch(client, opts, counter, previous);
      if (searched === null) {
        // The paged walk was inconsistent (totalCount changed, or pages overlapped and skipped items because
        // the server's order is not stable). Try once more, then fall back to the unpaged per-folder endpoint.
        searched = await listDocumentsBySearch(client, opts, counter, previous);
      }
      searchInconsistent = searched === null;
    }
    if (searched === null) {
      method = 'per-folder';
      docs = await listDocumentsPerFolder(client, opts.binderId, await walk(), counter, previous, opts.signal);
    } else if (searched.docs.size === 0 && previous === null && (await walk()).length > 0) {
      // No document at all in a binder with folders, at the first listing of this process: a search index that
      // lags behind a binder just filled says so too, and a first sync then said "in sync" with nothing
      // downloaded (black-box round 41c, O1). The folders are asked (once per process: a binder of empty
      // folders costs its folder count once).
      method = 'per-folder';
      docs = await listDocumentsPerFolder(client, opts.binderId, await walk(), counter, previous, opts.signal);
    } else {
      docs = searched.docs;
    }
  } catch (err) {
    stopWalk.abort(); // the listing failed: no more folder requests for it
    throw err;
  }
  // DocMerger hands back the previous map itself exactly when every document is as it was: no second compare.
  const docsUnchanged = previous !== null && docs === previous.docs;
  const reusable = walking === null && opts.reuseFolders === true && previous !== null && docsUnchanged && allInKnownFolders(docs, previous.folders);
  const tree = reusable && previous ? previous.folders : await walk();
  const unchanged = docsUnchanged && previous !== null && (tree === previous.folders || sameFolders(tree, previous.folders));
  return { folders: tree, docs, method, requests: counter.requests, unchanged, docsUnchanged, walkedTree: !reusable, searchInconsistent, pages: searched?.pages ?? null };
}

/** The folder list each document map was last found to fit (a quiet poll keeps both: no 100k-doc check). */
const fitsFolders = new WeakMap<Map<string, RawDoc>, RawFolder[]>();

function allInKnownFolders(docs: Map<string, RawDoc>, folders: RawFolder[]): boolean {
  if (fitsFolders.get(docs) === folders) return true;
  const ids = new Set(folders.map((f) => f.id));
  for (const d of docs.values()) if (!ids.has(d.folderId)) return false;
  fitsFolders.set(docs, folders);
  return true;
}

function sameFolders(a: RawFolder[], b: RawFolder[]): boolean {
  if (a.length !== b.length) return false;
  const byId = new Map(b.map((f) => [f.id, f]));
  return a.every((f) => {
    const p = byId.get(f.id);
    return p !== undefined && p.name === f.name && p.parentId === f.parentId;
  });
}

/** Confirms deletes of base documents missing from the listing and maps every name to a local path. */
export async function observeRemote(client: ListingClient, raw: RawListing, opts: ListRemoteOptions): Promise<RemoteListing> {
  const counter = { requests: raw.requests };
  const docs = new Map(raw.docs);
  const gone = await confirmGone(client, opts, docs, counter);
  const olderThanSynced = settleOlderThanSynced(docs, opts.base, opts.supersededVersions ?? new Map());
  let folderPaths: Map<string, string> | undefined; // built only when a document's folder is not listed
  const mapped = mapRemoteTree({
    folders: raw.folders,
    docs: [...docs.values()],
    caseInsensitive: opts.caseInsensitive,
    preferredPath: (id) => opts.base.get(id)?.relPath,
    lastKnownFolderPath: (folderId) => (folderPaths ??= folderPathsOf(opts.base)).get(folderId),
    ...(opts.ignoredBy ? { ignoredBy: opts.ignoredBy } : {}),
    ...(opts.maxPathBytes !== undefined ? { maxPathBytes: opts.maxPathBytes } : {}),
  });
  return {
    observation: { docs: mapped.docs, folders: mapped.folders, gone, unmappable: mapped.unmappable },
    method: raw.method,
    requests: counter.requests,
    ...(olderThanSynced.length > 0 ? { olderThanSynced } : {}),
  };
}

/** Each folder that holds a synced document, by id: the local folder that document is in. */
function folderPathsOf(base: ListRemoteOptions['base']): Map<string, string> {
  const out = new Map<string, string>();
  for (const b of base.values()) if (!out.has(b.folderId)) out.set(b.folderId, parentOf(b.relPath));
  return out;
}

/** Breadth-first walk of the drive. The parent of each folder is taken from the walk itself, not from the
 * folder's parentId field, whose value for top-level tabs is not shown by the spec (null, '', binder id...). */
async function listFolderTree(
  client: ListingClient,
  binderId: string,
  counter: { requests: number },
  signal?: AbortSignal,
): Promise<RawFolder[]> {
  const out: RawFolder[] = [];
  const seen = new Set<string>();
  counter.requests++;
  let level: RawFolder[] = (await client.listTopFolders(binderId, signal)).map((f) => ({ id: f.id, name: f.name, parentId: null }));
  while (level.length > 0) {
    signal?.throwIfAborted();
    const next: RawFolder[] = [];
    const fresh = level.filter((f) => !seen.has(f.id));
    for (const f of fresh) {
      seen.add(f.id);
      out.push(f);
    }
    const children = await Promise.all(
      fresh.map(async (f) => {
        counter.requests++;
        const subs = await client.listSubFolders(binderId, f.id, signal);
        return subs.map((s) => ({ id: s.id, name: s.name, parentId: f.id }));
      }),
    );
    for (const c of children) next.push(...c);
    level = next;
  }
  return out;
}

/** Walks the search pages. Returns null when the walk was inconsistent (caller retries or falls back). */
async function listDocumentsBySearch(
  client: ListingClient,
  opts: Pick<ListRemoteOptions, 'binderId' | 'pageSize' | 'signal'>,
  counter: { requests: number },
  previous: RawListing | null,
): Promise<{ docs: Map<string, RawDoc>; pages: SearchPageMemo[] } | null> {
  const merger = new DocMerger(previous?.docs ?? null);
  const filters = binderFilter(opts.binderId);
  const before = previous?.pages ?? [];
  const pages: SearchPageMemo[] = [];
  /** Fetches and merges page n; a body identical to the previous listing's page n is merged from its memo. */
  const fetchPage = async (pageNumber: number, pageSize: number): Promise<SearchPageMemo> => {
    opts.signal?.throwIfAborted();
    counter.requests++;
    const old = before[pageNumber - 1];
    const { digest, page } = await client.searchPage({ filters, pageSize, pageNumber, ...(opts.signal ? { signal: opts.signal } : {}) }, old?.digest);
    if (page === null) {
      const memo = old as SearchPageMemo;
      merger.addPage(memo);
      return memo;
    }
    const recs: RawDoc[] = [];
    for (const d of page.items) {
      // Duplicates across pages are merged; a document is in this binder only if the server says so.
      if (inOtherBinder(d.binderId, opts.binderId)) continue;
      recs.push(merger.add(d));
    }
    return { digest, totalCount: page.totalCount, pageSize: page.pageSize, itemCount: page.items.length, recs };
  };
  const first = await fetchPage(1, opts.pageSize);
  pages[0] = first;
  const totalCount = first.totalCount;
  const pageSize = pageStep(first, opts.pageSize);
  if (first.itemCount === 0 && totalCount > 0) return null;
  const count = Math.ceil(totalCount / Math.max(1, pageSize));
  if (count > 1_000_000) return null;
  // Pages 2..n in parallel (the client's queue bounds concurrency and rate). Each must report the same
  // totalCount and, except the last, a full page; anything else means the binder changed during the walk.
  // Each page is merged as it arrives, so a 100k-document listing never holds all pages at once.
  let consistent = true;
  await Promise.all(
    Array.from({ length: Math.max(0, count - 1) }, async (_, i) => {
      const n = i + 2;
      const page = await fetchPage(n, pageSize);
      pages[n - 1] = page;
      if (page.totalCount !== totalCount) consistent = false;
      else if (page.itemCount === 0) consistent = false; // ran out of items before totalCount
      else if (n < count && page.itemCount < pageSize) consistent = false;
    }),
  );
  if (!consistent) return null;
  const docs = merger.result();
  return docs.size === totalCount ? { docs, pages } : null;
}

/** The search filter that lists one binder's documents. */
function binderFilter(binderId: string): Array<{ metadataElementId: string; valueId: string }> {
  return [{ metadataElementId: 'GLOBAL_BinderId', valueId: binderId }];
}

/**
 * The page step of a paged walk, from its first page. The server may clamp pageSize: the step is the page size
 * it answered with (spec 4.3 rule 8), or the number of items it actually sent when that is smaller (a server
 * that clamps without saying so).
 */
export function pageStep(first: Pick<SearchPageMemo, 'pageSize' | 'itemCount' | 'totalCount'>, requested: number): number {
  const reported = first.pageSize > 0 ? first.pageSize : requested;
  return first.itemCount > 0 && first.itemCount < Math.min(reported, first.totalCount) ? first.itemCount : reported;
}

/** What the in-sync mark keeps of a search listing: its page step and the digest of each page's body. */
export interface SearchDigests {
  step: number;
  digests: string[];
}

/** The digests of a listing made by search, or null (listed per folder). */
export function searchDigestsOf(raw: RawListing, requestedPageSize: number): SearchDigests | null {
  const first = raw.pages?.[0];
  if (raw.method !== 'search' || !raw.pages || first === undefined) return null;
  return { step: pageStep(first, requestedPageSize), digests: raw.pages.map((p) => p.digest) };
}

/**
 * Asks for every search page of a listing again, each with the digest of its earlier body, and says whether
 * every body came back byte for byte the same (nothing is parsed then). The earlier listing was complete and
 * consistent, so the same pages mean the same documents, field by field. Stops at the first page that differs
 * (false) and never asks for more pages than `saved` had.
 */
export async function searchPagesUnchanged(
  client: Pick<ListingClient, 'searchPage'>,
  opts: Pick<ListRemoteOptions, 'binderId' | 'pageSize' | 'signal'>,
  saved: SearchDigests,
  counter: { requests: number },
): Promise<boolean> {
  const filters = binderFilter(opts.binderId);
  const same = async (n: number): Promise<boolean> => {
    opts.signal?.throwIfAborted();
    counter.requests++;
    const { page } = await client.searchPage({ filters, pageSize: n === 1 ? opts.pageSize : saved.step, pageNumber: n, ...(opts.signal ? { signal: opts.signal } : {}) }, saved.digests[n - 1]);
    return page === null;
  };
  if (saved.digests.length === 0) return false;
  let next = 1;
  let differs = false;
  // A few pages in flight (the client's queue sets the real concurrency); none is asked for after one differed.
  // Page 1 is not asked for alone first: in the usual case (nothing changed) that costs a round trip plus the
  // service's time to run the search, and when something did change the pages already in flight are a few of
  // the ones the normal pass lists anyway.
  const worker = async (): Promise<void> => {
    while (!differs && next <= saved.digests.length) {
      if (!(await same(next++))) differs = true;
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return !differs;
}

/** Walks the folder tree again and says whether it is exactly `saved` (ids, names, parents). */
export async function folderTreeUnchanged(
  client: ListingClient,
  binderId: string,
  saved: RawFolder[],
  counter: { requests: number },
  signal?: AbortSignal,
): Promise<boolean> {
  return sameFolders(await listFolderTree(client, binderId, counter, signal), saved);
}

async function listDocumentsPerFolder(
  client: ListingClient,
  binderId: string,
  folders: RawFolder[],
  counter: { requests: number },
  previous: RawListing | null,
  signal?: AbortSignal,
): Promise<Map<string, RawDoc>> {
  const merger = new DocMerger(previous?.docs ?? null);
  const lists = await Promise.all(
    folders.map(async (f) => {
      signal?.throwIfAborted();
      counter.requests++;
      return client.listFolderDocuments(binderId, f.id, signal);
    }),
  );
  for (const list of lists) {
    for (const d of list) merger.add(d);
  }
  return merger.result();
}

/**
 * A base document missing from the listing counts as deleted only when GET /documents/{id} confirms it:
 * 404, or the document now belongs to another binder. If it still exists in this binder, the listing
 * missed it (index lag): it is added back from the GET answer.
 * Spec 7 does not show error statuses, so a server may answer that GET for a deleted document with another
 * refusal (400, 403...). Such an answer says nothing either way, and the document's last folder is asked
 * instead: listed there, it is added back; absent from it, or its folder gone (404/410), it is deleted; if that
 * listing is refused as well, the document stays unknown for this pass (neither here nor deleted: nothing is
 * done to it). Failures that are not answers about the document (network, 5xx, 401) still fail the listing.
 */
async function confirmGone(
  client: ListingClient,
  opts: ListRemoteOptions,
  docs: Map<string, RawDoc>,
  counter: { requests: number },
): Promise<Set<string>> {
  const gone = new Set<string>();
  const missing = [...opts.base.keys()].filter((id) => !docs.has(id));
  const folderLists = new Map<string, Promise<Document[] | 'gone' | 'refused'>>();
  const listFolder = (folderId: string): Promise<Document[] | 'gone' | 'refused'> => {
    let p = folderLists.get(folderId);
    if (p === undefined) {
      counter.requests++;
      p = client.listFolderDocuments(opts.binderId, folderId, opts.signal).catch((err: unknown) => {
        if (isStatus(err, 404) || isStatus(err, 410)) return 'gone' as const;
        if (refusesThisItem(err)) return 'refused' as const;
        throw err;
      });
      folderLists.set(folderId, p);
    }
    return p;
  };
  const results = await Promise.all(
    missing.map(async (id): Promise<{ id: string; doc: Document | null | 'unknown' }> => {
      opts.signal?.throwIfAborted();
      counter.requests++;
      try {
        return { id, doc: await client.getDocument(id, opts.signal) };
      } catch (err) {
        const folderId = opts.base.get(id)?.folderId;
        if (!refusesThisItem(err) || folderId === undefined) throw err;
        const list = await listFolder(folderId);
        if (list === 'refused') return { id, doc: 'unknown' };
        return { id, doc: list === 'gone' ? null : (list.find((d) => d.id === id) ?? null) };
      }
    }),
  );
  for (const { id, doc } of results) {
    if (doc === 'unknown') continue;
    if (doc === null || inOtherBinder(doc.binderId, opts.binderId)) gone.add(id);
    else docs.set(id, { documentId: doc.id, fileName: doc.fileName, folderId: doc.folderId, versionId: doc.latestVersionId });
  }
  return gone;
}

/**
 * Does a document's binderId name another binder? Absent, null or empty: the server did not say (spec 2.4 lists
 * the field, its presence is not shown), and the document is taken as the binder's it was asked about.
 */
function inOtherBinder(binderId: string | null | undefined, ours: string): boolean {
  return binderId != null && binderId !== '' && binderId !== ours;
}

function isStatus(err: unknown, status: number): boolean {
  return err instanceof ServiceError && err.status === status;
}

/**
 * A client-error answer about one item (400, 403, 405, 409, 422...): the server would not say more about it.
 * Not one of those: 401 (credentials), 407/408/429 (transient, retried first), and answers that fail
 * validation or never arrived.
 */
function refusesThisItem(err: unknown): boolean {
  if (!(err instanceof ServiceError) || err.status === undefined) return false;
  if (err.code === 'SERVICE_INVALID_RESPONSE') return false;
  return err.status >= 400 && err.status < 500 && ![401, 407, 408, 429].includes(err.status);
}
