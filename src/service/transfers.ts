// Storage transfers: streaming PUT to a presigned upload URL and streaming GET of a download link, hashing
// (SHA-256) while the bytes flow so a 1 GiB file holds constant memory. Storage never sees Authorization.
import { createHash } from 'node:crypto';
import { Transform, type Readable, type TransformCallback, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ThrottleStream } from './byte-throttle.js';
import { request as undiciRequest } from './undici-core.js';
import { BinderSyncError } from '../errors.js';
import { redactUrl } from '../redact.js';
import { ServiceError, abortedError, isAbortError, networkError, presignedUrlSecrets } from './errors.js';
import { markFinal, type HttpCore } from './http.js';
import type { DownloadLink, PresignedUpload } from './schemas.js';

const PUT_REQUEST = 'PUT storage';
const GET_REQUEST = 'GET storage';

/** Counts and hashes the bytes passing through, reporting each chunk's size. */
export class HashMeter extends Transform {
  bytes = 0;
  private readonly hash = createHash('sha256');
  constructor(private readonly onBytes?: (n: number) => void) {
    // Buffers of 1 MiB on both sides (the default is 16 KiB): an upload reads its file in chunks of up to
    // 1 MiB, and a smaller buffer would stop the stream after every chunk.
    super({ highWaterMark: 1 << 20 });
  }
  /** Called with the running byte count after each chunk (AnswerDeadline times the end of the body with it). */
  onProgress: ((bytes: number) => void) | undefined;
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    this.hash.update(chunk);
    this.onBytes?.(chunk.length);
    this.onProgress?.(this.bytes);
    cb(null, chunk);
  }
  digest(): string {
    return this.hash.digest('hex');
  }
}

/** Counts and hashes chunks handed to update(); the download's variant of HashMeter, without a stream. */
class HashTap {
  bytes = 0;
  private readonly hash = createHash('sha256');
  constructor(
    private readonly onBytes?: (n: number) => void,
    readonly hashing = true,
  ) {}
  readonly update = (chunk: Buffer): void => {
    this.bytes += chunk.length;
    if (this.hashing) this.hash.update(chunk);
    this.onBytes?.(chunk.length);
  };
  digest(): string {
    return this.hash.digest('hex');
  }
}

/** Storage statuses after which a fresh link/slot may succeed: expired (403), slot already used (409), transient. */
function storageRetryable(status: number): boolean {
  return status === 403 || status === 408 || status === 409 || status === 429 || status >= 500;
}

async function storageFailure(core: HttpCore, request: string, urls: readonly string[], res: { statusCode: number; headers: Record<string, string | string[] | undefined>; body: Readable & { text(): Promise<string> } }): Promise<ServiceError> {
  const text = await res.body.text().catch(() => '');
  const err = core.failure(request, { status: res.statusCode, headers: res.headers, text }, { url: redactUrl(urls[0]!) }, urls.flatMap(presignedUrlSecrets));
  const retryable = storageRetryable(res.statusCode);
  if (res.statusCode === 403 || retryable !== err.retryable) {
    const e = new ServiceError(err.message, {
      code: res.statusCode === 403 ? (request === PUT_REQUEST ? 'STORAGE_SLOT_EXPIRED' : 'STORAGE_LINK_EXPIRED') : err.code,
      retryable,
      request,
      status: res.statusCode,
      context: err.context,
      ...(err.traceId ? { traceId: err.traceId } : {}),
      ...(err.problem ? { problem: err.problem } : {}),
      ...(err.hint ? { hint: err.hint } : {}),
    });
    if (err.retryAfterMs !== undefined) e.retryAfterMs = err.retryAfterMs;
    return e;
  }
  return err;
}

/** Redirects storage may answer with (a CDN or a storage front end); followed up to MAX_STORAGE_REDIRECTS hops. */
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** A PUT keeps its method and body only through these; a 301/302/303 would turn it into a GET elsewhere. */
const PUT_REDIRECT_STATUSES = new Set([307, 308]);
export const MAX_STORAGE_REDIRECTS = 5;

