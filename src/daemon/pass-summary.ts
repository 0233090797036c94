// What the daemon takes from a PassReport: what is still pending (status), whether the pass did anything (one
// summary log line, or debug for a quiet poll), and the metrics it feeds.
import type { Logger } from '../log.js';
import { CHANGED_WHILE_READ } from '../local/scanner.js';
import { GROUP_FROM, groupIssues, issueGroupKey, LOGGED_AT_INFO, printable } from '../sync/issue-groups.js';
import type { Issue } from '../sync/model.js';
import { describeDone } from '../sync/executor.js';
import { stoppedByShutdown } from '../sync/stopped-steps.js';
import { recoveredText, type PassReport } from '../sync/pass.js';
import type { SyncMetrics } from './metrics.js';

import type { Pending } from '../sync/pending.js';
import { fmtBytes } from '../format-bytes.js';
export { pendingOf, type Pending } from '../sync/pending.js';

/** True when the pass changed something or something went wrong: worth an info line. */
export function passDidSomething(r: PassReport): boolean {
  const ex = r.execution;
  if (r.plan.blocked) return true;
  if ((r.recoveredUploads ?? 0) > 0) return true;
  if (!ex) return false;
  return Object.values(ex.done).some((n) => (n ?? 0) > 0) || ex.failures.length > 0 || ex.conflicts.length > 0;
}

/** A pass that did nothing but fail again the way its items failed before (each logged then). */
function onlyRepeatedFailures(r: PassReport): boolean {
  const ex = r.execution;
  if (ex === null || r.plan.blocked || ex.failures.length === 0 || !ex.failures.every((f) => f.repeated === true)) return false;
  return Object.values(ex.done).every((n) => (n ?? 0) === 0) && ex.conflicts.length === 0;
}

/** Logs one line per pass that did something (info), a debug line for a quiet one or a mere repeat of failures. */
export function logPassSummary(log: Logger, r: PassReport, trigger: string): void {
  const ex = r.execution;
  const postponed = ex?.failures.filter((f) => f.postponed === true && f.heldOpen === undefined).length ?? 0;
  // Held open for writing by another program: not a change under the step, and said as what it is.
  const heldOpen = ex?.failures.filter((f) => f.heldOpen !== undefined).length ?? 0;
  // Cut short by a stop (SIGTERM, a reload): not failures, the next run takes them up (they were counted as
  // failed: black-box round 30a, F5; in the line's fields too until round 42c, P1-d).
  const stopped = ex?.failures.filter(stoppedByShutdown).length ?? 0;
  const failed = (ex?.failures.length ?? 0) - postponed - heldOpen - stopped;
  const fields = {
    trigger,
    done: ex?.done ?? {},
    failed,
    ...(postponed > 0 ? { postponed } : {}),
    ...(heldOpen > 0 ? { waiting: heldOpen } : {}),
    ...(stopped > 0 ? { stopped } : {}),
    conflicts: ex?.conflicts.length ?? 0,
    issues: r.issues.length,
    bytesUp: ex?.bytesUploaded ?? 0,
    bytesDown: ex?.bytesDownloaded ?? 0,
    hashed: r.hashed,
    ms: r.durationMs,
  };
  if (r.blockedAgain) {
    log.debug(fields, `pass: still blocked by a safety gate (${r.plan.blocked?.code ?? ''})`);
    return;
  }
  if (!passDidSomething(r)) {
    log.debug(fields, 'quiet pass');
    return;
  }
  if (onlyRepeatedFailures(r)) {
    // Retried against the same trouble (a full disk): its items were logged when they first failed.
    log.debug(fields, `pass: the same ${ex?.failures.length ?? 0} failure(s) again`);
    return;
  }
  const counts = [recoveredText(r), ex ? describeDone(ex) : ''].filter((x) => x !== '').join(', ');
  const what = r.plan.blocked ? `blocked by a safety gate (${r.plan.blocked.code})` : counts || 'nothing done';
  const tail =
    (failed > 0 ? `, ${failed} failed` : '') +
    (postponed > 0 ? `, ${postponed} postponed (changed while being synced)` : '') +
    (heldOpen > 0 ? `, ${heldOpen} waiting (open for writing by another program)` : '') +
    (stopped > 0 ? `, ${stopped} stopped by the shutdown (the next run takes them up)` : '');
  log.info(fields, `pass: ${what}${tail}; ${fmtBytes(fields.bytesUp)} up, ${fmtBytes(fields.bytesDown)} down in ${(r.durationMs / 1000).toFixed(1)} s`);
  if (ex?.restored) {
    const { count, first } = ex.restored;
    log.warn(
      { count, relPath: first, hint: 'the service has no delete or rename: set localDeletePolicy: forget to stop syncing files deleted locally' },
      `restored ${count === 1 ? `${printable(first)}, deleted or renamed locally` : `${count} files deleted or renamed locally (${printable(first)}, ...)`}: ${count === 1 ? 'the remote document still exists' : 'the remote documents still exist'}`,
    );
  }
}

