// Benchmark 1: initial download of a file set by `binder-sync sync` (fresh state each run) against the floor
// script (same requests, same limits), and `rclone copy` from a static HTTP server when rclone is installed.
// Runs are interleaved (binder-sync, floor, floor + fsync, rclone, binder-sync, ...) so machine noise hits all
// sides alike. "floor + fsync" is the floor fsyncing each file: a reference for what durability alone costs.
import path from 'node:path';
import fs from 'node:fs';
import type { BenchEnv } from './lib/env.js';
import { wants } from './lib/env.js';
import { newestProfile, summarizeProfile } from './lib/profile.js';
import { toolVersion } from './lib/machine.js';
import { run, tail } from './lib/proc.js';
import { median, mib, ratio, rcloneRow, runsList, secs, table } from './lib/stats.js';
import { serveDirectory } from './lib/static-server.js';
import { flatSet, seedRemote, writeTree, type FileSpec } from './lib/trees.js';
import { benchEmulator, floorArgs, limitsAt, ROOT, rmrf, settleDisk, runFloor, runSync, tempDir, totalRequests, treeSize, writeConfig } from './lib/workspace.js';

export interface SetSpec {
  label: string;
  files: FileSpec[];
  /** Ratio binder-sync / floor that the issue asks for. */
  target: number;
  runs: number;
}

export function downloadSets(env: BenchEnv): SetSpec[] {
  // A set of 0 files is skipped (BENCH_LARGE_FILES=0): there is nothing to time, and rclone fails on the
  // served directory that was never created ("directory not found", exit 3).
  return [
    { label: `${env.smallFiles} x ${(env.smallSize / 1024).toFixed(0)} KiB`, files: flatSet('small', env.smallFiles, env.smallSize), target: 1.5, runs: env.runs },
    { label: `${env.largeFiles} x ${mib(env.largeSize)}`, files: flatSet('large', env.largeFiles, env.largeSize), target: 1.1, runs: env.longRuns },
  ].filter((s) => s.files.length > 0 && s.runs > 0);
}

export interface Sample {
  ms: number[];
  requests: number[];
}

const sample = (): Sample => ({ ms: [], requests: [] });

