// Merges the documents of a listing, page by page as they arrive, against the previous listing. A document
// exactly as before is only marked as seen (no new record, no new map entry): a quiet poll of a 100k-document
// binder returns the previous map itself and leaves almost nothing behind for the garbage collector.
import type { RawDoc } from './listing.js';

/** What a listing page says about one document (the fields the listing keeps). */
export interface ListedDoc {
  id: string;
  fileName: string;
  folderId: string;
  latestVersionId: string;
}

/** Where the records of a page sit in the index of one previous map (-1: not that map's own record). */
export interface PagePositions {
  of: Map<string, RawDoc>;
  at: Int32Array;
}

interface Index {
  ids: Map<string, number>;
  recs: RawDoc[];
}

/** Position of every record of a previous map, built once per map (an unchanged listing keeps its map). */
const indexes = new WeakMap<Map<string, RawDoc>, Index>();

function indexOf(docs: Map<string, RawDoc>): Index {
  let ix = indexes.get(docs);
  if (!ix) {
    ix = { ids: new Map(), recs: [] };
    for (const [id, d] of docs) {
      ix.ids.set(id, ix.recs.length);
      ix.recs.push(d);
    }
    indexes.set(docs, ix);
  }
  return ix;
}

export class DocMerger {
  private readonly prev: Index | null;
  private readonly seen: Uint8Array;
  private matched = 0;
  /** Documents that are new or differ from the previous listing (the last sighting wins). */
  private readonly changed = new Map<string, RawDoc>();
  /** One string per folder id instead of one copy per document. */
  private readonly folderIds = new Map<string, string>();

  constructor(private readonly previous: Map<string, RawDoc> | null) {
    this.prev = previous ? indexOf(previous) : null;
    this.seen = new Uint8Array(this.prev?.recs.length ?? 0);
  }

  /** Merges one listed document; returns its record (the previous one when nothing differs). */
  add(d: ListedDoc): RawDoc {
    const i = this.prev?.ids.get(d.id);
    if (i !== undefined) {
      const p = (this.prev as Index).recs[i] as RawDoc;
      if (p.fileName === d.fileName && p.folderId === d.folderId && p.versionId === d.latestVersionId) {
        this.markSeen(i);
        return p;
      }
    }
    let folderId = this.folderIds.get(d.folderId);
    if (folderId === undefined) this.folderIds.set(d.folderId, (folderId = d.folderId));
    const rec: RawDoc = { documentId: d.id, fileName: d.fileName, folderId, versionId: d.latestVersionId };
    this.changed.set(d.id, rec);
    return rec;
  }

  /**
   * Merges a record returned by add() during an earlier listing (a search page that came back the same). In
   * a complete listing every document appears once, so the record is the previous map's own; the field
   * compare below is for a listing that was not.
   */
  addRecord(rec: RawDoc): RawDoc {
    const i = this.prev?.ids.get(rec.documentId);
    if (i !== undefined && (this.prev as Index).recs[i] === rec) {
      this.markSeen(i);
      return rec;
    }
    return this.add({ id: rec.documentId, fileName: rec.fileName, folderId: rec.folderId, latestVersionId: rec.versionId });
  }

  /**
   * Merges the records of a search page that came back byte for byte the same (see SearchPageMemo). Their
   * positions in the previous map are looked up once per map and kept on the page's `positions`, so the quiet
   * polls that follow (which keep the same map) only mark them seen: no lookup of 100k ids per poll.
   */
  addPage(page: { recs: readonly RawDoc[]; positions?: PagePositions }): void {
    const prev = this.prev;
    const previous = this.previous;
    if (prev === null || previous === null) {
      for (const rec of page.recs) this.addRecord(rec);
      return;
    }
    let pos = page.positions;
    if (pos === undefined || pos.of !== previous) {
      const at = new Int32Array(page.recs.length);
      for (let k = 0; k < at.length; k++) {
        const rec = page.recs[k] as RawDoc;
        const i = prev.ids.get(rec.documentId);
        at[k] = i !== undefined && prev.recs[i] === rec ? i : -1;
      }
      pos = page.positions = { of: previous, at };
    }
    for (let k = 0; k < pos.at.length; k++) {
      const i = pos.at[k] as number;
      if (i >= 0) this.markSeen(i);
      else this.addRecord(page.recs[k] as RawDoc);
    }
  }

  private markSeen(i: number): void {
    if (this.seen[i] === 0) {
      this.seen[i] = 1;
      this.matched++;
    }
  }

  /** Every document added: the previous map itself when it is exactly that, else a new map. */
  result(): Map<string, RawDoc> {
    const prev = this.prev;
    if (prev && this.previous && this.changed.size === 0 && this.matched === prev.recs.length) return this.previous;
    const out = new Map<string, RawDoc>();
    if (prev) {
      for (let i = 0; i < prev.recs.length; i++) {
        const rec = prev.recs[i] as RawDoc;
        if (this.seen[i] === 1 && !this.changed.has(rec.documentId)) out.set(rec.documentId, rec);
      }
    }
    for (const [id, d] of this.changed) out.set(id, d);
    return out;
  }
}
