// TokenProvider: caches the client-credentials access token for its lifetime minus a safety margin and
// refreshes it single-flight (concurrent callers share one token request).
import type { TokenResponse } from './schemas.js';

/**
 * The lifetime assumed for a token whose answer gives no expires_in (RFC 6749 only recommends it): five minutes,
 * short enough that a token living less than the spec's typical hour is refreshed in time, long enough not to
 * ask for one per request. A 401 before then refreshes it anyway (HttpCore).
 */
export const DEFAULT_TOKEN_LIFETIME_S = 300;

/** Safety margin before expiry: min(60 s, 10 % of the lifetime), so short test lifetimes still get a margin. */
export function safetyMarginMs(lifetimeSeconds: number): number {
  return Math.min(60_000, lifetimeSeconds * 100);
}

interface CachedToken {
  token: string;
  /** Local clock time it was asked for. */
  issuedAt: number;
  /** Local clock time after which the token is no longer handed out. */
  refreshAt: number;
}

export class TokenProvider {
  private cached: CachedToken | undefined;
  private inflight: Promise<CachedToken> | undefined;
  /** Tokens issued to this client (kept for scrubbing error text); bounded. */
  private readonly issued: string[] = [];

  constructor(
    private readonly fetchToken: () => Promise<TokenResponse>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A valid access token; at most one token request is in flight at any time. `signal` ends this caller's wait
   * (rejecting with its reason), not the token request, which other callers may be waiting for: a pass cancelled
   * at shutdown must not sit out a token endpoint that does not answer (black-box round 28b, F7).
   */
  async get(signal?: AbortSignal): Promise<string> {
    const c = this.cached;
    if (c && this.now() < c.refreshAt) return c.token;
    signal?.throwIfAborted();
    if (this.inflight === undefined) {
      this.inflight = this.refresh().finally(() => {
        this.inflight = undefined;
      });
      // Its failure reaches every caller still waiting; when all of them stopped waiting (each one's signal fired),
      // nobody is left to take it, and it was an unhandled rejection that ended the process with a stack trace
      // (`sync --dry-run` of a pair refused at start: black-box round 37b, F2).
      this.inflight.catch(() => undefined);
    }
    return (await untilAborted(this.inflight, signal)).token;
  }

  /**
   * Drops `token` after the API refused it (401). Only the same token is dropped, so many requests failing
   * with one stale token cause a single refresh, not one per request.
   */
  invalidate(token: string): void {
    if (this.cached?.token === token) this.cached = undefined;
  }

  /** How long ago `token` was asked for, if it is the one in use (ms); undefined for another. */
  ageOf(token: string): number | undefined {
    return this.cached?.token === token ? this.now() - this.cached.issuedAt : undefined;
  }

  /** Tokens this provider has handed out (most recent last), for scrubbing text before it is shown. */
  knownTokens(): readonly string[] {
    return this.issued;
  }

  private async refresh(): Promise<CachedToken> {
    const requestedAt = this.now();
    const res = await this.fetchToken();
    // expires_in 0 says nothing usable either (a token already dead when issued would fail the call it was asked
    // for): taken as not stated, else every API call would first ask for a new token. A 401 refreshes it anyway.
    const lifetimeS = res.expires_in || DEFAULT_TOKEN_LIFETIME_S;
    // Measured from when we asked, so time spent waiting for the answer is not counted as validity.
    const cached = { token: res.access_token, issuedAt: requestedAt, refreshAt: requestedAt + lifetimeS * 1000 - safetyMarginMs(lifetimeS) };
    this.cached = cached;
    this.issued.push(res.access_token);
    if (this.issued.length > 8) this.issued.shift();
    return cached;
  }
}

/** `p`, or a rejection with the signal's reason as soon as `signal` fires (p goes on; its outcome is ignored). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
