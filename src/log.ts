// Logging: pino JSON lines on stdout (for journald), human-readable when stdout is a terminal.
// Secrets are redacted by key (PINO_REDACT_PATHS) and every message/string field passes redactUrlsInText,
// so a presigned signature or bearer token that slipped into a message is still never written.
import { pino, type Logger, type DestinationStream } from 'pino';
import { PINO_REDACT_PATHS, redactUrlsInText } from './redact.js';

export type { Logger } from 'pino';

export interface LogOptions {
  level?: string;
  /** Where to write; defaults to stdout. Tests pass a sink stream to read records back. */
  destination?: DestinationStream;
  /** Human-readable output; defaults to "stdout is a terminal". */
  pretty?: boolean;
}

export function createLogger(opts: LogOptions = {}): Logger {
  const level = opts.level ?? process.env.BINDER_SYNC_LOG_LEVEL ?? 'info';
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
  };
  const dest = opts.destination ?? (pretty ? prettyStream() : pino.destination({ dest: 1, sync: true }));
  return pino(options, dest);
}

function scrubStrings(obj: unknown, depth = 0): unknown {
  if (typeof obj === 'string') return redactUrlsInText(obj);
  if (depth > 5 || obj === null || typeof obj !== 'object') return obj;
  if (obj instanceof Error) {
    return { type: obj.name, message: redactUrlsInText(obj.message), code: (obj as { code?: unknown }).code };
  }
  if (Array.isArray(obj)) return obj.map((v) => scrubStrings(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) out[k] = scrubStrings(v, depth + 1);
  return out;
}

/** A compact human format for terminals: "12:00:01 INFO  [pair] message key=value". */
function prettyStream(): DestinationStream {
  const names: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
  return {
    write(line: string) {
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(line) as Record<string, unknown>;
      } catch {
        process.stdout.write(line);
        return;
      }
      const { level, time, msg, pair, ...rest } = rec;
      const t = new Date(typeof time === 'number' ? time : Date.now()).toTimeString().slice(0, 8);
      const fields = Object.entries(rest)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(' ');
      const p = pair ? `[${String(pair)}] ` : '';
      process.stdout.write(`${t} ${names[Number(level)] ?? level} ${p}${String(msg ?? '')}${fields ? '  ' + fields : ''}\n`);
    },
  };
}
