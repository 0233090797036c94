// Retry policy: exponential backoff with full jitter, Retry-After parsing, and an abortable sleep.
// The one place that decides how long to wait; which failures to retry is ServiceError.retryable.
import { setTimeout as delay } from 'node:timers/promises';

export interface RetryPolicy {
  /** Total attempts including the first. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /**
   * How long the service may answer nothing but 429s with Retry-After (to every call of the client) before a call
   * gives up, whatever its budget says (HttpCore.withRetry). Default two minutes.
   */
  rateLimitedGiveUpMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 6, baseDelayMs: 250, maxDelayMs: 30_000, rateLimitedGiveUpMs: 120_000 };

/**
 * Delay before attempt `attempt + 1` after `attempt` failed (attempt is 1-based).
 * A server's Retry-After wins (capped at maxDelayMs); otherwise full jitter: uniform in [0, min(max, base * 2^(attempt-1))].
 */
export function backoffDelay(attempt: number, policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>, retryAfterMs?: number, random: () => number = Math.random): number {
  if (retryAfterMs !== undefined) return Math.min(Math.max(0, retryAfterMs), policy.maxDelayMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/** Retry-After is either delta-seconds or an HTTP date (RFC 9110 10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return undefined;
  const trimmed = v.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** Sleeps `ms`, rejecting with the signal's AbortError when it fires. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) {
    signal?.throwIfAborted();
    return;
  }
  await delay(ms, undefined, signal ? { signal } : undefined);
}
