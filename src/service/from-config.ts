// The service client built from a loaded config: the one place that maps config keys to client settings.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { readCapabilities, writeCapabilities } from './capabilities-file.js';
import { ServiceClient, serviceIdentityOf } from './client.js';
import type { ServiceSettings } from './settings.js';

/**
 * What the client does with the stateDir's record of what the server speaks (capabilities-file.ts): 'remember'
 * reads it and saves what is found (sync, run), 'read' only reads it (a dry run writes nothing), 'ignore' does
 * neither (check probes the server afresh).
 */
export type CapabilityUse = 'remember' | 'read' | 'ignore';

/**
 * The config key the secret comes from, as a hint names it: service.clientSecretFile with its path, or
 * service.clientSecret with the environment variable it was written as (black-box round 32b, F6).
 */
export function secretSourceOf(s: Pick<Config['service'], 'clientSecretFile' | 'clientSecretEnv'>): string {
  if (s.clientSecretFile !== null) return `service.clientSecretFile (${s.clientSecretFile})`;
  const vars = s.clientSecretEnv;
  if (vars.length === 0) return 'service.clientSecret';
  return `service.clientSecret (environment variable${vars.length > 1 ? 's' : ''} ${vars.join(', ')})`;
}

/**
 * BINDER_SYNC_RETRY_BASE_MS: the first back-off step between attempts of one request (default 250 ms, doubling).
 * For tests of a failing service, like the daemon's BINDER_SYNC_BACKOFF_BASE_MS (daemon/timing.ts); not a config
 * key, since the default spacing protects the service. An invalid value is ignored.
 */
function retryFromEnv(env: NodeJS.ProcessEnv = process.env): Pick<ServiceSettings, 'retry'> {
  const raw = env.BINDER_SYNC_RETRY_BASE_MS;
  const n = raw === undefined || raw.trim() === '' ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n > 0 ? { retry: { baseDelayMs: n } } : {};
}

/** The service client for a config; `overrides` adjust settings (e.g. `check` wants few retries). */
export function serviceClientFor(
  config: Config,
  log: Logger,
  signal?: AbortSignal,
  overrides: Partial<ServiceSettings> = {},
  capabilities: CapabilityUse = 'remember',
): ServiceClient {
  const s = config.service;
  // Hints are kept per API address and tenant: a config pointed elsewhere starts without them.
  const service = serviceIdentityOf(s.baseUrl, s.tenantId);
  const hints = capabilities === 'ignore' ? {} : readCapabilities(config.stateDir, service);
  return new ServiceClient(
    {
      baseUrl: s.baseUrl,
      authUrl: s.authUrl,
      tenantId: s.tenantId,
      clientId: s.clientId,
      clientSecret: s.clientSecret,
      secretSource: secretSourceOf(s),
      tenantHeader: s.tenantHeader,
      scope: s.scope,
      maxConcurrentRequests: s.maxConcurrentRequests,
      requestsPerSecond: s.requestsPerSecond,
      maxConcurrentTransfers: s.maxConcurrentTransfers,
      requestTimeoutMs: s.requestTimeout,
      maxUploadBytesPerSecond: s.maxUploadRate ?? null,
      maxDownloadBytesPerSecond: s.maxDownloadRate ?? null,
      ...retryFromEnv(),
      ...overrides,
    },
    {
      logger: log,
      ...(signal ? { signal } : {}),
      memory: {
        hints,
        ...(capabilities === 'remember' ? { onLearned: (caps) => writeCapabilities(config.stateDir, service, caps) } : {}),
      },
    },
  );
}
