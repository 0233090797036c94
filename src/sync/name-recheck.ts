// A new document's name, checked again just before its commit. A commit names only a folder and a file name
// (4.9); if someone created a document of that name there since the listing the plan rests on (a colleague's
// new file, a rename), a server that adds the upload as a version of that document would bury their content
// under ours without a conflict (edits are checked the same way against their document's latest version).
// The folder's documents are listed once more after the upload's PUT, one request (4.6) shared by the uploads
// into the same folder that finish within RECHECK_TOLERANCE_MS of each other: a bulk upload costs about one
// listing per folder per second, not one per file.
import { BinderSyncError } from '../errors.js';
import type { ServiceClient } from '../service/index.js';
import type { Document } from '../service/schemas.js';
import { looseName } from './plan-filters.js';

/** How much older than the end of an upload's PUT a shared folder listing may be and still count for it. */
export const RECHECK_TOLERANCE_MS = 1000;

interface Listing {
  startedAt: number;
  documents: Promise<Document[]>;
}

/** The latest listing of each remote folder's documents, shared by the uploads of one plan. */
export class FolderRecheck {
  private readonly listings = new Map<string, Listing>();

  constructor(
    private readonly client: Pick<ServiceClient, 'listFolderDocuments'>,
    private readonly binderId: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The folder's documents, from a request started no earlier than `notBefore` (ms; this process's clock). */
  documents(folderId: string, notBefore: number): Promise<Document[]> {
    const last = this.listings.get(folderId);
    if (last !== undefined && last.startedAt >= notBefore) return last.documents;
    const listing: Listing = { startedAt: this.now(), documents: this.client.listFolderDocuments(this.binderId, folderId) };
    this.listings.set(folderId, listing);
    // A failed listing is not shared with uploads that come later: they ask again.
    listing.documents.catch(() => {
      if (this.listings.get(folderId) === listing) this.listings.delete(folderId);
    });
    return listing.documents;
  }

  /**
   * Throws REMOTE_CHANGED (retryable) when the folder now holds a document named like `fileName` (exactly, or
   * but for case or Unicode form, as withheldForAmbiguousNames compares): the next pass lists it and keeps both.
   */
  async assertNameFree(ctx: { pair: string; relPath: string; folderId: string; fileName: string }, putEndedAt: number): Promise<void> {
    const documents = await this.documents(ctx.folderId, putEndedAt - RECHECK_TOLERANCE_MS);
    const name = looseName(ctx.fileName);
    const taken = documents.find((doc) => looseName(doc.fileName) === name);
    if (taken === undefined) return;
    throw new BinderSyncError(
      `${ctx.relPath}: not uploaded: a document named "${taken.fileName}" (${taken.id}) appeared in its remote folder since the last listing; the next pass lists the binder again and keeps both (a conflict copy if the contents differ)`,
      { code: 'REMOTE_CHANGED', retryable: true, context: { pair: ctx.pair, relPath: ctx.relPath, folderId: ctx.folderId, documentId: taken.id } },
    );
  }
}
