// The executor's upload path over real HTTP against the emulator, with a real state DB and temp dir: a file
// that changes while its PUT is in flight is never committed nor recorded as synced (neither when the change
// shows in its stat, nor when it hides from the stat and only the hash of the bytes sent can tell).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { toFileStat } from '../../src/local/fs-ops.js';
import type { ExecutorDeps } from '../../src/sync/executor-deps.js';
import { executePlan } from '../../src/sync/executor.js';
import type { LocalFile, Plan } from '../../src/sync/model.js';
import { captureLog, executorFixture } from './executor-fixture.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
/** A whole-second mtime: utimes can put it back exactly (a fractional one would be rounded). */
const MTIME_S = 1_700_000_000;
const SIZE = 8 * 1024 * 1024;

function setup(): ReturnType<typeof executorFixture> {
  return executorFixture(cleanups, 'exec-upload-');
}

/** Writes Docs/big.bin and returns it as a scan would see it. */
function writeLocal(root: string, content: Buffer): LocalFile {
  const abs = path.join(root, 'Docs', 'big.bin');
  fs.writeFileSync(abs, content);
  fs.utimesSync(abs, MTIME_S, MTIME_S);
  return { relPath: 'Docs/big.bin', key: 'Docs/big.bin', ...toFileStat(fs.lstatSync(abs)), sha256: sha(content) };
}

function uploadPlan(local: LocalFile, folderId: string): Plan {
  return {
    groups: [[{ kind: 'upload', relPath: local.relPath, key: local.key, local, target: { documentId: null, folderId, fileName: 'big.bin' }, reason: 'new-local', replacesBase: null }]],
    issues: [],
    blocked: null,
  };
}

function content(seed: number): Buffer {
  const b = Buffer.alloc(SIZE);
  for (let i = 0; i < b.length; i += 4) b.writeUInt32LE((i * 2654435761 + seed) >>> 0, i);
  return b;
}

/** Runs `change` once, when the first bytes of the PUT have been read (the rest is still on disk to read). */
function onFirstBytes(d: ExecutorDeps, change: () => void): void {
  let done = false;
  d.onBytes = () => {
    if (done) return;
    done = true;
    change();
  };
}

describe('upload of a file that changes while its PUT is in flight', () => {
  it('records an unchanged upload with the hash of the bytes sent', async () => {
    const { emu, d, root, store, folderId, binderId } = await setup();
    const original = content(1);
    const local = writeLocal(root, original);
    const report = await executePlan(uploadPlan(local, folderId), d);
    expect(report.failures).toEqual([]);
    const base = store.getBaseByKey('Docs/big.bin');
    expect(base).toMatchObject({ sha256: sha(original), size: SIZE, mtimeMs: local.mtimeMs, inode: local.inode });
    expect(emu.control.listDocuments(binderId)).toHaveLength(1);
  });

  it('an edit with the same size and a restored mtime (seen by the ctime alone) is caught by the hash of the bytes sent', async () => {
    const { emu, d, root, store, folderId, binderId } = await setup();
    const local = writeLocal(root, content(1));
    const abs = path.join(root, 'Docs', 'big.bin');
    onFirstBytes(d, () => {
      // Rewrites the last MiB in place (not read yet), then puts size, mtime and inode back as they were.
      const fd = fs.openSync(abs, 'r+');
      fs.writeSync(fd, Buffer.alloc(1024 * 1024, 0x5a), 0, 1024 * 1024, SIZE - 1024 * 1024);
      fs.closeSync(fd);
      fs.utimesSync(abs, MTIME_S, MTIME_S);
    });
    const report = await executePlan(uploadPlan(local, folderId), d);
    const after = toFileStat(fs.lstatSync(abs));
    expect({ size: after.size, mtimeMs: after.mtimeMs, inode: after.inode }).toEqual({ size: local.size, mtimeMs: local.mtimeMs, inode: local.inode });
    expect(after.ctimeMs).not.toBe(local.ctimeMs);
    expect(report.failures.map((f) => f.code)).toEqual(['LOCAL_CHANGED']);
    expect(store.getBaseByKey('Docs/big.bin')).toBeUndefined();
    expect(store.listOutbox()).toEqual([]);
    expect(emu.control.listDocuments(binderId)).toHaveLength(0);
  });

  it('an edit that shows in the stat is never recorded as synced, even when the bytes sent were the planned ones', async () => {
    const { emu, d, root, store, folderId, binderId } = await setup();
    const local = writeLocal(root, content(1));
    const abs = path.join(root, 'Docs', 'big.bin');
    // A new mtime only: every byte sent is still the planned content, so only the stat check can refuse it.
    onFirstBytes(d, () => fs.utimesSync(abs, MTIME_S + 5, MTIME_S + 5));
    const report = await executePlan(uploadPlan(local, folderId), d);
    expect(report.failures.map((f) => f.code)).toEqual(['LOCAL_CHANGED']);
    expect(store.getBaseByKey('Docs/big.bin')).toBeUndefined();
    expect(store.listOutbox()).toEqual([]);
    expect(emu.control.listDocuments(binderId)).toHaveLength(0);
  });
});

