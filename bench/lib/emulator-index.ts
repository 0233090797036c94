// Bench-only speed-up of the emulator: Store.findByName scans every document (O(n) per lookup), which makes
// seeding 100,000 documents, and every commit in a large binder, quadratic. This patch gives the bench's copy
// of the Store a (folderId, fileName) index. It assumes no document is renamed or moved (the benchmarks never
// do), so it must not be used outside bench/. Reported to the lead: the real fix belongs in src/emulator/store.ts.
import { Store } from '../../src/emulator/store.js';
import type { DocumentRecord } from '../../src/emulator/types.js';

const key = (folderId: string, fileName: string) => `${folderId}\u0000${fileName}`;

class IndexedDocuments extends Map<string, DocumentRecord> {
  readonly byName = new Map<string, DocumentRecord>();

  override set(id: string, d: DocumentRecord): this {
    super.set(id, d);
    // Map's constructor calls set() before the field above exists; the index is filled after construction.
    this.byName?.set(key(d.folderId, d.fileName), d);
    return this;
  }

  override delete(id: string): boolean {
    const d = this.get(id);
    if (d && this.byName.get(key(d.folderId, d.fileName)) === d) this.byName.delete(key(d.folderId, d.fileName));
    return super.delete(id);
  }
}

let installed = false;

export function installEmulatorIndex(): void {
  if (installed) return;
  installed = true;
  Store.prototype.findByName = function findByName(this: Store, folderId: string, fileName: string): DocumentRecord | undefined {
    const self = this as unknown as { documents: Map<string, DocumentRecord> };
    if (!(self.documents instanceof IndexedDocuments)) {
      const indexed = new IndexedDocuments();
      for (const [id, d] of self.documents) indexed.set(id, d);
      self.documents = indexed;
    }
    const d = (self.documents as IndexedDocuments).byName.get(key(folderId, fileName));
    return d && d.folderId === folderId && d.fileName === fileName && self.documents.get(d.id) === d ? d : undefined;
  };
}
