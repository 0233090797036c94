// Benchmark 5a: change latency of `binder-sync run` (a child process) against the in-process emulator.
// Local save -> new version committed on the service (the emulator's store is polled every 5 ms), and remote
// new version (control API) -> local file content updated, sequential edits plus a burst of each.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, sleep, type Daemon } from './lib/daemon.js';
import type { BenchEnv } from './lib/env.js';
import { wants } from './lib/env.js';
import { newestProfile, summarizeProfile } from './lib/profile.js';
import { median, percentile, secs, table } from './lib/stats.js';
import { flatSet, seedRemote } from './lib/trees.js';
import { benchEmulator, limitsAt, ROOT, rmrf, tempDir, treeSize, writeConfig } from './lib/workspace.js';

const POLL_EVERY_MS = 5;
const SIZE = 4096;

/** Resolves with performance.now() when `check` first returns true (checked every POLL_EVERY_MS). */
async function until(check: () => boolean, timeoutMs: number, what: string): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (check()) return performance.now();
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await sleep(POLL_EVERY_MS);
  }
}

function sameContent(file: string, want: Buffer): boolean {
  try {
    const st = fs.statSync(file);
    return st.size === want.length && fs.readFileSync(file).equals(want);
  } catch {
    return false;
  }
}

interface Doc {
  id: string;
  abs: string;
}

const ms = (x: number) => `${x.toFixed(0)}`;

