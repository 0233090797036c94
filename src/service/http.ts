// The one request path to the service: auth headers, rate queues, retry/backoff, response validation, and a
// debug log line per attempt. Owns the undici Agent (keep-alive) and the two p-queues (API and storage).
import { createHash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { StringDecoder } from 'node:string_decoder';
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import type { Dispatcher } from 'undici';
import { Agent, request as undiciRequest } from './undici-core.js';
import PQueue from 'p-queue';
import type { z } from 'zod';
import type { Logger } from '../log.js';
import { formatDuration } from '../config/duration.js';
import { ApiPause } from './api-pause.js';
import { backoffDelay, parseRetryAfter, sleep } from './retry.js';
import { oneLineMessage } from '../errors.js';
import { ByteBudget } from './byte-throttle.js';
import { DEFAULT_SCOPE, resolveSettings, type ResolvedSettings, type ServiceSettings } from './settings.js';
import { TokenProvider } from './token.js';
import { TokenResponseSchema, type TokenResponse } from './schemas.js';
import { ServiceError, abortedError, errorFromResponse, isAbortError, networkError, scrubText } from './errors.js';

export interface ApiCall<T> {
  method: 'GET' | 'POST';
  /** Spec path template, e.g. '/documents/{documentId}'; it names the request in logs and errors. */
  template: string;
  params?: Record<string, string>;
  query?: Record<string, string | number | undefined>;
  json?: unknown;
  schema: z.ZodType<T>;
  signal?: AbortSignal;
  /** Counts the times the request went out (retries and a 401's refresh send it again). */
  sends?: { count: number };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** SHA-256 (base64) of the body. */
  digest: string;
  /** The body decoded as UTF-8, on first use: a body that is only compared by digest is never decoded. */
  readonly text: string;
}

function rawResponse(status: number, headers: RawResponse['headers'], body: { chunks: Buffer[]; size: number; digest: string }): RawResponse {
  let text: string | undefined;
  return {
    status,
    headers,
    digest: body.digest,
    get text() {
      // Decoded chunk by chunk (a character split between chunks is carried over): no joined copy of a
      // 200 KB page outside the JS heap, where freed blocks fragment the allocator and stay resident.
      if (text === undefined) {
        const decoder = new StringDecoder('utf8');
        text = body.chunks.map((c) => decoder.write(c)).join('') + decoder.end();
      }
      return text;
    },
  };
}

const TOKEN_REQUEST = 'POST /connect/token';
/** A token at least this old that gets a 403 is asked for anew once (see send); a younger one was just issued. */
const STALE_TOKEN_403_MS = 5_000;

/** Who answers a request, and the config key that says where it goes: the token request authUrl, every other baseUrl. */
const answererOf = (request: string) =>
  request === TOKEN_REQUEST ? { who: 'the identity provider', setting: 'service.authUrl' } : { who: 'the API', setting: 'service.baseUrl' };

/**
 * Errors whose retry budget is already spent (or that must not be repeated, like a download that has already
 * written into its destination). An outer retry loop passes them through instead of multiplying budgets.
 */
const finalErrors = new WeakSet<object>();

export function markFinal<E>(err: E): E {
  if (typeof err === 'object' && err !== null) finalErrors.add(err);
  return err;
}

export class HttpCore {
  readonly settings: ResolvedSettings;
  readonly agent: Agent;
  readonly apiQueue: PQueue;
  readonly transferQueue: PQueue;
  /** The byte budgets of service.maxUploadRate / maxDownloadRate, shared by all transfers; null: unlimited. */
  uploadBudget: ByteBudget | null;
  downloadBudget: ByteBudget | null;
  readonly tokens: TokenProvider;
  /** A Retry-After the service answered holds every API call until then (api-pause.ts). */
  private readonly apiPause: ApiPause;
  readonly log: Logger;
  /** Fires when the owner's signal fires or close() is called; every request listens to it. */
  readonly signal: AbortSignal;
  private readonly closing = new AbortController();
  private closed = false;
  /** Since when every answer of the service was a 429 with Retry-After (null: the last was something else). See withRetry. */
  private rateLimitedSince: number | null = null;
  /** When the rate limit was last said in the log (once a minute at most). */
  private rateLimitSaidAt = 0;

  constructor(settings: ServiceSettings, log: Logger, signal?: AbortSignal) {
    this.settings = resolveSettings(settings);
    this.log = log;
    this.signal = signal ? AbortSignal.any([signal, this.closing.signal]) : this.closing.signal;
    // Every request in flight listens to this one signal: dozens at once is normal, not a leak.
    setMaxListeners(0, this.signal);
    this.agent = new Agent({ keepAliveTimeout: 10_000, connections: 16 });
    this.apiQueue = new PQueue({
      concurrency: this.settings.maxConcurrentRequests,
      intervalCap: this.settings.requestsPerSecond,
      interval: 1000,
      // Sliding window: never more than requestsPerSecond starts in any rolling second (no boundary bursts).
      strict: true,
    });
    this.transferQueue = new PQueue({ concurrency: this.settings.maxConcurrentTransfers });
    const { maxUploadBytesPerSecond: up, maxDownloadBytesPerSecond: down } = this.settings;
    this.uploadBudget = up === null ? null : new ByteBudget(up);
    this.downloadBudget = down === null ? null : new ByteBudget(down);
    this.tokens = new TokenProvider(() => this.fetchToken());
    this.apiPause = new ApiPause(this.settings.retry.maxDelayMs, this.log);
  }

  /**
   * New caps: a budget that exists takes the new rate (the transfers using it follow at once); a cap added where
   * there was none applies to transfers started from now on; a cap removed frees them (an empty budget is dropped,
   * and the transfers still holding it get an unlimited rate).
   */
  setTransferRates(upload: number | null, download: number | null): void {
    const next = (budget: ByteBudget | null, rate: number | null): ByteBudget | null => {
      if (rate === null) {
        budget?.setRate(Number.POSITIVE_INFINITY);
        return null;
      }
      if (budget === null) return new ByteBudget(rate);
      budget.setRate(rate);
      return budget;
    };
    this.uploadBudget = next(this.uploadBudget, upload);
    this.downloadBudget = next(this.downloadBudget, download);
  }

  /** Strings that must never appear in an error message or log line. */
  secrets(): string[] {
    return [this.settings.clientSecret, ...this.tokens.knownTokens()];
  }

  /** The client-wide signal joined with a per-call one. */
  joinSignal(extra?: AbortSignal): AbortSignal {
    return extra ? AbortSignal.any([this.signal, extra]) : this.signal;
  }

  /**
   * Runs `attemptFn` until it succeeds, throws a non-retryable error, or the attempt budget is spent; waits
   * with backoff (or the server's Retry-After) in between. Whatever it throws is marked final, so a nested
   * call (the token request inside an API call, a link request inside a download) never multiplies budgets.
   */
  async withRetry<T>(request: string, signal: AbortSignal, attemptFn: (attempt: number) => Promise<T>): Promise<T> {
    const policy = this.settings.retry;
    // A 429 with Retry-After is the service pacing us, not failing: it spends a budget of its own, four times the
    // attempts. Under a steady rate limit a one-shot sync gave up on some items after six 429s each (black-box round
    // 41c, F8). One without says no pace to keep: the usual budget (four times it, a service answering 429 to every
    // call kept a one-shot sync waiting silently for over ten minutes: black-box round 42b, F2). Nor for ever: once
    // the service has answered nothing but such 429s, to any call, for rateLimitedGiveUpMs, a call gives up at its
    // next one, and the wait is said in the log (every call of a one-shot sync waited out its own budget in turn:
    // six minutes without a line at Retry-After 5: black-box round 43a, F5).
    let throttled = 0;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw abortedError(request);
      try {
        const result = await attemptFn(attempt);
        // The identity provider's answers say nothing of the API's rate limit (a token renewed every minute kept
        // a service answering nothing but 429s from ever being given up on).
        if (request !== TOKEN_REQUEST) this.rateLimitedSince = null;
        return result;
      } catch (err) {
        const paced = err instanceof ServiceError && err.status === 429 && err.retryAfterMs !== undefined;
        if (paced) throttled++;
        const now = Date.now();
        if (!paced && request !== TOKEN_REQUEST) this.rateLimitedSince = null;
        const starved = paced && now - (this.rateLimitedSince ??= now) >= policy.rateLimitedGiveUpMs;
        const spent = paced ? throttled >= policy.maxAttempts * 4 || starved : attempt - throttled >= policy.maxAttempts;
        const final =
          !(err instanceof ServiceError) ||
          !err.retryable ||
          err.code === 'ABORTED' ||
          spent ||
          finalErrors.has(err);
        if (final) throw markFinal(signal.aborted && !(err instanceof ServiceError && err.code === 'ABORTED') ? abortedError(request) : err);
        const wait = backoffDelay(attempt, policy, err.retryAfterMs);
        if (paced && now - this.rateLimitSaidAt >= 60_000) {
          this.rateLimitSaidAt = now;
          this.log.warn(
            { request, retryAfterMs: err.retryAfterMs },
            `the service is rate limiting (HTTP 429, Retry-After ${formatDuration(err.retryAfterMs ?? 0)}): calls wait as it asks, and give up once it has answered nothing else for ${formatDuration(policy.rateLimitedGiveUpMs)}`,
          );
        }
        // A transfer tried again is worth a line at info: a storage request that stalls holds its pair for the
        // whole request timeout, which an operator otherwise sees only as a pass that takes long (round 28b, F7).
        if (request.endsWith(' storage')) {
          this.log.info({ request, attempt, waitMs: wait, code: err.code, status: err.status }, `${oneLineMessage(err)}; trying again in ${(wait / 1000).toFixed(1)} s`);
        } else this.log.debug({ request, attempt, waitMs: wait, code: err.code, status: err.status }, 'service retry');
        try {
          await sleep(wait, signal);
        } catch {
          throw abortedError(request);
        }
      }
    }
  }

  /** One API call: bearer token + tenant header, rate queue, retries, one token refresh on 401, zod validation. */
  api<T>(call: ApiCall<T>): Promise<T> {
    return this.send(call, (request, res, context) => this.validate(request, res, call.schema, context));
  }

  /**
   * api() for an answer that is often byte for byte what the same call answered before (a search page of a
   * binder that did not change): the body's SHA-256 is compared with `sameAs`, the digest of a body that
   * already passed validation, and an identical body is neither parsed nor validated again (value null: the
   * caller still holds what that body said). Any other body is validated as by api().
   */
  apiUnlessSame<T>(call: ApiCall<T>, sameAs: string | undefined): Promise<{ digest: string; value: T | null }> {
    return this.send(call, (request, res, context) => {
      return { digest: res.digest, value: res.digest === sameAs ? null : this.validate(request, res, call.schema, context) };
    });
  }

  /** The request loop of api(): `accept` turns a 2xx response into the result (or throws). */
  private async send<T, R>(call: ApiCall<T>, accept: (request: string, res: RawResponse, context?: Record<string, unknown>) => R): Promise<R> {
    const request = `${call.method} ${call.template}`;
    const signal = this.joinSignal(call.signal);
    const url = this.settings.baseUrl + fillTemplate(call.template, call.params) + queryString(call.query);
    const body = call.json === undefined ? undefined : JSON.stringify(call.json);
    const context = call.params ? { ...call.params } : undefined;
    let authRetried = false;
    return this.withRetry(request, signal, async (attempt) => {
      for (;;) {
        // p-queue keeps finished entries of its queue (and through them each task's result) until the queue
        // drains or compacts, so the response travels in a holder that is emptied once read: a 100k-document
        // listing otherwise kept dozens of ~200 KB search pages alive while the daemon idled.
        const holder = await this.apiQueue
          .add(
            async () => {
              await this.apiPause.wait(signal).catch(() => {
                throw abortedError(request);
              });
              // The token is taken when the call leaves the rate queue, not when it joins it: a call may wait
              // there longer than a short-lived token lives (spec 5.4: tokens expire after expires_in).
              const token = await this.tokens.get(signal);
              const headers: Record<string, string> = {
                authorization: `Bearer ${token}`,
                [this.settings.tenantHeader]: this.settings.tenantId,
                accept: 'application/json',
                'accept-encoding': API_ACCEPT_ENCODING,
              };
              if (body !== undefined) headers['content-type'] = 'application/json';
              if (call.sends) call.sends.count++;
              return { token, res: (await this.exchange({ request, template: call.template, url, method: call.method, headers, body, signal, attempt, context })) as RawResponse | undefined };
            },
            { signal },
          )
          .catch((err: unknown) => {
            throw err instanceof ServiceError ? err : abortedError(request);
          });
        const { token } = holder;
        const res = holder.res as RawResponse;
        holder.res = undefined;
        if (res.status === 429 || res.status === 503) this.apiPause.hold(request, parseRetryAfter(res.headers['retry-after']));
        // A 401 means the token died early (revoked, server restarted, clock skew): refresh once, then give up.
        if (res.status === 401 && !authRetried) {
          authRetried = true;
          this.tokens.invalidate(token);
          continue;
        }
        // Some services answer an expired token with 403 (RFC 6750 says 401): with a token 5 s old or more,
        // refreshed once too. Taken as a refusal for good, the daemon failed until the token's stated lifetime was
        // over, up to an hour (black-box round 41c, F9). A young token's 403 is about access: no token request.
        if (res.status === 403 && !authRetried && (this.tokens.ageOf(token) ?? 0) >= STALE_TOKEN_403_MS) {
          authRetried = true;
          this.tokens.invalidate(token);
          continue;
        }
        if (res.status < 200 || res.status > 299) throw this.failure(request, res, context);
        return accept(request, res, context);
      }
    });
  }

  /** Parses and validates a 2xx body. Unparseable text is treated as a truncated transfer (retryable). */
  validate<T>(request: string, res: RawResponse, schema: z.ZodType<T>, context?: Record<string, unknown>): T {
    if (res.text.trim() === '') {
      throw new ServiceError(`${request} answered HTTP ${res.status} with an empty body`, {
        code: 'SERVICE_INVALID_RESPONSE',
        retryable: false,
        request,
        status: res.status,
        ...(context ? { context } : {}),
      });
    }
    let json: unknown;
    try {
      // RFC 8259 8.1: a parser may ignore a leading byte order mark, which some servers (.NET's UTF-8 writers
      // among them) still send.
      const text = res.text.charCodeAt(0) === 0xfeff ? res.text.slice(1) : res.text;
      json = JSON.parse(text);
    } catch (err) {
      // A body that claims another type (an HTML error page from a proxy...) will not become JSON by retrying;
      // a JSON body that does not parse was most likely cut off on the way, which a retry can fix.
      const type = String(res.headers['content-type'] ?? '');
      if (type !== '' && !/json/i.test(type)) {
        throw new ServiceError(`${request} answered HTTP ${res.status} with ${type.split(';')[0]} instead of JSON`, {
          code: 'SERVICE_INVALID_RESPONSE',
          retryable: false,
          request,
          status: res.status,
          cause: err,
          hint: `is ${answererOf(request).setting} right? something other than ${answererOf(request).who} (a proxy, a web page) answered`,
          ...(context ? { context } : {}),
        });
      }
      throw new ServiceError(`${request} answered HTTP ${res.status} with a body that is not valid JSON (cut off?)`, {
        code: 'SERVICE_NETWORK',
        retryable: true,
        request,
        status: res.status,
        cause: err,
        ...(context ? { context } : {}),
      });
    }
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    // Name the offending fields, never their values (they could be anything the server sent).
    // A record in a list is named by its id and name where it has them (black-box round 41c, F7: "items.16" alone).
    const issues = parsed.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}${recordNamed(json, i.path)}: ${i.message}`)
      .join('; ');
    const inRecords = parsed.error.issues.every((i) => i.path.some((p) => typeof p === 'number'));
    throw new ServiceError(`${request} answered with an unexpected shape: ${issues}`, {
      code: 'SERVICE_INVALID_RESPONSE',
      retryable: false,
      request,
      status: res.status,
      hint: inRecords
        ? `${answererOf(request).who} sent a record binder-sync cannot read (a fault of the service, or of its data): nothing was changed here for it; tell the service's operator which record`
        : `${answererOf(request).who} answered something binder-sync does not understand; check ${answererOf(request).setting} points at it`,
      ...(context ? { context } : {}),
    });
  }

  failure(request: string, res: Pick<RawResponse, 'status' | 'headers' | 'text'>, context?: Record<string, unknown>, moreSecrets: readonly string[] = []): ServiceError {
    const err = errorFromResponse({ request, status: res.status, bodyText: res.text, headers: res.headers, secrets: [...this.secrets(), ...moreSecrets], ...(context ? { context } : {}) });
    const retryAfterMs = parseRetryAfter(res.headers['retry-after']);
    if (retryAfterMs !== undefined) err.retryAfterMs = retryAfterMs;
    return err;
  }

  /**
   * One HTTP exchange with the whole (small, JSON) body read. Network failures, timeouts and truncated bodies
   * become a retryable SERVICE_NETWORK error; logs method, templated path, status, ms and attempt.
   */
  async exchange(o: {
    request: string;
    template: string;
    url: string;
    method: Dispatcher.HttpMethod;
    headers: Record<string, string>;
    body?: string | undefined;
    signal: AbortSignal;
    attempt: number;
    context?: Record<string, unknown> | undefined;
  }): Promise<RawResponse> {
    if (this.closed) throw new ServiceError(`${o.request}: the service client is closed`, { code: 'CLIENT_CLOSED', retryable: false, request: o.request });
    const started = performance.now();
    // undici's body timeout is an idle time: an answer that trickles (a byte a second, a stalled proxy) was never
    // cut, and the pass waited on it for as long as it came (black-box round 41c, F1). Once the headers are in
    // (headersTimeout), the body must move at least ANSWER_MIN_BYTES in every requestTimeout; a big listing page
    // on a slow link that keeps moving is read whole however long it takes (cut at requestTimeout for the whole
    // exchange, it was retried until the sync failed: black-box round 42b, F3). Not for ever: an answer that never
    // ends (a proxy dripping just over the trickle mark) is cut after ANSWER_MAX_TIMEOUTS requestTimeouts (black-box
    // round 43a, F4: a one-shot sync waited on it silently, without end).
    const deadline = new AbortController();
    const cut: { because: 'trickles' | 'endless' } = { because: 'trickles' };
    let trickle: NodeJS.Timeout | undefined;
    let endless: NodeJS.Timeout | undefined;
    try {
      const res = await undiciRequest(o.url, {
        dispatcher: this.agent,
        method: o.method,
        headers: o.headers,
        body: o.body ?? null,
        signal: AbortSignal.any([o.signal, deadline.signal]),
        headersTimeout: this.settings.requestTimeoutMs,
        bodyTimeout: this.settings.requestTimeoutMs,
      });
      const ok = res.statusCode >= 200 && res.statusCode <= 299;
      const moved = { bytes: 0, atLastLook: 0 };
      trickle = setInterval(() => {
        if (moved.bytes - moved.atLastLook < ANSWER_MIN_BYTES) deadline.abort();
        moved.atLastLook = moved.bytes;
      }, this.settings.requestTimeoutMs);
      trickle.unref();
      endless = setTimeout(() => {
        cut.because = 'endless';
        deadline.abort();
      }, this.settings.requestTimeoutMs * ANSWER_MAX_TIMEOUTS);
      endless.unref();
      const body = await readBodyCapped(res.body, MAX_JSON_BODY_BYTES, o.request, res.headers['content-encoding'], ok, (n) => (moved.bytes += n));
      this.log.debug({ method: o.method, path: o.template, status: res.statusCode, ms: Math.round(performance.now() - started), attempt: o.attempt }, 'service request');
      return rawResponse(res.statusCode, res.headers, body);
    } catch (err) {
      if (err instanceof ServiceError) throw err; // already classified (e.g. an oversized body)
      const ms = Math.round(performance.now() - started);
      if (deadline.signal.aborted && !o.signal.aborted) {
        const timeout = formatDuration(this.settings.requestTimeoutMs);
        const why = cut.because === 'endless'
          ? `the answer did not end within ${ANSWER_MAX_TIMEOUTS} x service.requestTimeout (${formatDuration(this.settings.requestTimeoutMs * ANSWER_MAX_TIMEOUTS)})`
          : `the answer trickles: fewer than ${ANSWER_MIN_BYTES} bytes in service.requestTimeout (${timeout})`;
        const late = Object.assign(new Error(why), { code: 'ETIMEDOUT' });
        this.log.debug({ method: o.method, path: o.template, ms, attempt: o.attempt, error: 'ETIMEDOUT' }, 'service request');
        const setting = o.request === TOKEN_REQUEST ? 'service.authUrl' : 'service.baseUrl';
        const hint = `the answer from ${setting} came too slowly (a congested link or proxy?); on a link that slow, raise service.requestTimeout${o.request === TOKEN_REQUEST ? '' : ", or lower the pair's pageSize"}`;
        const cutErr = networkError(o.request, late, this.secrets(), o.context, { url: o.url, setting, hint });
        // An answer that never ended is not asked for again within this call: each attempt would wait as long again
        // (six of ten requestTimeouts: an hour at the default). The pass fails (retryable); the next one asks anew.
        throw cut.because === 'endless' ? markFinal(cutErr) : cutErr;
      }
      if (o.signal.aborted || isAbortError(err)) {
        this.log.debug({ method: o.method, path: o.template, ms, attempt: o.attempt, error: 'aborted' }, 'service request');
        throw abortedError(o.request);
      }
      const e = networkError(o.request, err, this.secrets(), o.context, { url: o.url, setting: o.request === TOKEN_REQUEST ? 'service.authUrl' : 'service.baseUrl' });
      this.log.debug({ method: o.method, path: o.template, ms, attempt: o.attempt, error: (err as { code?: string }).code ?? 'network' }, 'service request');
      throw e;
    } finally {
      clearInterval(trickle);
      clearTimeout(endless);
    }
  }

  /** POST {authUrl}/connect/token (form-encoded client credentials), retried on network/5xx/429 only. */
  private async fetchToken(): Promise<TokenResponse> {
    const s = this.settings;
    const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: s.clientId, client_secret: s.clientSecret, scope: s.scope }).toString();
    return this.withRetry(TOKEN_REQUEST, this.signal, async (attempt) => {
      const res = await this.exchange({
        request: TOKEN_REQUEST,
        template: '/connect/token',
        url: `${s.authUrl}/connect/token`,
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', 'accept-encoding': API_ACCEPT_ENCODING },
        body,
        signal: this.signal,
        attempt,
      });
      if (res.status >= 200 && res.status <= 299) return this.validate(TOKEN_REQUEST, res, TokenResponseSchema);
      const err = this.failure(TOKEN_REQUEST, res);
      if (err.retryable) throw err;
      // Any other refusal is fatal: retrying with the same credentials cannot help.
      const credentials = res.status === 400 || res.status === 401;
      // RFC 6749's invalid_scope names the scope, not the credentials (black-box round 31b, F8).
      const oauthCode = oauthErrorCode(res.text);
      const scope = res.status === 400 && oauthCode === 'invalid_scope';
      // A 400 that does not name the client (invalid_request, or no code): the scope is as likely (black-box round 41c, F4).
      const maybeScope = res.status === 400 && oauthCode !== 'invalid_client' && oauthCode !== 'unauthorized_client';
      // A 404 (or 405) is no answer about the credentials: the address is not a token endpoint.
      const headline = scope
        ? `the identity provider refused the scope ${JSON.stringify(s.scope)}`
        : credentials || res.status === 403 ? 'the identity provider refused the client credentials' : `${s.authUrl}/connect/token is not a token endpoint`;
      throw new ServiceError(scrubText(`${headline}: ${err.message}`, this.secrets()), {
        code: 'AUTH_FAILED',
        retryable: false,
        request: TOKEN_REQUEST,
        status: res.status,
        ...(err.traceId ? { traceId: err.traceId } : {}),
        ...(err.problem ? { problem: err.problem } : {}),
        hint: scope
          ? `check service.scope: the service's scope is ${DEFAULT_SCOPE} (the default: remove service.scope to use it)`
          : credentials
          ? `check service.clientId and ${s.secretSource}, and that the API client was not deleted or rotated${maybeScope ? `; and service.scope (${JSON.stringify(s.scope)}; the service's is ${DEFAULT_SCOPE})` : ''}`
          : 'check service.authUrl: POST {authUrl}/connect/token must reach the identity provider',
      });
    });
  }

  /** Aborts everything in flight and queued, then releases the sockets. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.apiQueue.clear();
    this.transferQueue.clear();
    this.closing.abort();
    await this.agent.close().catch(() => this.agent.destroy());
  }
}

/**
 * " (id X, "name")" for the innermost list record on `path` in `json`, where it has a string id; else "". The id
 * and name are the service's own labels of the record, not its other values.
 */
