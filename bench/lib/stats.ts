// Small statistics and formatting helpers for benchmark tables (medians, ratios, sizes, markdown).

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const idx = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[idx] as number;
}

export const secs = (ms: number): string => (Number.isFinite(ms) ? (ms / 1000).toFixed(2) : 'n/a');
export const ratio = (a: number, b: number): string => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}x` : 'n/a');

export function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
}

/** "3.10 / 3.02 / 3.40" of the individual runs, for the table's spread column. */
export function runsList(ms: readonly number[]): string {
  return ms.map((m) => secs(m)).join(' / ');
}

export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/**
 * The rclone row of benchmarks 1 and 2: rclone's median against the floor, and binder-sync's median against
 * rclone's (the "faster than rclone" target).
 */
export function rcloneRow(set: string, rcloneMs: readonly number[], floorMs: number, binderSyncMs: number, tool: string, requests = '-'): string[] {
  const rc = median(rcloneMs);
  const verdict = binderSyncMs < rc ? 'met' : 'MISSED';
  return [set, '-', tool, secs(rc), runsList(rcloneMs), requests, `${ratio(rc, floorMs)}; binder-sync = ${ratio(binderSyncMs, rc)} of it (target: faster: ${verdict})`];
}
