// `binder-sync demo` (npm start) as a child process in a temp working directory: the seeded binder arrives, the
// printed commands work as printed (edit -> new remote version, curl -> new local file), Ctrl-C exits 0, a second
// start continues where the first stopped, and nothing is written outside the working directory.
import { exec, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, localTree } from './harness.js';
import { eventually } from './run-helpers.js';

const sh = promisify(exec);
const REPO_DEMO = path.resolve(BIN, '../../demo');

interface DemoRun {
  child: ChildProcess;
  out(): string;
  err(): string;
  /** Parsed JSON log lines (stdout is not a terminal, so the logs are JSON). */
  logs(): Array<{ msg?: string; [k: string]: unknown }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running: DemoRun[] = [];
const cleanup: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const r of running.splice(0)) {
    if (r.child.exitCode === null && r.child.signalCode === null) {
      r.child.kill('SIGKILL');
      await r.exited;
    }
  }
  for (const c of cleanup.splice(0).reverse()) await c();
});

function startDemo(cwd: string, home: string, args: string[]): DemoRun {
  const child = spawn(process.execPath, [BIN, 'demo', ...args], {
    cwd,
    env: {
      ...process.env,
      // Anything written to the home or temp directories would land here (and fail the test).
      HOME: home,
      TMPDIR: home,
      XDG_CONFIG_HOME: home,
      XDG_CACHE_HOME: home,
      XDG_STATE_HOME: home,
      BINDER_SYNC_LOG_LEVEL: 'info',
      // Poll faster than the demo's 10 s so the remote addition arrives quickly.
      BINDER_SYNC_POLL_INTERVAL_MS: '1500',
      BINDER_SYNC_WATCH_SETTLE_MS: '200',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  const run: DemoRun = {
    child,
    out: () => out,
    err: () => err,
    logs: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as { msg?: string }];
          } catch {
            return [];
          }
        }),
    exited,
  };
  running.push(run);
  return run;
}

const explain = (r: DemoRun) => () => `stdout:\n${r.out().slice(-3000)}\nstderr:\n${r.err().slice(-2000)}`;

/** The printed guide: its commands and addresses. */
function parseGuide(text: string) {
  const line = (re: RegExp) => {
    const m = text.split('\n').map((l) => l.trim()).find((l) => re.test(l));
    if (!m) throw new Error(`no line matching ${re} in:\n${text}`);
    return m;
  };
  const versions = /curl -s (http:\/\/127\.0\.0\.1:(\d+)\/_control)\/documents\/([\w-]+)\/versions/.exec(line(/\/versions$/))!;
  return {
    edit: line(/^echo "my first edit" >> /),
    addCurl: line(/^curl -s -X POST /),
    status: line(/binder-sync status --config /),
    controlUrl: versions[1]!,
    port: Number(versions[2]),
    editedDocId: versions[3]!,
  };
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  expect(res.status, url).toBe(200);
  return (await res.json()) as T;
}

