// POST /documents search (spec 4.3): AND-combined metadata filters, searchTerm on fileName, ordered SortBy
// with a final tie-break on document id (so paging is stable), and 1-based pagination.
import { HttpProblem } from './http-util.js';
import { GLOBAL_BINDER, GLOBAL_TAB } from './store.js';
import type { SearchBody } from './schemas.js';
import type { DocumentView, MetadataElement } from './types.js';

export interface PageQuery {
  pageNumber: number;
  pageSize: number;
  searchTerm: string;
}

export interface PagingOptions {
  defaultPageSize: number;
  maxPageSize: number | undefined;
}

/** Parses pageSize/pageNumber/searchTerm. Not an integer, or below 1 -> 400 (pages are 1-based). */
export function parsePageQuery(query: URLSearchParams, opts: PagingOptions): PageQuery {
  const errors: Record<string, string[]> = {};
  const int = (name: string, fallback: number): number => {
    const raw = query.get(name);
    if (raw === null) return fallback;
    if (!/^-?\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 2147483647) {
      errors[name] = [`The value '${raw}' is not valid: a whole number of at least 1 is required.`];
      return fallback;
    }
    return Number(raw);
  };
  const pageNumber = int('pageNumber', 1);
  let pageSize = int('pageSize', opts.defaultPageSize);
  if (Object.keys(errors).length > 0) throw new HttpProblem(400, 'invalid paging parameters', { errors });
  if (opts.maxPageSize !== undefined) pageSize = Math.min(pageSize, opts.maxPageSize);
  return { pageNumber, pageSize, searchTerm: query.get('searchTerm') ?? '' };
}

/** An element is enumerated when it has allowedValues, or is the binder/tab key (spec 4.3 rule 2). */
export function isEnumerated(el: MetadataElement): boolean {
  return el.allowedValues.length > 0 || el.id === GLOBAL_BINDER || el.id === GLOBAL_TAB;
}

export interface SearchResult {
  items: DocumentView[];
  totalCount: number;
  pageNumber: number;
  pageSize: number;
}

/**
 * `docs` are the tenant's documents; `elements` every metadata element known in the tenant (by id).
 * Unknown filter/sort element ids are a 400; `value` on an enumerated element is a 400 (rule 2/3).
 */
export function search(docs: DocumentView[], elements: Map<string, MetadataElement>, body: SearchBody, page: PageQuery): SearchResult {
  return pageOf(matchingSorted(docs, elements, body, page.searchTerm), page);
}

/** One page of an already filtered and sorted result. */
export function pageOf(matching: readonly DocumentView[], page: PageQuery): SearchResult {
  const start = (page.pageNumber - 1) * page.pageSize;
  return {
    items: matching.slice(start, start + page.pageSize),
    totalCount: matching.length,
    pageNumber: page.pageNumber,
    pageSize: page.pageSize,
  };
}

/** Every document matching the filters and term, in the requested order (400 for unknown elements). */
export function matchingSorted(docs: DocumentView[], elements: Map<string, MetadataElement>, body: SearchBody, searchTerm: string): DocumentView[] {
  const errors: Record<string, string[]> = {};
  const filters = body.MetadataFilters ?? [];
  filters.forEach((f, i) => {
    const el = elements.get(f.metadataElementId);
    if (!el) errors[`MetadataFilters.${i}.metadataElementId`] = [`Unknown metadata element '${f.metadataElementId}'.`];
    else if (f.value !== undefined && isEnumerated(el)) {
      errors[`MetadataFilters.${i}.value`] = ['This element is enumerated: filter it with valueId.'];
    }
  });
  const sortBy = body.SortBy ?? [];
  sortBy.forEach((s, i) => {
    if (!elements.has(s.metadataElementId)) errors[`SortBy.${i}.metadataElementId`] = [`Unknown metadata element '${s.metadataElementId}'.`];
  });
  if (Object.keys(errors).length > 0) throw new HttpProblem(400, 'invalid search request', { errors });

  const term = searchTerm.toLowerCase();
  const valueOf = (d: DocumentView, elementId: string) => d.metadata.find((m) => m.metadataElementId === elementId)?.valueId;
  const matching = docs.filter(
    (d) =>
      (term === '' || d.fileName.toLowerCase().includes(term)) &&
      filters.every((f) => valueOf(d, f.metadataElementId) === (f.valueId ?? f.value)),
  );
  matching.sort((a, b) => {
    for (const s of sortBy) {
      // Sorting is by valueId in code-unit order; a document without the element sorts first ascending.
      const c = compare(valueOf(a, s.metadataElementId), valueOf(b, s.metadataElementId));
      if (c !== 0) return s.direction === 'asc' ? c : -c;
    }
    return compare(a.id, b.id);
  });
  return matching;
}

function compare(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return -1;
  if (b === undefined) return 1;
  return a < b ? -1 : 1;
}

/** A copy in random order (Fisher-Yates): a search answered without a stable order (Store.searchShuffled). */
export function shuffle<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
