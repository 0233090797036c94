// Logs a pair's health once per state change (ok -> failing with the reason, failing -> recovered), never once
// per retry: a service outage of an hour is two log lines, not seven hundred.
import type { Logger } from '../log.js';
import type { FailureInfo } from './backoff.js';

export class HealthLog {
  private failing: { code: string; since: number; attempts: number } | null = null;

  constructor(
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  get isFailing(): boolean {
    return this.failing !== null;
  }

  /** Records a failed attempt; logs when the pair was ok or the failure changed its code. */
  failed(f: FailureInfo, retryInMs: number): void {
    if (this.failing && this.failing.code === f.code) {
      this.failing.attempts++;
      this.log.debug({ code: f.code, attempts: this.failing.attempts, retryInMs }, `still failing: ${f.reason}`);
      return;
    }
    const changed = this.failing !== null;
    this.failing = { code: f.code, since: this.failing?.since ?? this.now(), attempts: 1 };
    const fields = { code: f.code, retryInMs, ...(f.retryAfterMs !== undefined ? { retryAfterMs: f.retryAfterMs } : {}) };
    const what = f.recheckEachPoll
      ? 'pair in error state (looked at again every poll interval)'
      : f.fatal ? 'pair in error state (retried every few minutes until fixed)' : 'pair failing, retrying with back-off';
    const msg = `${changed ? 'failure changed: ' : ''}${what}: ${f.reason}`;
    if (f.fatal) this.log.error(fields, msg);
    else this.log.warn(fields, msg);
  }

  /** Records a successful pass; logs once when it ends a failing streak. */
  succeeded(): void {
    if (!this.failing) return;
    const { attempts, since } = this.failing;
    this.failing = null;
    this.log.info({ attempts, downMs: this.now() - since }, 'pair recovered');
  }
}
