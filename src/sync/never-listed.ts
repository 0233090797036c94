// Documents this client created by an upload that no listing has shown yet. The commit's answer names the new
// document; a service that answers with a document that does not exist (a bug, a proxy mixing answers) left a
// base row for nothing: the next listing lacked it, GET said 404, and the file, whose content is on no document
// of the service, was moved to the trash as "deleted on the service", both passes saying "in sync" (black-box
// round 41c, F2). Such a document is not a colleague's delete: its file is uploaded again (reconcile's
// remoteDeleted). The record ends when a listing shows the document, or its row goes.
import type { StateStore } from '../state/store.js';
import type { RemoteObservation } from './model.js';

/** Forgets the documents a fresh listing showed (placed or not), and those without a base row any more. */
export function settleNeverListed(store: StateStore, remote: RemoteObservation): void {
  const waiting = store.neverListed();
  if (waiting.size === 0) return;
  const listed = new Set(remote.unmappable.flatMap((u) => (u.documentId === undefined ? [] : [u.documentId])));
  const done = [...waiting].filter((id) => remote.docs.has(id) || listed.has(id) || store.getBase(id) === undefined);
  if (done.length > 0) store.dropNeverListed(done);
}
