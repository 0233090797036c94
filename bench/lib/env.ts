// Benchmark settings from the environment (sizes, run counts, limits); BENCH_QUICK=1 shrinks everything for a smoke run.

const quick = process.env.BENCH_QUICK === '1';

function num(name: string, full: number, quickValue: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return quick ? quickValue : full;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return n;
}

function list(name: string, full: string, quickValue: string): number[] {
  const raw = process.env[name] ?? (quick ? quickValue : full);
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(Number);
}

export interface BenchEnv {
  quick: boolean;
  /**
   * Which benchmarks to run: download, upload, noop, poll, latency, idle, profile (comma-separated BENCH_ONLY).
   * Without BENCH_ONLY everything but idle runs (idle alone takes 10+ minutes: set BENCH_ONLY=idle).
   */
  only: Set<string> | null;
  smallFiles: number;
  smallSize: number;
  largeFiles: number;
  largeSize: number;
  /** API request rates to measure at (the default config is 100; 1000 is the config maximum). */
  rpsList: number[];
  /** Runs per side for the short benchmarks and for the long ones. */
  runs: number;
  longRuns: number;
  noopFiles: number;
  pollDocs: number[];
  pollPageSizes: number[];
  /** Benchmark 5a: sequential edits each way, burst size, and the daemon's poll interval (env override). */
  latencyEdits: number;
  latencyBurst: number;
  latencyPollMs: number;
  /** Benchmark 5b: files of the idle tree, idle seconds measured, sample period, and which watchers. */
  idleFiles: number;
  idleSeconds: number;
  idleSampleSeconds: number;
  idleWatchers: string[];
  /** Where the generated section is written; empty = do not write. */
  docFile: string;
}

export function benchEnv(): BenchEnv {
  const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : null;
  return {
    quick,
    only,
    smallFiles: num('BENCH_SMALL_FILES', 2000, 200),
    smallSize: num('BENCH_SMALL_SIZE', 4096, 4096),
    largeFiles: num('BENCH_LARGE_FILES', 20, 3),
    largeSize: num('BENCH_LARGE_SIZE', 50 * 1024 * 1024, 4 * 1024 * 1024),
    rpsList: list('BENCH_RPS', '100,1000', '1000'),
    runs: num('BENCH_RUNS', 5, 2),
    longRuns: num('BENCH_LONG_RUNS', 3, 1),
    noopFiles: num('BENCH_NOOP_FILES', 20000, 1000),
    pollDocs: list('BENCH_POLL_DOCS', '10000,100000', '1000,3000'),
    pollPageSizes: list('BENCH_POLL_PAGE_SIZES', '500,1000', '500,1000'),
    latencyEdits: num('BENCH_LATENCY_EDITS', 100, 10),
    latencyBurst: num('BENCH_LATENCY_BURST', 50, 10),
    latencyPollMs: num('BENCH_LATENCY_POLL_MS', 1000, 1000),
    idleFiles: num('BENCH_IDLE_FILES', 100000, 2000),
    idleSeconds: num('BENCH_IDLE_SECONDS', 300, 20),
    idleSampleSeconds: num('BENCH_IDLE_SAMPLE_SECONDS', 10, 2),
    idleWatchers: (process.env.BENCH_IDLE_WATCHERS ?? 'auto').split(',').map((s) => s.trim()).filter((s) => s !== ''),
    docFile: process.env.BENCH_DOC ?? (quick ? '' : 'docs/BENCHMARKS.md'),
  };
}

/** Benchmarks that run only when BENCH_ONLY names them. */
const OPT_IN = new Set(['idle']);

export function wants(env: BenchEnv, name: string): boolean {
  return env.only === null ? !OPT_IN.has(name) : env.only.has(name);
}