export async function benchDownload(env: BenchEnv, log: (s: string) => void): Promise<string> {
  const rows: string[][] = [];
  const profiles: string[] = [];
  const rcloneOk = toolVersion('rclone', ['version']) !== null;
  for (const set of downloadSets(env)) {
    const emu = await benchEmulator();
    const work = tempDir('dl');
    try {
      const binderId = emu.control.createBinder({ name: 'bench-download' }).id;
      const t0 = Date.now();
      seedRemote(emu, binderId, set.files);
      const served = path.join(work, 'served');
      fs.mkdirSync(served, { recursive: true });
      if (rcloneOk) writeTree(served, set.files);
      log(`download ${set.label}: seeded in ${Date.now() - t0} ms`);
      const srv = rcloneOk ? await serveDirectory(served) : null;
      const bytes = set.files.reduce((a, f) => a + f.size, 0);
      for (const [ri, rps] of env.rpsList.entries()) {
        const limits = limitsAt(rps);
        const bs = sample();
        const fl = sample();
        const fd = sample();
        const rc = sample();
        for (let i = 0; i < set.runs; i++) {
          // binder-sync
          {
            const dir = tempDir('dl-bs');
            const local = path.join(dir, 'local');
            const cfg = writeConfig(dir, { emu, binderId, localPath: local, stateDir: path.join(dir, 'state'), limits });
            settleDisk();
            emu.control.resetCounters();
            const r = await runSync(cfg, emu);
            check(treeSize(local), set.files.length, bytes, 'binder-sync');
            bs.ms.push(r.ms);
            bs.requests.push(totalRequests(emu.control.counters()));
            rmrf(dir);
          }
          // floor
          {
            const dir = tempDir('dl-floor');
            const local = path.join(dir, 'local');
            settleDisk();
            emu.control.resetCounters();
            const r = await runFloor('download', floorArgs(emu, binderId, local, limits), emu, dir);
            check(treeSize(local), set.files.length, bytes, 'floor');
            fl.ms.push(r.ms);
            fl.requests.push(totalRequests(emu.control.counters()));
            rmrf(dir);
          }
          // floor + fsync: how much of binder-sync's distance to the floor is the fsync it may not skip.
          {
            const dir = tempDir('dl-floor-fsync');
            const local = path.join(dir, 'local');
            settleDisk();
            const r = await runFloor('download', { ...floorArgs(emu, binderId, local, limits), durable: true }, emu, dir);
            check(treeSize(local), set.files.length, bytes, 'floor + fsync');
            fd.ms.push(r.ms);
            rmrf(dir);
          }
          // rclone: not API-bound, so measured in the first rate's loop only.
          if (srv && ri === 0) {
            const dir = tempDir('dl-rclone');
            const local = path.join(dir, 'local');
            settleDisk();
            const r = await run('rclone', ['copy', '--http-url', srv.url, ':http:', local, '--transfers', '4', '--checkers', '8'], {
              stderrFile: path.join(work, 'rclone.stderr'),
              env: { RCLONE_CONFIG: '/dev/null' },
            });
            if (r.code !== 0) throw new Error(`rclone exited ${r.code}: ${tail(r.stderrFile)}`);
            check(treeSize(local), set.files.length, bytes, 'rclone');
            rc.ms.push(r.ms);
            rmrf(dir);
          }
          log(`download ${set.label} @${rps} rps run ${i + 1}/${set.runs}: binder-sync ${secs(bs.ms.at(-1) ?? NaN)} s, floor ${secs(fl.ms.at(-1) ?? NaN)} s, floor + fsync ${secs(fd.ms.at(-1) ?? NaN)} s${rc.ms.length > 0 ? `, rclone ${secs(rc.ms.at(-1) ?? NaN)} s` : ''}`);
        }
        const floorMs = median(fl.ms);
        const bsMs = median(bs.ms);
        const verdict = bsMs / floorMs <= set.target ? 'met' : 'MISSED';
        rows.push([set.label, String(rps), 'binder-sync', secs(bsMs), runsList(bs.ms), String(median(bs.requests)), `${ratio(bsMs, floorMs)} (target ${set.target}x: ${verdict})`]);
        rows.push([set.label, String(rps), 'floor (undici)', secs(floorMs), runsList(fl.ms), String(median(fl.requests)), '1.00x']);
        rows.push([set.label, String(rps), 'floor + fsync (reference)', secs(median(fd.ms)), runsList(fd.ms), String(median(fl.requests)), `${ratio(median(fd.ms), floorMs)}; binder-sync = ${ratio(bsMs, median(fd.ms))} of it`]);
        if (rc.ms.length > 0) rows.push(rcloneRow(set.label, rc.ms, floorMs, bsMs, 'rclone copy (static HTTP)'));
      }
      // One extra profiled run of the first set (the small files) at the highest rate.
      if (wants(env, 'profile') && profiles.length === 0) {
        const rps = Math.max(...env.rpsList);
        const dir = tempDir('dl-prof');
        const profDir = path.join(dir, 'prof');
        fs.mkdirSync(profDir);
        const cfg = writeConfig(dir, { emu, binderId, localPath: path.join(dir, 'local'), stateDir: path.join(dir, 'state'), limits: limitsAt(rps) });
        await runSync(cfg, emu, { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profDir] });
        profiles.push('', `#### CPU profile of binder-sync downloading ${set.label} (${rps} req/s)`, '', summarizeProfile(newestProfile(profDir), ROOT));
        rmrf(dir);
      }
      if (!srv && rows.every((r) => !r[2]?.startsWith('rclone'))) rows.push([set.label, '-', 'rclone', 'skipped: rclone not installed', '', '', '']);
      await srv?.close();
    } finally {
      await emu.close();
      rmrf(work);
    }
  }
  return [
    '### 1. Initial download',
    '',
    table(['set', 'API req/s', 'tool', 'median s', 'runs (s)', 'requests (API+storage)', 'vs floor'], rows),
    ...profiles,
  ].join('\n');
}

function check(got: { files: number; bytes: number }, files: number, bytes: number, who: string): void {
  if (got.files !== files || got.bytes !== bytes) throw new Error(`${who}: expected ${files} files / ${bytes} bytes, got ${got.files} / ${got.bytes}`);
}
