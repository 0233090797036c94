// Transfer rate limits in the config: bytes per second as a number, or a string such as '500KiB/s', '10MB/s',
// '2M' or '1.5GiB'. As rclone's --bwlimit reads them, a bare K, M or G is 1024-based (KiB, MiB, GiB); KB, MB
// and GB are 1000-based, whatever the letter case. The "/s" is optional. Always resolved to bytes per second.

/** Matches a whole rate string; used both for parsing and as the JSON Schema pattern. */
export const BYTE_RATE_PATTERN = '^\\s*\\d+(\\.\\d+)?\\s*([BbKkMmGg]|[KkMmGg][Bb]|[KkMmGg]i[Bb])?(/s)?\\s*$';

/** By the unit in lower case: 'k', 'kib' 1024-based, 'kb' 1000-based (letter case is not significant). */
const UNIT: Record<string, number> = {
  b: 1,
  k: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gib: 1024 ** 3,
  kb: 1000,
  mb: 1000 ** 2,
  gb: 1000 ** 3,
};

/** Bytes per second for a rate, or null when the value is not one. */
export function parseByteRate(value: number | string): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.floor(value) : null;
  const m = new RegExp(BYTE_RATE_PATTERN).exec(value);
  if (m === null) return null;
  const n = Number(/\d+(\.\d+)?/.exec(value)![0]) * (UNIT[(m[2] ?? 'b').toLowerCase()] ?? 1);
  return Number.isFinite(n) ? Math.floor(n) : null;
}

/** Short human form of a rate, for messages: 1048576 -> '1 MiB/s'. */
export function formatByteRate(bytesPerSecond: number): string {
  for (const [unit, size] of [['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const) {
    if (bytesPerSecond >= size) return `${Number((bytesPerSecond / size).toFixed(2))} ${unit}/s`;
  }
  return `${bytesPerSecond} B/s`;
}
