// `binder-sync sync` stopped by a signal (black-box round 22, K3): SIGINT or SIGTERM cancels the pass at once and
// cleanly (no temp file left in the sync root, nothing half-recorded), the exit code says which signal (130, 143,
// as a shell reports a process that signal ended), and the next run finishes the work without duplicates.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, createWorkspace, readLocal, runCli, secretOf, sync, type Workspace } from './harness.js';

let ws: Workspace | undefined;
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

/** Temp files anywhere under the sync root. */
function tempFiles(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[]).filter((p) => path.basename(p).startsWith('.binder-sync-tmp-'));
}

async function eventually(check: () => boolean, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `binder-sync sync` as a child process to send signals to; its output collected. */
function startSync(w: Workspace) {
  const child = spawn(process.execPath, [BIN, 'sync', '--config', w.configFile], {
    env: { ...process.env, E2E_SECRET: secretOf(w), BINDER_SYNC_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, out, exited };
}

describe.each([
  ['SIGTERM', 143],
  ['SIGINT', 130],
] as const)('sync stopped by %s mid-download', (signal, code) => {
  it(`exits ${code} within a second or two, leaves no temp file in the sync root, and the next run completes`, async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const folder = c.createFolder(w.binderId, { name: 'Big' });
    const content = Buffer.alloc(256 * 1024, 3);
    const { document } = c.addDocument(w.binderId, folder.id, 'big.bin', content);
    w.writeConfig();
    // Every storage GET waits 30 s before it answers: the download is in flight (its temp file made) when the signal comes.
    c.injectFault({ route: 'storage-get', latencyMs: 30_000 });
    const { child, out, exited } = startSync(w);
    await eventually(() => tempFiles(w.local).length > 0 && c.counters()['storage-get'] > 0, 20_000, 'the download to start');
    const t0 = Date.now();
    child.kill(signal);
    const exitCode = await exited;
    expect(exitCode, out.stderr).toBe(code);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(out.stderr).toContain(`${signal}: cancelling the pass`);
    expect(out.stdout).toContain(`[main] cancelled by ${signal}: 1 step stopped before it finished, nothing half-done left; the next run takes it up`);
    expect(out.stdout).not.toContain('FAILED');
    expect(tempFiles(w.local)).toEqual([]);
    expect(fs.existsSync(path.join(w.local, 'Big', 'big.bin'))).toBe(false);
    // status says it as the pass did: stopped, not failed (it said "state error", "1 action(s) failed; first: GET
    // storage was cancelled": black-box round 31a, F12).
    const shown = (await runCli(w, ['status', '--config', w.configFile])).stdout;
    expect(shown).toMatch(/^ {2}state +daemon not running$/m);
    expect(shown).toMatch(/^ {2}last pass +(just now|\d+ s ago), stopped by the shutdown: 1 step left, the next run takes it up {3}\(/m);
    expect(shown).toMatch(/^ {2}last error +-$/m);

    c.clearFaults();
    const again = await sync(w);
    expect(again.code, again.stderr).toBe(0);
    expect((await runCli(w, ['status', '--config', w.configFile])).stdout).toMatch(/^ {2}last pass +(just now|\d+ s ago) {3}\(/m);
    expect(readLocal(w, 'Big/big.bin')).toBe(content.toString());
    expect(c.listVersions(document.id)).toHaveLength(1);
    expect(tempFiles(w.local)).toEqual([]);
  }, 60_000);
});

describe('a second signal', () => {
  // Two different signals: two pending SIGTERMs could be merged into one by the kernel.
  it('SIGINT and SIGTERM before the cancelled pass has ended: the second stops it at once with its code, and the next run completes', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const folder = c.createFolder(w.binderId, { name: 'Big' });
    const { document } = c.addDocument(w.binderId, folder.id, 'big.bin', Buffer.alloc(64 * 1024, 5));
    w.writeConfig();
    c.injectFault({ route: 'storage-get', latencyMs: 30_000 });
    const { child, out, exited } = startSync(w);
    await eventually(() => tempFiles(w.local).length > 0, 20_000, 'the download to start');
    // Back to back, so that the second comes while the cancelled pass is still ending (waiting for the first to be
    // taken lets a quick cancel finish first). Node may take two pending signals in either order: the one taken
    // second must stop the process at once, with its own code.
    child.kill('SIGINT');
    child.kill('SIGTERM');
    const code = await exited;
    const first = /(SIGINT|SIGTERM): cancelling the pass/.exec(out.stderr)?.[1];
    expect(first, out.stderr).toBeDefined();
    const second = first === 'SIGINT' ? 'SIGTERM' : 'SIGINT';
    expect(out.stderr).toContain(`${second} again: stopping at once`);
    expect(code, out.stderr).toBe(second === 'SIGTERM' ? 143 : 130);

    c.clearFaults();
    const again = await sync(w);
    expect(again.code, again.stderr).toBe(0);
    expect(tempFiles(w.local)).toEqual([]);
    expect(c.listVersions(document.id)).toHaveLength(1);
  }, 60_000);
});

describe('a signal while the pass opens', () => {
  it('a request cancelled by SIGTERM is not reported as an endpoint that failed (black-box round 28b, F7)', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    c.createFolder(w.binderId, { name: 'Docs' });
    w.writeConfig();
    c.injectFault({ route: 'metadataelements', latencyMs: 30_000 });
    const { child, out, exited } = startSync(w);
    await eventually(() => c.counters().metadataelements > 0, 20_000, 'the metadata request');
    await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGTERM');
    expect(await exited, out.stderr).toBe(143);
    expect(`${out.stdout}${out.stderr}`).not.toMatch(/could not read the binder's metadata elements/);
  }, 60_000);
});