type StorageResponse = Awaited<ReturnType<typeof undiciRequest>>;

/**
 * Where a storage redirect leads: the Location resolved against the current URL. Throws (not retryable: the
 * same link would redirect the same way) when there is none, it is not http(s), the hop budget is spent, or a
 * PUT is redirected in a way that cannot carry its body. URLs in the error are shown without query strings.
 */
async function redirectTarget(request: string, current: string, res: StorageResponse, hops: number, method: 'GET' | 'PUT', where: Record<string, unknown>): Promise<string> {
  await res.body.dump().catch(() => undefined);
  const fail = (why: string) =>
    new ServiceError(`${request} was redirected (HTTP ${res.statusCode}) ${why}`, {
      code: 'SERVICE_BAD_REQUEST',
      retryable: false,
      request,
      status: res.statusCode,
      context: where,
      hint: 'storage (or something in front of it) redirects the presigned URL in a way binder-sync cannot follow',
    });
  if (method === 'PUT' && !PUT_REDIRECT_STATUSES.has(res.statusCode)) throw fail('in a way that does not repeat the PUT with its content');
  if (hops >= MAX_STORAGE_REDIRECTS) throw fail(`more than ${MAX_STORAGE_REDIRECTS} times`);
  const location = res.headers.location;
  const raw = Array.isArray(location) ? location[0] : location;
  if (!raw) throw fail('without a Location');
  let next: URL;
  try {
    next = new URL(raw, current);
  } catch {
    throw fail('to an unreadable Location');
  }
  if (next.protocol !== 'http:' && next.protocol !== 'https:') throw fail(`to a ${next.protocol} URL`);
  return next.toString();
}

/**
 * One PUT of `size` bytes from `open()` to a one-shot presigned URL, in the transfer queue. Never retried here:
 * a failed PUT burns the slot, so retrying means a new slot (see uploadWithSlots).
 * Throws UPLOAD_SOURCE_FAILED (not retryable) when the local stream fails or yields another byte count than `size`.
 */
export async function putStream(
  core: HttpCore,
  presignedUrl: string,
  open: () => Readable,
  size: number,
  signal: AbortSignal,
  onBytes?: (n: number) => void,
): Promise<{ sha256: string; bytes: number }> {
  return core.transferQueue
    .add(() => putNow(core, presignedUrl, open, size, signal, onBytes), { signal })
    .catch((err: unknown) => {
      throw err instanceof ServiceError ? err : signal.aborted ? abortedError(PUT_REQUEST) : err;
    });
}

