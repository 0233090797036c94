// Benchmark 5b: idle cost of `binder-sync run` over a large synced tree: start-up (time to the first finished
// pass, peak RSS), then CPU (utime+stime from /proc/<pid>/stat) and RSS (VmRSS) over minutes of idling with the
// default pollInterval (60 s), once per watcher backend. Setup: seed the binder, one `binder-sync sync` (untimed).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sampleProc, sleep, startDaemon, type Daemon, type ProcSample } from './lib/daemon.js';
import type { BenchEnv } from './lib/env.js';
import { median, secs, table } from './lib/stats.js';
import { deepSet, folderCount, seedRemote } from './lib/trees.js';
import { benchEmulator, countersText, limitsAt, rmrf, runSync, tempDir, totalRequests, writeConfig } from './lib/workspace.js';

interface Activity {
  activity: string;
  since: string;
}

function activityOf(stateDir: string): Activity | null {
  try {
    const s = JSON.parse(fs.readFileSync(path.join(stateDir, 'daemon-status.json'), 'utf8')) as { pairs?: Record<string, Activity> };
    return s.pairs?.main ?? null;
  } catch {
    return null;
  }
}

const mb = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;

export async function benchIdle(env: BenchEnv, log: (s: string) => void): Promise<string> {
  const files = deepSet('idle', env.idleFiles, 1024);
  const emu = await benchEmulator();
  const work = tempDir('idle');
  const notes: string[] = [];
  const rows: string[][] = [];
  const startRows: string[][] = [];
  let daemon: Daemon | null = null;
  try {
    const binderId = emu.control.createBinder({ name: 'bench-idle' }).id;
    let t0 = Date.now();
    seedRemote(emu, binderId, files);
    const local = path.join(work, 'local');
    const stateDir = path.join(work, 'state');
    log(`idle: seeded ${files.length} documents in ${folderCount(files)} folders in ${Date.now() - t0} ms`);
    t0 = Date.now();
    const fast = { requestsPerSecond: 1000, maxConcurrentRequests: 16, maxConcurrentTransfers: 16 };
    const first = await runSync(writeConfig(work, { emu, binderId, localPath: local, stateDir, limits: fast }), emu);
    notes.push(
      `Setup (untimed): ${files.length} files of 1 KiB in ${folderCount(files)} folders seeded through the control API, then one \`binder-sync sync\` (1000 req/s, 16/16) downloaded them in ${secs(Date.now() - t0)} s (${first.report.done.download ?? 0} downloads).`,
    );
    log(notes[0] as string);

    for (const watcher of env.idleWatchers) {
      // Default limits (100 req/s) and the default pollInterval (60 s): no timing overrides in the env.
      const cfg = writeConfig(work, { emu, binderId, localPath: local, stateDir, limits: limitsAt(100), pairOptions: { watcher } });
      const load0 = os.loadavg()[0] ?? 0;
      emu.control.resetCounters();
      const spawned = performance.now();
      daemon = startDaemon(cfg, emu, { env: { BINDER_SYNC_LOG_LEVEL: 'info' } });
      const d = daemon;
      // Start-up: until the status file says idle after the first pass (sampled every 100 ms).
      let startSample: ProcSample | null = null;
      for (;;) {
        if (d.child.exitCode !== null) throw new Error(`daemon exited ${d.child.exitCode}: ${d.stderr().slice(-2000)}`);
        const a = activityOf(stateDir);
        const s = sampleProc(d.pid);
        if (a?.activity === 'idle') {
          startSample = s;
          break;
        }
        if (performance.now() - spawned > 15 * 60_000) throw new Error('daemon did not finish its first pass in 15 min');
        await sleep(100);
      }
      const startMs = startSample.at - spawned;
      const startRequests = totalRequests(emu.control.counters());
      const startRoutes = countersText(emu.control.counters());
      startRows.push([watcher, secs(startMs), secs(startSample.cpuMs), mb(startSample.hwmKiB), mb(startSample.rssKiB), `${startRequests} (${startRoutes})`]);
      log(`idle[${watcher}]: first pass done after ${secs(startMs)} s, cpu ${secs(startSample.cpuMs)} s, peak RSS ${mb(startSample.hwmKiB)}`);

      // Idle: sample CPU/RSS every idleSampleSeconds, and watch the status file for polls (idle -> syncing -> idle).
      emu.control.resetCounters();
      const begin = sampleProc(d.pid);
      const samples: ProcSample[] = [begin];
      const pollMs: number[] = [];
      let syncingSince: number | null = null;
      // CPU split by what the status file says: during polls (syncing) and between them (idle).
      let mark = begin;
      const cpuIn = { syncing: 0, idle: 0 };
      let nextSample = begin.at + env.idleSampleSeconds * 1000;
      const end = begin.at + env.idleSeconds * 1000;
      while (performance.now() < end) {
        await sleep(250);
        if (d.child.exitCode !== null) throw new Error(`daemon exited ${d.child.exitCode} while idle`);
        const a = activityOf(stateDir);
        if (a?.activity === 'syncing' && syncingSince === null) {
          const s = sampleProc(d.pid);
          cpuIn.idle += s.cpuMs - mark.cpuMs;
          mark = s;
          syncingSince = performance.now();
        }
        if (a?.activity === 'idle' && syncingSince !== null) {
          const s = sampleProc(d.pid);
          cpuIn.syncing += s.cpuMs - mark.cpuMs;
          mark = s;
          pollMs.push(performance.now() - syncingSince);
          syncingSince = null;
        }
        if (performance.now() >= nextSample) {
          samples.push(sampleProc(d.pid));
          nextSample += env.idleSampleSeconds * 1000;
        }
      }
      const last = sampleProc(d.pid);
      samples.push(last);
      cpuIn[syncingSince === null ? 'idle' : 'syncing'] += last.cpuMs - mark.cpuMs;
      const wall = last.at - begin.at;
      const pollTotal = pollMs.reduce((x, y) => x + y, 0);
      const cpu = last.cpuMs - begin.cpuMs;
      const rss = samples.map((s) => s.rssKiB);
      const counters = emu.control.counters();
      const load1 = os.loadavg()[0] ?? 0;
      rows.push([
        watcher,
        secs(wall),
        String(pollMs.length),
        pollMs.length ? secs(median(pollMs)) : '-',
        secs(cpu),
        pollMs.length ? secs(cpuIn.syncing / pollMs.length) : '-',
        `${((100 * cpuIn.idle) / Math.max(1, wall - pollTotal)).toFixed(2)}%`,
        `${((100 * cpu) / wall).toFixed(2)}% (target < 1%: ${cpu / wall < 0.01 ? 'met' : 'MISSED'})`,
        `${mb(Math.min(...rss))} / ${mb(median(rss))} / ${mb(Math.max(...rss))}`,
        `${mb(last.hwmKiB)} (target < 200 MiB: ${Math.max(...rss) < 200 * 1024 ? 'met' : 'MISSED'})`,
        `${totalRequests(counters)} (${countersText(counters)})`,
        `${load0.toFixed(1)} -> ${load1.toFixed(1)}`,
      ]);
      log(`idle[${watcher}]: ${secs(wall)} s, ${pollMs.length} polls, cpu ${((100 * cpu) / wall).toFixed(2)}%, RSS max ${mb(Math.max(...rss))}`);
      const code = await d.stop(60_000);
      daemon = null;
      if (code !== 0) throw new Error(`daemon exited ${code}`);
    }
    return [
      `### 5b. Idle cost of \`binder-sync run\` over ${files.length} files in ${folderCount(files)} folders`,
      '',
      ...notes.map((n) => `- ${n}`),
      `- Daemon with the defaults: pollInterval 60 s (±10% jitter) and pollCpuBudget 1% (a binder whose quiet poll costs more than 1% of the interval is polled less often, see docs/OPERATIONS.md), 100 req/s, pageSize 1000, log level info; \`watcher\` as in the first column (\`auto\` is the folders backend: one fs.watch per folder). CPU = utime+stime of the daemon process (all threads) from /proc/<pid>/stat, RSS = VmRSS sampled every ${env.idleSampleSeconds} s, peak = VmHWM.`,
      `- A poll lists the whole binder (search pages + one request per folder); the emulator answering it runs in the bench process, whose CPU is not counted here.`,
      '',
      'Start-up (spawn -> the first pass over the synced tree has finished, status file says idle):',
      '',
      table(['watcher', 'time to first quiet pass s', 'CPU s', 'peak RSS (VmHWM)', 'RSS then', 'requests'], startRows),
      '',
      `Idling (${env.idleSeconds} s after the first pass):`,
      '',
      table(['watcher', 'measured s', 'polls', 'median poll s', 'CPU s', 'CPU s per poll', 'CPU % between polls', 'CPU %', 'RSS min / median / max', 'peak RSS (incl. start-up)', 'requests while idle', 'load avg (1 min) before -> after'], rows),
    ].join('\n');
  } finally {
    await daemon?.stop(10_000);
    await emu.close();
    rmrf(work);
  }
}
