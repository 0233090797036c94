// ServiceError: every failure of a call to the service or its storage, named by its templated request
// ("GET /documents/{documentId}") and never carrying a token, secret or presigned query string.
import { BinderSyncError, type ErrorDetails } from '../errors.js';
import { redactUrlsInText } from '../redact.js';
import { ProblemDetailsSchema, type ProblemDetails } from './schemas.js';

/** Stable codes of ServiceError. */
export type ServiceErrorCode =
  | 'AUTH_FAILED' // token endpoint refused the credentials (fatal)
  | 'SERVICE_UNAUTHORIZED' // the API refused a freshly issued token
  | 'SERVICE_FORBIDDEN' // 403: wrong tenant or a read-only client writing
  | 'SERVICE_NOT_FOUND' // 404
  | 'SERVICE_BAD_REQUEST' // 400 and other non-retryable 4xx
  | 'SERVICE_RATE_LIMITED' // 429 after the retry budget
  | 'SERVICE_UNAVAILABLE' // 5xx after the retry budget
  | 'SERVICE_NETWORK' // connection refused/reset, timeout, truncated or unparseable body
  | 'SERVICE_INVALID_RESPONSE' // a 2xx whose body does not match the schema
  | 'COMMIT_CONFLICT' // 409 on commit: uploadId already committed (or content missing); reconcile
  | 'STORAGE_LINK_EXPIRED' // storage kept answering 403 to fresh download links / upload slots
  | 'TRANSFER_INTERRUPTED' // a download failed after bytes reached dest: restart with a fresh dest
  | 'TRANSFER_INCOMPLETE' // byte count differs from Content-Length: restart with a fresh dest
  | 'UPLOAD_SOURCE_FAILED' // the local stream failed or had another size than announced
  | 'ABORTED' // cancelled through an AbortSignal or close()
  | 'CLIENT_CLOSED';

export interface ServiceErrorDetails extends Omit<ErrorDetails, 'code'> {
  code: ServiceErrorCode;
  request: string;
  status?: number;
  traceId?: string;
  problem?: ServiceError['problem'];
}

export class ServiceError extends BinderSyncError {
  declare readonly code: ServiceErrorCode;
  readonly status?: number;
  /** Method + templated path, e.g. "GET /documents/{documentId}", or "PUT storage" for presigned URLs. */
  readonly request: string;
  readonly traceId?: string;
  readonly problem?: { title?: string; detail?: string; errors?: Record<string, string[]> };
  /** The server's Retry-After, in ms, when it sent one (the scheduler may use it to back off a whole pass). */
  retryAfterMs?: number;

  constructor(message: string, details: ServiceErrorDetails) {
    const { request, status, traceId, problem, ...rest } = details;
    super(message, { ...rest, context: { request, ...(status === undefined ? {} : { status }), ...(traceId ? { traceId } : {}), ...rest.context } });
    this.request = request;
    if (status !== undefined) this.status = status;
    if (traceId !== undefined) this.traceId = traceId;
    if (problem !== undefined) this.problem = problem;
  }
}

/** Statuses worth repeating: rate limited, request timeout, and transient server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status === 500 || status === 502 || status === 503 || status === 504;
}

function codeForStatus(status: number): ServiceErrorCode {
  if (status === 401) return 'SERVICE_UNAUTHORIZED';
  if (status === 403) return 'SERVICE_FORBIDDEN';
  if (status === 404) return 'SERVICE_NOT_FOUND';
  if (status === 429) return 'SERVICE_RATE_LIMITED';
  if (status >= 500 || status === 408) return 'SERVICE_UNAVAILABLE';
  return 'SERVICE_BAD_REQUEST';
}

function hintForStatus(status: number): string | undefined {
  if (status === 401) return 'the service refused a fresh token: check tenantId and that the API client is still active';
  if (status === 403) return 'check tenantId, and that the API client has read/write access for uploads';
  if (status === 429) return 'the service is rate limiting: lower requestsPerSecond or maxConcurrentRequests';
  if (status >= 500) return 'the service is having trouble; binder-sync will try again later';
  return undefined;
}

/** Removes known secrets (client secret, tokens) and URL query strings from server-supplied text. */
export function scrubText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('[redacted]');
  return redactUrlsInText(out);
}