/** Errors of a connection, never of reading a local file: a source that fails with one got it from the socket. */
const SOCKET_ERRNOS = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ECONNREFUSED', 'ETIMEDOUT', 'ENETUNREACH', 'EHOSTUNREACH', 'ENOTCONN', 'ENETDOWN']);
function isSocketError(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && (SOCKET_ERRNOS.has(code) || (code.startsWith('UND_ERR_') && code !== 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH'));
}

/** At most this much of a PUT's body is taken to be still on its way once all of it is handed to the socket. */
const IN_FLIGHT_MAX = 4 * 1024 * 1024;
/** The slowest uplink allowed for: those bytes at this rate (64 s at most). */
const SLOW_BYTES_PER_S = 64 * 1024;

/**
 * How long a PUT's answer may take beyond requestTimeout: undici starts its headers timer once the whole body is
 * handed to the socket, and up to a few MiB of it (the kernel's buffers, a proxy's) may still be on the way then.
 * On a slow uplink that outlasted the timeout on every attempt, each started again from the first byte (black-box
 * round 37b, F3: 5 MB at 50 KB/s never arrived). Allowed: those bytes at the rate the end of the body went out
 * (`bytesPerS`, measured by AnswerDeadline), never slower than 64 KiB/s. Without a rate, the slow rate: the
 * bound undici is given. A storage that takes a large body at once and never answers is given up after about
 * requestTimeout, as before (round 37c, F3: 267 s per attempt with the slow rate alone).
 */
export function putAnswerAllowanceMs(size: number, bytesPerS?: number): number {
  return Math.ceil((Math.min(size, IN_FLIGHT_MAX) / Math.max(SLOW_BYTES_PER_S, bytesPerS ?? 0)) * 1000);
}

/**
 * The deadline of a PUT's answer, from the moment its whole body was handed over: requestTimeout plus
 * putAnswerAllowanceMs at the rate its last quarter (at least 1 MiB) went out. Only a body larger than what the
 * buffers hold tells the path's rate (a smaller one may be taken in at once, whatever the uplink): such a one
 * keeps undici's bound. `signal` fires at the deadline.
 */
class AnswerDeadline {
  private readonly ac = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private tailFrom: number | undefined;
  private cleared = false;
  readonly signal = this.ac.signal;

  constructor(meter: HashMeter, size: number, timeoutMs: number) {
    if (size <= IN_FLIGHT_MAX) return;
    const tail = Math.max(1024 * 1024, Math.floor(size / 4));
    meter.onProgress = (bytes) => {
      if (this.tailFrom === undefined && bytes >= size - tail) this.tailFrom = performance.now();
    };
    meter.once('end', () => {
      if (this.cleared) return; // answered before the body was all taken (an early refusal)
      const seconds = this.tailFrom === undefined ? 0 : (performance.now() - this.tailFrom) / 1000;
      const rate = seconds > 0 ? tail / seconds : undefined;
      this.timer = setTimeout(() => this.ac.abort(), timeoutMs + putAnswerAllowanceMs(size, rate));
      this.timer.unref();
    });
  }

  clear(): void {
    this.cleared = true;
    clearTimeout(this.timer);
  }
}

/** putStream's PUT itself, in a transfer slot its caller holds. */
async function putNow(
  core: HttpCore,
  presignedUrl: string,
  open: () => Readable,
  size: number,
  signal: AbortSignal,
  onBytes?: (n: number) => void,
): Promise<{ sha256: string; bytes: number }> {
  const where = { url: redactUrl(presignedUrl) };
  let url = presignedUrl;
  let meter: HashMeter;
  // A 307/308 (storage behind a front end) repeats the PUT elsewhere: the stream is opened again, as after
  // a burned slot. Bytes already sent before the redirect arrived are counted again by onBytes.
  for (let hops = 0; ; hops++) {
    const started = performance.now();
    const hopUrl = url;
    let source: Readable;
    try {
      source = open();
    } catch (err) {
      // The caller refused its own source before a byte moved (the file is not the one planned): said as it
      // is, not retried, and no request is made.
      throw err instanceof BinderSyncError ? markFinal(err) : err;
    }
    meter = new HashMeter(onBytes);
    let sourceError: unknown;
    source.once('error', (e) => {
      sourceError = e;
    });
    // Errors surface through the request below (undici reads `meter`); this only wires teardown.
    if (core.uploadBudget === null) pipeline(source, meter).catch(() => undefined);
    else pipeline(source, new ThrottleStream(core.uploadBudget), meter).catch(() => undefined);
    let status: number | undefined;
    const deadline = new AnswerDeadline(meter, size, core.settings.requestTimeoutMs);
    try {
      const res = await undiciRequest(url, {
        dispatcher: core.agent,
        method: 'PUT',
        // Storage is called without Authorization and without the tenant header (spec 4.8, 5.3).
        headers: { 'content-length': String(size), 'x-ms-blob-type': 'BlockBlob' },
        body: meter,
        signal: AbortSignal.any([signal, deadline.signal]),
        headersTimeout: core.settings.requestTimeoutMs + putAnswerAllowanceMs(size),
        bodyTimeout: core.settings.requestTimeoutMs,
      });
      status = res.statusCode;
      if (REDIRECT_STATUSES.has(res.statusCode)) {
        meter.destroy();
        url = await redirectTarget(PUT_REQUEST, url, res, hops, 'PUT', where);
        continue;
      }
      if (res.statusCode < 200 || res.statusCode > 299) throw await storageFailure(core, PUT_REQUEST, [presignedUrl, url], res);
      // The PUT is done: its answer's body says nothing more. One that trickles is let go (its connection closed)
      // after requestTimeout rather than read for as long as it comes (black-box round 41c, F1).
      await res.body.dump({ limit: 128 * 1024, signal: AbortSignal.timeout(core.settings.requestTimeoutMs) }).catch(() => res.body.destroy());
      break;
    } catch (err) {
      meter.destroy();
      if (err instanceof ServiceError) throw err;
      if (deadline.signal.aborted && !signal.aborted) {
        // No answer by the deadline once the body was handed over: as undici's own headers timeout says it.
        throw networkError(PUT_REQUEST, Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), core.secrets(), where);
      }
      if (signal.aborted || (isAbortError(err) && sourceError === undefined)) throw abortedError(PUT_REQUEST);
      const code = (err as { code?: unknown }).code;
      // The caller's own verdict on its source (the file changed while it was read): said as it is, not retried.
      if (sourceError instanceof BinderSyncError) throw markFinal(sourceError);
      // undici's length check may reach the source first (the pipeline destroys it with undici's error): the
      // file grew while it was read either way, not a failure to read it (it was said as one, at warn, on a
      // loaded machine).
      const lengthMismatch = code === 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH' || (sourceError as { code?: unknown } | undefined)?.code === 'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH';
      // A socket's error that the pipeline passed back to the source (storage reset the connection while the body
      // went out) is the network's, retried with a new slot: said as "reading the local file ... failed: read
      // ECONNRESET", it was not retried, and a one-shot sync failed (black-box round 41c, F3).
      if (lengthMismatch || (sourceError !== undefined && !isSocketError(sourceError))) {
        throw new ServiceError(
          lengthMismatch ? `the local file did not have the announced ${size} bytes (changed while uploading?)` : `reading the local file for upload failed: ${(sourceError as Error).message ?? String(sourceError)}`,
          { code: 'UPLOAD_SOURCE_FAILED', retryable: false, request: PUT_REQUEST, cause: sourceError ?? err, context: lengthMismatch || (sourceError as NodeJS.ErrnoException).code === 'ENOENT' ? { ...where, fileChanged: true } : where, hint: 'the file will be looked at again on the next pass' },
        );
      }
      throw networkError(PUT_REQUEST, err, core.secrets(), where);
    } finally {
      deadline.clear();
      // The URL without its query string (the signature): origin and path only.
      core.log.debug({ method: 'PUT', path: redactUrl(hopUrl), status, ms: Math.round(performance.now() - started), bytes: meter.bytes }, 'storage request');
    }
  }
  if (meter.bytes !== size) {
    throw new ServiceError(`the local file yielded ${meter.bytes} bytes, not the announced ${size}`, { code: 'UPLOAD_SOURCE_FAILED', retryable: false, request: PUT_REQUEST, context: { ...where, fileChanged: true } });
  }
  return { sha256: meter.digest(), bytes: meter.bytes };
}

export interface UploadOptions {
  /** Called with each slot's uploadId before any byte moves (persist it there). */
  onSlot?: (uploadId: string) => void | Promise<void>;
  onBytes?: (n: number) => void;
  signal?: AbortSignal;
  /** Once this fires, an upload still waiting for its slot does not start (a daemon winding down). */
  windDown?: AbortSignal;
}

/**
 * Fresh presigned URLs storage may refuse (403: expired, or a signature it does not take) before a transfer gives
 * up: download links (downloadToStream) and upload slots (uploadWithSlots) alike. One refusal is routine (a URL
 * that expired in the queue: the next one is fresh); a fresh one refused again means storage refuses every URL (a
 * clock off, a proxy), which more URLs in the same seconds do not mend: a download cost a link request and a
 * storage GET six times over (black-box round 37b, F7), an upload a slot and the whole file sent, six times over.
 * The caller holds the item back (sync/refused-urls.ts).
 */
export const MAX_URL_REFUSALS = 3;

/**
 * The whole upload: slot -> onSlot(uploadId) (persisted by the caller BEFORE any byte moves) -> PUT. A failed
 * PUT burns the one-shot slot, so each retry takes a new slot (onSlot again) and re-opens the stream. After
 * MAX_URL_REFUSALS slots storage refused, it gives up (STORAGE_SLOT_EXPIRED, retryable for a later pass).
 */
export async function uploadWithSlots(
  core: HttpCore,
  getSlot: () => Promise<PresignedUpload>,
  open: () => Readable,
  size: number,
  opts: UploadOptions,
): Promise<{ uploadId: string; sha256: string; bytes: number }> {
  const signal = core.joinSignal(opts.signal);
  let refusals = 0;
  return core.withRetry(PUT_REQUEST, signal, () =>
    core.transferQueue
      .add(
        async () => {
          if (opts.windDown?.aborted === true) throw abortedError(PUT_REQUEST);
          // The slot is asked for inside the transfer slot, as a download link is: its lifetime is not shown
          // (spec 4.7), and one taken before a wait behind other transfers may have expired by the PUT.
          const slot = await getSlot();
          await opts.onSlot?.(slot.uploadId);
          try {
            const r = await putNow(core, slot.presignedUrl, open, size, signal, opts.onBytes);
            return { uploadId: slot.uploadId, ...r };
          } catch (err) {
            if (err instanceof ServiceError && err.code === 'STORAGE_SLOT_EXPIRED' && ++refusals >= MAX_URL_REFUSALS) throw markFinal(err);
            throw err;
          }
        },
        { signal },
      )
      .catch((err: unknown) => {
        throw err instanceof ServiceError || err instanceof BinderSyncError ? err : signal.aborted ? abortedError(PUT_REQUEST) : err;
      }),
  );
}

/** True when the link's expiresAt (if readable) is already past on our clock. */
export function linkExpired(link: DownloadLink, now: number = Date.now()): boolean {
  if (!link.expiresAt) return false;
  const at = Date.parse(link.expiresAt);
  return !Number.isNaN(at) && at <= now;
}

/**
 * Streams one version into `dest` and returns its byte count and SHA-256.
 * Retries (new link on expiry/403, backoff on 5xx/network) happen only BEFORE the first byte reaches `dest`.
 * Once the body flows, any failure destroys `dest` and throws a retryable TRANSFER_INTERRUPTED /
 * TRANSFER_INCOMPLETE error: the caller restarts with a fresh temp file. `dest` is ended on success.
 */
export interface DownloadOptions {
  signal?: AbortSignal;
  onBytes?: (n: number) => void;
  /** A body announced at this size or more is not hashed on the way (see streamLink). */
  hashBelowBytes?: number;
  /**
   * Called with the announced size (Content-Length) before the body is read; a throw ends the download there,
   * without retries, having fetched nothing (a disk with no room for it).
   */
  beforeBody?: (bytes: number | undefined) => void;
  /** Once this fires, a transfer still waiting for its slot does not start (a daemon winding down). */
  windDown?: AbortSignal;
}

export async function downloadToStream(
  core: HttpCore,
  getLink: () => Promise<DownloadLink>,
  dest: Writable,
  opts: DownloadOptions = {},
): Promise<{ bytes: number; sha256: string | null }> {
  const signal = core.joinSignal(opts.signal);
  let link: DownloadLink | undefined;
  let needNewLink = true;
  let refusals = 0;
  // Set once two links in a row arrived already past their expiresAt: our clock is off, and asking twice for
  // every later link would only double the requests.
  let clockOff = false;
  return core.withRetry(GET_REQUEST, signal, () =>
    core.transferQueue
      .add(
        async () => {
          if (opts.windDown?.aborted === true) throw abortedError(GET_REQUEST);
          // The link is fetched inside the transfer slot, so it is fresh when used even after a long queue wait.
          if (needNewLink || !link || (!clockOff && linkExpired(link))) {
            link = await getLink();
            // Already past expiresAt on arrival: ask once more; if that one is "expired" too, our clock is
            // probably off, so use it and let storage decide (a 403 then costs one attempt).
            if (!clockOff && linkExpired(link)) {
              link = await getLink();
              clockOff = linkExpired(link);
            }
            needNewLink = false;
          }
          try {
            return await streamLink(core, link.url, dest, signal, opts, () => {
              needNewLink = true;
            });
          } catch (err) {
            if (err instanceof ServiceError && err.code === 'STORAGE_LINK_EXPIRED' && ++refusals >= MAX_URL_REFUSALS) throw markFinal(err);
            throw err;
          }
        },
        { signal },
      )
      .catch((err: unknown) => {
        throw err instanceof ServiceError || err instanceof BinderSyncError ? err : signal.aborted ? abortedError(GET_REQUEST) : err;
      }),
  );
}

/** Bytes a download must move in each trickle window (settings.trickleWindowMs) to go on. */
const TRICKLE_MIN_BYTES = 1024;

/**
 * Ends a body that trickles: undici's bodyTimeout is an idle time, which a byte now and then resets, so a storage
 * (or proxy) sending a byte a second held the pass for as long as it kept on (black-box round 41c, F1). Fewer than
 * TRICKLE_MIN_BYTES in a window ends the body with a timeout (TRANSFER_INTERRUPTED: tried again later). Our own
 * throttle's lowest rate (16 KiB/s, shared) moves far more per window.
 */
function watchForTrickle(body: Readable, bytes: () => number, windowMs: number): NodeJS.Timeout {
  let last = bytes();
  const timer = setInterval(() => {
    const now = bytes();
    if (now - last < TRICKLE_MIN_BYTES && !body.destroyed) {
      body.destroy(Object.assign(new Error(`fewer than ${TRICKLE_MIN_BYTES} bytes in ${Math.round(windowMs / 1000)} s: the transfer trickles`), { code: 'ETIMEDOUT' }));
    }
    last = now;
  }, windowMs);
  timer.unref();
  return timer;
}

async function streamLink(
  core: HttpCore,
  url: string,
  dest: Writable,
  signal: AbortSignal,
  opts: DownloadOptions,
  expired: () => void,
): Promise<{ bytes: number; sha256: string | null }> {
  const { onBytes, hashBelowBytes } = opts;
  const where = { url: redactUrl(url) };
  const started = performance.now();
  let res: StorageResponse;
  // Redirects (a CDN, a storage front end) are followed, each hop a plain GET as well.
  let current = url;
  for (let hops = 0; ; hops++) {
    try {
      // A plain GET: no Authorization, no tenant header (spec 4.13). `accept-encoding: identity`: the bytes
      // written must be the stored ones, counted against Content-Length; without the header HTTP lets storage
      // (or a proxy) compress them on the way. A body still sent with a Content-Encoding is an object stored
      // that way and is kept as stored (rclone's default for such objects too), not unpacked.
      res = await undiciRequest(current, {
        dispatcher: core.agent,
        method: 'GET',
        headers: { 'accept-encoding': 'identity' },
        signal,
        headersTimeout: core.settings.requestTimeoutMs,
        bodyTimeout: core.settings.requestTimeoutMs,
      });
    } catch (err) {
      if (signal.aborted || isAbortError(err)) throw abortedError(GET_REQUEST);
      throw networkError(GET_REQUEST, err, core.secrets(), where);
    }
    if (!REDIRECT_STATUSES.has(res.statusCode)) break;
    core.log.debug({ method: 'GET', path: redactUrl(current), status: res.statusCode, ms: Math.round(performance.now() - started), redirect: true }, 'storage request');
    current = await redirectTarget(GET_REQUEST, current, res, hops, 'GET', where);
  }
  if (res.statusCode !== 200) {
    if (res.statusCode === 403) expired();
    const err = await storageFailure(core, GET_REQUEST, [url, current], res);
    core.log.debug({ method: 'GET', path: where.url, status: res.statusCode, ms: Math.round(performance.now() - started) }, 'storage request');
    throw err;
  }
  const lengthHeader = res.headers['content-length'];
  const expected = typeof lengthHeader === 'string' && /^\d+$/.test(lengthHeader) ? Number(lengthHeader) : undefined;
  try {
    opts.beforeBody?.(expected);
  } catch (err) {
    // Closes the connection instead of reading the body; the body then errors ("aborted"), which is expected.
    res.body.on('error', () => undefined);
    res.body.destroy();
    throw markFinal(err);
  }
  // Counted and hashed from a 'data' listener rather than a Transform between body and dest: one stream stage
  // less per chunk. It is added right before pipeline() attaches dest in the same tick, so it sees every
  // chunk, in order, and dest's backpressure pauses both.
  // A body announced at hashBelowBytes or more is only counted: the caller hashes what it wrote, off this thread.
  const meter = new HashTap(onBytes, hashBelowBytes === undefined || expected === undefined || expected < hashBelowBytes);
  res.body.on('data', meter.update);
  // Under maxDownloadRate the progress is what the throttle lets through: it reads ahead of the rate into its
  // buffer, and the body then waits on us, for longer than a trickle window at a low rate (every throttled
  // download was ended and started over: black-box round 42b, F1).
  const throttle = core.downloadBudget === null ? null : new ThrottleStream(core.downloadBudget);
  const stall = watchForTrickle(res.body, () => (throttle === null ? meter.bytes : throttle.passed), core.settings.trickleWindowMs);
  // Which side failed first? Registered before pipeline() so these run before pipeline tears the others down.
  let firstFailure: 'body' | 'dest' | undefined;
  let destError: unknown;
  res.body.once('error', () => (firstFailure ??= 'body'));
  res.body.once('close', () => {
    if (!res.body.readableEnded) firstFailure ??= 'body';
  });
  dest.once('error', (e) => {
    firstFailure ??= 'dest';
    destError = e;
  });
  try {
    if (throttle === null) await pipeline(res.body, dest, { signal });
    else await pipeline(res.body, throttle, dest, { signal });
  } catch (err) {
    // From here on `dest` has been written to and destroyed: never retried in this call.
    if (firstFailure === 'dest' && !signal.aborted) {
      throw markFinal(new BinderSyncError(`writing the downloaded content failed: ${(destError as Error).message ?? String(destError)}`, { code: 'LOCAL_IO', retryable: false, cause: destError, context: where, hint: localWriteHint(destError) }));
    }
    if (signal.aborted) throw markFinal(abortedError(GET_REQUEST));
    throw markFinal(
      new ServiceError(`${GET_REQUEST} was interrupted after ${meter.bytes} bytes: ${(err as Error).message ?? String(err)}`, {
        code: 'TRANSFER_INTERRUPTED',
        retryable: true,
        request: GET_REQUEST,
        cause: err,
        context: { ...where, bytes: meter.bytes },
        hint: 'the download is restarted from scratch on the next attempt',
      }),
    );
  } finally {
    clearInterval(stall);
    core.log.debug({ method: 'GET', path: where.url, status: res.statusCode, ms: Math.round(performance.now() - started), bytes: meter.bytes }, 'storage request');
  }
  if (expected !== undefined && meter.bytes !== expected) {
    throw markFinal(
      new ServiceError(`${GET_REQUEST} delivered ${meter.bytes} of ${expected} bytes`, { code: 'TRANSFER_INCOMPLETE', retryable: true, request: GET_REQUEST, context: { ...where, bytes: meter.bytes, expected } }),
    );
  }
  return { bytes: meter.bytes, sha256: meter.hashing ? meter.digest() : null };
}

/** What the user can do about a failed local write of downloaded content. */
function localWriteHint(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'the disk is full: free some space; the download starts again (from the beginning) on a pass after that';
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return 'check the permissions of the sync folder';
  return 'check the sync folder and its disk';
}
