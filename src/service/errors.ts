// ServiceError: every failure of a call to the service or its storage, named by its templated request
// ("GET /documents/{documentId}") and never carrying a token, secret or presigned query string.
import { BinderSyncError, type ErrorDetails } from '../errors.js';
import { redactUrlsInText } from '../redact.js';

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
  | 'STORAGE_LINK_EXPIRED' // storage answered 403 to a download link (expired, or a signature it does not take)
  | 'STORAGE_SLOT_EXPIRED' // storage answered 403 to the PUT to an upload slot's presigned URL (likewise)
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

/**
 * Requests that name nothing but the binder (its metadata schema, its top-level folders): a 404 there means the
 * configured binderId. 404s of folders and documents are routine (deleted meanwhile) and get no hint.
 */
const BINDER_REQUESTS = new Set(['GET /binders/{id}/metadataelements', 'GET /documents/drives/{domain}/{id}']);

/** Requests that need write access (spec 4.8, 4.9). */
const WRITE_REQUESTS = new Set(['GET /documents/uploads/personalstorage/presignedupload', 'POST /documents/drives/{domain}/{id}/{folderId}/upload']);

/** Requests to a presigned storage URL (spec 4.8, 5): no token, no tenant; their refusals are the link's. */
const STORAGE_REQUESTS = new Set(['PUT storage', 'GET storage']);

function hintForStatus(status: number, request: string, location?: string): string | undefined {
  if (STORAGE_REQUESTS.has(request)) return storageHint(status);
  // API calls carry the token: a redirect is not followed (it could send it elsewhere); where it pointed is said
  // (black-box round 41c, F4: a bare "failed with HTTP 307").
  if (status >= 300 && status <= 399) {
    const setting = request === 'POST /connect/token' ? 'service.authUrl' : 'service.baseUrl';
    return `the service redirected the request${location ? ` to ${shownUrl(location)}` : ''}; API calls are not followed to another address (they carry the token): set ${setting} to the address the service answers at`;
  }
  if (status === 404 && BINDER_REQUESTS.has(request)) return "no such binder for this client: check the pair's binderId; `binder-sync check` lists the binders this client can see";
  if (status === 401) return 'the service refused a fresh token: check tenantId and that the API client is still active';
  // Writes (an upload slot, a commit) need write access; anything else refused is the tenant or the client's access.
  if (status === 403) return WRITE_REQUESTS.has(request) ? 'check tenantId, and that the API client has read/write access for uploads' : "check tenantId, and that the API client has access to the service's binders";
  if (status === 429) return 'the service is rate limiting: lower requestsPerSecond or maxConcurrentRequests';
  if (status >= 500) return 'the service is having trouble (a server error, usually temporary): the daemon retries with back-off, a one-shot sync can be run again later';
  return undefined;
}

/**
 * What is kept of a storage error body: of an XML error document (S3, Azure, GCS) only its Code and Message. The
 * rest of such a body echoes the request (S3's StringToSign, CanonicalRequest and their bytes, the signature and
 * access key id it got; Azure's AuthenticationErrorDetail): nothing a user acts on, and the presigned URL's
 * secrets in forms no scrubbing can foresee (black-box round 33a, F1). Other bodies are read as any other.
 */
function storageErrorText(body: string): string {
  if (!/<Error\b/i.test(body.slice(0, 4096))) return body;
  const field = (name: string) => new RegExp(`<${name}>([\\s\\S]{0,2000}?)</${name}>`, 'i').exec(body)?.[1]?.trim();
  return [field('Code'), field('Message')].filter((x) => x !== undefined && x !== '').join(' ');
}

/** Storage answers about the presigned URL, not about the API client's tenant or access. */
function storageHint(status: number): string | undefined {
  if (status === 401 || status === 403) return "storage refused the presigned URL (expired, or its signature did not match): a fresh one is asked for on each retry; if it keeps failing, check this machine's clock and any proxy between it and storage";
  if (status === 404) return 'storage does not have what the presigned URL names: a fresh one is asked for on each retry';
  if (status === 429 || status >= 500) return 'storage is having trouble or rate limiting (usually temporary): the transfer is retried with back-off';
  return undefined;
}

