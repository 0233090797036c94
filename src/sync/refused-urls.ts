// Transfers whose presigned URLs storage refused: every URL answered 403 (expired, or a signature storage does not
// take), which a clock off between the service and storage or a proxy that rewrites the URLs makes happen to every
// URL, every time, for downloads (their links) and uploads (their slots) alike. The daemon tried such an item again
// at each pass, for ever: a download a few seconds apart, over a storage GET and two link requests a second
// (black-box round 37b, F7); an upload at every poll, six slots and the whole file sent six times. A thousand new
// items would have multiplied that. Like Syncthing's failed items, such an item is held back, with an issue that
// says why and when it is tried again: a minute after its failure, doubling with each failure in a row of the same
// kind up to MAX_HOLD_MS. The hold ends early when what the step would move changes (the document gets another
// version, the file other content); a failure of another kind (or a step that goes through) forgets it, so the next
// refusal starts again at a minute. Other items go on meanwhile. Kept in this process only: a `binder-sync sync`
// tries once per run (the client gives up after a few URLs, service/transfers.ts MAX_URL_REFUSALS).
import type { ExecutionReport } from './executor.js';
import type { Action, Issue, Plan } from './model.js';
import { pathKey } from './path-key.js';
import { contentIdOf, keepItems } from './plan-filters.js';

/** Failure codes that hold a step back, by which way storage refused the step's content. */
const HELD_CODES: ReadonlyMap<string, 'download' | 'upload'> = new Map([
  ['STORAGE_LINK_EXPIRED', 'download'],
  ['STORAGE_SLOT_EXPIRED', 'upload'],
]);

/** The first hold after a refusal; each further refusal in a row doubles it, up to MAX_HOLD_MS. */
export const FIRST_HOLD_MS = 60_000;
export const MAX_HOLD_MS = 15 * 60_000;

export interface RefusedUrl {
  relPath: string;
  documentId: string | null;
  /** What the step would have moved (subjectOf): a step moving anything else is tried at once. */
  subject: string;
  /** The failure's code (HELD_CODES). */
  code: string;
  /** When it last failed (ms), and how many times in a row. */
  at: number;
  tries: number;
}

/** By path key. */
export type RefusedUrls = Map<string, RefusedUrl>;

/**
 * The steps that move content through presigned URLs: a download, an upload, and a conflict (its remote side is
 * fetched first, and its local side may be sent: a copy under keep-both, the new version under local-wins).
 */
type Transfer = Extract<Action, { kind: 'download' | 'upload' | 'conflict' }>;

function transfers(a: Action): a is Transfer {
  return a.kind === 'download' || a.kind === 'upload' || a.kind === 'conflict';
}

/** What a step moves: the version a download fetches, the content an upload sends, both for a conflict. */
function subjectOf(a: Transfer): string {
  if (a.kind === 'download') return a.doc.versionId;
  if (a.kind === 'upload') return contentIdOf(a.local);
  return `${a.doc.versionId} ${contentIdOf(a.local)}`;
}

function documentIdOf(a: Transfer): string | null {
  return a.kind === 'upload' ? a.target.documentId : a.doc.documentId;
}

export function holdMs(tries: number): number {
  return Math.min(MAX_HOLD_MS, FIRST_HOLD_MS * 2 ** Math.max(0, tries - 1));
}

/** When the hold of `m` ends (ms). */
function heldUntil(m: RefusedUrl): number {
  return m.at + holdMs(m.tries);
}