export async function benchLatency(env: BenchEnv, log: (s: string) => void): Promise<string> {
  const edits = env.latencyEdits;
  const burst = env.latencyBurst;
  const pollMs = env.latencyPollMs;
  const files = flatSet('lat', Math.max(burst, 20), SIZE);
  const emu = await benchEmulator();
  const work = tempDir('lat');
  let daemon: Daemon | null = null;
  const profDir = path.join(work, 'prof');
  const profiling = wants(env, 'profile');
  try {
    const binderId = emu.control.createBinder({ name: 'bench-latency' }).id;
    seedRemote(emu, binderId, files);
    const local = path.join(work, 'local');
    // The default request rate (100/s) and everything else default: what a user runs.
    const cfg = writeConfig(work, { emu, binderId, localPath: local, stateDir: path.join(work, 'state'), limits: limitsAt(100) });
    if (profiling) fs.mkdirSync(profDir);
    daemon = startDaemon(cfg, emu, {
      env: { BINDER_SYNC_POLL_INTERVAL_MS: String(pollMs), BINDER_SYNC_LOG_LEVEL: 'info' },
      nodeArgs: profiling ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [],
    });
    const d = daemon;
    await until(() => treeSize(local).files === files.length, 120_000, 'first pass downloads');
    await d.waitFor((l) => l.msg.startsWith('pass:'), 60_000, 'first pass summary');
    await sleep(1500);
    const docs: Doc[] = emu.control.listDocuments(binderId).map((v) => {
      const f = files.find((x) => x.name === v.fileName);
      if (!f) throw new Error(`unexpected document ${v.fileName}`);
      return { id: v.id, abs: path.join(local, f.folder, f.name) };
    });
    const latest = (doc: Doc) => emu.control.getDocument(doc.id).latestVersionId;

    // (a) local save -> committed version, sequential.
    const localMs: number[] = [];
    const logMs: number[] = [];
    for (let i = 0; i < edits; i++) {
      const doc = docs[i % docs.length] as Doc;
      const before = latest(doc);
      const content = randomBytes(SIZE);
      const fromLine = d.lines.length;
      const wall = Date.now();
      const t0 = performance.now();
      fs.writeFileSync(doc.abs, content);
      const t1 = await until(() => latest(doc) !== before, 60_000, `local edit ${i} committed`);
      localMs.push(t1 - t0);
      const line = await d.waitFor((l) => l.msg === 'uploaded', 10_000, `uploaded line of edit ${i}`, fromLine);
      logMs.push(line.time - wall);
      if (!emu.control.readContent(doc.id).equals(content)) throw new Error(`edit ${i}: committed content differs`);
      if ((i + 1) % 50 === 0) log(`latency: ${i + 1}/${edits} local edits, median ${ms(median(localMs))} ms`);
    }
    await sleep(1500);

    // (a') burst: `burst` different files saved within ~100 ms; time until every one is committed.
    const bDocs = docs.slice(0, burst);
    const befores = bDocs.map(latest);
    const t0b = performance.now();
    for (const [i, doc] of bDocs.entries()) {
      fs.writeFileSync(doc.abs, randomBytes(SIZE));
      if (i % 5 === 4) await sleep(10);
    }
    const spreadB = performance.now() - t0b;
    const tAllLocal = (await until(() => bDocs.every((doc, i) => latest(doc) !== befores[i]), 120_000, 'local burst committed')) - t0b;
    log(`latency: local burst of ${burst} (written in ${ms(spreadB)} ms) committed after ${ms(tAllLocal)} ms`);
    await sleep(pollMs * 1.2 + 1000);

    // (b) remote new version -> local file updated, sequential. A random delay in [0, poll) before each edit
    // puts it at a random phase of the poll cycle (edits made right after the previous one was applied would
    // always land just after a poll).
    const remoteMs: number[] = [];
    const afterPollMs: number[] = [];
    for (let i = 0; i < edits; i++) {
      const doc = docs[i % docs.length] as Doc;
      await sleep(Math.random() * pollMs);
      const content = randomBytes(SIZE);
      emu.control.resetCounters();
      const t0 = performance.now();
      const wall0 = Date.now();
      emu.control.addVersion(doc.id, content);
      const t1 = await until(() => sameContent(doc.abs, content), 60_000, `remote edit ${i} applied`);
      const wall1 = wall0 + (t1 - t0);
      remoteMs.push(t1 - t0);
      // The daemon is otherwise idle: its first request after the edit starts the poll that found it.
      const first = emu.control.lastRequests(1000).find((r) => r.route !== null);
      if (first) afterPollMs.push(wall1 - Date.parse(first.at));
      if ((i + 1) % 50 === 0) log(`latency: ${i + 1}/${edits} remote edits, median ${ms(median(remoteMs))} ms`);
    }

    // (b') remote burst: `burst` new versions at once; time until every local file has its new content.
    await sleep(Math.random() * pollMs);
    const contents = bDocs.map(() => randomBytes(SIZE));
    const t0r = performance.now();
    bDocs.forEach((doc, i) => emu.control.addVersion(doc.id, contents[i] as Buffer));
    const tAllRemote = (await until(() => bDocs.every((doc, i) => sameContent(doc.abs, contents[i] as Buffer)), 120_000, 'remote burst applied')) - t0r;
    log(`latency: remote burst of ${burst} applied after ${ms(tAllRemote)} ms`);

    const code = await d.stop();
    daemon = null;
    if (code !== 0) throw new Error(`daemon exited ${code}`);
    const row = (what: string, xs: number[]) => [what, String(xs.length), ms(median(xs)), ms(percentile(xs, 99)), ms(Math.min(...xs)), ms(Math.max(...xs))];
    const out = [
      `### 5a. Change latency of \`binder-sync run\` (${edits} sequential edits each way, ${SIZE / 1024} KiB files)`,
      '',
      `- Daemon defaults (100 req/s, watcher \`auto\` = folders, settle 300 ms) except \`BINDER_SYNC_POLL_INTERVAL_MS=${pollMs}\` (±10% jitter).`,
      `- **Local saves wait on purpose**: the daemon uploads a file only once it is 1 s old (the pair setting \`quietPeriod\`, 1 s by default), so ~1 s of every local latency is that guard, not work.`,
      `- Local latency: write -> the emulator's document has a new latestVersionId (polled every ${POLL_EVERY_MS} ms in the bench process); \`uploaded\` log line: its pino time - write time.`,
      `- Remote latency: control-API addVersion -> the local file has the new content, after a random wait in [0, poll) so edits land at random phases of the poll cycle; "after the poll": from the daemon's first request after the edit (the poll that found it) to the file updated.`,
      '',
      table(
        ['direction', 'edits', 'p50 ms', 'p99 ms', 'min ms', 'max ms'],
        [
          row('local save -> version committed', localMs),
          row('  (same, by the `uploaded` log line)', logMs),
          row(`remote version -> local file (poll ${pollMs} ms)`, remoteMs),
          row('  after the poll started', afterPollMs),
        ],
      ),
      '',
      table(
        ['burst', 'files', 'written within ms', 'all done after s'],
        [
          ['local saves -> all committed', String(burst), ms(spreadB), secs(tAllLocal)],
          ['remote versions -> all local files updated', String(burst), '0 (one loop)', secs(tAllRemote)],
        ],
      ),
    ];
    if (profiling) {
      out.push('', `#### CPU profile of the daemon during the latency benchmark (whole run, ${edits * 2} edits + 2 bursts)`, '', summarizeProfile(newestProfile(profDir), ROOT));
    }
    return out.join('\n');
  } finally {
    await daemon?.stop(5_000);
    await emu.close();
    rmrf(work);
  }
}