describe('a file swapped while its upload waited for its slot (black-box round 37a, F1 and F2)', () => {
  // The swap is made when the upload's slot is recorded: after the step's own check, right before the file is
  // opened for the PUT. Nothing outside the root may reach storage, and a FIFO must not block the pass.
  type Fixture = Awaited<ReturnType<typeof setup>>;
  function swapAtSlot(s: Fixture, swap: () => void): void {
    const setStage = s.store.setOutboxStage.bind(s.store);
    s.store.setOutboxStage = (...args: Parameters<typeof setStage>) => {
      if (args[1] === 'slot') swap();
      return setStage(...args);
    };
  }
  const outsideFile = (s: Fixture, name: string, bytes: Buffer): string => {
    const p = path.join(path.dirname(s.root), name);
    fs.writeFileSync(p, bytes, { mode: 0o600 });
    return p;
  };
  const cases: Array<[string, (s: Fixture, abs: string) => void]> = [
    ['the file replaced by a symbolic link to a file outside the root', (s, abs) => {
      const secret = outsideFile(s, 'secret.bin', content(9));
      fs.rmSync(abs);
      fs.symlinkSync(secret, abs);
    }],
    ['its folder replaced by a symbolic link to a folder outside the root', (s, abs) => {
      const outside = path.join(path.dirname(s.root), 'outside');
      fs.mkdirSync(outside);
      fs.writeFileSync(path.join(outside, 'big.bin'), content(9));
      fs.renameSync(path.dirname(abs), `${path.dirname(abs)}.old`);
      fs.symlinkSync(outside, path.dirname(abs));
    }],
    ['the file replaced by a FIFO', (_s, abs) => {
      fs.rmSync(abs);
      execFileSync('mkfifo', [abs]);
    }],
  ];
  for (const [what, swap] of cases) {
    it(`${what}: nothing is sent, the step is postponed`, async () => {
      const s = await setup();
      const local = writeLocal(s.root, content(7));
      swapAtSlot(s, () => swap(s, path.join(s.root, 'Docs', 'big.bin')));
      s.emu.control.resetCounters();
      const report = await executePlan(uploadPlan(local, s.folderId), s.d);
      expect(report.failures).toEqual([expect.objectContaining({ kind: 'upload', relPath: 'Docs/big.bin', code: 'LOCAL_CHANGED', retryable: true })]);
      expect(s.emu.control.counters()['storage-put']).toBe(0);
      expect(s.emu.control.listDocuments(s.binderId)).toEqual([]);
      expect(s.store.listOutbox()).toEqual([]);
      expect(s.store.loadBase().size).toBe(0);
    }, 20_000);
  }
});

