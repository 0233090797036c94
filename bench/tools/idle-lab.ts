// Developer tool (not part of `npm run bench`): sets up a large synced tree once, then runs `binder-sync run`
// rounds on demand so the idle daemon can be profiled and re-measured after each rebuild without the ~4 min
// setup. Usage: `npm run build && tsc -p bench/tsconfig.json && node bench/.out/bench/tools/idle-lab.js`;
// then write a round's JSON to <ctl>/go, e.g. {"seconds":120,"pollMs":20000,"profile":true}; results are
// printed to stdout. `{"quit":true}` ends it. BENCH_IDLE_FILES sets the tree size (default 100000).
// An A/B of daemon restarts between two builds (each a checkout with its own dist/), interleaved:
// {"restarts":8,"bins":{"old":"/tmp/old/bin/binder-sync.js","new":"bin/binder-sync.js"}}; the same for no-op
// `sync` runs: {"syncs":8,"bins":{...}} (each build on its own copy of the state).
import fs from 'node:fs';
import path from 'node:path';
import { sampleProc, sleep, startDaemon } from '../lib/daemon.js';
import { summarizeProfile, newestProfile } from '../lib/profile.js';
import { deepSet, seedRemote } from '../lib/trees.js';
import { benchEmulator, limitsAt, ROOT, runSync, SECRET_ENV, tempDir, writeConfig, countersText } from '../lib/workspace.js';
import { run, tail } from '../lib/proc.js';
import { median } from '../lib/stats.js';

interface Round {
  seconds?: number;
  pollMs?: number;
  profile?: boolean;
  heapSignal?: boolean;
  quit?: boolean;
  /** RSS sample period while idle (default 5000 ms); the printed list is then of max per 5 s. */
  sampleMs?: number;
  /** A poll round: this many listings in a child process instead of a daemon. */
  polls?: number;
  /** A sync round: this many no-op `binder-sync sync` runs (timed, spawn to exit) instead of a daemon. */
  syncs?: number;
  /**
   * A restart round: this many daemon starts over the synced tree, each timed from spawn to its first pass done
   * (the 'quiet pass' line's pino time, as benchmark 3 does), interleaved across `bins` (name -> path of a
   * binder-sync.js; default the checkout's) for an A/B of two builds.
   */
  restarts?: number;
  bins?: Record<string, string>;
  rps?: number;
  pageSize?: number;
  watcher?: string;
  env?: Record<string, string>;
  /** More node flags for the daemon (e.g. --trace-gc; its lines are saved with the log). */
  nodeArgs?: string[];
}