function listAll(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

describe('binder-sync demo', () => {
  it('syncs the demo binder, runs the printed commands, stops on Ctrl-C and continues on the next start', { timeout: 120_000 }, async () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'binder-demo-'));
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'binder-demo-home-'));
    cleanup.push(() => fs.rmSync(cwd, { recursive: true, force: true }));
    cleanup.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const repoDemoBefore = fs.existsSync(REPO_DEMO) ? fs.statSync(REPO_DEMO).mtimeMs : null;

    // The preferred port is taken: the demo must pick another one and say so.
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const takenPort = (blocker.address() as net.AddressInfo).port;

    const first = startDemo(cwd, home, ['--port', String(takenPort)]);
    await eventually(() => first.out().includes('Press Ctrl-C to stop'), 60_000, 'the "what to try" guide', explain(first));
    expect(first.out()).toContain('what to try');
    expect(first.out()).toContain(`port ${takenPort} is taken`);
    const guide = parseGuide(first.out());
    expect(guide.port).not.toBe(takenPort);
    expect(guide.status).toBe('npx binder-sync status --config demo/sync.yaml');

    // The config and the secret file: in ./demo, the secret private and not in the YAML.
    const demo = path.join(cwd, 'demo');
    const yamlText = fs.readFileSync(path.join(demo, 'sync.yaml'), 'utf8');
    const secret = fs.readFileSync(path.join(demo, 'client-secret'), 'utf8').trim();
    expect(secret.length).toBeGreaterThan(8);
    expect(yamlText).not.toContain(secret);
    expect(fs.statSync(path.join(demo, 'client-secret')).mode & 0o077).toBe(0);
    const binderId = /binderId: (\S+)/.exec(yamlText)![1]!;

    // The seeded binder is in the local folder, file for file.
    const local = path.join(demo, 'Project Atlas');
    const remoteDocs = await getJson<Array<{ id: string; fileName: string }>>(`${guide.controlUrl}/binders/${binderId}/documents`);
    expect(remoteDocs.length).toBeGreaterThan(250);
    expect(localTree(local).size).toBe(remoteDocs.length);
    // The guide's headline says what the first pass did: everything arrived, nothing left.
    expect(first.out()).toContain(`The binder "Project Atlas" is in sync with the folder demo/Project Atlas (${remoteDocs.length} files)`);

    // 1. The printed edit command: the daemon uploads a new version of that document.
    const versionsUrl = `${guide.controlUrl}/documents/${guide.editedDocId}/versions`;
    const before = (await getJson<unknown[]>(versionsUrl)).length;
    await sh(guide.edit, { cwd });
    let after = before;
    const deadline = Date.now() + 20_000;
    while (after === before && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      after = (await getJson<unknown[]>(versionsUrl)).length;
    }
    expect(after, explain(first)()).toBe(before + 1);
    // status (as the guide says, from the same working directory) sees the running daemon and the synced files.
    const statusRun = await sh(`"${process.execPath}" "${BIN}" status --config demo/sync.yaml --json`, { cwd });
    const statusDoc = JSON.parse(statusRun.stdout) as { daemon: { running: boolean }; pairs: Array<{ name: string; filesInSync: number }> };
    expect(statusDoc.daemon.running).toBe(true);
    expect(statusDoc.pairs[0]?.filesInSync).toBe(remoteDocs.length);

    // 2. The printed curl command adds a document remotely; it arrives locally.
    const added = JSON.parse((await sh(guide.addCurl, { cwd })).stdout) as { document: { fileName: string } };
    expect(added.document.fileName).toBe('Hello from the service.txt');
    const arrived = path.join(local, '05 Correspondence', 'Hello from the service.txt');
    await eventually(() => fs.existsSync(arrived), 20_000, 'the remotely added file to arrive', explain(first));
    expect(fs.readFileSync(arrived, 'utf8')).toBe('Added on the service side through the emulator control API.\n');

    // Ctrl-C: the daemon stops, then the emulator; exit 0 within a few seconds.
    const t0 = Date.now();
    first.child.kill('SIGINT');
    const exit = await first.exited;
    expect(exit, explain(first)()).toEqual({ code: 0, signal: null });
    expect(Date.now() - t0).toBeLessThan(8_000);
    expect(first.out()).toContain('Demo stopped');
    const stopIdx = first.logs().findIndex((l) => l.msg === 'binder-sync daemon stopped');
    expect(stopIdx).toBeGreaterThan(-1);
    await expect(fetch(`${guide.controlUrl}/binders/${binderId}/documents`)).rejects.toThrow();

    // A second start continues: same binder, the remote addition still there, nothing downloaded again.
    // Meanwhile two local files appeared that cannot be uploaded (a new folder, the root): the headline says so.
    fs.mkdirSync(path.join(local, 'New local folder'));
    fs.writeFileSync(path.join(local, 'New local folder', 'draft.txt'), 'waits for a remote folder');
    fs.writeFileSync(path.join(local, 'top.txt'), 'files directly in the root are not uploaded');
    const second = startDemo(cwd, home, ['--port', '0']);
    await eventually(() => second.out().includes('Press Ctrl-C to stop'), 60_000, 'the guide on the second start', explain(second));
    expect(second.out()).toContain(
      `First sync done: ${remoteDocs.length + 1} files in sync; 2 items not synced: see \`npx binder-sync status --config demo/sync.yaml\``,
    );
    expect(second.out()).not.toContain('is in sync with the folder');
    const guide2 = parseGuide(second.out());
    expect(/binderId: (\S+)/.exec(fs.readFileSync(path.join(demo, 'sync.yaml'), 'utf8'))![1]).toBe(binderId);
    // The name is taken now (the service kept it), so the guide offers the next free one.
    expect(guide2.addCurl).toContain('Hello from the service 2.txt');
    expect(second.logs().filter((l) => l.msg === 'downloaded')).toHaveLength(0);
    expect(localTree(local).size).toBe(remoteDocs.length + 3);
    second.child.kill('SIGINT');
    expect(await second.exited).toEqual({ code: 0, signal: null });

    // Nothing outside the working directory: home/temp untouched, only ./demo created, the repo's ./demo as it was.
    expect(listAll(home)).toEqual([]);
    expect(fs.readdirSync(cwd)).toEqual(['demo']);
    expect(fs.existsSync(REPO_DEMO) ? fs.statSync(REPO_DEMO).mtimeMs : null).toBe(repoDemoBefore);
    expect(fs.existsSync(path.join(demo, 'binder-sync.lock'))).toBe(false);
  });

  it.skipIf(!fs.existsSync('/proc/self/status'))('stops cleanly on SIGHUP (a closed terminal), also while it is still loading: never killed by it', { timeout: 60_000 }, async () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'binder-demo-'));
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'binder-demo-home-'));
    cleanup.push(() => fs.rmSync(cwd, { recursive: true, force: true }));
    cleanup.push(() => fs.rmSync(home, { recursive: true, force: true }));
    /** True once the process catches SIGHUP (bit 0 of SigCgt in /proc/<pid>/status). */
    const catchesHup = (pid: number) => {
      try {
        const m = /^SigCgt:\s*([0-9a-f]+)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
        return m !== null && (BigInt(`0x${m[1]}`) & 1n) === 1n;
      } catch {
        return false;
      }
    };

    // The first moment SIGHUP is caught is while the command's modules still load: the demo stops before it
    // starts anything (exit 0, ./demo not even created) instead of dying with 129.
    const early = startDemo(cwd, home, ['--port', '0']);
    const pid = early.child.pid!;
    // Looked at every millisecond, not at eventually()'s 100 ms: the bundled CLI loads the demo's modules in well
    // under 100 ms, so a slower look would often find the demo already started.
    const deadline = Date.now() + 20_000;
    while (!catchesHup(pid) && early.child.exitCode === null) {
      if (Date.now() > deadline) throw new Error(`timed out: the demo to catch SIGHUP\n${explain(early)()}`);
      await new Promise((r) => setTimeout(r, 1));
    }
    early.child.kill('SIGHUP');
    expect(await early.exited, explain(early)()).toEqual({ code: 0, signal: null });
    expect(early.out()).toContain('Demo stopped (SIGHUP) before it started');
    expect(fs.readdirSync(cwd)).toEqual([]);

    // Running (the first pass under way or done): the daemon and the emulator stop, exit 0.
    const running = startDemo(cwd, home, ['--port', '0']);
    await eventually(() => running.out().includes('Syncing it into'), 30_000, 'the demo to start', explain(running));
    running.child.kill('SIGHUP');
    expect(await running.exited, explain(running)()).toEqual({ code: 0, signal: null });
    expect(running.out()).toContain('Demo stopped');
    expect(fs.existsSync(path.join(cwd, 'demo', 'binder-sync.lock'))).toBe(false);
  });

  it('refuses a second demo in the same directory while one runs (exit 5)', { timeout: 60_000 }, async () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'binder-demo-'));
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'binder-demo-home-'));
    cleanup.push(() => fs.rmSync(cwd, { recursive: true, force: true }));
    cleanup.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const first = startDemo(cwd, home, ['--port', '0']);
    await eventually(() => first.out().includes('Syncing it into'), 30_000, 'the demo to start', explain(first));
    const second = startDemo(cwd, home, ['--port', '0']);
    expect(await second.exited).toEqual({ code: 5, signal: null });
    expect(second.err()).toContain('a demo is already running');
    first.child.kill('SIGINT');
    expect(await first.exited).toEqual({ code: 0, signal: null });
  });
});
