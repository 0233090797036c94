// Benchmark 2: initial upload of a file set through the three-step flow (slot, PUT, commit) by
// `binder-sync sync` against the floor script. Each run gets a fresh emulator (empty binder with the folders
// already there: binder-sync cannot create folders) and fresh state; runs are interleaved.
import path from 'node:path';
import type { Emulator } from '../src/emulator/index.js';
import { downloadSets, type Sample } from './download.js';
import type { BenchEnv } from './lib/env.js';
import { median, ratio, runsList, secs, table } from './lib/stats.js';
import { seedFolders, writeTree, type FileSpec } from './lib/trees.js';
import { benchEmulator, floorArgs, limitsAt, rmrf, settleDisk, runFloor, runSync, tempDir, totalRequests, writeConfig } from './lib/workspace.js';

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
  for (const set of downloadSets(env)) {
    const work = tempDir('ul');
    try {
      const source = path.join(work, 'source');
      writeTree(source, set.files);
      for (const rps of env.rpsList) {
        const limits = limitsAt(rps);
        const bs: Sample = { ms: [], requests: [] };
        const fl: Sample = { ms: [], requests: [] };
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
          log(`upload ${set.label} @${rps} rps run ${i + 1}/${set.runs}: binder-sync ${secs(bs.ms.at(-1) ?? NaN)} s, floor ${secs(fl.ms.at(-1) ?? NaN)} s`);
        }
        const floorMs = median(fl.ms);
        const bsMs = median(bs.ms);
        const verdict = bsMs / floorMs <= set.target ? 'met' : 'MISSED';
        rows.push([set.label, String(rps), 'binder-sync', secs(bsMs), runsList(bs.ms), String(median(bs.requests)), `${ratio(bsMs, floorMs)} (target ${set.target}x: ${verdict})`]);
        rows.push([set.label, String(rps), 'floor (undici)', secs(floorMs), runsList(fl.ms), String(median(fl.requests)), '1.00x']);
      }
    } finally {
      rmrf(work);
    }
  }
  return ['### 2. Initial upload (slot, PUT, commit)', '', table(['set', 'API req/s', 'tool', 'median s', 'runs (s)', 'requests (API+storage)', 'vs floor'], rows)].join('\n');
}
