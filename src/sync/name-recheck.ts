// An upload's name, checked again just before its commit. A commit names only a folder and a file name (4.9):
// the service attaches the version to whatever document of that name the folder holds then, or creates one.
// - A new document: if someone created a document of that name there since the listing the plan rests on (a
//   colleague's new file, a rename), the upload would bury their content under ours without a conflict.
// - An edit: if another document there took a name like it, the commit could land on that one. (Its own
//   document renamed or moved meanwhile is seen on the document itself, fetched after the PUT: upload.ts.)
// Either fails with REMOTE_CHANGED, nothing committed; the next pass lists again and plans with the new names.
// The folder's documents are listed once more after the upload's PUT, one request (4.6) shared by the uploads
// into the same folder that end within RECHECK_TOLERANCE_MS of it: a bulk upload costs about one listing per
// folder per second, not one per file. The race left is that second plus a round trip. Listing after every
// PUT instead (at most one in flight per folder) narrowed it to a round trip but made a 3,000-file upload into
// one folder 12% slower at 1000 req/s (hundreds of listings of a growing folder): a name that appears in that
// second loses nothing either way, the other document keeps its versions.
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

interface RecheckContext {
  pair: string;
  relPath: string;
  folderId: string;
  fileName: string;
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
   * A new document: throws REMOTE_CHANGED (retryable) when the folder now holds a document named like `fileName`
   * (exactly, or but for case or Unicode form, as withheldForAmbiguousNames compares): the next pass keeps both.
   */
  async assertNameFree(ctx: RecheckContext, putEndedAt: number): Promise<void> {
    const documents = await this.documents(ctx.folderId, putEndedAt - RECHECK_TOLERANCE_MS);
    const name = looseName(ctx.fileName);
    const taken = documents.find((doc) => looseName(doc.fileName) === name);
    if (taken === undefined) return;
    throw new BinderSyncError(
      `${ctx.relPath}: not uploaded: a document named "${taken.fileName}" (${taken.id}) appeared in its remote folder since the last listing; nothing was committed; the next pass lists the binder again and compares the two (nothing is overwritten)`,
      { code: 'REMOTE_CHANGED', retryable: true, context: { pair: ctx.pair, relPath: ctx.relPath, folderId: ctx.folderId, documentId: taken.id } },
    );
  }

  /**
   * An edit: throws REMOTE_CHANGED (retryable) when another document in its folder is now named like it, so the
   * commit could land there. Its own name and folder are checked on the document itself (upload.ts).
   */
  async assertNoTwin(ctx: RecheckContext & { documentId: string }, putEndedAt: number): Promise<void> {
    const documents = await this.documents(ctx.folderId, putEndedAt - RECHECK_TOLERANCE_MS);
    const name = looseName(ctx.fileName);
    const twin = documents.find((doc) => doc.id !== ctx.documentId && looseName(doc.fileName) === name);
    if (twin === undefined) return;
    throw new BinderSyncError(
      `${ctx.relPath}: not uploaded: another document in its remote folder, "${twin.fileName}" (${twin.id}), is now named like it (renamed, moved or created there since the last listing); nothing was committed, the next pass lists the binder again and plans it anew`,
      { code: 'REMOTE_CHANGED', retryable: true, context: { pair: ctx.pair, relPath: ctx.relPath, folderId: ctx.folderId, documentId: ctx.documentId, otherDocumentId: twin.id } },
    );
  }
}
