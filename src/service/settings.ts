// Settings of the service client (what config.service supplies) and their defaults.
import { DEFAULT_RETRY, type RetryPolicy } from './retry.js';

/** The only scope of the service (spec 5.2). */
export const DEFAULT_SCOPE = 'service_public';

export interface ServiceSettings {
  baseUrl: string;
  authUrl: string;
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /**
   * Where the secret comes from, as hints name it (the refused-credentials hint): the config key, and the file or
   * environment variable behind it. Default 'service.clientSecret'. See secretSourceOf (from-config.ts).
   */
  secretSource?: string;
  /** Default 'x-service-tenantid' (spec 5.3). */
  tenantHeader?: string;
  /** Default 'service_public' (spec 5.2). */
  scope?: string;
  /** API requests in flight; default 8. */
  maxConcurrentRequests?: number;
  /** API requests started per second; default 100. */
  requestsPerSecond?: number;
  /** Storage GET/PUT in flight; default 4. */
  maxConcurrentTransfers?: number;
  /** Defaults 6 attempts, 250 ms base, 30 s cap, 2 min of nothing but 429s with Retry-After (see RetryPolicy). */
  retry?: { maxAttempts?: number; baseDelayMs?: number; maxDelayMs?: number; rateLimitedGiveUpMs?: number };
  /**
   * An API request's headers, and each 1 KiB of its answer (the whole answer: ten times it); for storage transfers
   * the idle timeout for headers and for gaps in a body (not the total transfer time); default 60 s.
   */
  requestTimeoutMs?: number;
  /** A download moving fewer than 1 KiB in this long trickles and is ended; default max(30 s, requestTimeoutMs). */
  trickleWindowMs?: number;
  /** Bytes per second sent to storage, all uploads together; null or unset: unlimited. */
  maxUploadBytesPerSecond?: number | null;
  /** Bytes per second read from storage, all downloads together; null or unset: unlimited. */
  maxDownloadBytesPerSecond?: number | null;
}

export interface ResolvedSettings extends Required<Omit<ServiceSettings, 'retry'>> {
  retry: RetryPolicy;
}

export function resolveSettings(s: ServiceSettings): ResolvedSettings {
  return {
    baseUrl: s.baseUrl.replace(/\/+$/, ''),
    authUrl: s.authUrl.replace(/\/+$/, ''),
    tenantId: s.tenantId,
    clientId: s.clientId,
    clientSecret: s.clientSecret,
    secretSource: s.secretSource ?? 'service.clientSecret',
    tenantHeader: s.tenantHeader ?? 'x-service-tenantid',
    scope: s.scope ?? DEFAULT_SCOPE,
    maxConcurrentRequests: s.maxConcurrentRequests ?? 8,
    requestsPerSecond: s.requestsPerSecond ?? 100,
    maxConcurrentTransfers: s.maxConcurrentTransfers ?? 4,
    retry: {
      maxAttempts: Math.max(1, s.retry?.maxAttempts ?? DEFAULT_RETRY.maxAttempts),
      baseDelayMs: s.retry?.baseDelayMs ?? DEFAULT_RETRY.baseDelayMs,
      maxDelayMs: s.retry?.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs,
      rateLimitedGiveUpMs: s.retry?.rateLimitedGiveUpMs ?? DEFAULT_RETRY.rateLimitedGiveUpMs,
    },
    requestTimeoutMs: s.requestTimeoutMs ?? 60_000,
    trickleWindowMs: s.trickleWindowMs ?? Math.max(30_000, s.requestTimeoutMs ?? 60_000),
    maxUploadBytesPerSecond: s.maxUploadBytesPerSecond ?? null,
    maxDownloadBytesPerSecond: s.maxDownloadBytesPerSecond ?? null,
  };
}
