// Benchmark 2: initial upload of a file set through the three-step flow (slot, PUT, commit) by
// `binder-sync sync` against the floor script. Each run gets a fresh emulator (empty binder with the folders
// already there: binder-sync cannot create folders) and fresh state; runs are interleaved. When rclone is
// installed, `rclone copy` of the same tree into a minimal S3 server (bench/lib/s3-server.ts: one listing, then
// per file a PUT and the HEAD rclone checks it with) is measured alongside: a reference for raw upload cost.
import fs from 'node:fs';
import path from 'node:path';
import type { Emulator } from '../src/emulator/index.js';
import { downloadSets, type Sample } from './download.js';
import type { BenchEnv } from './lib/env.js';
import { toolVersion } from './lib/machine.js';
import { run, tail } from './lib/proc.js';
import { median, ratio, rcloneRow, runsList, secs, table } from './lib/stats.js';
import { seedFolders, writeTree, type FileSpec } from './lib/trees.js';
import { BENCH_BUCKET, serveS3 } from './lib/s3-server.js';
import { benchEmulator, floorArgs, limitsAt, rmrf, settleDisk, runFloor, runSync, tempDir, totalRequests, treeSize, writeConfig } from './lib/workspace.js';

async function freshBinder(files: readonly FileSpec[]): Promise<{ emu: Emulator; binderId: string }> {
  const emu = await benchEmulator();
  const binderId = emu.control.createBinder({ name: 'bench-upload' }).id;
  seedFolders(emu, binderId, files);
  return { emu, binderId };
}

function checkRemote(emu: Emulator, binderId: string, files: number, who: string): void {
  const n = emu.control.listDocuments(binderId).length;
  if (n !== files) throw new Error(`${who}: expected ${files} documents, got ${n}`);
}

export async function benchUpload(env: BenchEnv, log: (s: string) => void): Promise<string> {
  const rows: string[][] = [];
  const rcloneOk = toolVersion('rclone', ['version']) !== null;
  for (const set of downloadSets(env)) {
    const work = tempDir('ul');
    try {
      const source = path.join(work, 'source');
      writeTree(source, set.files);
      const bytes = set.files.reduce((a, f) => a + f.size, 0);
      for (const [ri, rps] of env.rpsList.entries()) {
        const limits = limitsAt(rps);
        const bs: Sample = { ms: [], requests: [] };
        const fl: Sample = { ms: [], requests: [] };
        const rc: Sample = { ms: [], requests: [] };
        for (let i = 0; i < set.runs; i++) {
          {
            const { emu, binderId } = await freshBinder(set.files);
            const dir = tempDir('ul-bs');
            try {
              const cfg = writeConfig(dir, { emu, binderId, localPath: source, stateDir: path.join(dir, 'state'), limits });
              settleDisk();
            emu.control.resetCounters();
              const r = await runSync(cfg, emu);
              checkRemote(emu, binderId, set.files.length, 'binder-sync');
              bs.ms.push(r.ms);
              bs.requests.push(totalRequests(emu.control.counters()));
            } finally {
              await emu.close();
              rmrf(dir);
            }
          }
          {
            const { emu, binderId } = await freshBinder(set.files);
            const dir = tempDir('ul-floor');
            try {
              settleDisk();
            emu.control.resetCounters();
              const r = await runFloor('upload', floorArgs(emu, binderId, source, limits), emu, dir);
              checkRemote(emu, binderId, set.files.length, 'floor');
              fl.ms.push(r.ms);
              fl.requests.push(totalRequests(emu.control.counters()));
            } finally {
              await emu.close();
              rmrf(dir);
            }
          }
          // rclone: not API-bound, so measured in the first rate's loop only.
          if (rcloneOk && ri === 0) {
            const r = await rcloneUpload(source, set.files.length, bytes, work);
            rc.ms.push(r.ms);
            rc.requests.push(r.requests);
          }
          log(`upload ${set.label} @${rps} rps run ${i + 1}/${set.runs}: binder-sync ${secs(bs.ms.at(-1) ?? NaN)} s, floor ${secs(fl.ms.at(-1) ?? NaN)} s${rc.ms.length > 0 ? `, rclone ${secs(rc.ms.at(-1) ?? NaN)} s` : ''}`);
        }
        const floorMs = median(fl.ms);
        const bsMs = median(bs.ms);
        const verdict = bsMs / floorMs <= set.target ? 'met' : 'MISSED';
        rows.push([set.label, String(rps), 'binder-sync', secs(bsMs), runsList(bs.ms), String(median(bs.requests)), `${ratio(bsMs, floorMs)} (target ${set.target}x: ${verdict})`]);
        rows.push([set.label, String(rps), 'floor (undici)', secs(floorMs), runsList(fl.ms), String(median(fl.requests)), '1.00x']);
        if (rc.ms.length > 0) rows.push(rcloneRow(set.label, rc.ms, floorMs, bsMs, 'rclone copy (S3 PUT)', String(median(rc.requests))));
      }
      if (!rcloneOk) rows.push([set.label, '-', 'rclone', 'skipped: rclone not installed', '', '', '']);
    } finally {
      rmrf(work);
    }
  }
  return ['### 2. Initial upload (slot, PUT, commit)', '', table(['set', 'API req/s', 'tool', 'median s', 'runs (s)', 'requests (API+storage)', 'vs floor'], rows)].join('\n');
}

/** One `rclone copy` of the source tree into a fresh S3 server directory: wall-clock ms and requests made. */
async function rcloneUpload(source: string, files: number, bytes: number, work: string): Promise<{ ms: number; requests: number }> {
  const dir = tempDir('ul-rclone');
  const dest = path.join(dir, 'dest');
  fs.mkdirSync(dest);
  const srv = await serveS3(dest);
  try {
    settleDisk();
    const r = await run('rclone', [
      'copy', source, `:s3:${BENCH_BUCKET}`, '--transfers', '4', '--checkers', '8',
      '--s3-provider', 'Other', '--s3-endpoint', srv.url, '--s3-access-key-id', 'bench', '--s3-secret-access-key', 'bench', '--s3-no-check-bucket',
    ], {
      stderrFile: path.join(work, 'rclone.stderr'),
      // AWS_CA_BUNDLE (set machine-wide here) makes rclone's S3 client fail on a plain-HTTP endpoint.
      env: { RCLONE_CONFIG: '/dev/null', AWS_CA_BUNDLE: undefined },
    });
    if (r.code !== 0) throw new Error(`rclone exited ${r.code}: ${tail(r.stderrFile)}`);
    const got = treeSize(dest);
    if (got.files !== files || got.bytes !== bytes) throw new Error(`rclone: expected ${files} files / ${bytes} bytes, got ${got.files} / ${got.bytes}`);
    return { ms: r.ms, requests: srv.requests() };
  } finally {
    await srv.close();
    rmrf(dir);
  }
}
