// Logging: pino JSON lines on stdout (for journald), human-readable when stdout is a terminal.
// Secrets are redacted by key (PINO_REDACT_PATHS) and every message/string field passes redactUrlsInText,
// so a presigned signature or bearer token that slipped into a message is still never written.
import { pino, type Logger, type DestinationStream } from 'pino';
import { LOG_LEVELS } from './config/schema.js';
import { BinderSyncError } from './errors.js';
import { PINO_REDACT_PATHS, redactUrlsInText } from './redact.js';

export type { Logger } from 'pino';

export type LogLevel = (typeof LOG_LEVELS)[number];

/** The environment variable that overrides log.level of the config (also on reload). */
export const LOG_LEVEL_ENV = 'BINDER_SYNC_LOG_LEVEL';

/**
 * The level BINDER_SYNC_LOG_LEVEL asks for (case and surrounding blanks ignored), or undefined when it is
 * unset or blank. Anything but one of LOG_LEVELS throws a CONFIG_ENV error (exit 2) naming the variable and
 * the allowed values, instead of the raw pino error a logger built with it would throw.
 */
export function logLevelFromEnv(env: NodeJS.ProcessEnv = process.env): LogLevel | undefined {
  const raw = env[LOG_LEVEL_ENV];
  const value = raw?.trim().toLowerCase();
  if (value === undefined || value === '') return undefined;
  if ((LOG_LEVELS as readonly string[]).includes(value)) return value as LogLevel;
  const given = (raw ?? '').trim();
  const shown = JSON.stringify(given.length > 40 ? `${given.slice(0, 40)}...` : given);
  throw new BinderSyncError(`${LOG_LEVEL_ENV}=${shown} is not a log level`, {
    code: 'CONFIG_ENV',
    retryable: false,
    context: { variable: LOG_LEVEL_ENV },
    hint: `set ${LOG_LEVEL_ENV} to one of ${LOG_LEVELS.join(', ')}, or unset it to use log.level from the config`,
  });
}

export interface LogOptions {
  level?: string;
  /** Where to write; defaults to stdout. Tests pass a sink stream to read records back. */
  destination?: DestinationStream;
  /** Human-readable output; defaults to "stdout is a terminal". */
  pretty?: boolean;
}

export function createLogger(opts: LogOptions = {}): Logger {
  const level = opts.level ?? logLevelFromEnv() ?? 'info';
  const pretty = opts.pretty ?? (opts.destination === undefined && process.stdout.isTTY === true);
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
    redact: { paths: PINO_REDACT_PATHS, censor: '[redacted]' },
    hooks: {
      // Last line of defence: scrub URL query strings and bearer tokens from the message text.
      logMethod(args, method) {
        const scrubbed = args.map((a) => (typeof a === 'string' ? redactUrlsInText(a) : a));
        return method.apply(this, scrubbed as Parameters<typeof method>);
      },
    },
    formatters: {
      log(obj) {
        return scrubStrings(obj) as Record<string, unknown>;
      },
    },
    // formatters.log runs first and has already turned an Error into { type, message, ... }; pino's own err
    // serializer would then see a plain object and write { type: 'Object', stack: '' }.
    serializers: { err: serializeErr },
  };
  const dest = opts.destination ?? (pretty ? prettyStream() : pino.destination({ dest: 1, sync: true }));
  return pino(options, dest);
}

function scrubStrings(obj: unknown, depth = 0): unknown {
  if (typeof obj === 'string') return redactUrlsInText(obj);
  if (depth > 5 || obj === null || typeof obj !== 'object') return obj;
  if (obj instanceof Error) return errorFields(obj);
  if (Array.isArray(obj)) return obj.map((v) => scrubStrings(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = scrubStrings(v, depth + 1);
  return out;
}

/**
 * An Error as log fields: type, message, the stable code (BinderSyncError) or errno code, the hint, HTTP request
 * and status of a service error, the cause's message; the stack only for an error with no code (a bug).
 */
function errorFields(e: Error): Record<string, unknown> {
  const x = e as Error & { code?: unknown; hint?: unknown; request?: unknown; status?: unknown };
  const out: Record<string, unknown> = { type: e.name || e.constructor?.name || 'Error', message: redactUrlsInText(e.message) };
  if (typeof x.code === 'string' || typeof x.code === 'number') out.code = x.code;
  if (typeof x.hint === 'string') out.hint = redactUrlsInText(x.hint);
  if (typeof x.request === 'string') out.request = x.request;
  if (typeof x.status === 'number') out.status = x.status;
  if (e.cause !== undefined && e instanceof BinderSyncError) {
    out.cause = redactUrlsInText(e.cause instanceof Error ? e.cause.message : String(e.cause));
  }
  if (out.code === undefined && !(e instanceof BinderSyncError) && typeof e.stack === 'string') out.stack = redactUrlsInText(e.stack);
  return out;
}

/**
 * The `err` field, after formatters.log: an Error already turned into fields is kept; a thrown string, number,
 * null or plain object gets a type and a readable message instead of pino's { type: 'Object', stack: '' }.
 */
function serializeErr(v: unknown): unknown {
  if (v instanceof Error) return errorFields(v);
  if (v === null || typeof v !== 'object') return { type: v === null ? 'null' : typeof v, message: redactUrlsInText(String(v)) };
  const o = v as Record<string, unknown>;
  if (typeof o.type === 'string' && typeof o.message === 'string') return o; // errorFields' output
  let message: string;
  if (typeof o.message === 'string') message = o.message;
  else {
    try {
      message = JSON.stringify(o).slice(0, 500);
    } catch {
      message = String(o);
    }
  }
  return { type: 'Object', message: redactUrlsInText(message), ...Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'message' && k !== 'type')) };
}

/** An error's fields (errorFields' output) as one readable phrase: "message [CODE] (hint: ...)"; undefined otherwise. */
function prettyError(v: unknown): string | undefined {
  if (v === null || typeof v !== 'object') return undefined;
  const e = v as Record<string, unknown>;
  if (typeof e.type !== 'string' || typeof e.message !== 'string') return undefined;
  const code = typeof e.code === 'string' ? ` [${e.code}]` : '';
  const hint = typeof e.hint === 'string' ? ` (hint: ${e.hint})` : '';
  const stack = typeof e.stack === 'string' ? `\n${e.stack}` : '';
  return `${e.message}${code}${hint}${stack}`;
}

/** A compact human format for terminals: "12:00:01 INFO  [pair] message key=value". */
function prettyStream(): DestinationStream {
  return { write: (line: string) => process.stdout.write(prettyLine(line)) };
}

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };

/** One JSON log line in the terminal format (a line that is not JSON is passed through). */
export function prettyLine(line: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const { level, time, msg, pair, ...rest } = rec;
  const t = new Date(typeof time === 'number' ? time : Date.now()).toTimeString().slice(0, 8);
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : (prettyError(v) ?? JSON.stringify(v))}`)
    .join(' ');
  const p = pair ? `[${String(pair)}] ` : '';
  return `${t} ${LEVEL_NAMES[Number(level)] ?? String(level)} ${p}${String(msg ?? '')}${fields ? '  ' + fields : ''}\n`;
}
