// `binder-sync status` run by a user who may not read the stateDir (the units make it 0700, the daemon user's):
// it says so and exits 6, as `trash`, `check` and `sync` do, instead of "daemon not running", "never synced",
// "trash empty" and exit 0 (black-box round 31b, F2). EACCES cannot happen for root, so as root the CLI runs as
// nobody (see unprivileged.ts); skipped when it cannot.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, runCli, sync, type CliResult, type Workspace } from './harness.js';
import { isRoot, releaseUnprivileged, unprivilegedCommand } from './unprivileged.js';

let ws: Workspace | undefined;
afterEach(async () => {
  if (ws) fs.chmodSync(ws.stateDir, 0o700);
  await ws?.close();
  ws = undefined;
});

afterAll(releaseUnprivileged);

const explain = (r: CliResult) => `exit=${r.code} signal=${r.signal}\nstdout=${r.stdout.slice(-2000)}\nstderr=${r.stderr.slice(-2000)}`;

describe.skipIf(unprivilegedCommand === null)('status by a user who may not read the stateDir', () => {
  it('exits 6 naming the stateDir (EACCES) with a hint to run it as the daemon\'s user, and --json prints no made-up document', async () => {
    ws = await createWorkspace();
    const w = ws;
    const folder = w.emulator.control.createFolder(w.binderId, { name: 'Docs' });
    w.emulator.control.addDocument(w.binderId, folder.id, 'a.txt', 'remote a');
    expect((await sync(w)).code).toBe(0);
    // The config is readable by the other user (as /etc/binder-sync/sync.yaml 0640 root:binder-sync is for a
    // member of that group); the stateDir is not. A normal user's own 0000 stateDir is closed to it the same way.
    fs.chmodSync(w.dir, 0o755);
    fs.chmodSync(w.configFile, 0o644);
    fs.chmodSync(w.stateDir, isRoot ? 0o700 : 0o000);
    const command = unprivilegedCommand ?? [];

    for (const json of [false, true]) {
      const r = await runCli(w, ['status', '--config', w.configFile, ...(json ? ['--json'] : [])], { command });
      expect(r.code, explain(r)).toBe(6);
      expect(r.stderr, explain(r)).toContain(`cannot read the state directory ${w.stateDir}: EACCES`);
      expect(r.stderr, explain(r)).toMatch(/hint: .*run it as that user \(e\.g\. sudo -u binder-sync binder-sync status \.\.\.\)/);
      expect(r.stdout, explain(r)).toBe('');
    }

    // The stateDir may be read, but the pair's folder in it may not: that pair's state DB is unreadable (exit 6).
    fs.chmodSync(w.stateDir, 0o755);
    fs.chmodSync(path.join(w.stateDir, 'main'), isRoot ? 0o700 : 0o000);
    const r = await runCli(w, ['status', '--config', w.configFile, '--json'], { command });
    fs.chmodSync(path.join(w.stateDir, 'main'), 0o700);
    expect(r.code, explain(r)).toBe(6);
    const pair = (JSON.parse(r.stdout) as { pairs: Array<{ state: string; stateError: string | null }> }).pairs[0]!;
    expect(pair.state).toBe('error');
    expect(pair.stateError).toContain(`cannot read ${path.join(w.stateDir, 'main', 'state.db')}: EACCES`);
  });
});
