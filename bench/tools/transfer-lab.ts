// Developer tool (not part of `npm run bench`): A/B of large-file transfers. Runs `binder-sync sync` from
// several builds (each a bin/binder-sync.js with its own dist/ beside it) and the floor, interleaved, on the
// large set of benchmarks 1 and 2, and prints wall and CPU (user+sys, /usr/bin/time) medians per side;
// LAB_PROFILE=1 adds one --cpu-prof run per build and direction, summarized (LAB_PROFILE=all: the floor's too); LAB_FLOOR_DURABLE=1 adds the
// download floor that fsyncs each file.
// Usage: `npx tsc -p bench/tsconfig.json && LAB_BINS=base=/tmp/ab/base/bin/binder-sync.js,new=bin/binder-sync.js
//   LAB_MODE=download,upload LAB_RUNS=5 node bench/.out/bench/tools/transfer-lab.js`
// (BENCH_LARGE_FILES / BENCH_LARGE_SIZE set the file set, LAB_RPS the API rate, default 1000; LAB_KEEP_PROFILES=DIR
// keeps the profiles).
import fs from 'node:fs';
import path from 'node:path';
import type { Emulator } from '../../src/emulator/index.js';
import { newestProfile, summarizeProfile } from '../lib/profile.js';
import { run, tail } from '../lib/proc.js';
import { median } from '../lib/stats.js';
import { flatSet, seedFolders, seedRemote, writeTree, type FileSpec } from '../lib/trees.js';
import { benchEmulator, floorArgs, limitsAt, OUT, ROOT, rmrf, SECRET_ENV, settleDisk, tempDir, treeSize, writeConfig } from '../lib/workspace.js';

const bins = (process.env.LAB_BINS ?? `cur=${path.join(ROOT, 'bin', 'binder-sync.js')}`).split(',').map((s) => {
  const [name, p] = s.split('=');
  return { name: name as string, bin: path.resolve(p as string) };
});
const modes = (process.env.LAB_MODE ?? 'download,upload').split(',');
const runs = Number(process.env.LAB_RUNS ?? 5);
/** LAB_PROFILE=1: one profiled run per build; LAB_PROFILE=all: the floors' too. */
const profile = process.env.LAB_PROFILE === '1' || process.env.LAB_PROFILE === 'all';
const profileFloors = process.env.LAB_PROFILE === 'all';
const withFloor = process.env.LAB_FLOOR !== '0';
/** LAB_FLOOR_DURABLE=1: a "floor+fsync" side too (downloads: the floor fsyncing each file). */
const withDurableFloor = process.env.LAB_FLOOR_DURABLE === '1';
const limits = limitsAt(Number(process.env.LAB_RPS ?? 1000));
const files = flatSet('large', Number(process.env.BENCH_LARGE_FILES ?? 20), Number(process.env.BENCH_LARGE_SIZE ?? 50 * 1024 * 1024));
const bytes = files.reduce((a, f) => a + f.size, 0);

interface Timed {
  wall: number;
  cpu: number;
}

/** Runs node with args under /usr/bin/time; wall from spawn to exit, cpu = user + sys of the child. */
async function timed(args: string[], env: NodeJS.ProcessEnv, dir: string): Promise<Timed> {
  const timeFile = path.join(dir, `time-${Date.now()}`);
  const stderrFile = path.join(dir, `stderr-${Date.now()}`);
  const r = await run('/usr/bin/time', ['-f', '%U %S', '-o', timeFile, process.execPath, ...args], { env, stderrFile });
  if (r.code !== 0) throw new Error(`${args.join(' ')} exited ${r.code}:\n${r.stdout.slice(0, 1000)}\n${tail(stderrFile)}`);
  const [u, s] = fs.readFileSync(timeFile, 'utf8').trim().split(/\s+/).map(Number);
  return { wall: r.ms, cpu: ((u ?? NaN) + (s ?? NaN)) * 1000 };
}

function syncArgs(bin: string, cfg: string, nodeArgs: string[] = []): string[] {
  return [...nodeArgs, bin, 'sync', '--config', cfg, '--json'];
}

type Side = { name: string; run: (profiled?: boolean) => Promise<Timed> };

const profArgs = (profiled: boolean, dir: string): string[] => (profiled ? ['--cpu-prof', '--cpu-prof-dir', path.join(dir, 'prof')] : []);

