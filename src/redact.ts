// Redaction of secrets for logs and error messages. Presigned URLs carry their signature in the query
// string, so a URL is only ever shown as origin + path; tokens and client secrets are never shown.

/** Shows a URL without its query string and fragment (where presigned signatures live). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    const hidden = u.search || u.hash ? '?[redacted]' : '';
    // A URL of another scheme (file:, data:) has the origin "null": its scheme and host instead.
    return `${u.origin === 'null' ? `${u.protocol}//${u.host}` : u.origin}${u.pathname}${hidden}`;
  } catch {
    return '[unparseable url]';
  }
}

const SECRET_KEYS = /^(authorization|access_token|accessToken|token|client_secret|clientSecret|password|secret)$/i;

/** Deep-copies a plain value, replacing values under secret-looking keys and redacting URLs in strings. */
export function redactValue(value: unknown, depth = 0): unknown {
  if (depth > 6) return '[deep]';
  if (typeof value === 'string') return redactUrlsInText(value);
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = SECRET_KEYS.test(k) ? '[redacted]' : redactValue(v, depth + 1);
    }
    return out;
  }
  return value;
}

/** Redacts query strings of any http(s) URL inside free text, and bearer tokens. */
export function redactUrlsInText(text: string): string {
  return text
    .replace(/(https?:\/\/[^\s?#"'<>]+)[?#][^\s"'<>]*/g, '$1?[redacted]')
    .replace(/(bearer\s+)[A-Za-z0-9._~+/=-]+/gi, '$1[redacted]');
}

/** Pino redaction paths (used by log.ts) for secrets that might be passed in structured fields. */
export const PINO_REDACT_PATHS = [
  'clientSecret',
  'client_secret',
  'access_token',
  'token',
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  '*.clientSecret',
  '*.client_secret',
  '*.access_token',
  '*.authorization',
  'service.clientSecret',
];
