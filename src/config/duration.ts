// Durations in the config: a number of seconds, or a string such as '250ms', '90s', '5m', '1h', '1d' or
// a compound '1h30m'. Always resolved to milliseconds.

// Units as systemd writes time spans ('5min', '2 hours', '30 sec'), longest first so that 'ms' is not read as 'm'.
const UNITS = 'milliseconds?|msecs?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d';
/** Matches a whole duration string; used both for parsing and as the JSON Schema pattern. */
export const DURATION_PATTERN = `^\\s*(\\d+(\\.\\d+)?\\s*(${UNITS})?\\s*)+$`;

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, ms: 1, s: 1000 };
const PART = new RegExp(`(\\d+(?:\\.\\d+)?)\\s*(${UNITS})?`, 'g');
/** The unit a spelling stands for: 'minutes' -> 'm', 'msec' -> 'ms', 'hrs' -> 'h'. */
const unitOf = (spelled: string): string => (/^(ms|msecs?|milliseconds?)$/.test(spelled) ? 'ms' : spelled[0]!);

/** Milliseconds for a duration, or null when the value is not a duration. A bare number means seconds. */
export function parseDuration(value: number | string): number | null {
  if (typeof value === 'number') {
    return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) : null;
  }
  if (!new RegExp(DURATION_PATTERN).test(value)) return null;
  const parts = [...value.matchAll(PART)];
  // A unit-less number is only allowed alone ('90' = 90 s); '1h30' is ambiguous and refused.
  if (parts.length > 1 && parts.some((p) => p[2] === undefined)) return null;
  let ms = 0;
  for (const p of parts) ms += Number(p[1]) * (UNIT_MS[unitOf(p[2] ?? 's')] ?? 1000);
  return Number.isFinite(ms) ? Math.round(ms) : null;
}

/** Short human form of a millisecond count, for messages: 5000 -> '5s', 90000 -> '90s', 3600000 -> '1h'. */
export function formatDuration(ms: number): string {
  if (ms % 86_400_000 === 0 && ms > 0) return `${ms / 86_400_000}d`;
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