function downloadSides(emu: Emulator, binderId: string): Side[] {
  const one = (name: string, go: (dir: string, local: string, nodeArgs: string[]) => Promise<Timed>): Side => ({
    name,
    run: async (profiled = false) => {
      const dir = tempDir('lab-dl');
      const local = path.join(dir, 'local');
      try {
        const t = await go(dir, local, profArgs(profiled, dir));
        const got = treeSize(local);
        if (got.files !== files.length || got.bytes !== bytes) throw new Error(`${name}: got ${got.files} files / ${got.bytes} bytes`);
        if (profiled) printProfile(name, 'download', path.join(dir, 'prof'));
        return t;
      } finally {
        rmrf(dir);
      }
    },
  });
  const secret = { [SECRET_ENV]: emu.credentials.clientSecret };
  const sides = bins.map((b) =>
    one(b.name, (dir, local, nodeArgs) => timed(syncArgs(b.bin, writeConfig(dir, { emu, binderId, localPath: local, stateDir: path.join(dir, 'state'), limits }), nodeArgs), secret, dir)),
  );
  const floorSide = (name: string, durable: boolean): Side =>
    one(name, (dir, local, nodeArgs) => timed([...nodeArgs, path.join(OUT, 'floor', 'download.js')], { ...secret, BENCH_FLOOR: JSON.stringify({ ...floorArgs(emu, binderId, local, limits), durable }) }, dir));
  if (withFloor) sides.push(floorSide('floor', false));
  if (withDurableFloor) sides.push(floorSide('floor+fsync', true));
  return sides;
}

function uploadSides(source: string): Side[] {
  const one = (name: string, go: (emu: Emulator, binderId: string, dir: string, nodeArgs: string[]) => Promise<Timed>): Side => ({
    name,
    run: async (profiled = false) => {
      const emu = await benchEmulator();
      const binderId = emu.control.createBinder({ name: 'lab-upload' }).id;
      seedFolders(emu, binderId, files);
      const dir = tempDir('lab-ul');
      try {
        const t = await go(emu, binderId, dir, profArgs(profiled, dir));
        const n = emu.control.listDocuments(binderId).length;
        if (n !== files.length) throw new Error(`${name}: ${n} documents`);
        if (profiled) printProfile(name, 'upload', path.join(dir, 'prof'));
        return t;
      } finally {
        await emu.close();
        rmrf(dir);
      }
    },
  });
  const sides = bins.map((b) =>
    one(b.name, (emu, binderId, dir, nodeArgs) =>
      timed(syncArgs(b.bin, writeConfig(dir, { emu, binderId, localPath: source, stateDir: path.join(dir, 'state'), limits }), nodeArgs), { [SECRET_ENV]: emu.credentials.clientSecret }, dir),
    ),
  );
  if (withFloor) {
    sides.push(
      one('floor', (emu, binderId, dir, nodeArgs) => timed([...nodeArgs, path.join(OUT, 'floor', 'upload.js')], { [SECRET_ENV]: emu.credentials.clientSecret, BENCH_FLOOR: JSON.stringify(floorArgs(emu, binderId, source, limits)) }, dir)),
    );
  }
  return sides;
}

function printProfile(name: string, mode: string, profDir: string): void {
  console.log(`\n#### ${mode}: profile of ${name}\n`);
  const file = newestProfile(profDir);
  console.log(summarizeProfile(file, ROOT, 30));
  // LAB_KEEP_PROFILES=DIR keeps each profile (the run's temp dir is removed) for a look at its call tree.
  const keep = process.env.LAB_KEEP_PROFILES;
  if (keep) {
    fs.mkdirSync(keep, { recursive: true });
    fs.copyFileSync(file, path.join(keep, `${mode}-${name}.cpuprofile`));
  }
}

async function measure(mode: string, sides: Side[]): Promise<void> {
  const res = new Map<string, Timed[]>(sides.map((s) => [s.name, []]));
  for (let i = 0; i < runs; i++) {
    // The order rotates each run, so no side always follows the same one.
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(i + k) % sides.length] as Side;
      settleDisk();
      const t = await side.run();
      res.get(side.name)?.push(t);
    }
    console.error(`${mode} run ${i + 1}/${runs}: ${sides.map((s) => `${s.name} ${((res.get(s.name)?.at(-1)?.wall ?? NaN) / 1000).toFixed(2)} s`).join(', ')}`);
  }
  const floor = withFloor ? median((res.get('floor') ?? []).map((t) => t.wall)) : NaN;
  console.log(`\n${mode}, ${files.length} x ${files[0]?.size} bytes, ${runs} runs`);
  console.log('| side | median wall s | median cpu s | vs floor | walls |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const [name, ts] of res) {
    const w = median(ts.map((t) => t.wall));
    const c = median(ts.map((t) => t.cpu));
    console.log(`| ${name} | ${(w / 1000).toFixed(2)} | ${(c / 1000).toFixed(2)} | ${(w / floor).toFixed(2)}x | ${ts.map((t) => (t.wall / 1000).toFixed(2)).join(' / ')} |`);
  }
  if (profile) {
    for (const s of sides) if (profileFloors || !s.name.startsWith('floor')) await s.run(true);
  }
}

const work = tempDir('lab');
try {
  if (modes.includes('download')) {
    const emu = await benchEmulator();
    try {
      const binderId = emu.control.createBinder({ name: 'lab-download' }).id;
      seedRemote(emu, binderId, files);
      const sides = downloadSides(emu, binderId);
      await measure('download', sides);
    } finally {
      await emu.close();
    }
  }
  if (modes.includes('upload')) {
    const source = path.join(work, 'source');
    writeTree(source, files as FileSpec[]);
    await measure('upload', uploadSides(source));
  }
} finally {
  rmrf(work);
}

