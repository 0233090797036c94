// `binder-sync run` as a child process for the daemon benchmarks: JSON log lines (with their pino timestamps),
// waiting for a line, graceful stop, and the process's CPU time and memory from /proc/<pid>.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import type { Emulator } from '../../src/emulator/index.js';
import { BIN, SECRET_ENV } from './workspace.js';

export interface LogLine {
  level: number;
  /** pino's epoch milliseconds. */
  time: number;
  msg: string;
  [k: string]: unknown;
}

export interface Daemon {
  child: ChildProcess;
  pid: number;
  readonly lines: LogLine[];
  /** Resolves with the first line (already seen, or later) matching, from index `from` on. */
  waitFor(match: (l: LogLine) => boolean, timeoutMs: number, what: string, from?: number): Promise<LogLine>;
  /** SIGTERM and wait for the exit (SIGKILL after timeoutMs). */
  stop(timeoutMs?: number): Promise<number | null>;
  stderr(): string;
  /** stdout lines that are not JSON log lines (e.g. `--trace-gc` output), last 20,000 kept. */
  otherLines: string[];
}

export function startDaemon(configFile: string, emu: Emulator, opts: { env?: NodeJS.ProcessEnv; nodeArgs?: string[]; bin?: string } = {}): Daemon {
  // The caller's BINDER_SYNC_* variables are dropped: each benchmark states the overrides it uses.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('BINDER_SYNC_')));
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.bin ?? BIN, 'run', '--config', configFile], {
    env: { ...inherited, [SECRET_ENV]: emu.credentials.clientSecret, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  const otherLines: string[] = [];
  let partial = '';
  let err = '';
  const waiters: Array<{ match: (l: LogLine) => boolean; from: number; resolve: (l: LogLine) => void }> = [];
  child.stdout!.on('data', (d: Buffer) => {
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const raw of parts) {
      if (!raw.startsWith('{')) {
        if (otherLines.push(raw) > 20_000) otherLines.shift();
        continue;
      }
      let line: LogLine;
      try {
        line = JSON.parse(raw) as LogLine;
      } catch {
        continue;
      }
      lines.push(line);
      for (let i = waiters.length - 1; i >= 0; i--) {
        const w = waiters[i] as (typeof waiters)[number];
        if (lines.length - 1 >= w.from && w.match(line)) {
          waiters.splice(i, 1);
          w.resolve(line);
        }
      }
    }
  });
  child.stderr!.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-20_000);
  });
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      exitCode = code;
      resolve(code);
    }),
  );
  const tail = () => `${lines.slice(-10).map((l) => JSON.stringify(l)).join('\n')}\nstderr: ${err.slice(-2000)}`;
  return {
    otherLines,
    child,
    pid: child.pid as number,
    lines,
    waitFor(match, timeoutMs, what, from = 0) {
      const seen = lines.slice(from).find(match);
      if (seen) return Promise.resolve(seen);
      if (exitCode !== undefined) return Promise.reject(new Error(`daemon exited (${exitCode}) before ${what}\n${tail()}`));
      return new Promise((resolve, reject) => {
        const w = {
          match,
          from,
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
    async stop(timeoutMs = 30_000) {
      if (exitCode !== undefined) return exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    stderr: () => err,
  };
}

let clockTicks: number | null = null;
function ticksPerSecond(): number {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

export interface ProcSample {
  /** process.hrtime in ms when sampled. */
  at: number;
  /** utime + stime of the process (all its threads), ms. */
  cpuMs: number;
  rssKiB: number;
  /** Peak RSS so far (VmHWM). */
  hwmKiB: number;
}

/** CPU time from /proc/<pid>/stat (fields 14 utime, 15 stime) and RSS from /proc/<pid>/status. */
export function sampleProc(pid: number): ProcSample {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may contain spaces: split after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { at: performance.now(), cpuMs: (ticks * 1000) / ticksPerSecond(), rssKiB: kib('VmRSS'), hwmKiB: kib('VmHWM') };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