const ctl = process.env.IDLE_LAB_CTL ?? '/tmp/idle-lab';
fs.mkdirSync(ctl, { recursive: true });
const n = Number(process.env.BENCH_IDLE_FILES ?? 100000);
const files = deepSet('idle', n, 1024);
const emu = await benchEmulator();
const work = tempDir('idlelab');
const binderId = emu.control.createBinder({ name: 'lab' }).id;
seedRemote(emu, binderId, files);
const local = path.join(work, 'local');
const stateDir = path.join(work, 'state');
let t0 = Date.now();
await runSync(writeConfig(work, { emu, binderId, localPath: local, stateDir, limits: { requestsPerSecond: 1000, maxConcurrentRequests: 16, maxConcurrentTransfers: 16 } }), emu);
fs.writeFileSync(path.join(ctl, 'secret'), emu.credentials.clientSecret, { mode: 0o600 });
console.log(`setup: ${n} files synced in ${Date.now() - t0} ms; work dir ${work}; waiting for ${ctl}/go`);
for (;;) {
  const go = path.join(ctl, 'go');
  if (!fs.existsSync(go)) {
    await sleep(500);
    continue;
  }
  const round = JSON.parse(fs.readFileSync(go, 'utf8')) as Round;
  fs.rmSync(go);
  if (round.quit) break;
  if (round.polls) {
    // N listings in a child process (no daemon): the client's cost of a quiet poll, profiled on demand.
    const cfgPoll = writeConfig(work, { emu, binderId, localPath: local, stateDir, limits: limitsAt(round.rps ?? 100), pageSize: round.pageSize ?? 1000 });
    const profPoll = path.join(work, `prof-poll-${Date.now()}`);
    fs.mkdirSync(profPoll);
    const child = path.join(ROOT, 'bench', '.out', 'bench', 'tools', 'poll-child.js');
    const r = await run(process.execPath, [...(round.profile ? ['--cpu-prof', '--cpu-prof-dir', profPoll] : []), child, cfgPoll, String(round.polls)], {
      env: { [SECRET_ENV]: emu.credentials.clientSecret },
      stderrFile: path.join(work, 'poll.err'),
    });
    console.log(r.stdout + tail(path.join(work, 'poll.err')) + ` (exit ${r.code})`);
    if (round.profile) console.log(summarizeProfile(newestProfile(profPoll), ROOT, 30));
    console.log('round: done');
    continue;
  }
  if (round.syncs && round.bins) {
    // A/B of no-op syncs: each build gets its own copy of the state (an older build may not read a newer
    // state DB), one untimed sync to leave its own in-sync mark, then the timed runs, interleaved.
    const sides = Object.entries(round.bins).map(([name, bin]) => {
      const dir = path.join(work, `ab-${name}`);
      fs.rmSync(dir, { recursive: true, force: true });
      fs.mkdirSync(dir);
      fs.cpSync(stateDir, path.join(dir, 'state'), { recursive: true });
      const cfg = writeConfig(dir, { emu, binderId, localPath: local, stateDir: path.join(dir, 'state'), limits: limitsAt(round.rps ?? 1000), pageSize: round.pageSize ?? 1000 });
      return { name, bin, cfg, ms: [] as number[] };
    });
    for (const side of sides) await runSync(side.cfg, emu, { bin: side.bin });
    for (let i = 0; i < round.syncs; i++) {
      for (const side of sides) {
        const s0 = performance.now();
        const r = await runSync(side.cfg, emu, { bin: side.bin });
        side.ms.push(Math.round(performance.now() - s0));
        if (r.report.hashed !== 0) console.log(`round: sync ${side.name} hashed ${r.report.hashed}`);
      }
    }
    for (const side of sides) console.log(`round: sync ${side.name}: median ${median(side.ms)} ms; runs ${side.ms.join(' ')}`);
    console.log('round: done');
    continue;
  }
  if (round.syncs) {
    const cfgSync = writeConfig(work, { emu, binderId, localPath: local, stateDir, limits: limitsAt(round.rps ?? 1000), pageSize: round.pageSize ?? 1000 });
    const profSync = path.join(work, `prof-sync-${Date.now()}`);
    fs.mkdirSync(profSync);
    for (let i = 0; i < round.syncs; i++) {
      emu.control.resetCounters();
      const s0 = performance.now();
      const r = await runSync(cfgSync, emu, { nodeArgs: [...(round.nodeArgs ?? []), ...(round.profile ? ['--cpu-prof', '--cpu-prof-dir', profSync] : [])] });
      console.log(`round: sync ${((performance.now() - s0) / 1000).toFixed(2)} s, hashed ${r.report.hashed}, requests ${countersText(emu.control.counters())}`);
    }
    if (round.profile) console.log(summarizeProfile(newestProfile(profSync), ROOT, 30));
    console.log('round: done');
    continue;
  }
  if (round.restarts) {
    const cfgRestart = writeConfig(work, { emu, binderId, localPath: local, stateDir, limits: limitsAt(round.rps ?? 1000), pairOptions: { watcher: round.watcher ?? 'auto' } });
    const bins = Object.entries(round.bins ?? { cur: path.join(ROOT, 'bin', 'binder-sync.js') });
    const times = new Map<string, number[]>(bins.map(([name]) => [name, []]));
    for (let i = 0; i < round.restarts; i++) {
      for (const [name, bin] of bins) {
        const t = Date.now();
        const d = startDaemon(cfgRestart, emu, { bin, env: { BINDER_SYNC_LOG_LEVEL: 'debug', ...round.env } });
        try {
          const line = await d.waitFor((l) => l.msg === 'quiet pass' || (typeof l.msg === 'string' && l.msg.startsWith('pass: ')), 60_000, 'first pass');
          if (line.msg !== 'quiet pass') throw new Error(`the restart did something: ${line.msg}`);
          times.get(name)!.push(line.time - t);
        } finally {
          await d.stop();
        }
        await sleep(300);
      }
    }
    for (const [name, ms] of times) console.log(`round: restart ${name}: median ${median(ms)} ms; runs ${ms.join(' ')}`);
    console.log('round: done');
    continue;
  }
  const cfg = writeConfig(work, { emu, binderId, localPath: local, stateDir, limits: limitsAt(round.rps ?? 100), pairOptions: { watcher: round.watcher ?? 'auto' } });
  const profDir = path.join(work, `prof-${Date.now()}`);
  fs.mkdirSync(profDir);
  const nodeArgs = [...(round.nodeArgs ?? []), ...(round.profile ? ['--cpu-prof', '--cpu-prof-dir', profDir] : []), ...(round.heapSignal ? ['--heapsnapshot-signal=SIGUSR2'] : [])];
  emu.control.resetCounters();
  t0 = performance.now();
  const d = startDaemon(cfg, emu, { nodeArgs, env: { BINDER_SYNC_LOG_LEVEL: 'info', ...(round.pollMs ? { BINDER_SYNC_POLL_INTERVAL_MS: String(round.pollMs) } : {}), ...round.env } });
  // First pass: until the status file says idle.
  for (;;) {
    await sleep(200);
    try {
      const s = JSON.parse(fs.readFileSync(path.join(stateDir, 'daemon-status.json'), 'utf8')) as { pairs?: Record<string, { activity: string }> };
      if (s.pairs?.main?.activity === 'idle') break;
    } catch {
      /* not yet */
    }
  }
  const start = sampleProc(d.pid);
  const threads0 = threadCpu(d.pid);
  console.log(`round: first pass ${((start.at - t0) / 1000).toFixed(1)} s, cpu ${(start.cpuMs / 1000).toFixed(2)} s, rss ${(start.rssKiB / 1024).toFixed(0)} MiB, hwm ${(start.hwmKiB / 1024).toFixed(0)} MiB`);
  emu.control.resetCounters();
  const rss: number[] = [];
  const end = start.at + (round.seconds ?? 60) * 1000;
  let last = start;
  const every = round.sampleMs ?? 5000;
  let window: number[] = [];
  while (performance.now() < end) {
    await sleep(every);
    last = sampleProc(d.pid);
    window.push(last.rssKiB / 1024);
    if (window.length * every >= 5000) {
      rss.push(Math.max(...window));
      window = [];
    }
  }
  const cpu = last.cpuMs - start.cpuMs;
  const wall = last.at - start.at;
  console.log(`round: idle ${(wall / 1000).toFixed(0)} s, cpu ${(cpu / 1000).toFixed(2)} s = ${((100 * cpu) / wall).toFixed(2)}%, rss ${rss.map((r) => r.toFixed(0)).join(' ')} MiB, hwm ${(last.hwmKiB / 1024).toFixed(0)} MiB; requests ${countersText(emu.control.counters())}`);
  const threads1 = threadCpu(d.pid);
  console.log(`round: cpu by thread while idle: ${[...threads1].map(([k, v]) => `${k} ${((v - (threads0.get(k) ?? 0)) / 1000).toFixed(2)} s`).join(', ')}`);
  const polls = d.lines.filter((l) => /pass/.test(l.msg)).length;
  console.log(`round: ${polls} log lines mentioning pass; last lines: ${d.lines.slice(-3).map((l) => l.msg).join(' | ')}`);
  await d.stop(60_000);
  fs.writeFileSync(path.join(ctl, 'daemon-log.jsonl'), d.lines.map((l) => JSON.stringify(l)).join('\n'));
  fs.writeFileSync(path.join(ctl, 'daemon-stdout-other.txt'), d.otherLines.join('\n'));
  if (round.profile) console.log(summarizeProfile(newestProfile(profDir), ROOT, 30));
  console.log('round: done');
}
await emu.close();

/** CPU ms per thread name (/proc/<pid>/task/<tid>/stat), summed over threads of the same name. */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(name, (out.get(name) ?? 0) + ((Number(f[11]) + Number(f[12])) * 1000) / 100);
    } catch {
      /* thread ended */
    }
  }
  return out;
}
