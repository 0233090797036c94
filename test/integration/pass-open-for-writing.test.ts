// A local file another program keeps open for writing (a logger's `exec 3>>file`) is not replaced by a remote
// version nor moved to the trash under it: its later writes would go to the inode taken away, and be lost when the
// trash is on another disk (black-box round 35b, F3). The step waits, before any transfer, until the program closes
// the file. Real passes, a real child process holding the file, /proc as it is, the emulator on loopback.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { summarizeReport } from '../../src/cli/report-format.js';
import { OpenFiles } from '../../src/local/open-writers.js';
import { runPass } from '../../src/sync/pass.js';
import { openTestPair } from './pass-fixture.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});
afterAll(async () => {
  await emu?.close();
});

/** A shell holding `file` open: for appending (`>>`) or for reading (`<`), until killed. */
async function holder(file: string, mode: '>>' | '<'): Promise<ChildProcess> {
  return started(spawn('sh', ['-c', `exec 3${mode}"$1"; echo ready; exec sleep 60`, 'sh', file], { stdio: ['ignore', 'pipe', 'inherit'] }));
}

/**
 * Once the child said "ready" and has become `sleep` (its `exec` may lag the echo: a look between the two saw the
 * command still named `sh`, which failed a CI run).
 */
async function started(child: ChildProcess): Promise<ChildProcess> {
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  for (let i = 0; i < 200 && fs.readFileSync(`/proc/${child.pid}/comm`, 'utf8').trim() !== 'sleep'; i++) await new Promise((r) => setTimeout(r, 10));
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

const linux = process.platform === 'linux';

describe.skipIf(!linux)('a file another program holds open for writing', () => {
  it('OpenFiles sees a writer of the file, not a reader, nor this process', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ow-'));
    const file = path.join(dir, 'log.txt');
    fs.writeFileSync(file, 'x');
    const st = fs.statSync(file);
    const own = fs.openSync(file, 'a');
    try {
      expect(OpenFiles.look().writersOf(st.dev, st.ino)).toEqual([]);
      const reader = await holder(file, '<');
      expect(OpenFiles.look().writersOf(st.dev, st.ino)).toEqual([]);
      await stop(reader);
      const writer = await holder(file, '>>');
      expect(OpenFiles.look().writersOf(st.dev, st.ino)).toEqual([{ pid: writer.pid, command: 'sleep' }]);
      await stop(writer);
    } finally {
      fs.closeSync(own);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is not replaced by a remote version while it is held, nor its download started; once closed, it is', async () => {
    const p = await openTestPair(emu, 'open-for-writing');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Logs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'app.log', 'line 1\n');
      await runPass(p.rt);
      const file = path.join(p.local, 'Logs', 'app.log');
      const logger = await holder(file, '>>');
      try {
        c.addVersion(document.id, "a colleague's version\n");
        c.resetCounters();
        const held = await runPass(p.rt);
        expect(held.execution?.failures.map((f) => [f.code, f.postponed])).toEqual([['LOCAL_CHANGED', true]]);
        expect(held.execution?.failures[0]?.message).toMatch(/^Logs\/app\.log: not replaced by the remote version: sleep \(pid \d+\) has it open for writing/);
        // Said as what it is, not as "a program changed it" (black-box round 36a, F3).
        expect(summarizeReport(held, false)).toMatch(/postponed download Logs\/app\.log: not replaced by the remote version: sleep \(pid \d+\) has it open for writing/);
        expect(c.counters()['storage-get']).toBe(0); // refused before the transfer
        expect(fs.readFileSync(file, 'utf8')).toBe('line 1\n');
        expect(fs.statSync(file).ino).toBe(fs.statSync(`/proc/${logger.pid}/fd/3`).ino);
      } finally {
        await stop(logger);
      }
      const after = await runPass(p.rt);
      expect(after.execution?.failures).toEqual([]);
      expect(fs.readFileSync(file, 'utf8')).toBe("a colleague's version\n");
    } finally {
      await p.close();
    }
  });

  // Black-box round 38a, F1: a restore whose writer stalled longer than the quiet period (tar from a slow pipe,
  // rsync --inplace --bwlimit) had its half-written file uploaded as a version, and the finished restore was then
  // taken for a stale copy and replaced by that half.
  it('is not uploaded while the program writing it holds it open (changed within a minute); once closed, it goes up whole, once', async () => {
    const p = await openTestPair(emu, 'open-for-writing-upload');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'restore.bin', 'version 1, synced\n');
      await runPass(p.rt);
      const file = path.join(p.local, 'Docs', 'restore.bin');
      // A writer that truncated the file, wrote half of it, and stalls (as `tar x` does on a slow pipe).
      const writer = await started(spawn('sh', ['-c', 'exec 3>"$1"; printf "first half, " >&3; echo ready; exec sleep 60', 'sh', file], { stdio: ['ignore', 'pipe', 'inherit'] }));
      try {
        c.resetCounters();
        const held = await runPass(p.rt);
        expect(held.execution?.failures.map((f) => [f.code, f.postponed])).toEqual([['LOCAL_CHANGED', true]]);
        expect(held.execution?.failures[0]?.message).toMatch(/^Docs\/restore\.bin: not uploaded yet: sleep \(pid \d+\) has it open for writing, and changed it less than a minute ago/);
        // A file waiting for its writer, not the pair's error: said as changing (not synced yet), looked at again soon.
        expect(held.converged).toBe(false);
        expect(held.issues.map((i) => `${i.relPath} ${i.code} ${i.detail.slice(0, 34)}`)).toEqual(['Docs/restore.bin changing held: not uploaded yet: sleep (pid']);
        expect(p.rt.store.getMeta('lastError')).toBe('');
        expect(held.recheckInMs).toBeLessThanOrEqual(5_000);
        // Refused before any transfer (the one slot asked for is the pass's first look at its write access).
        expect([c.counters()['storage-put'], c.counters().commit]).toEqual([0, 0]);
        expect(c.listVersions(document.id)).toHaveLength(1);
        // The daemon's recheck (a watch pass) reuses the listing: the held upload sent nothing. Each recheck of a
        // logger's file listed the whole binder (black-box round 41b).
        c.resetCounters();
        const recheck = await runPass(p.rt, { reuseRemoteWithinMs: 60_000, localDirs: ['Docs'] });
        expect(recheck.issues.map((i) => i.code)).toEqual(['changing']);
        expect(c.counters().search).toBe(0);
        // A holder that has not written the file for a minute (a logger between lines) does not hold it back.
        const later = await runPass(p.rt, { now: () => new Date(Date.now() + 61_000) });
        expect(later.execution?.failures).toEqual([]);
        expect(c.listVersions(document.id)).toHaveLength(2);
        fs.appendFileSync(file, 'second half\n');
      } finally {
        await stop(writer);
      }
      const after = await runPass(p.rt);
      expect(after.execution?.failures).toEqual([]);
      expect(c.listVersions(document.id).map((v) => c.readContent(document.id, v.id).toString())).toEqual(['version 1, synced\n', 'first half, ', 'first half, second half\n']);
    } finally {
      await p.close();
    }
  });

  it('nor settled as a conflict while it is being written, when the service has a new version too; once closed, both are kept', async () => {
    const p = await openTestPair(emu, 'open-for-writing-conflict');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'both.txt', 'version 1\n');
      await runPass(p.rt);
      const file = path.join(p.local, 'Docs', 'both.txt');
      const writer = await started(spawn('sh', ['-c', 'exec 3>"$1"; printf "half of mine" >&3; echo ready; exec sleep 60', 'sh', file], { stdio: ['ignore', 'pipe', 'inherit'] }));
      try {
        c.addVersion(document.id, "a colleague's\n");
        c.resetCounters();
        const held = await runPass(p.rt);
        expect(held.plan.groups.flat().map((a) => a.kind)).toEqual(['conflict']);
        expect(held.execution?.failures.map((f) => [f.kind, f.code, f.postponed])).toEqual([['conflict', 'LOCAL_CHANGED', true]]);
        expect(held.execution?.failures[0]?.message).toMatch(/not uploaded yet: sleep \(pid \d+\) has it open for writing/);
        expect([c.counters()['storage-get'], c.counters()['storage-put'], c.counters().commit]).toEqual([0, 0, 0]);
        fs.appendFileSync(file, ', the rest\n');
      } finally {
        await stop(writer);
      }
      const after = await runPass(p.rt);
      expect(after.execution?.failures).toEqual([]);
      expect(fs.readFileSync(file, 'utf8')).toBe("a colleague's\n");
      const copies = fs.readdirSync(path.join(p.local, 'Docs')).filter((n) => n.includes('(conflict'));
      expect(copies.map((n) => fs.readFileSync(path.join(p.local, 'Docs', n), 'utf8'))).toEqual(['half of mine, the rest\n']);
    } finally {
      await p.close();
    }
  });

  it('is not moved to the trash when its document is deleted on the service while it is held', async () => {
    const p = await openTestPair(emu, 'open-for-writing-trash');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Logs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'app.log', 'line 1\n');
      c.addDocument(p.binderId, folder.id, 'other.txt', 'keeps the delete gate quiet');
      c.addDocument(p.binderId, folder.id, 'third.txt', 'and this one');
      await runPass(p.rt);
      const file = path.join(p.local, 'Logs', 'app.log');
      const logger = await holder(file, '>>');
      try {
        c.deleteDocument(document.id);
        const held = await runPass(p.rt);
        expect(held.execution?.failures.map((f) => f.code)).toEqual(['LOCAL_CHANGED']);
        expect(fs.existsSync(file)).toBe(true);
      } finally {
        await stop(logger);
      }
      await runPass(p.rt);
      expect(fs.existsSync(file)).toBe(false);
    } finally {
      await p.close();
    }
  });
});
