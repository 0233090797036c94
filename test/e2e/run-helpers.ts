// Helpers for e2e tests of `binder-sync run`: spawn the daemon as a long-running child, collect its JSON log
// lines, wait for a log line or a condition, send signals and wait for the exit.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { stringify } from 'yaml';
import { BIN, secretOf, type Workspace } from './harness.js';

export interface LogLine {
  level: number;
  msg: string;
  pair?: string;
  [k: string]: unknown;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface DaemonProcess {
  child: ChildProcess;
  /** Parsed JSON log lines from stdout, in order. */
  readonly lines: LogLine[];
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves with the first log line (seen so far or later) matching `match`. */
  waitForLog(match: (l: LogLine) => boolean, timeoutMs?: number, what?: string): Promise<LogLine>;
  /** Number of log lines matching. */
  count(match: (l: LogLine) => boolean): number;
  kill(signal: NodeJS.Signals): void;
  /** Resolves when the child has exited. */
  exited: Promise<Exit>;
  /** Kills with SIGKILL when still running (afterEach safety). */
  dispose(): Promise<void>;
  /** The last lines of output, for assertion messages. */
  tail(n?: number): string;
}

/**
 * Fast timings for tests (documented in src/daemon/timing.ts): poll every 1.5 s, back-off from 1 s, a short
 * watcher settle window, info logs. Override per test through `env`.
 */
export const FAST_ENV: NodeJS.ProcessEnv = {
  BINDER_SYNC_LOG_LEVEL: 'info',
  BINDER_SYNC_POLL_INTERVAL_MS: '1500',
  BINDER_SYNC_BACKOFF_BASE_MS: '1000',
  BINDER_SYNC_BACKOFF_MAX_MS: '4000',
  BINDER_SYNC_WATCH_SETTLE_MS: '200',
};

export function startDaemonProcess(
  ws: Workspace,
  opts: { args?: string[]; env?: NodeJS.ProcessEnv; configFile?: string; readOnly?: boolean; /** instead of `node bin/binder-sync.js` (e.g. as another user) */ command?: string[] } = {},
): DaemonProcess {
  const [cmd, ...rest] = [...(opts.command ?? [process.execPath, BIN]), 'run', '--config', opts.configFile ?? ws.configFile, ...(opts.args ?? [])];
  const child = spawn(cmd!, rest, {
    env: { ...process.env, E2E_SECRET: secretOf(ws, opts.readOnly), ...FAST_ENV, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  let stdout = '';
  let stderr = '';
  let partial = '';
  const waiters: Array<{ match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }> = [];
  child.stdout!.on('data', (d: Buffer) => {
    const text = d.toString();
    stdout += text;
    partial += text;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const raw of parts) {
      if (!raw.trim()) continue;
      let line: LogLine;
      try {
        line = JSON.parse(raw) as LogLine;
      } catch {
        continue;
      }
      lines.push(line);
      for (let i = waiters.length - 1; i >= 0; i--) {
        const w = waiters[i]!;
        if (w.match(line)) {
          waiters.splice(i, 1);
          w.resolve(line);
        }
      }
    }
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<Exit>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  let done = false;
  void exited.then(() => (done = true));
  const tail = (n = 25) =>
    `exit=${String(child.exitCode)}\nstdout (last ${n} lines):\n${lines
      .slice(-n)
      .map((l) => JSON.stringify(l))
      .join('\n')}\nstderr:\n${stderr.slice(-2000)}`;
  const p: DaemonProcess = {
    child,
    lines,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    waitForLog(match, requestedMs = 15_000, what = 'log line') {
      const timeoutMs = patient(requestedMs);
      const seen = lines.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const w = {
          match,
          resolve: (l: LogLine) => {
            clearTimeout(timer);
            resolve(l);
          },
        };
        const timer = setTimeout(() => {
          const i = waiters.indexOf(w);
          if (i >= 0) waiters.splice(i, 1);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${tail()}`));
        }, timeoutMs);
        waiters.push(w);
      });
    },
    count: (match) => lines.filter(match).length,
    kill: (signal) => child.kill(signal),
    exited,
    async dispose() {
      if (!done) {
        child.kill('SIGKILL');
        await exited;
      }
    },
    tail,
  };
  return p;
}

/**
 * The least a wait for something that must happen is given. A wait's timeout is only how long a test is patient on
 * a slow machine, never what it asserts (a test that bounds latency compares times itself): CI runs the suite on 2
 * loaded cores, where a daemon's pass takes several times as long as on a quiet machine, and short waits flaked.
 */
const MIN_PATIENCE_MS = 15_000;
const patient = (timeoutMs: number): number => Math.max(timeoutMs, MIN_PATIENCE_MS);

/** Polls `check` until it returns a value other than undefined/false, or throws after timeoutMs (at least 15 s). */
export async function eventually<T>(check: () => T | undefined | false, requestedMs: number, what: string, explain?: () => string): Promise<T> {
  const timeoutMs = patient(requestedMs);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}${explain ? `\n${explain()}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const msgIs = (msg: string) => (l: LogLine) => l.msg === msg;
export const msgHas = (part: string) => (l: LogLine) => typeof l.msg === 'string' && l.msg.includes(part);

export interface RunConfigOptions {
  /** Pairs to write; default: the workspace's single pair 'main'. */
  pairs?: Array<Record<string, unknown>>;
  /** Merged into the service section (e.g. requestsPerSecond). */
  service?: Record<string, unknown>;
  log?: Record<string, unknown>;
  metrics?: Record<string, unknown>;
  readOnly?: boolean;
}

/** Writes the workspace's config file for `run`, with full control over pairs and service settings. */
export function writeRunConfig(ws: Workspace, o: RunConfigOptions = {}): void {
  const c = ws.emulator.credentials;
  const config = {
    service: {
      baseUrl: ws.emulator.baseUrl,
      authUrl: ws.emulator.authUrl,
      tenantId: c.tenantId,
      clientId: o.readOnly ? c.readOnlyClientId : c.clientId,
      clientSecret: '${E2E_SECRET}',
      ...o.service,
    },
    stateDir: './state',
    log: { level: 'info', ...o.log },
    ...(o.metrics ? { metrics: o.metrics } : {}),
    pairs: o.pairs ?? [{ name: 'main', localPath: './local', binderId: ws.binderId }],
  };
  fs.writeFileSync(ws.configFile, stringify(config), { mode: 0o600 });
}
