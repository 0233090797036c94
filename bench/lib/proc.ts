// Runs a child process to completion and measures its wall time (spawn to exit); stderr goes to a file.
import { spawn } from 'node:child_process';
import fs from 'node:fs';

export interface RunResult {
  code: number | null;
  ms: number;
  stdout: string;
  stderrFile: string;
}

export function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; stderrFile: string; timeoutMs?: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const errFd = fs.openSync(opts.stderrFile, 'w');
    const started = process.hrtime.bigint();
    const child = spawn(cmd, args, { env: { ...process.env, ...opts.env }, cwd: opts.cwd, stdio: ['ignore', 'pipe', errFd] });
    fs.closeSync(errFd);
    const chunks: Buffer[] = [];
    child.stdout?.on('data', (d: Buffer) => chunks.push(d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30 * 60_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      resolve({ code, ms, stdout: Buffer.concat(chunks).toString('utf8'), stderrFile: opts.stderrFile });
    });
  });
}

/** Last lines of a stderr file, for error messages when a run fails. */
export function tail(file: string, lines = 15): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
