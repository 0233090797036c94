// Downloads whose links storage refused: every presigned link answered 403 (expired, or a signature storage does
// not take), which a clock off between the service and storage or a proxy that rewrites the links makes happen to
// every link, every time. The daemon tried such a document again at each pass, a few seconds apart, for ever: one
// document cost over a storage GET and two link requests a second (black-box round 37b, F7), and a thousand new
// documents would have multiplied that. Like Syncthing's failed items, such a download is held back, with an issue
// that says why and when it is tried again: a minute after its failure, doubling with each failure in a row of the
// same kind up to MAX_HOLD_MS. The hold ends early when the document gets another version; a failure of another kind
// (or a download that goes through) forgets it, so the next refusal starts again at a minute. Other documents go on
// meanwhile. Kept in this process only: a `binder-sync sync` tries once per run (the client gives up after a few
// links, service/transfers.ts MAX_LINK_REFUSALS).
import type { ExecutionReport } from './executor.js';
import type { Action, Issue, Plan } from './model.js';
import { keepItems } from './plan-filters.js';

/** Failure codes that hold a download back: storage refused the links handed out for it. */
const HELD_CODES: ReadonlySet<string> = new Set(['STORAGE_LINK_EXPIRED']);

/** The first hold after a refusal; each further refusal in a row doubles it, up to MAX_HOLD_MS. */
export const FIRST_HOLD_MS = 60_000;
export const MAX_HOLD_MS = 15 * 60_000;

export interface RefusedLink {
  relPath: string;
  documentId: string;
  /** The version whose links were refused: another version is tried at once. */
  versionId: string;
  /** The failure's code (HELD_CODES). */
  code: string;
  /** When it last failed (ms), and how many times in a row. */
  at: number;
  tries: number;
}

/** By path key. */
export type RefusedLinks = Map<string, RefusedLink>;

/** The steps that fetch a document's content: a download, and a conflict (its remote side is fetched first). */
type Fetching = Extract<Action, { kind: 'download' | 'conflict' }>;

function fetches(a: Action): a is Fetching {
  return a.kind === 'download' || a.kind === 'conflict';
}

export function holdMs(tries: number): number {
  return Math.min(MAX_HOLD_MS, FIRST_HOLD_MS * 2 ** Math.max(0, tries - 1));
}

/** When the hold of `m` ends (ms). */
function heldUntil(m: RefusedLink): number {
  return m.at + holdMs(m.tries);
}

/** The issue of a held download: why, and when it is tried again (a time: `status` shows it until then). */
function issueOf(m: RefusedLink): Issue {
  const when = new Date(heldUntil(m)).toISOString().slice(0, 19).replace('T', ' ');
  const times = m.tries === 1 ? 'once' : `${m.tries} times in a row`;
  return {
    relPath: m.relPath,
    documentId: m.documentId,
    code: 'remote-change-not-downloaded',
    detail: `storage refused every download link for it (${m.code}, ${times}): check this machine's clock and any proxy between it and storage; tried again at ${when} UTC, or at once when the document gets another version`,
  };
}

/**
 * Remembers the downloads of this pass whose links storage refused, and returns their issues (said by this pass:
 * the item stays "not synced" without a gap, so the log says it once). Forgets those that failed otherwise, and
 * those that went through; after a pass the service stopped early (ExecutionReport.stoppedBy), a step that did not
 * fail may not have run, and its entry is kept.
 */
export function rememberRefusedLinks(memo: RefusedLinks, plan: Plan, execution: Pick<ExecutionReport, 'failures' | 'stoppedBy'>, at: number): Issue[] {
  const failed = new Map(execution.failures.filter((f) => f.kind === 'download' || f.kind === 'conflict').map((f) => [f.relPath, f]));
  const stopped = execution.stoppedBy !== null && execution.stoppedBy !== undefined;
  const issues: Issue[] = [];
  for (const g of plan.groups) {
    for (const a of g) {
      if (!fetches(a)) continue;
      const f = failed.get(a.relPath);
      if (f === undefined || f.kind !== a.kind || !HELD_CODES.has(f.code)) {
        if (f !== undefined || !stopped) memo.delete(a.key);
        continue;
      }
      const before = memo.get(a.key);
      const again = before !== undefined && before.versionId === a.doc.versionId && before.code === f.code;
      const held: RefusedLink = { relPath: a.relPath, documentId: a.doc.documentId, versionId: a.doc.versionId, code: f.code, at, tries: again ? before.tries + 1 : 1 };
      memo.set(a.key, held);
      issues.push(issueOf(held));
    }
  }
  return issues;
}

/** Whether `m` holds `a` back at `now`: the same version, within its hold (a clock set back ends it). */
function holds(m: RefusedLink | undefined, a: Fetching, now: number): m is RefusedLink {
  return m !== undefined && m.versionId === a.doc.versionId && now >= m.at && now < heldUntil(m);
}

/**
 * Downloads (and conflicts, which fetch the remote side) whose links storage refused before, of the same version,
 * within their hold: withheld, each with an issue saying why and when it is tried again. Entries that no longer
 * match anything planned are dropped.
 */
export function withheldAsRefusedLinks(plan: Plan, memo: RefusedLinks, now: number): Plan {
  if (memo.size === 0) return plan;
  const planned = new Set(plan.groups.flatMap((g) => g.filter(fetches).map((a) => a.key)));
  for (const key of [...memo.keys()]) if (!planned.has(key)) memo.delete(key);
  const issues: Issue[] = [...plan.issues];
  const groups = keepItems(plan.groups, (group) => {
    for (const a of group) {
      if (!fetches(a)) continue;
      const m = memo.get(a.key);
      if (!holds(m, a, now)) continue;
      issues.push(issueOf(m));
      return false;
    }
    return true;
  });
  return groups === plan.groups ? plan : { ...plan, groups, issues };
}

/**
 * Whether a hold has run out by `now`: the pass must plan again (a poll that finds both sides as before would
 * otherwise skip planning, and the held download would wait for the next change).
 */
export function holdRanOut(memo: RefusedLinks, now: number): boolean {
  for (const m of memo.values()) if (now >= heldUntil(m) || now < m.at) return true;
  return false;
}