function recordNamed(json: unknown, path: readonly PropertyKey[]): string {
  let at: unknown = json;
  let record: Record<string, unknown> | undefined;
  for (const key of path) {
    if (at === null || typeof at !== 'object') break;
    at = (at as Record<PropertyKey, unknown>)[key as string];
    if (typeof key === 'number' && at !== null && typeof at === 'object') record = at as Record<string, unknown>;
  }
  const id = record?.id;
  if (typeof id !== 'string' || id.length > 100) return '';
  const name = [record?.fileName, record?.name].find((n): n is string => typeof n === 'string');
  return ` (id ${id}${name === undefined ? '' : `, ${JSON.stringify(name.length > 80 ? `${name.slice(0, 77)}...` : name)}`})`;
}

/** The `error` of an OAuth error answer (RFC 6749 5.2: invalid_client, invalid_scope...), or null. */
function oauthErrorCode(text: string): string | null {
  try {
    const body = JSON.parse(text) as unknown;
    const code = body !== null && typeof body === 'object' ? (body as { error?: unknown }).error : undefined;
    return typeof code === 'string' ? code : null;
  } catch {
    return null;
  }
}

/** Fills '{name}' placeholders with URL-encoded values. */
export function fillTemplate(template: string, params: Record<string, string> | undefined): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = params?.[name];
    if (v === undefined) throw new Error(`missing path parameter ${name} for ${template}`);
    return encodeURIComponent(v);
  });
}

