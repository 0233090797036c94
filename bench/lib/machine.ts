// Describes the machine a benchmark ran on (cores, CPU model, node, tool versions) for the report.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';

export function cpuModel(): string {
  try {
    const line = fs.readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'));
    return line ? line.split(':').slice(1).join(':').trim() : (os.cpus()[0]?.model ?? 'unknown');
  } catch {
    return os.cpus()[0]?.model ?? 'unknown';
  }
}

/** First line of `cmd --version`-like output, or null when the tool is not installed. */
export function toolVersion(cmd: string, args: string[]): string | null {
  try {
    const out = execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
    return out.split('\n')[0]?.trim() ?? '';
  } catch {
    return null;
  }
}

export function machineLines(): string[] {
  const rclone = toolVersion('rclone', ['version']);
  const unison = toolVersion('unison', ['-version']);
  return [
    `- nproc: ${os.availableParallelism()} (shared with other engineers' test runs: expect noise)`,
    `- CPU: ${cpuModel()}`,
    `- RAM: ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB; OS: ${os.type()} ${os.release()}`,
    `- node: ${process.version}`,
    `- rclone: ${rclone ?? 'not installed'}; unison: ${unison ?? 'not installed'}`,
  ];
}
