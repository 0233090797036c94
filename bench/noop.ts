// Benchmark 3: a no-op pass over a tree already in sync (second `binder-sync sync`, as it runs by default and
// with --walk-folders) and a daemon restart over it (spawn of `binder-sync run` -> its first pass has ended):
// wall time, files hashed (must be 0), requests; side by side with unison's update detection (two local
// replicas) and `rclone check`.
// Setup seeds the binder through the control API and syncs once with raised limits (untimed).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { BenchEnv } from './lib/env.js';
import { wants } from './lib/env.js';
import { startDaemon } from './lib/daemon.js';
import { toolVersion } from './lib/machine.js';
import { newestProfile, summarizeProfile } from './lib/profile.js';
import { run, tail } from './lib/proc.js';
import { median, ratio, runsList, secs, table } from './lib/stats.js';
import { deepSet, folderCount, seedRemote } from './lib/trees.js';
import { benchEmulator, countersText, limitsAt, ROOT, rmrf, runSync, tempDir, totalRequests, writeConfig, type Limits } from './lib/workspace.js';

export async function benchNoop(env: BenchEnv, log: (s: string) => void): Promise<string> {
  const files = deepSet('noop', env.noopFiles, 1024);
  const emu = await benchEmulator();
  const work = tempDir('noop');
  const notes: string[] = [];
  try {
    const binderId = emu.control.createBinder({ name: 'bench-noop' }).id;
    let t0 = Date.now();
    seedRemote(emu, binderId, files);
    log(`noop: seeded ${files.length} documents in ${folderCount(files)} folders in ${Date.now() - t0} ms`);
    const local = path.join(work, 'local');
    const stateDir = path.join(work, 'state');
    const config = (limits: Limits) => writeConfig(work, { emu, binderId, localPath: local, stateDir, limits });
    t0 = Date.now();
    const first = await runSync(config({ requestsPerSecond: 1000, maxConcurrentRequests: 16, maxConcurrentTransfers: 16 }), emu);
    notes.push(`Setup: ${files.length} files of 1 KiB in ${folderCount(files)} folders, seeded through the control API, first sync (download, 1000 req/s, 16/16 concurrency) took ${secs(Date.now() - t0)} s (${first.report.done.download ?? 0} downloads).`);
    log(notes[0] as string);

    const replica = path.join(work, 'replica');
    const unisonOk = toolVersion('unison', ['-version']) !== null;
    const rcloneOk = toolVersion('rclone', ['version']) !== null;
    const unisonEnv = { UNISON: path.join(work, 'unison-archive'), HOME: work };
    const unisonArgs = [local, replica, '-batch', '-ui', 'text', '-silent', '-times'];
    if (unisonOk || rcloneOk) execFileSync('cp', ['-a', local, replica]);
    if (unisonOk) {
      t0 = Date.now();
      const r = await run('unison', unisonArgs, { env: unisonEnv, stderrFile: path.join(work, 'unison.stderr') });
      if (r.code !== 0) throw new Error(`unison (initial) exited ${r.code}: ${tail(r.stderrFile)}`);
      notes.push(`unison's first run (builds its archive, hashes everything) took ${secs(Date.now() - t0)} s (untimed setup).`);
    }

    const rows: string[][] = [];
    type Series = { ms: number[]; hashed: number[]; requests: number[]; routes: string };
    // Each request rate, as `sync` runs by default (the 1,109-folder tree, walked seconds before by the first run
    // or by the --walk-folders run, stands in for a walk where the walk alone takes over a second) and with
    // --walk-folders (every folder listed).
    const variants = env.rpsList.flatMap((rps) => [{ rps, args: [] as string[] }, { rps, args: ['--walk-folders'] }]);
    const bsBy = new Map<(typeof variants)[number], Series>(variants.map((v) => [v, { ms: [], hashed: [], requests: [], routes: '' }]));
    const restart = { ms: [] as number[], hashed: [] as number[], requests: [] as number[], routes: '' };
    const un: number[] = [];
    const rc: number[] = [];
    const runs = Math.max(1, env.runs);
    for (let i = 0; i < runs; i++) {
      for (const [v, s] of bsBy) {
        const cfg = config(limitsAt(v.rps));
        emu.control.resetCounters();
        const r = await runSync(cfg, emu, { args: v.args });
        if (r.report.actions.length > 0) throw new Error(`no-op pass planned actions: ${r.report.actions.slice(0, 5).join(', ')}`);
        s.ms.push(r.ms);
        s.hashed.push(r.report.hashed);
        const counters = emu.control.counters();
        s.requests.push(totalRequests(counters));
        s.routes = countersText(counters);
      }
      {
        // The daemon restarting over the synced tree (the sync runs above walked the folder tree seconds ago).
        emu.control.resetCounters();
        const t = Date.now();
        const d = startDaemon(config(limitsAt(1000)), emu, { env: { BINDER_SYNC_LOG_LEVEL: 'debug' } });
        try {
          const line = await d.waitFor((l) => l.msg === 'quiet pass' || (typeof l.msg === 'string' && l.msg.startsWith('pass: ')), 120_000, 'first pass');
          if (line.msg !== 'quiet pass') throw new Error(`daemon restart did something: ${line.msg}`);
          restart.ms.push(line.time - t);
          restart.hashed.push(Number(line.hashed));
          const counters = emu.control.counters();
          restart.requests.push(totalRequests(counters));
          restart.routes = countersText(counters);
        } finally {
          await d.stop();
        }
      }
      if (unisonOk) {
        const r = await run('unison', unisonArgs, { env: unisonEnv, stderrFile: path.join(work, 'unison.stderr') });
        if (r.code !== 0) throw new Error(`unison exited ${r.code}: ${tail(r.stderrFile)}`);
        un.push(r.ms);
      }
      if (rcloneOk) {
        const r = await run('rclone', ['check', local, replica, '--size-only', '--checkers', '8', '-q'], {
          env: { RCLONE_CONFIG: '/dev/null' },
          stderrFile: path.join(work, 'rclone.stderr'),
        });
        if (r.code !== 0) throw new Error(`rclone check exited ${r.code}: ${tail(r.stderrFile)}`);
        rc.push(r.ms);
      }
      log(`noop run ${i + 1}/${runs}: ${[...bsBy].map(([v, s]) => `binder-sync@${v.rps}${v.args.join(' ')} ${secs(s.ms.at(-1) ?? NaN)} s`).join(', ')}, daemon restart ${secs(restart.ms.at(-1) ?? NaN)} s${un.length ? `, unison ${secs(un.at(-1) ?? NaN)} s` : ''}${rc.length ? `, rclone check ${secs(rc.at(-1) ?? NaN)} s` : ''}`);
    }
    const ref = un.length > 0 ? median(un) : Number.NaN;
    for (const [v, s] of bsBy) {
      rows.push([`binder-sync sync${v.args.length ? ` ${v.args.join(' ')}` : ''} (2nd run, ${v.rps} req/s)`, secs(median(s.ms)), runsList(s.ms), String(Math.max(...s.hashed)), `${median(s.requests)} (${s.routes})`, ratio(median(s.ms), ref)]);
    }
    rows.push(['binder-sync run: restart to first pass done (1000 req/s)', secs(median(restart.ms)), runsList(restart.ms), String(Math.max(...restart.hashed)), `${median(restart.requests)} (${restart.routes})`, ratio(median(restart.ms), ref)]);
    rows.push(unisonOk ? ['unison update detection (2 local replicas, -batch)', secs(ref), runsList(un), 'fastcheck', '-', '1.00x'] : ['unison', 'skipped: not installed', '', '', '', '']);
    rows.push(rcloneOk ? ['rclone check --size-only (2 local replicas)', secs(median(rc)), runsList(rc), '0', '-', ratio(median(rc), ref)] : ['rclone check', 'skipped: not installed', '', '', '', '']);

    let profile = '';
    if (wants(env, 'profile')) {
      const profDir = path.join(work, 'prof');
      fs.mkdirSync(profDir);
      await runSync(config(limitsAt(1000)), emu, { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profDir] });
      profile = ['', `#### CPU profile of the no-op pass (${files.length} files, 1000 req/s)`, '', summarizeProfile(newestProfile(profDir), ROOT)].join('\n');
    }
    return [
      `### 3. No-op pass over ${files.length} files in ${folderCount(files)} folders`,
      '',
      ...notes.map((n) => `- ${n}`),
      '',
      table(['tool', 'median s', 'runs (s)', 'files hashed', 'requests (median, by route)', 'vs unison'], rows),
      profile,
    ].join('\n');
  } finally {
    await emu.close();
    rmrf(work);
  }
}