/**
 * The values in a presigned URL's query string (its signature, credential, token) in every form storage's error
 * body may echo them outside the URL (black-box rounds 32b, F1 and 33a, F1): raw and percent-encoded (S3's
 * SignatureDoesNotMatch repeats the signature it got, and the canonical request with the encoded query), base64,
 * hex bytes (S3's CanonicalRequestBytes and StringToSignBytes), and each part of a credential (`AKIA.../date/
 * region/...`: S3 says the access key id alone). scrubText matches each with whitespace allowed between its
 * characters (a value wrapped across lines, or bytes written as "6b 39 58"). Short values (a version, a permission
 * letter) are no secret and scrubbing them would garble the message.
 */
export function presignedUrlSecrets(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [];
  }
  const values = new Set<string>();
  for (const [, value] of u.searchParams) {
    values.add(value);
    for (const part of value.split('/')) if (part.length >= MIN_PRESIGNED_PART) values.add(part);
  }
  for (const raw of u.search.slice(1).split('&')) values.add(raw.slice(raw.indexOf('=') + 1));
  const out = new Set<string>();
  for (const value of values) {
    if (value.length < MIN_PRESIGNED_VALUE) continue;
    // A base64 signature may come back without its padding, in the URL-safe alphabet, or percent-encoded in lower
    // case (.NET's UrlEncode): each is the value too (black-box round 34a, F2).
    const bare = value.replace(/=+$/, '');
    const urlSafe = bare.replace(/\+/g, '-').replace(/\//g, '_');
    const encoded = encodeURIComponent(value);
    for (const form of new Set([value, bare, urlSafe, encoded, encoded.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()), encodeURIComponent(bare)])) {
      out.add(form);
      out.add(Buffer.from(form).toString('base64').replace(/=+$/, ''));
      out.add(Buffer.from(form).toString('base64url'));
      out.add(Buffer.from(form).toString('hex'));
    }
  }
  return [...out];
}

/** A query value shorter than this is no secret (a date, a permission letter, an API version). */
const MIN_PRESIGNED_VALUE = 8;
/** A part of a credential (between slashes) is scrubbed on its own from this length (an access key id: 16-20). */
const MIN_PRESIGNED_PART = 12;

/** A secret this long is also found with whitespace (or a line break) between its characters. */
const SPREAD_FROM = 16;

/** `secret` as a pattern that also matches it with whitespace between any two characters, any letter case for hex. */
function spreadPattern(secret: string): RegExp {
  const chars = [...secret].map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(chars.join('\\s*'), /^[0-9a-f]+$/.test(secret) ? 'gi' : 'g');
}

/** Removes known secrets (client secret, tokens), URL query strings, bearer tokens, JWTs and key=secret pairs from server-supplied text. */
export function scrubText(text: string, secrets: readonly string[]): string {
  let out = decodeNumericEntities(text);
  // Longest first: a secret's base64 or hex form is not left half-scrubbed by a shorter one inside it.
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) {
    if (s.length < 4) continue;
    out = out.split(s).join('[redacted]');
    if (s.length >= SPREAD_FROM && /\s/.test(out)) out = out.replace(spreadPattern(s), '[redacted]');
  }
  return redactUrlsInText(out)
    .replace(/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, '[redacted]')
    .replace(SECRET_PAIR, '$1$2[redacted]')
    .replace(SECRET_JSON_PAIR, '$1[redacted]"');
}

