// HTTP plumbing of the emulator: RFC 7807 problems, the Reply value handlers return, body reading, sending.
// Handlers never write to the response themselves, so fault injection (truncate, invalid body) can wrap them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createReadStream } from 'node:fs';
import { Transform } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { BinderSyncError } from '../errors.js';
import { traceId } from './ids.js';

/** RFC 9110 section anchors, as ASP.NET-style services put them in `type`. */
const PROBLEM_TYPES: Record<number, { type: string; title: string }> = {
  400: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.1', title: 'One or more validation errors occurred.' },
  401: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.2', title: 'Unauthorized' },
  403: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.4', title: 'Forbidden' },
  404: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.5', title: 'Not Found' },
  405: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.6', title: 'Method Not Allowed' },
  409: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.10', title: 'Conflict' },
  413: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.14', title: 'Content Too Large' },
  415: { type: 'https://tools.ietf.org/html/rfc9110#section-15.5.16', title: 'Unsupported Media Type' },
  429: { type: 'https://tools.ietf.org/html/rfc6585#section-4', title: 'Too Many Requests' },
  500: { type: 'https://tools.ietf.org/html/rfc9110#section-15.6.1', title: 'Internal Server Error' },
  503: { type: 'https://tools.ietf.org/html/rfc9110#section-15.6.4', title: 'Service Unavailable' },
};

export type FieldErrors = Record<string, string[]>;

/** A request the emulator refuses; turned into a problem+json answer by the dispatcher. */
export class HttpProblem extends BinderSyncError {
  readonly status: number;
  readonly errors: FieldErrors | undefined;
  readonly headers: Record<string, string>;
  readonly body: unknown;

  constructor(
    status: number,
    detail: string,
    extra: { errors?: FieldErrors; headers?: Record<string, string>; title?: string; body?: unknown } = {},
  ) {
    super(detail, {
      code: `EMULATOR_HTTP_${status}`,
      retryable: status === 429 || status >= 500,
      hint: 'the emulator refused the request; see the problem details',
      context: { status },
    });
    this.status = status;
    this.errors = extra.errors;
    this.headers = extra.headers ?? {};
    this.body = extra.body ?? undefined;
  }
}

export type Reply =
  | {
      kind: 'json';
      status: number;
      body: unknown;
      contentType?: string;
      headers?: Record<string, string>;
      /** The body already serialized (JSON.stringify of `body`), when the handler keeps it for repeats. */
      payload?: Buffer;
    }
  | { kind: 'file'; status: number; path: string; size: number; headers?: Record<string, string> }
  | { kind: 'empty'; status: number; headers?: Record<string, string> };

export function json(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return headers ? { kind: 'json', status, body, headers } : { kind: 'json', status, body };
}

export function problemReply(p: HttpProblem): Reply {
  // An OAuth endpoint answers its own error shape ({error: ...}); HttpProblem.body carries it.
  if (p.body !== undefined) return { kind: 'json', status: p.status, body: p.body, headers: p.headers };
  const known = PROBLEM_TYPES[p.status];
  const body: Record<string, unknown> = {
    type: known?.type ?? 'about:blank',
    title: known?.title ?? 'Error',
    status: p.status,
    detail: p.message,
    traceId: traceId(),
  };
  if (p.errors) body.errors = p.errors;
  return { kind: 'json', status: p.status, body, contentType: 'application/problem+json', headers: p.headers };
}

const MAX_JSON_BODY = 1024 * 1024;

/** Reads a small body whole (JSON and form bodies only; blobs are streamed elsewhere). */
export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    total += b.length;
    if (total > MAX_JSON_BODY) throw new HttpProblem(413, 'request body larger than 1 MiB');
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}

export function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** A JSON request body. Strict: Content-Type must be application/json and the body must be present. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const type = mediaType(req);
  if (type !== 'application/json' && !type.endsWith('+json')) {
    throw new HttpProblem(415, 'the request body must be JSON (Content-Type: application/json)');
  }
  const raw = await readBody(req);
  if (raw.length === 0) throw new HttpProblem(400, 'a non-empty request body is required', { errors: { '': ['A non-empty request body is required.'] } });
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch {
    throw new HttpProblem(400, 'the request body is not valid JSON', { errors: { '$': ['The JSON value could not be parsed.'] } });
  }
}

export interface SendOptions {
  /** Send the status, headers and a correct Content-Length, then half the body, then destroy the socket. */
  truncate?: boolean;
  /** For file replies: flip every byte (same length) so content checks catch it. */
  corrupt?: boolean;
  /** For JSON replies: send the body gzip-encoded (Content-Encoding: gzip). */
  gzip?: boolean;
}

export function sendReply(res: ServerResponse, reply: Reply, opts: SendOptions = {}): void {
  const headers: Record<string, string | number> = { ...(reply.headers ?? {}) };
  if (reply.kind === 'json') {
    const plain = reply.payload ?? Buffer.from(JSON.stringify(reply.body));
    const payload = opts.gzip ? gzipSync(plain) : plain;
    if (opts.gzip) {
      headers['content-encoding'] = 'gzip';
      headers.vary = 'accept-encoding';
    }
    headers['content-type'] = `${reply.contentType ?? 'application/json'}; charset=utf-8`;
    headers['content-length'] = payload.length;
    res.writeHead(reply.status, headers);
    if (opts.truncate) {
      res.write(payload.subarray(0, Math.floor(payload.length / 2)), () => res.destroy());
      return;
    }
    res.end(payload);
    return;
  }
  if (reply.kind === 'empty') {
    if (opts.truncate) {
      // Nothing to cut in half: the request took effect but its answer is lost.
      res.destroy();
      return;
    }
    headers['content-length'] = 0;
    res.writeHead(reply.status, headers);
    res.end();
    return;
  }
  headers['content-type'] = headers['content-type'] ?? 'application/octet-stream';
  headers['content-length'] = reply.size;
  res.writeHead(reply.status, headers);
  if (reply.size === 0) {
    if (opts.truncate) res.destroy();
    else res.end();
    return;
  }
  const half = Math.floor(reply.size / 2);
  if (opts.truncate && half === 0) {
    res.flushHeaders();
    res.destroy();
    return;
  }
  const end = opts.truncate ? half - 1 : reply.size - 1;
  const stream = createReadStream(reply.path, { start: 0, end });
  const flip = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      const out = Buffer.allocUnsafe(chunk.length);
      for (let i = 0; i < chunk.length; i++) out[i] = chunk[i]! ^ 0xff;
      cb(null, out);
    },
  });
  const source = opts.corrupt ? stream.pipe(flip) : stream;
  stream.on('error', () => res.destroy());
  source.pipe(res, { end: !opts.truncate });
  if (opts.truncate) source.on('end', () => res.destroy());
}
