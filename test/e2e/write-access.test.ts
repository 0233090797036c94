// Write access learned the expensive way: a service that hands out upload slots but refuses the commit (403)
// is found out only after a file's bytes were sent. The refusal is kept in the state DB, so the next `sync`
// sends one file (the smallest) first and the rest only once a commit goes through; a daemon that went
// download-only looks again after a while and picks up access granted later, without a restart.
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, writeLocal, type Workspace } from './harness.js';
import { docsByName, explain, syncJson, versionCounts } from './scenario-helpers.js';
import { eventually, msgHas, startDaemonProcess, writeRunConfig, type DaemonProcess } from './run-helpers.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await daemon?.dispose();
  await ws?.close();
  daemon = undefined;
  ws = undefined;
});

const TRIAL = 'uploading one file first';

describe('commits refused for lack of write access', () => {
  it('the next sync sends only the smallest file, and everything once the service takes commits again', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    c.createFolder(w.binderId, { name: 'Docs' });
    const sizes: Record<string, number> = { 'a.txt': 3000, 'b.txt': 2000, 'c.txt': 5000, 'd.txt': 4000 };
    for (const [name, size] of Object.entries(sizes)) writeLocal(w, `Docs/${name}`, name[0]!.repeat(size));
    c.injectFault({ route: 'commit', status: 403 });
    const puts = () => c.counters()['storage-put'];

    const first = await syncJson(w);
    expect(first.code, explain(first)).not.toBe(0);
    expect(first.stderr).toContain('lack of write access');
    const putsFirst = puts();
    expect(putsFirst).toBeGreaterThanOrEqual(1);

    // A new process: one trial, the smallest changed file, and nothing else sent.
    writeLocal(w, 'Docs/e.txt', 'e'.repeat(1000));
    const second = await syncJson(w);
    expect(second.code, explain(second)).not.toBe(0);
    expect(puts() - putsFirst).toBe(1);
    expect(second.stderr).toContain(TRIAL);
    expect(second.stderr).toContain('Docs/e.txt');
    const waiting = second.report!.issues.filter((i) => i.code === 'local-change-not-uploaded').map((i) => i.relPath).sort();
    expect(waiting).toEqual(['Docs/a.txt', 'Docs/b.txt', 'Docs/c.txt', 'Docs/d.txt', 'Docs/e.txt']);
    expect(second.report!.issues.find((i) => i.relPath === 'Docs/a.txt')?.detail).toContain('read-only access');
    expect(c.listDocuments(w.binderId)).toEqual([]);

    // Access granted: the trial goes through and the rest follows in the same run, each file once.
    c.clearFaults();
    const putsBefore = puts();
    const third = await syncJson(w);
    expect(third.code, explain(third)).toBe(0);
    expect(third.stderr).toContain(TRIAL);
    expect(third.stderr).toContain('uploads resume');
    expect([...docsByName(w).keys()].sort()).toEqual(['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt']);
    expect(puts() - putsBefore).toBe(5);
    expect([...versionCounts(w).values()]).toEqual([1, 1, 1, 1, 1]);

    // Forgotten: the next upload goes without a trial.
    writeLocal(w, 'Docs/f.txt', 'f');
    const fourth = await syncJson(w);
    expect(fourth.code, explain(fourth)).toBe(0);
    expect(fourth.stderr).not.toContain(TRIAL);
    expect(docsByName(w).has('f.txt')).toBe(true);
  }, 60_000);

  it('a daemon that went download-only checks again and uploads once access is granted, without a restart', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    c.createFolder(w.binderId, { name: 'Docs' });
    writeLocal(w, 'Docs/local.txt', 'waits for write access');
    c.injectFault({ route: 'commit', status: 403 });
    writeRunConfig(w);
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_WRITE_ACCESS_RECHECK_MS: '3000' } });
    const d = daemon;
    await d.waitForLog(msgHas('lack of write access'), 15_000, 'the read-only warning');
    expect(c.listDocuments(w.binderId)).toEqual([]);

    c.clearFaults();
    await d.waitForLog(msgHas('checking write access again'), 15_000, 'the recheck');
    await eventually(() => docsByName(w).has('local.txt'), 15_000, 'the upload after the recheck', d.tail);
    await d.waitForLog(msgHas('uploads resume'), 5_000, 'the all-clear');
    expect(versionCounts(w).get(docsByName(w).get('local.txt')!.id)).toBe(1);
    expect(d.child.exitCode).toBeNull();
  }, 60_000);
});
