// Backoff with full jitter, Retry-After parsing (seconds and HTTP date) and the retryable-status list.
import { describe, expect, it } from 'vitest';
import { backoffDelay, parseRetryAfter, sleep } from '../../src/service/retry.js';
import { isRetryableStatus } from '../../src/service/errors.js';

const policy = { maxAttempts: 6, baseDelayMs: 100, maxDelayMs: 1000 };

describe('backoffDelay', () => {
  it('grows exponentially as the ceiling of a full-jitter draw', () => {
    expect(backoffDelay(1, policy, undefined, () => 0.999)).toBe(99);
    expect(backoffDelay(2, policy, undefined, () => 0.999)).toBe(199);
    expect(backoffDelay(3, policy, undefined, () => 0.5)).toBe(200);
    expect(backoffDelay(1, policy, undefined, () => 0)).toBe(0);
  });
  it('never exceeds maxDelayMs', () => {
    expect(backoffDelay(30, policy, undefined, () => 0.999)).toBe(999);
  });
  it('honours Retry-After, capped at maxDelayMs', () => {
    expect(backoffDelay(1, policy, 400, () => 0)).toBe(400);
    expect(backoffDelay(1, policy, 120_000, () => 0)).toBe(1000);
    expect(backoffDelay(1, policy, -5, () => 0)).toBe(0);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter(['2', '9'], now)).toBe(2000);
  });
  it('reads an HTTP date relative to now', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:00 GMT', now)).toBe(0);
  });
  it('ignores absent or unreadable values', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});

describe('isRetryableStatus', () => {
  it('retries 429, 408 and transient 5xx only', () => {
    for (const s of [408, 429, 500, 502, 503, 504]) expect(isRetryableStatus(s)).toBe(true);
    for (const s of [400, 401, 403, 404, 405, 409, 422, 501]) expect(isRetryableStatus(s)).toBe(false);
  });
});

describe('sleep', () => {
  it('rejects when aborted', async () => {
    const ac = new AbortController();
    const p = sleep(10_000, ac.signal);
    ac.abort();
    await expect(p).rejects.toThrow();
  });
});