describe("a new document's name, taken on the service while its PUT is in flight", () => {
  // The commit names only a folder and a file name (4.9): committed, the upload would become a version of the
  // document that appeared, burying its content without a conflict (the emulator adds it as a version).
  type Fixture = Awaited<ReturnType<typeof setup>>;
  const cases: Array<[string, (s: Fixture) => void]> = [
    ['a colleague creates a document of that name', (s) => onFirstBytes(s.d, () => void s.emu.control.addDocument(s.binderId, s.folderId, 'big.bin', 'COLLEAGUE'))],
    ['a document is renamed to it, but for case', (s) => {
      const other = s.emu.control.addDocument(s.binderId, s.folderId, 'other.bin', 'COLLEAGUE').document;
      onFirstBytes(s.d, () => void s.emu.control.renameDocument(other.id, 'BIG.bin'));
    }],
  ];
  for (const [what, takeTheName] of cases) {
    it(`${what}: not committed, the file and the document left as they are`, async () => {
      const s = await setup();
      const local = writeLocal(s.root, content(7));
      takeTheName(s);
      const report = await executePlan(uploadPlan(local, s.folderId), s.d);
      expect(report.failures).toEqual([expect.objectContaining({ kind: 'upload', relPath: 'Docs/big.bin', code: 'REMOTE_CHANGED', retryable: true })]);
      expect(report.failures[0]?.message).toContain('appeared in its remote folder');
      const docs = s.emu.control.listDocuments(s.binderId);
      expect(docs).toHaveLength(1);
      expect(s.emu.control.listVersions(docs[0]!.id)).toHaveLength(1);
      expect(s.emu.control.readContent(docs[0]!.id).toString()).toBe('COLLEAGUE');
      expect(s.emu.control.counters().commit).toBe(0);
      expect(s.store.listOutbox()).toEqual([]);
      expect(s.store.loadBase().size).toBe(0);
      expect(sha(fs.readFileSync(path.join(s.root, 'Docs', 'big.bin')))).toBe(local.sha256);
    });
  }

  it('uploads into one folder that end together share one listing of it', async () => {
    const s = await setup();
    const files = ['a.txt', 'b.txt', 'c.txt', 'd.txt'].map((name) => {
      const abs = path.join(s.root, 'Docs', name);
      fs.writeFileSync(abs, `content of ${name}`);
      return { relPath: `Docs/${name}`, key: `Docs/${name}`, ...toFileStat(fs.lstatSync(abs)), sha256: sha(Buffer.from(`content of ${name}`)) };
    });
    const plan: Plan = {
      groups: files.map((local) => [{ kind: 'upload' as const, relPath: local.relPath, key: local.key, local, target: { documentId: null, folderId: s.folderId, fileName: local.relPath.slice(5) }, reason: 'new-local' as const, replacesBase: null }]),
      issues: [],
      blocked: null,
    };
    const report = await executePlan(plan, s.d);
    expect(report.failures).toEqual([]);
    expect(s.emu.control.listDocuments(s.binderId).map((d) => d.fileName).sort()).toEqual(['a.txt', 'b.txt', 'c.txt', 'd.txt']);
    expect(s.emu.control.counters().folderdocuments).toBe(1);
  });
});

