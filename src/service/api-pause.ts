// The service's own "wait": a 429 or 503 with Retry-After holds every API call of the client until then, not only
// the call that got it (rclone's pacer does the same). A call that got one and was then given up (the fast in-sync
// check's search, cancelled once the local side was found changed) left the next call free to go at once, into a
// second 429 (black-box round 32b, F4).
import type { Logger } from '../log.js';
import { sleep } from './retry.js';

export class ApiPause {
  /** Date.now() until which API calls wait; 0 when none has been asked for. */
  private until = 0;

  /** capMs: the longest wait taken from one answer (the retry policy's maxDelayMs, as a retry's own wait). */
  constructor(
    private readonly capMs: number,
    private readonly log: Logger,
  ) {}

  /** An answer asked for a wait (Retry-After, in ms; undefined: none given, nothing held). */
  hold(request: string, retryAfterMs: number | undefined, now = Date.now()): void {
    if (retryAfterMs === undefined || retryAfterMs <= 0) return;
    const until = now + Math.min(retryAfterMs, this.capMs);
    if (until <= this.until) return;
    this.until = until;
    this.log.debug({ request, waitMs: until - now }, 'the service asked to wait (Retry-After): API calls hold until then');
  }

  /** Resolves once no wait is asked for any more; rejects when signal fires first. */
  async wait(signal: AbortSignal): Promise<void> {
    for (let ms = this.until - Date.now(); ms > 0; ms = this.until - Date.now()) await sleep(ms, signal);
  }
}
