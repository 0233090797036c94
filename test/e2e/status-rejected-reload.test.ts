// `status` after a reload the daemon rejected (OPERATIONS section 6: "status shows a rejected reload until one
// applies"): with a config file that no longer passes validation, status failed (exit 2) and showed no daemon
// state; with a changed stateDir, it read the new, empty one ("daemon not running", "never synced") while the
// daemon synced on with the old one (black-box round 31b, F3). Both now show the daemon's running config with the
// file's problem on top.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StatusDocument } from '../../src/cli/status-command.js';
import { createWorkspace, readLocal, runCli, type CliResult, type Workspace } from './harness.js';
import { eventually, msgHas, startDaemonProcess, writeRunConfig, type DaemonProcess } from './run-helpers.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await daemon?.dispose();
  await ws?.close();
  daemon = undefined;
  ws = undefined;
});

const explain = (r: CliResult) => `exit=${r.code}\nstdout=${r.stdout.slice(-3000)}\nstderr=${r.stderr.slice(-2000)}`;

describe('status after a rejected reload', () => {
  it('shows the daemon\'s running config and state, with what is wrong with the file on top', async () => {
    ws = await createWorkspace();
    const w = ws;
    const folder = w.emulator.control.createFolder(w.binderId, { name: 'Docs' });
    w.emulator.control.addDocument(w.binderId, folder.id, 'one.txt', 'one');
    const pair = { name: 'main', localPath: './local', binderId: w.binderId };
    writeRunConfig(w, { pairs: [pair] });
    daemon = startDaemonProcess(w);
    const d = daemon;
    await eventually(() => fs.existsSync(path.join(w.local, 'Docs/one.txt')) && readLocal(w, 'Docs/one.txt') === 'one', 15_000, 'first sync', d.tail);
    const status = (...args: string[]) => runCli(w, ['status', '--config', w.configFile, ...args]);
    const reject = async (what: string) => {
      const before = d.count(msgHas('config reload rejected'));
      d.kill('SIGHUP');
      await eventually(() => d.count(msgHas('config reload rejected')) > before, 10_000, `rejection of ${what}`, d.tail);
      return d.lines.filter((l) => typeof l.msg === 'string' && l.msg.includes('config reload rejected')).at(-1)!;
    };

    // (a) A value out of range: the file cannot be used, the daemon runs on.
    writeRunConfig(w, { pairs: [{ ...pair, pollInterval: '2s' }] });
    await reject('an invalid pollInterval');
    let r: CliResult = await status();
    for (const until = Date.now() + 15_000; Date.now() < until && !/^reload/m.test(r.stdout); ) r = await status();
    expect(r.code, explain(r)).toBe(2); // the file is still what a restart would read, and it would fail
    expect(r.stderr).toContain('pairs[0].pollInterval: must be between 5s and 1d (got 2s)');
    expect(r.stdout, explain(r)).toMatch(/^config +INVALID: config .*: pairs\[0\]\.pollInterval: must be between 5s and 1d \(got 2s\) \(the daemon, pid \d+, runs the config it had before, shown below; a restart would fail\)$/m);
    expect(r.stdout).toMatch(new RegExp(`^daemon +running \\(pid ${d.child.pid}`, 'm'));
    expect(r.stdout).toMatch(/^reload +REJECTED .*pollInterval/m);
    expect(r.stdout).toMatch(/^ {2}state +(idle|syncing)/m);
    expect(r.stdout).toMatch(/^ {2}files in sync +1$/m);
    const json = await status('--json');
    expect(json.code, explain(json)).toBe(2);
    const doc = JSON.parse(json.stdout) as StatusDocument;
    expect(doc.daemon.running).toBe(true);
    expect(doc.stateDir).toBe(w.stateDir);
    expect(doc.runningConfig).toMatchObject({ problem: expect.stringContaining('pollInterval'), fileStateDir: null, stateDir: w.stateDir });
    expect(doc.pairs.map((p) => [p.name, p.filesInSync, p.inDaemon])).toEqual([['main', 1, true]]);

    // (b) Another stateDir: rejected (a restart is needed), with the hint to move the old one's content there.
    writeRunConfig(w, { pairs: [pair] });
    fs.writeFileSync(w.configFile, fs.readFileSync(w.configFile, 'utf8').replace('stateDir: ./state\n', 'stateDir: ./state-new\n'));
    const newDir = path.join(w.dir, 'state-new');
    const rejected = await reject('a new stateDir');
    expect(rejected.msg).toContain(`stateDir changed from ${w.stateDir} to ${newDir}`);
    expect(rejected.msg).toContain(`a new stateDir needs a restart of the daemon, with the old one's content moved there first (stop binder-sync, move everything in ${w.stateDir} into ${newDir}, start it)`);
    r = await status();
    for (const until = Date.now() + 15_000; Date.now() < until && !/^reload +REJECTED .*stateDir changed/m.test(r.stdout); ) r = await status();
    expect(r.code, explain(r)).toBe(0);
    expect(r.stdout, explain(r)).toMatch(new RegExp(`^config +names stateDir ${newDir}, but the daemon \\(pid ${d.child.pid}\\) runs with ${w.stateDir}, shown below`, 'm'));
    expect(r.stdout).toMatch(new RegExp(`^daemon +running \\(pid ${d.child.pid}`, 'm'));
    expect(r.stdout).toMatch(new RegExp(`^state dir +${w.stateDir}$`, 'm'));
    expect(r.stdout).toMatch(/^ {2}files in sync +1$/m);
    expect(r.stdout).not.toMatch(/never synced|daemon not running/);
    expect(fs.existsSync(newDir)).toBe(false);
    const doc2 = JSON.parse((await status('--json')).stdout) as StatusDocument;
    expect(doc2.runningConfig).toMatchObject({ problem: null, fileStateDir: newDir, stateDir: w.stateDir });

    // Once the daemon is gone, the file is read as it is: its stateDir, with nothing synced there yet.
    d.kill('SIGTERM');
    await d.exited;
    const after = await status();
    expect(after.code, explain(after)).toBe(0);
    expect(after.stdout).not.toMatch(/^config /m);
    expect(after.stdout).toMatch(new RegExp(`^state dir +${newDir}$`, 'm'));
  }, 90_000);
});
