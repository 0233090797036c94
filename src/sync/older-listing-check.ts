// A document the listing keeps showing at a version older than the synced one (remote/older-than-synced.ts takes
// it as a search index lagging behind commits) is asked about directly once that version has been older for a
// while. A lag is seconds; a document that GET /documents/{id} also names at that version is not lagging: its
// latest version pointer was moved back (a version made current again on the service, which the spec's "pointer
// to the latest version" allows), or this client recorded it as older by mistake (a state DB from a build with
// black-box round 40c's F1). Taken as lagging, the local file stayed at the newer content for up to a day, while
// `status` said "in sync". Confirmed, the version is no longer "older" and the pass takes it as the change it is
// (the local file's content, a version in the history, goes to the trash when it is replaced).
import type { RawDoc } from '../remote/listing.js';
import type { PairRuntime } from './pair-runtime.js';

/**
 * How long a version must have been older than the synced one before the listing showing it is doubted. Ten
 * minutes, not one: a service whose direct reads lag too (GET /documents/{id} from a replica behind the commits)
 * named our own just-committed version's predecessor as the latest for over a minute, and the user's edit was
 * replaced here by the previous version until the service caught up (black-box round 42b, F4). The spec's
 * latestVersionId points to the latest version; one moved back is rare, and waits ten minutes to be followed.
 */
export const OLDER_LISTING_DOUBT_MS = 10 * 60_000;
/** How often one document at one version is asked about (the answer was "lagging": the index is slow). */
export const OLDER_LISTING_RECHECK_MS = 10 * 60_000;
/** Documents asked about in one pass at most; the rest wait for the next. */
const MAX_CHECKS_PER_PASS = 20;

export interface OlderListingCheck {
  /** Documents whose listed version is their latest on the service after all: no longer recorded as older. */
  confirmed: string[];
  /** Some listed-older document is still to be asked about: the next poll must look again, not skip as quiet. */
  lookAgain: boolean;
}

/**
 * Asks the service about each document of `settled` (listed older than synced, as `rawDocs` lists it) whose listed
 * version has been older for OLDER_LISTING_DOUBT_MS, once per OLDER_LISTING_RECHECK_MS. A failed request is a
 * "not now": the document stays as settled.
 */
export async function checkOlderListings(
  rt: Pick<PairRuntime, 'client' | 'store' | 'log' | 'olderListingChecks'>,
  settled: readonly string[],
  rawDocs: ReadonlyMap<string, RawDoc>,
  nowMs: number,
  signal?: AbortSignal,
): Promise<OlderListingCheck> {
  const out: OlderListingCheck = { confirmed: [], lookAgain: false };
  let asked = 0;
  for (const documentId of settled) {
    const listed = rawDocs.get(documentId)?.versionId;
    const since = listed === undefined ? undefined : rt.store.supersededSince(documentId, listed);
    if (listed === undefined || since === undefined) continue;
    const key = `${documentId}\0${listed}`;
    const checkedAt = rt.olderListingChecks.get(key);
    if (nowMs - since < OLDER_LISTING_DOUBT_MS || (checkedAt !== undefined && nowMs - checkedAt < OLDER_LISTING_RECHECK_MS)) {
      out.lookAgain = true;
      continue;
    }
    if (asked >= MAX_CHECKS_PER_PASS) {
      out.lookAgain = true;
      continue;
    }
    asked++;
    let latest: string | undefined;
    try {
      latest = (await rt.client.getDocument(documentId, signal))?.latestVersionId;
    } catch (err) {
      signal?.throwIfAborted();
      rt.log.debug({ documentId, err }, 'could not look at a document listed at an older version; asked again at the next poll');
      out.lookAgain = true;
      continue;
    }
    rt.olderListingChecks.set(key, nowMs);
    if (latest !== listed) {
      out.lookAgain = true; // lagging indeed (or gone: the listing says so next): asked again after the recheck time
      continue;
    }
    rt.store.forgetSupersededVersion(documentId, listed);
    rt.olderListingChecks.delete(key);
    out.confirmed.push(documentId);
    const relPath = rt.store.getBase(documentId)?.relPath;
    rt.log.warn({ relPath, documentId, version: listed },
      'the service names an older version of this document as its latest (made current again on the service?): taken as a change, not as a lagging listing');
  }
  return out;
}
