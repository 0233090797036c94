// Shared plumbing: repo paths, the in-process emulator, temp dirs, config files for the CLI, and runners for
// `binder-sync sync` and the floor scripts (both as child processes, timed from spawn to exit).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { startEmulator, type Emulator, type EmulatorOptions, type RouteName } from '../../src/emulator/index.js';
import { installEmulatorIndex } from './emulator-index.js';
import { run, tail, type RunResult } from './proc.js';

function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg) && (JSON.parse(fs.readFileSync(pkg, 'utf8')) as { name?: string }).name === 'binder-sync') return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error('cannot find the binder-sync package root');
    dir = up;
  }
}

export const ROOT = findRoot();
export const BIN = path.join(ROOT, 'bin', 'binder-sync.js');
/** Compiled bench scripts (bench/.out/bench/...). */
export const OUT = path.join(ROOT, 'bench', '.out', 'bench');
export const SECRET_ENV = 'BENCH_CLIENT_SECRET';

export function tempDir(tag: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `binder-bench-${tag}-`));
}

export function rmrf(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * Writes back every dirty page (sync(1)) before a timed run. The floor and rclone never fsync, so without this
 * the next tool's run (often binder-sync, which must fsync each file it writes) pays for up to a GiB of their
 * writeback: its fsyncs wait behind the kernel's flush of the other tool's files.
 */
export function settleDisk(): void {
  spawnSync('sync', { stdio: 'ignore' });
}

export async function benchEmulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  installEmulatorIndex();
  return startEmulator({ quiet: true, ...opts });
}

export interface Limits {
  requestsPerSecond: number;
  maxConcurrentRequests: number;
  maxConcurrentTransfers: number;
}

/** binder-sync's defaults (src/service/settings.ts) with the given request rate. */
export function limitsAt(rps: number): Limits {
  return { requestsPerSecond: rps, maxConcurrentRequests: 8, maxConcurrentTransfers: 4 };
}

export interface PairSetup {
  emu: Emulator;
  binderId: string;
  localPath: string;
  stateDir: string;
  limits: Limits;
  direction?: 'both' | 'download' | 'upload';
  pageSize?: number;
  /** More pair options (watcher, pollInterval, ...) for the daemon benchmarks. */
  pairOptions?: Record<string, unknown>;
}

/** Writes a config file for one pair next to the state dir and returns its path. */
/** The product's default pageSize (src/config/schema.ts), used by binder-sync and the floor alike. */
const DEFAULT_PAGE_SIZE = 1000;

export function writeConfig(dir: string, s: PairSetup): string {
  const c = s.emu.credentials;
  const config = {
    service: {
      baseUrl: s.emu.baseUrl,
      authUrl: s.emu.authUrl,
      tenantId: c.tenantId,
      clientId: c.clientId,
      clientSecret: `\${${SECRET_ENV}}`,
      ...s.limits,
    },
    stateDir: s.stateDir,
    // The default level: what a user gets (one line per transferred file, to stderr with --json).
    log: { level: 'info' },
    pairs: [{ name: 'main', localPath: s.localPath, binderId: s.binderId, direction: s.direction ?? 'both', pageSize: s.pageSize ?? DEFAULT_PAGE_SIZE, ...s.pairOptions }],
  };
  const file = path.join(dir, 'sync.yaml');
  fs.writeFileSync(file, stringify(config), { mode: 0o600 });
  return file;
}

/** What `sync --json` reports for one pair (the fields the benchmarks read). */
export interface SyncJson {
  pair: string;
  converged: boolean;
  actions: string[];
  done: Record<string, number>;
  failures: unknown[];
  hashed: number;
  remoteRequests: number;
  bytesDownloaded: number;
  bytesUploaded: number;
  durationMs: number;
}

export interface SyncRun extends RunResult {
  report: SyncJson;
}

export async function runSync(configFile: string, emu: Emulator, opts: { args?: string[]; nodeArgs?: string[]; allowUnconverged?: boolean; bin?: string } = {}): Promise<SyncRun> {
  const stderrFile = path.join(path.dirname(configFile), `sync-${Date.now()}.stderr`);
  const r = await run(process.execPath, [...(opts.nodeArgs ?? []), opts.bin ?? BIN, 'sync', '--config', configFile, '--json', ...(opts.args ?? [])], {
    env: { [SECRET_ENV]: emu.credentials.clientSecret },
    stderrFile,
  });
  let report: SyncJson | undefined;
  try {
    report = (JSON.parse(r.stdout) as SyncJson[])[0];
  } catch {
    report = undefined;
  }
  if (!report || (r.code !== 0 && !opts.allowUnconverged)) {
    throw new Error(`binder-sync sync exited ${r.code}:\n${r.stdout.slice(0, 2000)}\n${tail(stderrFile)}`);
  }
  return { ...r, report };
}

/** Arguments of the floor scripts (passed as JSON in BENCH_FLOOR). */
export interface FloorArgs {
  baseUrl: string;
  authUrl: string;
  tenantId: string;
  clientId: string;
  binderId: string;
  dir: string;
  pageSize: number;
  limits: Limits;
  /** Parallel per-file workers (binder-sync's executor runs 8 actions at once). */
  workers: number;
  /**
   * Download floor only: fsync each file before closing it (the stream's `flush`), the least a client that
   * promises durability must add. A reference row beside the floor, not the floor of the targets.
   */
  durable?: boolean;
}

export interface FloorReport {
  files: number;
  bytes: number;
}

export async function runFloor(script: 'download' | 'upload', args: FloorArgs, emu: Emulator, workDir: string): Promise<RunResult & { report: FloorReport }> {
  const stderrFile = path.join(workDir, `floor-${script}-${Date.now()}.stderr`);
  const r = await run(process.execPath, [path.join(OUT, 'floor', `${script}.js`)], {
    env: { BENCH_FLOOR: JSON.stringify(args), [SECRET_ENV]: emu.credentials.clientSecret },
    stderrFile,
  });
  if (r.code !== 0) throw new Error(`floor ${script} exited ${r.code}:\n${tail(stderrFile)}`);
  return { ...r, report: JSON.parse(r.stdout) as FloorReport };
}

export function floorArgs(emu: Emulator, binderId: string, dir: string, limits: Limits, pageSize = DEFAULT_PAGE_SIZE): FloorArgs {
  const c = emu.credentials;
  return { baseUrl: emu.baseUrl, authUrl: emu.authUrl, tenantId: c.tenantId, clientId: c.clientId, binderId, dir, pageSize, limits, workers: 8 };
}

export function totalRequests(counters: Record<RouteName, number>): number {
  return Object.values(counters).reduce((a, b) => a + b, 0);
}

/** Counters of the routes that were hit, e.g. "search 20, downloadlink 10000, storage-get 10000". */
export function countersText(counters: Record<RouteName, number>): string {
  return Object.entries(counters)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
}

/**
 * Bytes and file count of a local tree. It may be read while a daemon writes into it: a temp file renamed or
 * removed between readdir and stat is simply not counted.
 */
export function treeSize(dir: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        const st = fs.statSync(p, { throwIfNoEntry: false });
        if (st === undefined) continue;
        files++;
        bytes += st.size;
      }
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return { files, bytes };
}
