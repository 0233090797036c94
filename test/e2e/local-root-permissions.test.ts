// A local root the user may not write (chmod 000, a read-only mount): `sync` exits 6 (local filesystem failure,
// README "Exit codes") with a LOCAL_ROOT message and a hint, not 1 with a raw EACCES of the case-sensitivity probe.
// A state directory the user may not write (root-owned): `sync` and `run` exit 6 with LOCAL_STATE_DIR, naming it.
// EACCES cannot happen for root, so as root the CLI runs as nobody (see unprivileged.ts); skipped when it cannot.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, runCli, sync, type CliResult, type Workspace } from './harness.js';
import { chownTree, isRoot, NOBODY, releaseUnprivileged, unprivilegedCommand } from './unprivileged.js';

let ws: Workspace | undefined;
afterEach(async () => {
  if (ws) fs.chmodSync(ws.local, 0o755);
  await ws?.close();
  ws = undefined;
});

afterAll(releaseUnprivileged);

describe.skipIf(unprivilegedCommand === null)('a local root that cannot be written', () => {
  it('makes sync exit 6 with a LOCAL_ROOT message and hint, and changes nothing', async () => {
    ws = await createWorkspace();
    const folder = ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' });
    ws.emulator.control.addDocument(ws.binderId, folder.id, 'a.txt', 'remote a');
    fs.mkdirSync(ws.local, { recursive: true });
    fs.mkdirSync(ws.stateDir, { recursive: true });
    if (isRoot) {
      // The unprivileged user owns the workspace (config, state), only the local root is closed to it.
      fs.chmodSync(ws.dir, 0o755);
      chownTree(ws.dir);
    }
    fs.chmodSync(ws.local, 0o000);

    const r = await runCli(ws, ['sync', '--config', ws.configFile], { command: unprivilegedCommand ?? [], env: { BINDER_SYNC_LOG_LEVEL: 'debug' } });
    const explain = `exit=${r.code} signal=${r.signal}\nstdout=${r.stdout.slice(-2000)}\nstderr=${r.stderr.slice(-2000)}`;
    expect(r.code, explain).toBe(6);
    expect(r.stderr, explain).toContain(`the local root ${ws.local} is not writable by this user (EACCES`);
    expect(r.stderr, explain).toMatch(/hint: binder-sync must be able to read and write the local root: check its owner and mode/);
    // The (debug) log line carries the stable code, not UNEXPECTED / a bare fs error.
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

describe.skipIf(unprivilegedCommand === null || !isRoot)('a state directory that cannot be written', () => {
  it('makes sync and run exit 6 naming the stateDir with a hint, a stale lock included, and changes nothing', async () => {
    ws = await createWorkspace();
    const w = ws;
    const folder = w.emulator.control.createFolder(w.binderId, { name: 'Docs' });
    w.emulator.control.addDocument(w.binderId, folder.id, 'a.txt', 'remote a');
    fs.mkdirSync(w.local, { recursive: true });
    fs.chmodSync(w.dir, 0o755);
    chownTree(w.dir); // the user owns its workspace and local root...
    fs.mkdirSync(w.stateDir, { mode: 0o755 }); // ...but the stateDir belongs to root, as when a unit's StateDirectory is wrong
    const command = unprivilegedCommand ?? [];
    const expectRefused = (r: CliResult, doing: string) => {
      const explain = `exit=${r.code} signal=${r.signal}\nstdout=${r.stdout.slice(-2000)}\nstderr=${r.stderr.slice(-2000)}`;
      expect(r.code, explain).toBe(6);
      expect(r.stderr, explain).toContain(`the state directory ${w.stateDir} is not writable by this user (EACCES when ${doing})`);
      expect(r.stderr, explain).toMatch(/hint: binder-sync keeps its lock, state databases and trash in stateDir: make .* writable by the user binder-sync runs as \(uid 65534\)/);
    };
    expectRefused(await runCli(w, ['sync', '--config', w.configFile], { command }), 'creating its lock file');
    const run = await runCli(w, ['run', '--config', w.configFile], { command, timeoutMs: 20_000 });
    // The daemon says it in its log (JSON on stdout, message and hint), not as a plain line on stderr.
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(6);
    const said = JSON.parse(run.stdout.split('\n').find((l) => l.includes('"code":"LOCAL_STATE_DIR"'))!) as { msg: string; hint: string };
    expect(said.msg).toContain(`the state directory ${w.stateDir} is not writable by this user (EACCES when creating its lock file)`);
    expect(said.hint).toMatch(/^binder-sync keeps its lock, state databases and trash in stateDir: make .* writable by the user binder-sync runs as \(uid 65534\)/);

    // A lock file left by a crashed instance that the user can no longer remove.
    fs.writeFileSync(path.join(w.stateDir, 'binder-sync.lock'), '999999999\n');
    expectRefused(await runCli(w, ['sync', '--config', w.configFile], { command }), 'removing the stale lock file of pid 999999999');
    expect(fs.readdirSync(w.local)).toEqual([]);
    expect(fs.readdirSync(w.stateDir)).toEqual(['binder-sync.lock']);

    // The stateDir is the user's, but the pair's folder in it is not: the same error names that folder.
    fs.rmSync(path.join(w.stateDir, 'binder-sync.lock'));
    fs.chownSync(w.stateDir, NOBODY, NOBODY);
    const pairDir = path.join(w.stateDir, 'main');
    fs.mkdirSync(pairDir, { mode: 0o755 });
    const r = await runCli(w, ['sync', '--config', w.configFile], { command });
    expect(r.code, r.stderr).toBe(6);
    expect(r.stderr).toContain(`the state directory ${pairDir} is not writable by this user (EACCES when creating state.db in it)`);
    expect(fs.readdirSync(w.local)).toEqual([]);
    expect(fs.readdirSync(pairDir)).toEqual([]);
  });
});

describe.skipIf(!isRoot)('a state directory of another user', () => {
  it('sync run by root on a setup owned by the service user says, before it writes anything, that the files it makes will be root\'s (black-box round 28b, F8)', async () => {
    ws = await createWorkspace();
    const w = ws;
    w.emulator.control.createFolder(w.binderId, { name: 'Docs' });
    fs.mkdirSync(w.stateDir, { recursive: true });
    fs.chownSync(w.stateDir, NOBODY, NOBODY);
    const output = (x: CliResult) => `${x.stdout}\n${x.stderr}`;
    const r = await sync(w);
    expect(r.code, output(r)).toBe(0);
    expect(output(r)).toContain(`the state directory ${w.stateDir} belongs to uid ${NOBODY}, not to this user (uid 0)`);
    expect(output(r)).toContain(`sudo -u '#${NOBODY}' binder-sync`);
    fs.chownSync(w.stateDir, 0, 0);
    expect(output(await sync(w))).not.toContain('belongs to uid');
  });
});
