// Public surface of the service client: the only module the rest of binder-sync imports for service access.
export { ServiceClient, answersRepeatedCommit, COMMIT_REQUEST, settingsIdentityOf, type SearchQuery, type SearchResult, type CommitBody, type CommitSpelling, type ServiceCapabilities } from './client.js';
export { ServiceError, type ServiceErrorCode } from './errors.js';
export { resolveSettings, type ServiceSettings, type ResolvedSettings } from './settings.js';
export { TokenProvider, safetyMarginMs } from './token.js';
export { backoffDelay, parseRetryAfter, DEFAULT_RETRY, type RetryPolicy } from './retry.js';
export * from './schemas.js';