function queryString(query: Record<string, string | number | undefined> | undefined): string {
  if (!query) return '';
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Largest JSON answer read from the API: a search page of 1,000 documents is well under 1 MiB. */
export const MAX_JSON_BODY_BYTES = 64 * 1024 * 1024;

/**
 * What API and token requests accept. The spec says nothing about content codings, and HTTP lets a server (or a
 * proxy in front of it) compress a JSON answer whenever the request does not rule it out, so the client names
 * the codings it decodes (as Go's HTTP client, and with it rclone, does for gzip): a listing of 100k documents
 * is ~40 MB of JSON and a tenth of that compressed.
 */
export const API_ACCEPT_ENCODING = 'gzip, deflate, br';

/** The Content-Encoding values of a response, in the order they were applied; identity dropped. */
export function contentCodings(header: string | string[] | undefined): string[] {
  const raw = Array.isArray(header) ? header.join(',') : (header ?? '');
  return raw
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
}

/**
 * Undoes the content codings of a whole (already read) body, last applied first, never producing more than
 * `max` bytes (a small compressed answer may claim to unpack to gigabytes). An unknown coding is not
 * retryable; a body that does not decode was most likely cut off on the way (retryable, like bad JSON).
 */
export function decodeBody(body: Buffer, codings: string[], max: number, request: string): Buffer {
  let out = body;
  for (const coding of [...codings].reverse()) {
    const opts = { maxOutputLength: max };
    try {
      if (coding === 'gzip' || coding === 'x-gzip') out = gunzipSync(out, opts);
      else if (coding === 'deflate') out = inflateAnySync(out, opts);
      else if (coding === 'br') out = brotliDecompressSync(out, opts);
      else {
        throw new ServiceError(`${request} answered with Content-Encoding ${coding}, which binder-sync cannot decode`, {
          code: 'SERVICE_INVALID_RESPONSE',
          retryable: false,
          request,
          hint: 'binder-sync decodes gzip, deflate and br; something between it and the service compresses the answers another way',
        });
      }
    } catch (err) {
      if (err instanceof ServiceError) throw err;
      if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(request, max);
      throw new ServiceError(`${request} answered with a ${coding} body that does not decode (cut off?)`, { code: 'SERVICE_NETWORK', retryable: true, request, cause: err });
    }
  }
  return out;
}

/** "deflate" is zlib-wrapped by the standard (RFC 9110 8.4.1.2), but some servers send raw deflate. */
function inflateAnySync(body: Buffer, opts: { maxOutputLength: number }): Buffer {
  try {
    return inflateSync(body, opts);
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw err;
    return inflateRawSync(body, opts);
  }
}

function tooLarge(request: string, max: number): ServiceError {
  return new ServiceError(`${request} answer is too large (more than ${max / 1024 / 1024} MiB of JSON); refusing to read it`, {
    code: 'SERVICE_INVALID_RESPONSE',
    retryable: false,
    request,
    hint: 'the service (or something in front of it) sent an answer far larger than any valid one',
  });
}

/** Bytes an API answer's body must move in each requestTimeout to go on (see exchange). */
const ANSWER_MIN_BYTES = 1024;
/**
 * requestTimeouts an API answer may take as a whole, however it moves (see exchange): 10 minutes at the default
 * minute, for a page of 1000 documents (~400 KB) a link of under 1 KB/s.
 */
export const ANSWER_MAX_TIMEOUTS = 10;

/**
 * Reads a response body and hashes it on the way (no second pass, no joined copy until the text is wanted),
 * failing (without buffering the rest) once it passes `max` bytes. A compressed body is decoded first (see
 * decodeBody), so the digest is that of the JSON, whatever coding carried it.
 */

async function readBodyCapped(
  body: Dispatcher.ResponseData['body'],
  max: number,
  request: string,
  contentEncoding?: string | string[],
  /** False for an error answer: its status matters more than its body, which is kept as sent when it does not decode. */
  strict = true,
  /** Told the size of each chunk as it comes (the trickle watch). */
  onChunk?: (bytes: number) => void,
): Promise<{ chunks: Buffer[]; size: number; digest: string }> {
  const codings = contentCodings(contentEncoding);
  const chunks: Buffer[] = [];
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    size += buf.length;
    onChunk?.(buf.length);
    if (size > max) {
      body.destroy();
      throw tooLarge(request, max);
    }
    if (codings.length === 0) hash.update(buf);
    chunks.push(buf);
  }
  if (codings.length === 0) return { chunks, size, digest: hash.digest('base64') };
  const joined = Buffer.concat(chunks, size);
  let decoded: Buffer;
  try {
    decoded = decodeBody(joined, codings, max, request);
  } catch (err) {
    if (strict) throw err;
    decoded = joined;
  }
  return { chunks: [decoded], size: decoded.length, digest: hash.update(decoded).digest('base64') };
}