/** The issue of a held step: why, and when it is tried again (a time: `status` shows it until then). */
function issueOf(m: RefusedUrl): Issue {
  const when = new Date(heldUntil(m)).toISOString().slice(0, 19).replace('T', ' ');
  const times = m.tries === 1 ? 'once' : `${m.tries} times in a row`;
  const download = HELD_CODES.get(m.code) === 'download';
  const what = download ? 'every download link' : 'every upload URL';
  const early = download ? 'the document gets another version' : 'the file changes';
  return {
    relPath: m.relPath,
    ...(m.documentId === null ? {} : { documentId: m.documentId }),
    code: download ? 'remote-change-not-downloaded' : 'local-change-not-uploaded',
    detail: `storage refused ${what} for it (${m.code}, ${times}): check this machine's clock and any proxy between it and storage; tried again at ${when} UTC, or at once when ${early}`,
  };
}

/**
 * Remembers the steps of this pass whose URLs storage refused, and returns their issues (said by this pass: the
 * item stays "not synced" without a gap, so the log says it once). Forgets those that failed otherwise, and those
 * that went through; after a pass the service stopped early (ExecutionReport.stoppedBy), a step that did not fail
 * may not have run, and its entry is kept.
 */
export function rememberRefusedUrls(memo: RefusedUrls, plan: Plan, execution: Pick<ExecutionReport, 'failures' | 'stoppedBy'>, at: number, caseInsensitive = false): Issue[] {
  const failed = new Map(execution.failures.filter((f) => f.kind === 'download' || f.kind === 'upload' || f.kind === 'conflict').map((f) => [f.relPath, f]));
  const stopped = execution.stoppedBy !== null && execution.stoppedBy !== undefined;
  const issues: Issue[] = [];
  for (const g of plan.groups) {
    for (const a of g) {
      if (!transfers(a)) continue;
      const f = failed.get(a.relPath);
      if (f === undefined || f.kind !== a.kind || !HELD_CODES.has(f.code)) {
        if (f !== undefined || !stopped) memo.delete(a.key);
        continue;
      }
      // A keep-both conflict whose copy's upload storage refused: the copy, now a new local file at its own path,
      // is what waits (said there, and held as that file's upload: it was said at the original path, which holds
      // the remote version by then, and tried once more at the next pass: black-box round 38b, F5c).
      const copy = a.kind === 'conflict' && a.policy === 'keep-both' && a.uploadConflictCopy && HELD_CODES.get(f.code) === 'upload';
      const key = copy ? pathKey(a.conflictPath, caseInsensitive) : a.key;
      const subject = copy ? contentIdOf(a.local) : subjectOf(a);
      const before = memo.get(key);
      const again = before !== undefined && before.subject === subject && before.code === f.code;
      const held: RefusedUrl = { relPath: copy ? a.conflictPath : a.relPath, documentId: copy ? null : documentIdOf(a), subject, code: f.code, at, tries: again ? before.tries + 1 : 1 };
      memo.set(key, held);
      issues.push(issueOf(held));
    }
  }
  return issues;
}

/** Whether `m` holds `a` back at `now`: the same subject, within its hold (a clock set back ends it). */
function holds(m: RefusedUrl | undefined, a: Transfer, now: number): m is RefusedUrl {
  return m !== undefined && m.subject === subjectOf(a) && now >= m.at && now < heldUntil(m);
}

/**
 * Steps whose URLs storage refused before, moving the same content, within their hold: withheld, each with an
 * issue saying why and when it is tried again. Entries that no longer match anything planned are dropped.
 */
export function withheldAsRefusedUrls(plan: Plan, memo: RefusedUrls, now: number): Plan {
  if (memo.size === 0) return plan;
  const planned = new Set(plan.groups.flatMap((g) => g.filter(transfers).map((a) => a.key)));
  for (const key of [...memo.keys()]) if (!planned.has(key)) memo.delete(key);
  const issues: Issue[] = [...plan.issues];
  const groups = keepItems(plan.groups, (group) => {
    for (const a of group) {
      if (!transfers(a)) continue;
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
 * otherwise skip planning, and the held step would wait for the next change).
 */
export function holdRanOut(memo: RefusedUrls, now: number): boolean {
  for (const m of memo.values()) if (now >= heldUntil(m) || now < m.at) return true;
  return false;
}
