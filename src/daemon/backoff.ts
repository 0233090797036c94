// How the daemon reacts to a failed pass: which failures are transient (exponential back-off) and which are
// config-like (the pair stays in the error state and is retried slowly), and the delay before the next try.
import { BinderSyncError, oneLineMessage } from '../errors.js';
import { ServiceError } from '../service/errors.js';
import { stateDbWriteError } from '../state/state-dir-error.js';
import type { DaemonTiming } from './timing.js';

export interface FailureInfo {
  /** Config-like: retrying soon cannot help until someone changes the config or the binder. */
  fatal: boolean;
  /** Stable code (BinderSyncError.code, else 'UNEXPECTED'); a change of code is logged as a new state. */
  code: string;
  /** One line for the log, without secrets (ServiceError messages are already scrubbed). */
  reason: string;
  /** The server's Retry-After, when it sent one. */
  retryAfterMs?: number;
  /**
   * A safety gate stopped the pass (PASS_BLOCKED). It can clear by itself (a disk mounted again, files put
   * back, a listing that recovers), so it is looked at again every poll interval rather than every 5 min:
   * a blocked pass changes nothing and costs what a poll costs.
   */
  recheckEachPoll?: true;
  /**
   * The sync root is missing or unreadable (LOCAL_ROOT): backed off as any transient failure, but never for longer
   * than the poll interval, so a disk mounted again is found as soon as a blocked pass would find it.
   */
  atMostEachPoll?: true;
}

/**
 * Codes that no amount of waiting fixes. Binder not found arrives as SERVICE_NOT_FOUND from openPair
 * (GET metadataelements) or the listing; a 400 means our request is wrong for this server.
 * Auth failures (AUTH_FAILED, 401, 403) are deliberately transient: credentials get fixed or rotated
 * server-side, and a daemon must come back by itself when they do.
 */
const FATAL_CODES = new Set([
  'METADATA_RULES_INVALID',
  'SERVICE_NOT_FOUND',
  'SERVICE_BAD_REQUEST',
  'STATE_TOO_NEW',
  'STATE_CORRUPT',
  'PAIR_READ_ONLY',
  'PASS_BLOCKED', // a safety gate stopped the pass: someone must look (or run sync --force)
  'LOCAL_ROOT_REPLACED', // another folder took the sync root's place: someone must put the synced one back
]);

export function classifyFailure(thrown: unknown): FailureInfo {
  const err = stateDbWriteError(thrown);
  const code = err instanceof BinderSyncError ? err.code : 'UNEXPECTED';
  const fatal = FATAL_CODES.has(code) || code.startsWith('CONFIG');
  const info: FailureInfo = { fatal, code, reason: oneLineMessage(err) || code };
  if (err instanceof BinderSyncError && err.hint) info.reason += ` (hint: ${err.hint})`;
  if (err instanceof ServiceError && err.retryAfterMs !== undefined) info.retryAfterMs = err.retryAfterMs;
  if (code === 'PASS_BLOCKED' || code === 'LOCAL_ROOT_REPLACED') info.recheckEachPoll = true;
  if (code === 'LOCAL_ROOT') info.atMostEachPoll = true;
  return info;
}

/** Applies ±10% jitter (random() in [0, 1)), so pairs and daemons do not hit the service in lockstep. */
export function jitter(ms: number, random: () => number): number {
  return Math.round(ms * (0.9 + 0.2 * random()));
}

/**
 * Delay before retry number `attempt` (1 = after the first failure). Transient: base doubling up to max,
 * jittered; a server's Retry-After is honoured when longer (capped at one hour as a sanity bound).
 * Fatal: the slow fixed period (a blocked pass: the poll interval, when given and shorter).
 */
export function retryDelay(failure: FailureInfo, attempt: number, timing: DaemonTiming, random: () => number, pollIntervalMs?: number): number {
  if (failure.recheckEachPoll && pollIntervalMs !== undefined) return jitter(Math.min(pollIntervalMs, timing.fatalRetryMs), random);
  if (failure.fatal) return jitter(timing.fatalRetryMs, random);
  const cap = failure.atMostEachPoll && pollIntervalMs !== undefined ? Math.min(timing.backoffMaxMs, pollIntervalMs) : timing.backoffMaxMs;
  const exp = Math.min(cap, timing.backoffBaseMs * 2 ** Math.max(0, attempt - 1));
  const delay = jitter(exp, random);
  return failure.retryAfterMs !== undefined ? Math.max(delay, Math.min(failure.retryAfterMs, 3_600_000)) : delay;
}
