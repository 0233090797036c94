// What a pair holds across passes (PairRuntime): opened by openPair, used and updated by runPass.
import type { Logger } from 'pino';
import type { BinderSyncError } from '../errors.js';
import type { PairConfig } from '../config/schema.js';
import type { Trash } from '../local/fs-ops.js';
import type { IgnoreMatcher } from '../local/ignore.js';
import type { PriorFile } from '../local/scanner.js';
import type { RawListing, RemoteListing } from '../remote/listing.js';
import type { ServiceClient } from '../service/index.js';
import type { StateStore } from '../state/store.js';
import type { MetadataResolver } from './metadata-rules.js';
import type { CommitHold } from './executor-deps.js';
import type { RefusedUrls } from './refused-urls.js';
import type { UnreplaceableDownloads } from './unreplaceable.js';
import type { Issue, LocalObservation } from './model.js';
import type { Refusal } from './refused-uploads.js';

/** Everything a pair needs across passes; opened once (per `sync` run, or per daemon lifetime). */
export interface PairRuntime {
  pair: PairConfig;
  /** <stateDir>/<pair name> */
  pairStateDir: string;
  client: ServiceClient;
  store: StateStore;
  trash: Trash;
  log: Logger;
  ignore: IgnoreMatcher;
  metadata: MetadataResolver;
  /**
   * Why the binder's metadata elements could not be read (a two-way pair opened with unreadableElements
   * 'hold-uploads'), or null once read: `metadata` then holds every upload back, and each pass asks for the
   * elements again (readMetadataElementsAgain).
   */
  metadataUnread: BinderSyncError | null;
  caseInsensitive: boolean;
  /**
   * The service the state was last synced with, when the config now names another (baseUrl or tenant): said when
   * the pair opens and in a safety gate's message, since another server's documents are other documents.
   * Recorded as the pair's service once a pass gets past the gates.
   */
  serviceChangedFrom: string | null;
  /**
   * Whether the API client may write: null until a plan first wants to upload, then probed once (the spec
   * has no "whoami"; GET presignedupload answers 403 to a read-only client). A read-only client turns the
   * pair download-only with one warning.
   */
  readOnly: boolean | null;
  /** Local files that went missing, by path, with when a pass first saw it (see deferFreshDeletes). */
  missingSince: Map<string, number>;
  /** When this process found the client read-only (ms); it looks again after PassOptions.writeAccessRecheckMs. */
  readOnlySince: number;
  /**
   * When the service last refused a commit for lack of write access (ms; kept in the state DB), or null: the
   * next plan with uploads then sends one of them first (write-access.ts).
   */
  commitsRefusedAt: number | null;
  /** The day (UTC, YYYY-MM-DD) this process last pruned the conflict history, or null (see pruneConflictHistory). */
  historyPrunedOn: string | null;
  /** Stale temp files were looked for since the pair was opened (see runPass). */
  tempsCleaned: boolean;
  /** The safety gate that stopped the last pass, or null: a gate that stops pass after pass is logged once. */
  lastGate: string | null;
  /** Failed steps already logged at warn, by path (ExecutorDeps.failuresLogged): a repeat is logged at debug. */
  failuresLogged: Map<string, string>;
  /** Unfinished uploads whose commit keeps being refused, not tried before their time (ExecutorDeps.commitHolds). */
  commitHolds: Map<number, CommitHold>;
  /**
   * Uploads the service refused for good (400/422: a name or metadata it does not accept), by path key, with
   * the content then: not sent again until the file changes, the config changes or a day has passed; kept in
   * the state DB across restarts (refused-uploads.ts).
   */
  refusedUploads: Map<string, Refusal>;
  /** Downloads that could not put the file in place (immutable file...), held back for a while: unreplaceable.ts. */
  unreplaceable: UnreplaceableDownloads;
  /**
   * Downloads and uploads whose presigned URLs storage kept refusing (403: a clock off, a proxy), held back for a
   * while: refused-urls.ts.
   */
  refusedUrls: RefusedUrls;
  /**
   * A download-only pair's files put back with an old time that were none of their document's earlier versions,
   * by path key (plan-filters.ts withheldAsLookedAt): not looked at again until the file or the document changes.
   */
  putBackLookedAt: Map<string, string>;
  /** A listing older than the synced state was said at info in this process (then at debug: see noteOlderThanSynced). */
  olderListingSaid: boolean;
  /** When each document listed at an older version was last asked about, by `${documentId}\0${versionId}` (older-listing-check.ts). */
  olderListingChecks: Map<string, number>;
  /** Hashes of files that have no base row, by key (see rememberUnbasedHashes). */
  unbasedHashes: Map<string, PriorFile>;
  /** Observations of the previous pass, reused by passes that ask for it (see PassOptions). */
  cache: {
    local: LocalObservation | null;
    /** Dirs the previous pass wrote into: always rescanned by a partial scan. */
    touchedDirs: Set<string>;
    remote: RemoteListing | null;
    remoteAt: number;
    /** False once the previous pass sent anything to the service. */
    remoteFresh: boolean;
    /** The last fresh remote listing as fetched: what the next one is compared to (see fetchRemote). */
    raw: RawListing | null;
    /** When its folder tree was walked (see folderTreeMaxAgeMs). */
    foldersAt: number;
    /** Until when listings skip search (it answered inconsistent pages: see SEARCH_SKIPPED_FOR_MS); 0 while it did not. */
    searchSkippedUntil: number;
    /** Listings in a row whose search answered inconsistent pages (see SEARCH_SKIPPED_AFTER). */
    searchInconsistentRuns: number;
    /**
     * The last pass went by a folder tree walked earlier and found a local file waiting for a folder that tree
     * does not have: the next pass lists and walks afresh (once), whatever reuse its options allow.
     */
    walkSoon: boolean;
    /** The last pass planned nothing and left nothing for later: an unchanged world needs no new plan. */
    quiet: boolean;
    /**
     * `local` was dropped by a quiet poll (see quietPass): nothing local has happened since, and the next pass
     * that needs a local observation scans the whole tree.
     */
    localParked: boolean;
    /** Its issues (what a quiet pass reports again). */
    issues: Issue[];
  };
}