/** Lines of newly found issues logged per pass at most; the rest is one "... more" line pointing at `status`. */
export const ISSUE_LOG_LIMIT = 20;
/** Paths named in the "no longer blocked" line at most. */
const RESOLVED_NAMED = 10;

/** A file found changing while the scan read it: a passing state, said at debug (see logIssueChanges). */
const passing = (i: Issue) => i.code === 'changing' && i.detail === CHANGED_WHILE_READ;

const issueKey = (i: Issue) => `${i.code}\u0000${i.relPath}\u0000${i.documentId ?? ''}`;

/**
 * Logs what changed in the pair's open issues since the previous pass: each new one (grouped as `status` groups
 * them) at warn, or info for the informational codes, and one info line naming the items no longer blocked.
 * A daemon run as a service is read through its log: an item it cannot sync (unreadable, a name the other side
 * cannot take, a folder that does not exist remotely) must show there once, not only in `status`; a quiet pass
 * repeats nothing, nor does a pass that only adds items to a group already shown folded. Returns the issues
 * to pass in next time (a new daemon starts from none, so it names them all once at start-up).
 */
export function logIssueChanges(log: Logger, previous: ReadonlyMap<string, Issue>, issues: readonly Issue[]): Map<string, Issue> {
  const current = new Map(issues.map((i) => [issueKey(i), i]));
  // A path whose issue only changed (another code or document) is not "no longer blocked": its new line says it.
  const stillOpen = new Set(issues.map((i) => i.relPath));
  const gone = [...previous].filter(([k, i]) => !current.has(k) && !stillOpen.has(i.relPath)).map(([, i]) => i);
  // A file a program was still writing when the scan read it is no news either way: a log appended every 100 ms
  // said "not synced ... changing" and "no longer blocked" 70 ms later, several times a minute (round 35b, F4).
  for (const i of [...current.values()].filter((i) => !previous.has(issueKey(i)) && passing(i))) log.debug({ relPath: i.relPath, code: i.code }, `still being written: ${i.relPath}`);
  const resolved = gone.filter((i) => !passing(i)).map((i) => i.relPath);
  // More of a group already shown folded ("New/ (300 files)"), such as a copy into a new folder still going on,
  // is not announced again on every pass.
  const before = new Map<string, number>();
  for (const i of previous.values()) before.set(issueGroupKey(i), (before.get(issueGroupKey(i)) ?? 0) + 1);
  const added = [...current].filter(([k, i]) => !previous.has(k) && !passing(i) && (before.get(issueGroupKey(i)) ?? 0) < GROUP_FROM).map(([, i]) => i);
  const lines = groupIssues(added);
  for (const g of lines.slice(0, ISSUE_LOG_LIMIT)) {
    const fields = { relPath: g.label, code: g.code, count: g.count };
    const msg = `not synced: ${g.label}: ${g.code}: ${g.detail}`;
    if (LOGGED_AT_INFO.has(g.code)) log.info(fields, msg);
    else log.warn(fields, msg);
  }
  if (lines.length > ISSUE_LOG_LIMIT) {
    const more = lines.slice(ISSUE_LOG_LIMIT);
    const rest = more.reduce((n, g) => n + g.count, 0);
    const msg = `not synced: ${rest} more item${rest === 1 ? '' : 's'}; run \`binder-sync status\` for the list`;
    // At warn only when one of them would have been a warning itself.
    if (more.every((g) => LOGGED_AT_INFO.has(g.code))) log.info({ count: rest }, msg);
    else log.warn({ count: rest }, msg);
  }
  if (resolved.length > 0) {
    const unique = [...new Set(resolved)].sort().map(printable);
    const named = unique.slice(0, RESOLVED_NAMED).join(', ') + (unique.length > RESOLVED_NAMED ? `, ... (${unique.length - RESOLVED_NAMED} more)` : '');
    log.info({ count: unique.length }, `no longer blocked: ${named}`);
  }
  return current;
}

/** Feeds the Prometheus metrics from one pass report. */
export function recordPassMetrics(m: SyncMetrics, r: PassReport, pending: Pending, nowMs: number): void {
  const pair = { pair: r.pair };
  const ex = r.execution;
  if (ex) {
    m.filesTransferred.inc({ ...pair, direction: 'upload' }, ex.done.upload ?? 0);
    m.filesTransferred.inc({ ...pair, direction: 'download' }, ex.done.download ?? 0);
    m.bytesTransferred.inc({ ...pair, direction: 'upload' }, ex.bytesUploaded);
    m.bytesTransferred.inc({ ...pair, direction: 'download' }, ex.bytesDownloaded);
    m.errors.inc(pair, ex.failures.length);
    m.conflicts.inc(pair, ex.conflicts.length);
  }
  m.queueDepth.set(pair, pending.uploads + pending.downloads);
  m.passDuration.set(pair, r.durationMs / 1000);
  // The pass listed the whole remote (runPass throws otherwise), so this is the time of the last poll.
  m.lastPollTimestamp.set(pair, Math.floor(nowMs / 1000));
}

