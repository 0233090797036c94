// What the executor needs from the outside world, gathered in one object so the pass can build it once.
import type { Writer } from '../local/open-writers.js';
import type { Logger } from 'pino';
import type { Trash } from '../local/fs-ops.js';
import type { ServiceClient } from '../service/index.js';
import type { StateStore } from '../state/store.js';
import type { MetadataResolver } from './metadata-rules.js';
import type { Action, ConflictPolicy } from './model.js';
import type { FolderRecheck } from './name-recheck.js';
import type { VersionLabelScheme } from './version-label.js';

export interface ExecutorDeps {
  pair: string;
  /** Absolute sync root. */
  root: string;
  binderId: string;
  /** Whether the local filesystem ignores case (keys are folded). */
  caseInsensitive: boolean;
  client: Pick<
    ServiceClient,
    'downloadVersionTo' | 'uploadContent' | 'commitUpload' | 'listVersions' | 'listFolderDocuments' | 'getDocument'
  >;
  store: StateStore;
  trash: Trash;
  log: Logger;
  metadata: MetadataResolver;
  /** The pair's conflict policy, for a conflict found only after a commit (buried-edit.ts); keep-both when absent. */
  conflictPolicy?: ConflictPolicy;
  /** The pair only uploads: a local file is never replaced (an earlier version it holds is recorded, not uploaded). */
  uploadOnly?: boolean;
  versionLabelScheme: VersionLabelScheme;
  now: () => Date;
  /** How many plan groups run at once (transfers are further limited inside the client). */
  concurrency: number;
  signal?: AbortSignal;
  /**
   * Fires when the daemon winds down (SIGTERM, a reload that stops the pair): no new group starts, the steps in
   * flight and the rest of the groups already started go on (until `signal` cuts them short after the grace).
   */
  windDown?: AbortSignal;
  onBytes?: (n: number) => void;
  /** Folder listings shared by the new documents' last name check (executePlan makes one per plan). */
  folderRecheck?: FolderRecheck;
  /** Called after each action ran (ok false: it failed); for progress displays. */
  onActionDone?: (action: Action, ok: boolean) => void;
  /**
   * The failures already logged at warn, by path ("kind code"), kept by a daemon across passes: the same
   * failure again (a full disk, retried every pass) is logged at debug, so the log says it once, not per retry.
   */
  failuresLogged?: Map<string, string>;
  /**
   * Unfinished uploads (outbox rows, by id) whose commit the service kept refusing with a retryable answer, kept by
   * a daemon across passes: not tried again until `until` (recoverOutbox's back-off).
   */
  commitHolds?: Map<number, CommitHold>;
  /**
   * The programs holding the file at abs open for writing (local/open-writers.ts); executePlan looks at /proc once
   * per plan, when a step first needs it. Tests may give their own.
   */
  openWriters?: (abs: string) => Writer[];
}

/** An unfinished upload whose commit is not tried again before `until`; `tries`: refusals in a row; `error`: the last. */
export interface CommitHold {
  until: number;
  tries: number;
  error: unknown;
}
