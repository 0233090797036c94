// Fault injection and rate limiting for the emulator's HTTP routes. Probabilities come from a seeded PRNG
// so a test run is reproducible; the rate limit is a token bucket answering 429 with Retry-After.
import { mulberry32 } from './ids.js';
import type { Fault, RateLimit, RouteName } from './types.js';

export interface FaultEffects {
  latencyMs: number;
  drop: boolean;
  status: number | undefined;
  retryAfterSeconds: number | undefined;
  truncate: boolean;
  invalidBody: boolean;
  emptyList: boolean;
}

interface ActiveFault {
  id: string;
  fault: Fault;
  remaining: number;
}

export class FaultInjector {
  private faults: ActiveFault[] = [];
  private nextId = 1;
  private readonly random: () => number;

  constructor(seed: number) {
    this.random = mulberry32(seed);
  }

  add(fault: Fault): string {
    const id = `fault-${this.nextId++}`;
    this.faults.push({ id, fault, remaining: fault.times ?? Number.POSITIVE_INFINITY });
    return id;
  }

  clear(): void {
    this.faults = [];
  }

  /** Every fault matching the route whose probability hits contributes; each hit spends one of its `times`. */
  effectsFor(route: RouteName): FaultEffects | undefined {
    let effects: FaultEffects | undefined;
    for (const a of this.faults) {
      if (a.remaining <= 0 || (a.fault.route !== '*' && a.fault.route !== route)) continue;
      if (a.fault.probability !== undefined && this.random() >= a.fault.probability) continue;
      a.remaining--;
      effects ??= { latencyMs: 0, drop: false, status: undefined, retryAfterSeconds: undefined, truncate: false, invalidBody: false, emptyList: false };
      effects.latencyMs += a.fault.latencyMs ?? 0;
      effects.drop ||= a.fault.drop === true;
      effects.truncate ||= a.fault.truncate === true;
      effects.invalidBody ||= a.fault.invalidBody === true;
      effects.emptyList ||= a.fault.emptyList === true;
      effects.status ??= a.fault.status;
      effects.retryAfterSeconds ??= a.fault.retryAfterSeconds;
    }
    this.faults = this.faults.filter((a) => a.remaining > 0);
    return effects;
  }
}

export class RateLimiter {
  private limit: { rate: number; burst: number } | null = null;
  private tokens = 0;
  private last = 0;

  set(limit: RateLimit | null): void {
    if (limit === null) {
      this.limit = null;
      return;
    }
    if (!(limit.requestsPerSecond > 0)) throw new Error('requestsPerSecond must be > 0');
    const burst = Math.max(1, limit.burst ?? Math.ceil(limit.requestsPerSecond));
    this.limit = { rate: limit.requestsPerSecond, burst };
    this.tokens = burst;
    this.last = Date.now();
  }

  /** undefined when the request may pass, else the seconds to wait (for Retry-After, at least 1). */
  take(): number | undefined {
    if (!this.limit) return undefined;
    const now = Date.now();
    this.tokens = Math.min(this.limit.burst, this.tokens + ((now - this.last) / 1000) * this.limit.rate);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((1 - this.tokens) / this.limit.rate));
  }
}

/** A 200 body that violates the spec's shape for the route (e.g. an item without id). */
export function invalidBodyFor(route: RouteName): unknown {
  switch (route) {
    case 'token':
      return { token_type: 'Bearer', expires_in: 'soon' };
    case 'binders':
      return [{ id: 12345, name: null }];
    case 'metadataelements':
      return [{ label: 'no id', allowedValues: 'none' }];
    case 'search':
      return { items: [{ fileName: 'no id' }], totalCount: 'many' };
    case 'folders':
    case 'subfolders':
      return [{ name: 'no id' }];
    case 'folderdocuments':
    case 'versions':
      return [{ fileName: 'no id', version: 1 }];
    case 'presignedupload':
      return { uploadId: 42 };
    case 'downloadlink':
      return { url: 42 };
    default:
      return { documentId: 7, fileName: null, metadata: 'none' };
  }
}