/** `&#43;` and `&#x2F;` (XML and HTML numeric character references) as the characters they stand for. */
function decodeNumericEntities(text: string): string {
  if (!text.includes('&#')) return text;
  return text.replace(/&#(x[0-9a-f]{1,6}|[0-9]{1,7});/gi, (whole, n: string) => {
    const code = n[0] === 'x' || n[0] === 'X' ? Number.parseInt(n.slice(1), 16) : Number.parseInt(n, 10);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/** `name=value` of a credential or a presigned signature outside a URL (a query string echoed on its own). */
const SECRET_PAIR = /\b(access_token|refresh_token|id_token|client_secret|clientSecret|password|secret|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential)(\s*=\s*)(?!\[redacted\])[^\s&"',;<>]+/gi;
const SECRET_JSON_PAIR = /("(?:access_token|refresh_token|id_token|client_secret|clientSecret|password|secret|token)"\s*:\s*")[^"]*"/gi;

/** What a non-2xx body says, read field by field: spec 7 shows no error shape, so none is required. */
export interface ProblemInfo {
  title?: string;
  detail?: string;
  /** Field (or '' for a message naming none) -> messages. */
  errors?: Record<string, string[]>;
  traceId?: string;
}

/** Longest text kept from one field of an error body, and from a non-JSON body. */
const MAX_FIELD_CHARS = 500;
const MAX_SNIPPET_CHARS = 200;
const MAX_ERROR_ENTRIES = 20;

/**
 * Reads whatever a non-2xx body tells, tolerantly: RFC 7807 (`title`, `detail`, `errors`), OAuth (`error`,
 * `error_description`), `message`, `error: {code, message, details}`, `errors` as a record or an array of
 * strings / objects with a message. A body that is not JSON yields a one-line snippet (HTML tags removed) as
 * `detail`. Texts are returned raw: errorFromResponse scrubs them (before cutting them short).
 */
export function parseProblem(bodyText: string): ProblemInfo | undefined {
  return readProblem(bodyText).info;
}

function readProblem(bodyText: string): { info: ProblemInfo | undefined; snippet: boolean } {
  const trimmed = bodyText.trim();
  if (trimmed === '') return { info: undefined, snippet: false };
  let json: unknown;
  try {
    json = JSON.parse(trimmed);
  } catch {
    const text = snippetOf(trimmed);
    return { info: text ? { detail: text } : undefined, snippet: true };
  }
  return { info: problemOfJson(json), snippet: false };
}

function problemOfJson(json: unknown): ProblemInfo | undefined {
  if (typeof json === 'string') return json.trim() ? { detail: json.trim() } : undefined;
  if (Array.isArray(json)) {
    const errors = errorsOf(json);
    return errors ? { errors } : undefined;
  }
  if (!isRecord(json)) return undefined;
  const o = json;
  const err = o.error;
  const errObj = isRecord(err) ? err : undefined;
  const title = str(o.title) ?? str(err) ?? str(errObj?.code);
  const details: string[] = [];
  for (const d of [str(o.detail), str(o.message), str(errObj?.message), str(o.error_description), str(o.errorMessage)]) {
    if (d !== undefined && d !== title && !details.includes(d)) details.push(d);
  }
  const errors = errorsOf(o.errors) ?? errorsOf(errObj?.details) ?? errorsOf(errObj?.errors);
  const traceId = str(o.traceId) ?? str(o.trace_id) ?? str(o.requestId) ?? str(errObj?.traceId) ?? str(errObj?.requestId);
  const out: ProblemInfo = {
    ...(title !== undefined ? { title } : {}),
    ...(details.length > 0 ? { detail: details.join(' - ') } : {}),
    ...(errors ? { errors } : {}),
    ...(traceId !== undefined ? { traceId } : {}),
  };
  return Object.keys(out).length > 0 ? out : undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  if (typeof v === 'string') return v.trim() === '' ? undefined : v.trim();
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

/** The message of one error entry: a string, or an object's message / detail / description / title / code. */
function messageOf(v: unknown): string | undefined {
  if (isRecord(v)) return str(v.message) ?? str(v.msg) ?? str(v.detail) ?? str(v.description) ?? str(v.errorMessage) ?? str(v.title) ?? str(v.code);
  return str(v);
}

/** `errors` as a record (field -> string | strings | objects) or an array (strings, or objects naming a field). */
function errorsOf(v: unknown): Record<string, string[]> | undefined {
  const out: Record<string, string[]> = {};
  let n = 0;
  const add = (key: string, msg: string | undefined) => {
    if (msg === undefined || n >= MAX_ERROR_ENTRIES) return;
    (out[key] ??= []).push(msg);
    n++;
  };
  if (Array.isArray(v)) {
    for (const item of v) {
      const field = isRecord(item) ? (str(item.field) ?? str(item.propertyName) ?? str(item.property) ?? str(item.target) ?? str(item.path) ?? str(item.name) ?? str(item.key) ?? '') : '';
      add(field, messageOf(item));
    }
  } else if (isRecord(v)) {
    for (const [k, val] of Object.entries(v)) {
      if (Array.isArray(val)) for (const m of val) add(k, messageOf(m));
      else add(k, messageOf(val));
    }
  }
  return n > 0 ? out : undefined;
}

/** One line of a non-JSON body: HTML reduced to its text, whitespace collapsed. Scrubbed and cut later. */
function snippetOf(text: string): string | undefined {
  let t = text.slice(0, 16 * 1024);
  if (/^<|<\/?(html|body|head|title|h1|p|div|center)\b/i.test(t)) {
    t = t
      .replace(/<(script|style)\b[\s\S]*?(<\/\1\s*>|$)/gi, ' ')
      .replace(/<!--[\s\S]*?(-->|$)/g, ' ')
      .replace(/<[^>]*>/g, ' ')
      .replace(/&nbsp;/g, ' ')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&amp;/g, '&');
  }
  t = t.replace(/\s+/g, ' ').trim();
  return t === '' ? undefined : t;
}

/** Scrubs, then cuts to `max` characters (cutting first could leave half a secret behind). */
function clean(text: string, secrets: readonly string[], max: number): string {
  const s = scrubText(text, secrets).replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
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

/** Builds the ServiceError for a non-2xx answer, with what the body says folded into the message. */
export function errorFromResponse(f: HttpFailure): ServiceError {
  const body = STORAGE_REQUESTS.has(f.request) ? storageErrorText(f.bodyText) : f.bodyText;
  const { info: raw, snippet } = readProblem(body.slice(0, 64 * 1024));
  const title = raw?.title !== undefined ? clean(raw.title, f.secrets, MAX_FIELD_CHARS) : undefined;
  const detail = raw?.detail !== undefined ? clean(raw.detail, f.secrets, snippet ? MAX_SNIPPET_CHARS : MAX_FIELD_CHARS) : undefined;
  const errors = raw?.errors ? cleanErrors(raw.errors, f.secrets) : undefined;
  const headerTrace = firstHeader(f.headers['x-trace-id']) ?? firstHeader(f.headers['x-request-id']);
  const traceId = raw?.traceId ?? headerTrace;
  const parts: string[] = [];
  if (title) parts.push(title);
  if (detail && detail !== title) parts.push(detail);
  if (errors) parts.push(formatErrors(errors));
  let message = `${f.request} failed with HTTP ${f.status}`;
  if (parts.length > 0) message += `: ${parts.join(' - ')}`;
  if (traceId) message += ` (traceId ${traceId})`;
  const hint = hintForStatus(f.status, f.request, firstHeader(f.headers['location']));
  const problem = title || detail || errors ? { ...(title ? { title } : {}), ...(detail ? { detail } : {}), ...(errors ? { errors } : {}) } : undefined;
  return new ServiceError(scrubText(message, f.secrets), {
    code: codeForStatus(f.status),
    retryable: isRetryableStatus(f.status),
    request: f.request,
    status: f.status,
    ...(traceId ? { traceId: clean(traceId, f.secrets, 200) } : {}),
    ...(problem ? { problem } : {}),
    ...(hint ? { hint } : {}),
    ...(f.context ? { context: f.context } : {}),
  });
}

function cleanErrors(errors: Record<string, string[]>, secrets: readonly string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(errors)) out[clean(k, secrets, 200)] = v.map((m) => clean(m, secrets, MAX_FIELD_CHARS));
  return out;
}

/** "field: a, b; other: c"; messages naming no field stand alone. */
export function formatErrors(errors: Record<string, string[]>): string {
  return Object.entries(errors)
    .map(([k, v]) => (k === '' ? v.join(', ') : `${k}: ${v.join(', ')}`))
    .join('; ');
}

function firstHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** Undici / socket error codes that mean "the request never completed"; all are worth another attempt. */
export function describeNetworkError(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : undefined;
  let msg = typeof e.message === 'string' ? e.message : String(err);
  // OpenSSL's text ("80FC...:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/...") on
  // several lines: its reason alone, on one line.
  if (code?.startsWith('ERR_SSL_') === true) msg = /:SSL routines:[^:]*:([^:]+):/.exec(msg)?.[1] ?? msg.replace(/\s+/g, ' ').trim();
  return code ? `${code}: ${msg}` : msg;
}

/** An https:// address that answers in plain HTTP (OpenSSL: "wrong version number", or "packet length too long"). */
function plainHttpAtHttps(err: unknown, url: string | undefined): boolean {
  const code = String((err as { code?: unknown })?.code);
  return url?.startsWith('https:') === true && (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG');
}

/** Errors that say our request itself is malformed (bad URL, bad header): repeating it cannot help. */
const PERMANENT_CODES = new Set(['UND_ERR_INVALID_ARG', 'ERR_INVALID_URL', 'ERR_INVALID_ARG_TYPE', 'UND_ERR_NOT_SUPPORTED']);

/** Where a failed request went: its URL and the config setting it comes from (none for a presigned URL). */
export interface RequestTarget {
  url: string;
  setting?: string;
  /** What to tell the user instead of the hint by kind (one the caller knows better). */
  hint?: string;
}

/** A URL for a hint: origin and path only (no credentials, query string or fragment, where secrets live). */
function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    // A URL of another scheme (file:, data:) has the origin "null": its scheme and host said instead.
    return `${u.origin === 'null' ? `${u.protocol}//${u.host}` : u.origin}${u.pathname}`;
  } catch {
    return url.replace(/[?#].*$/s, '');
  }
}

/**
 * A request that never got an answer. The hint names the URL that failed and its setting (authUrl for the
 * token, baseUrl for the API, a presigned storage URL from context.url); it promises no retry: the daemon says
 * itself that it backs off, and a one-shot sync does not come back.
 */
export function networkError(request: string, err: unknown, secrets: readonly string[], context?: Record<string, unknown>, target?: RequestTarget): ServiceError {
  const url = target?.url ?? (typeof context?.url === 'string' ? context.url : undefined);
  // A TLS handshake with a plain-HTTP server fails the same way every time: no retry.
  const tlsMismatch = plainHttpAtHttps(err, url);
  const permanent = tlsMismatch || PERMANENT_CODES.has(String((err as { code?: unknown })?.code));
  const where = url === undefined ? undefined : `${shownUrl(url)} (${target?.setting ?? 'a presigned storage URL from the service'})`;
  let hint: string;
  if (target?.hint !== undefined) hint = target.hint;
  else if (tlsMismatch) hint = `${where ?? 'the address'} answers in plain HTTP, not TLS: is it an http:// address?`;
  // A presigned URL comes from the service, not the config: nothing of the config to check (black-box round 41c, F4).
  else if (permanent && url !== undefined && target?.setting === undefined) hint = `the service handed out a storage URL binder-sync cannot use (${shownUrl(url)}): nothing was fetched or sent; a fault of the service, retried at the next pass`;
  else if (permanent) hint = where ? `check ${where}: service.baseUrl and service.authUrl must be absolute http(s) URLs` : 'check service.baseUrl and service.authUrl (absolute http(s) URLs)';
  else hint = where ? `check the network, and that ${where} is right and reachable` : 'check the network, service.baseUrl and service.authUrl';
  return new ServiceError(scrubText(`${request} failed: ${describeNetworkError(err)}`, secrets), {
    code: 'SERVICE_NETWORK',
    retryable: !permanent,
    request,
    cause: err,
    hint: scrubText(hint, secrets),
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
