// A local root the user may not write (chmod 000, a read-only mount): `sync` exits 6 (local filesystem failure,
// README "Exit codes") with a LOCAL_ROOT message and a hint, not 1 with a raw EACCES of the case-sensitivity probe.
// EACCES cannot happen for root, so as root the CLI runs as nobody (setpriv or runuser); skipped when neither exists.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, createWorkspace, secretOf, type CliResult, type Workspace } from './harness.js';

const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;

/**
 * The command prefix that runs a program as an unprivileged user; [] when we are not root; null when impossible:
 * no setpriv/runuser, or that user cannot run the CLI from this checkout (e.g. a clone under a 0700 temp dir).
 */
function unprivileged(): string[] | null {
  if (!isRoot) return [];
  const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
  const prefix = has('setpriv') ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'] : has('runuser') ? ['runuser', '-u', 'nobody', '--'] : null;
  if (prefix === null) return null;
  const [cmd, ...args] = [...prefix, process.execPath, BIN, '--help'];
  return spawnSync(cmd!, args, { stdio: 'ignore', timeout: 30_000 }).status === 0 ? prefix : null;
}
const prefix = unprivileged();

function chownTree(dir: string, uid: number, gid: number): void {
  fs.chownSync(dir, uid, gid);
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) chownTree(p, uid, gid);
    else fs.chownSync(p, uid, gid);
  }
}

function runAs(ws: Workspace, args: string[]): Promise<CliResult> {
  const [cmd, ...rest] = [...(prefix ?? []), process.execPath, BIN, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd!, rest, {
      env: { ...process.env, E2E_SECRET: secretOf(ws), BINDER_SYNC_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

let ws: Workspace | undefined;
afterEach(async () => {
  if (ws) fs.chmodSync(ws.local, 0o755);
  await ws?.close();
  ws = undefined;
});

describe.skipIf(prefix === null)('a local root that cannot be written', () => {
  it('makes sync exit 6 with a LOCAL_ROOT message and hint, and changes nothing', async () => {
    ws = await createWorkspace();
    const folder = ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' });
    ws.emulator.control.addDocument(ws.binderId, folder.id, 'a.txt', 'remote a');
    fs.mkdirSync(ws.local, { recursive: true });
    fs.mkdirSync(ws.stateDir, { recursive: true });
    if (isRoot) {
      // The unprivileged user owns the workspace (config, state), only the local root is closed to it.
      fs.chmodSync(ws.dir, 0o755);
      chownTree(ws.dir, NOBODY, NOBODY);
    }
    fs.chmodSync(ws.local, 0o000);

    const r = await runAs(ws, ['sync', '--config', ws.configFile]);
    const explain = `exit=${r.code} signal=${r.signal}\nstdout=${r.stdout.slice(-2000)}\nstderr=${r.stderr.slice(-2000)}`;
    expect(r.code, explain).toBe(6);
    expect(r.stderr, explain).toContain(`the local root ${ws.local} is not writable by this user (EACCES`);
    expect(r.stderr, explain).toMatch(/hint: binder-sync must be able to read and write the local root: check its owner and mode/);
    // The log line carries the stable code, not UNEXPECTED / a bare fs error.
    const logged = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string; err?: { code?: string } })
      .find((l) => l.msg === 'pass failed');
    expect(logged?.err?.code, explain).toBe('LOCAL_ROOT');
    fs.chmodSync(ws.local, 0o755);
    expect(fs.readdirSync(ws.local)).toEqual([]);
    expect(ws.emulator.control.listDocuments(ws.binderId)).toHaveLength(1);
  });
});