/** Parses a non-2xx body as problem details (RFC 7807) or an OAuth error; undefined for HTML/other bodies. */
export function parseProblem(bodyText: string): ProblemDetails | undefined {
  let json: unknown;
  try {
    json = JSON.parse(bodyText);
  } catch {
    return undefined;
  }
  const parsed = ProblemDetailsSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

export interface HttpFailure {
  request: string;
  status: number;
  statusText?: string;
  bodyText: string;
  headers: Record<string, string | string[] | undefined>;
  secrets: readonly string[];
  context?: Record<string, unknown>;
}

/** Builds the ServiceError for a non-2xx answer, with the problem details folded into the message. */
export function errorFromResponse(f: HttpFailure): ServiceError {
  const problem = parseProblem(f.bodyText.slice(0, 64 * 1024));
  const headerTrace = firstHeader(f.headers['x-trace-id']) ?? firstHeader(f.headers['x-request-id']);
  const traceId = problem?.traceId ?? headerTrace;
  const errors = normaliseErrors(problem?.errors);
  const parts: string[] = [];
  const title = problem?.title ?? problem?.error;
  const detail = problem?.detail ?? problem?.error_description;
  if (title) parts.push(title);
  if (detail && detail !== title) parts.push(detail);
  if (errors) parts.push(Object.entries(errors).map(([k, v]) => `${k}: ${v.join(', ')}`).join('; '));
  let message = `${f.request} failed with HTTP ${f.status}`;
  if (parts.length > 0) message += `: ${parts.join(' - ')}`;
  if (traceId) message += ` (traceId ${traceId})`;
  const hint = hintForStatus(f.status);
  const scrubbedProblem = problem
    ? {
        ...(title ? { title: scrubText(title, f.secrets) } : {}),
        ...(detail ? { detail: scrubText(detail, f.secrets) } : {}),
        ...(errors ? { errors } : {}),
      }
    : undefined;
  return new ServiceError(scrubText(message, f.secrets), {
    code: codeForStatus(f.status),
    retryable: isRetryableStatus(f.status),
    request: f.request,
    status: f.status,
    ...(traceId ? { traceId: scrubText(traceId, f.secrets) } : {}),
    ...(scrubbedProblem ? { problem: scrubbedProblem } : {}),
    ...(hint ? { hint } : {}),
    ...(f.context ? { context: f.context } : {}),
  });
}

function normaliseErrors(errors: Record<string, string[] | string> | undefined): Record<string, string[]> | undefined {
  if (!errors) return undefined;
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(errors)) out[k] = Array.isArray(v) ? v : [v];
  return Object.keys(out).length > 0 ? out : undefined;
}

function firstHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** Undici / socket error codes that mean "the request never completed"; all are worth another attempt. */
export function describeNetworkError(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : undefined;
  const msg = typeof e.message === 'string' ? e.message : String(err);
  return code ? `${code}: ${msg}` : msg;
}

/** Errors that say our request itself is malformed (bad URL, bad header): repeating it cannot help. */
const PERMANENT_CODES = new Set(['UND_ERR_INVALID_ARG', 'ERR_INVALID_URL', 'ERR_INVALID_ARG_TYPE', 'UND_ERR_NOT_SUPPORTED']);

export function networkError(request: string, err: unknown, secrets: readonly string[], context?: Record<string, unknown>): ServiceError {
  const permanent = PERMANENT_CODES.has(String((err as { code?: unknown })?.code));
  return new ServiceError(scrubText(`${request} failed: ${describeNetworkError(err)}`, secrets), {
    code: 'SERVICE_NETWORK',
    retryable: !permanent,
    request,
    cause: err,
    hint: permanent ? 'check service.baseUrl and service.authUrl (absolute http(s) URLs)' : 'check the network and baseUrl; binder-sync will try again later',
    ...(context ? { context } : {}),
  });
}

export function abortedError(request: string): ServiceError {
  return new ServiceError(`${request} was cancelled`, { code: 'ABORTED', retryable: true, request });
}

export function isAbortError(err: unknown): boolean {
  const e = err as { name?: unknown; code?: unknown };
  return e?.name === 'AbortError' || e?.code === 'ABORT_ERR' || e?.code === 'UND_ERR_ABORTED';
}
