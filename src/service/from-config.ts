// The service client built from a loaded config: the one place that maps config keys to client settings.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { ServiceClient } from './client.js';
import type { ServiceSettings } from './settings.js';

/** The service client for a config; `overrides` adjust settings (e.g. `check` wants few retries). */
export function serviceClientFor(config: Config, log: Logger, signal?: AbortSignal, overrides: Partial<ServiceSettings> = {}): ServiceClient {
  const s = config.service;
  return new ServiceClient(
    {
      baseUrl: s.baseUrl,
      authUrl: s.authUrl,
      tenantId: s.tenantId,
      clientId: s.clientId,
      clientSecret: s.clientSecret,
      tenantHeader: s.tenantHeader,
      scope: s.scope,
      maxConcurrentRequests: s.maxConcurrentRequests,
      requestsPerSecond: s.requestsPerSecond,
      maxConcurrentTransfers: s.maxConcurrentTransfers,
      requestTimeoutMs: s.requestTimeout,
      ...overrides,
    },
    { logger: log, ...(signal ? { signal } : {}) },
  );
}
