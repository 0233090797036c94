// The stateDir lock (src/state/lock.ts) against real processes: a live owner refuses, a dead one or a zombie
// (killed, not yet reaped by its parent) does not.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireStateLock } from '../../src/state/lock.js';

let dir: string;
const kills: Array<() => void> = [];
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'state-lock-'));
});
afterEach(() => {
  for (const k of kills.splice(0)) k();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Starts `sh -c script` and resolves with the first line it prints. */
function firstLine(script: string): Promise<string> {
  const child = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'ignore'] });
  kills.push(() => child.kill('SIGKILL'));
  return new Promise((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())));
}

const procState = (pid: number) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
};

describe.skipIf(process.platform !== 'linux')('the stateDir lock', () => {
  it('refuses while its owner lives, and is taken over from a zombie owner (killed, not reaped yet)', async () => {
    const live = Number(await firstLine('echo $$; exec sleep 30'));
    fs.writeFileSync(path.join(dir, 'binder-sync.lock'), `${live}\n`);
    expect(() => acquireStateLock(dir)).toThrow(expect.objectContaining({ code: 'STATE_LOCKED' }));
    // `sleep 30` never waits for its child: the short sleep stays a zombie once it has exited.
    const zombie = Number(await firstLine('sleep 0.1 & echo $!; exec sleep 30'));
    const deadline = Date.now() + 5000;
    while (procState(zombie) !== 'Z' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(procState(zombie)).toBe('Z');
    fs.writeFileSync(path.join(dir, 'binder-sync.lock'), `${zombie}\n`);
    const lock = acquireStateLock(dir);
    expect(fs.readFileSync(lock.file, 'utf8').trim()).toBe(String(process.pid));
    lock.release();
    expect(fs.existsSync(lock.file)).toBe(false);
  });
});