describe('how a failed upload is logged', () => {
  const WARN = 40;
  const INFO = 30;

  it('a file that grows while its PUT reads it is postponed at info, not a warning (a writer is busy with it)', async () => {
    const { d, root, folderId, store } = await setup();
    const lines = captureLog(d);
    const local = writeLocal(root, content(1));
    onFirstBytes(d, () => fs.appendFileSync(path.join(root, 'Docs', 'big.bin'), Buffer.alloc(4096, 1)));
    const report = await executePlan(uploadPlan(local, folderId), d);
    expect(report.failures.map((f) => f.code)).toEqual(['UPLOAD_SOURCE_FAILED']);
    expect(store.getBaseByKey('Docs/big.bin')).toBeUndefined();
    const about = lines.filter((l) => l.relPath === 'Docs/big.bin' && l.level >= INFO);
    expect(about.map((l) => [l.level, l.msg])).toEqual([[INFO, 'action postponed: the file changed while it was being synced']]);
  });

  it('a file a program keeps changing is postponed at info once, then at debug in later passes of a daemon', async () => {
    const { d, root, folderId } = await setup();
    const lines = captureLog(d);
    d.failuresLogged = new Map();
    const abs = path.join(root, 'Docs', 'big.bin');
    for (let pass = 0; pass < 3; pass++) {
      const local = writeLocal(root, content(1 + pass));
      onFirstBytes(d, () => fs.appendFileSync(abs, Buffer.alloc(4096, 1)));
      const report = await executePlan(uploadPlan(local, folderId), d);
      expect(report.failures).toEqual([expect.objectContaining({ postponed: true, ...(pass > 0 ? { repeated: true } : {}) })]);
    }
    const about = lines.filter((l) => l.relPath === 'Docs/big.bin');
    expect(about.filter((l) => l.level >= INFO).map((l) => [l.level, l.msg])).toEqual([[INFO, 'action postponed: the file changed while it was being synced']]);
    expect(about.filter((l) => l.msg === 'action postponed again')).toHaveLength(2);
  });

  it('many steps postponed in one plan (rm -rf under an upload) name the first 20 at info and count the rest in one line', async () => {
    const { d, root, folderId } = await setup();
    const lines = captureLog(d);
    const local = writeLocal(root, content(3));
    fs.rmSync(path.join(root, 'Docs', 'big.bin')); // gone before its upload starts: every step is postponed
    const groups = Array.from({ length: 25 }, (_, i) => uploadPlan({ ...local, relPath: `Docs/f${i}.bin`, key: `Docs/f${i}.bin` }, folderId).groups[0]!);
    const report = await executePlan({ groups, issues: [], blocked: null }, d);
    expect(report.failures).toHaveLength(25);
    expect(report.failures.every((f) => f.postponed === true)).toBe(true);
    const postponed = lines.filter((l) => l.msg === 'action postponed: the file changed while it was being synced');
    expect(postponed.filter((l) => l.level === INFO)).toHaveLength(20);
    expect(postponed).toHaveLength(25);
    expect(lines.filter((l) => l.level === INFO && /^25 steps postponed in all/.test(String(l.msg)))).toHaveLength(1);
  });

  it("a document that got a new version on the service during the upload is postponed at info, not a warning (the next pass resolves it)", async () => {
    const s = await setup();
    const lines = captureLog(s.d);
    const local = writeLocal(s.root, content(7));
    onFirstBytes(s.d, () => void s.emu.control.addDocument(s.binderId, s.folderId, 'big.bin', 'COLLEAGUE'));
    const report = await executePlan(uploadPlan(local, s.folderId), s.d);
    expect(report.failures).toEqual([expect.objectContaining({ code: 'REMOTE_CHANGED', postponed: true })]);
    const about = lines.filter((l) => l.relPath === 'Docs/big.bin' && l.level >= INFO);
    expect(about.map((l) => [l.level, l.msg])).toEqual([[INFO, 'action postponed: the document changed on the service meanwhile; the next pass resolves it']]);
  });

  it('an upload cut short by a stop (SIGTERM past the grace period) is said at info, not as a failure', async () => {
    const { d, root, folderId } = await setup();
    const lines = captureLog(d);
    const stop = new AbortController();
    d.signal = stop.signal;
    const local = writeLocal(root, content(3));
    onFirstBytes(d, () => stop.abort());
    const report = await executePlan(uploadPlan(local, folderId), d);
    expect(report.failures.map((f) => f.code)).toEqual(['ABORTED']);
    const about = lines.filter((l) => l.relPath === 'Docs/big.bin' && l.level >= INFO);
    expect(about.map((l) => [l.level, l.msg])).toEqual([[INFO, 'action stopped: the pass was cancelled; the next run takes it up']]);
  });

  it('the same failure in a later pass of a daemon is logged at debug, a new one at warn again', async () => {
    const { d, root, folderId } = await setup();
    const lines = captureLog(d);
    d.failuresLogged = new Map();
    const local = writeLocal(root, content(1));
    // The planned folder does not exist: the service refuses the commit the same way every pass.
    const plan = uploadPlan(local, 'no-such-folder');
    const warnings = () => lines.filter((l) => l.level === WARN && l.msg === 'action failed').length;
    const first = await executePlan(plan, d);
    expect(first.failures).toHaveLength(1);
    expect(first.failures[0]?.repeated).toBeUndefined();
    expect(warnings()).toBe(1);
    const again = await executePlan(plan, d);
    expect(again.failures[0]?.repeated).toBe(true);
    expect(warnings()).toBe(1);
    expect(lines.filter((l) => l.msg === 'action failed again')).toHaveLength(1);
    // Once it worked, a later failure is news again.
    expect((await executePlan(uploadPlan(local, folderId), d)).failures).toEqual([]);
    const local2 = writeLocal(root, content(2));
    await executePlan(uploadPlan(local2, 'no-such-folder'), d);
    expect(warnings()).toBe(2);
  });
});
