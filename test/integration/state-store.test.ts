// StateStore against real SQLite files in temp dirs: migrations, reopen, every method, rollback, modes, scale.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BinderSyncError } from '../../src/errors.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/state/migrations.js';
import { PAGE_CACHE_KIB, StateStore } from '../../src/state/store.js';
import type { BaseEntry, Issue, RemoteFolder } from '../../src/sync/model.js';
import { caught } from './caught.js';

let tmp: string;
let dbFile: string;
const open: StateStore[] = [];

function openStore(file = dbFile): StateStore {
  const s = StateStore.open(file);
  open.push(s);
  return s;
}

function base(n: number, over: Partial<BaseEntry> = {}): BaseEntry {
  return {
    documentId: `doc-${n}`,
    versionId: `ver-${n}`,
    versionLabel: n % 2 === 0 ? `1.${n}` : null,
    folderId: `fold-${n % 7}`,
    fileName: `file ${n}.txt`,
    relPath: `Folder ${n % 7}/file ${n}.txt`,
    key: `folder ${n % 7}/file ${n}.txt`,
    sha256: n.toString(16).padStart(64, '0'),
    size: n * 3,
    mtimeMs: 1_700_000_000_000 + n + 0.123456,
    inode: 2 ** 62 + n * 1024,
    ctimeMs: 1_700_000_000_500 + n + 0.654321,
    ...over,
  };
}

/** A state DB of schema version 3 (before ctimes were kept) holding base(1) without its ctime; returns that row. */
function writeDbBeforeCtimes(): Omit<BaseEntry, 'ctimeMs'> {
  fs.mkdirSync(path.dirname(dbFile), { recursive: true });
  const raw = new Database(dbFile);
  for (const m of MIGRATIONS.slice(0, 3)) raw.exec(m);
  raw.pragma('user_version = 3');
  const { ctimeMs: _none, ...old } = base(1);
  raw.prepare(
    `INSERT INTO base (document_id, version_id, version_label, folder_id, file_name, rel_path, key, sha256, size, mtime_ms, inode)
     VALUES (@documentId, @versionId, @versionLabel, @folderId, @fileName, @relPath, @key, @sha256, @size, @mtimeMs, @inode)`,
  ).run(old);
  raw.close();
  return old;
}

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bs-state-'));
  dbFile = path.join(tmp, 'state', 'pair-a', 'state.db');
});
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('open and migrations', () => {
  it('creates dir 0700 and file 0600, migrates an empty DB to the current version in WAL mode', () => {
    const s = openStore();
    expect(fs.statSync(path.dirname(dbFile)).mode & 0o777).toBe(0o700);
    expect(fs.statSync(dbFile).mode & 0o777).toBe(0o600);
    s.close();
    const raw = new Database(dbFile, { readonly: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
    expect(tables).toEqual(expect.arrayContaining(['base', 'outbox', 'conflicts', 'issues', 'folders', 'meta', 'counters']));
    raw.close();
  });

  it('keeps a small page cache (the 16 MB default of better-sqlite3 stays resident in an idle daemon)', () => {
    const s = openStore();
    const db = (s as unknown as { db: Database.Database }).db;
    expect(db.pragma('cache_size', { simple: true })).toBe(-PAGE_CACHE_KIB);
    expect(PAGE_CACHE_KIB).toBeLessThanOrEqual(4000);
  });

  it('reopens an existing DB without re-running migrations and keeps its data', () => {
    const s = openStore();
    s.putBase(base(1));
    s.setMeta('binderId', 'B-1');
    s.close();
    const again = openStore();
    expect(again.getBase('doc-1')).toEqual(base(1));
    expect(again.getMeta('binderId')).toBe('B-1');
  });

  it('upgrades a DB written before ctimes were kept: its rows read ctime 0 ("not known"), new rows keep theirs', () => {
    const old = writeDbBeforeCtimes();
    const ro = StateStore.openReadOnly(dbFile); // status beside a daemon not yet restarted after the upgrade
    expect(ro.countBase()).toBe(1);
    expect(ro.listOutbox()).toEqual([]);
    // Its rows too (status counts those an ignore rule hides): the columns of later schemas read as 0.
    expect(ro.loadBase().get('doc-1')).toEqual({ ...old, ctimeMs: 0 });
    ro.close();
    const s = openStore();
    expect(s.getBase('doc-1')).toEqual({ ...old, ctimeMs: 0 });
    s.putBase(base(2));
    expect(s.getBase('doc-2')).toEqual(base(2));
  });

  it('drops the in-sync mark when it migrates to schema 8, so that the first pass reconciles and the rows take their birth times', () => {
    fs.mkdirSync(path.dirname(dbFile), { recursive: true });
    const raw = new Database(dbFile);
    for (const m of MIGRATIONS.slice(0, 7)) raw.exec(m);
    raw.pragma('user_version = 7');
    raw.prepare("INSERT INTO meta (key, value) VALUES ('inSyncMark', 'a mark'), ('other', 'kept')").run();
    raw.close();
    const s = openStore();
    expect(s.getMeta('inSyncMark')).toBeUndefined();
    expect(s.getMeta('other')).toBe('kept');
  });

  it("keeps a file's birth time where it is known, and none where it is not (schema 8)", () => {
    const s = openStore();
    s.putBase(base(3, { bornMs: 1_700_000_000_123.456 }));
    s.putBase(base(4));
    expect(s.getBase('doc-3')).toEqual(base(3, { bornMs: 1_700_000_000_123.456 }));
    expect(s.getBase('doc-4')).toEqual(base(4));
    expect(s.getBase('doc-4')).not.toHaveProperty('bornMs');
    const { documentId: _d, versionId: _v, versionLabel: _l, ...row } = base(5, { bornMs: 42.5 });
    s.addOutbox({ ...row, documentId: null, versionLabel: '1', reason: 'new-local' });
    expect(s.listOutbox()[0]?.bornMs).toBe(42.5);
  });

  it('refuses a DB written by a newer schema version', () => {
    fs.mkdirSync(path.dirname(dbFile), { recursive: true });
    const raw = new Database(dbFile);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    const err = caught(() => StateStore.open(dbFile));
    expect(err.code).toBe('STATE_TOO_NEW');
    expect(err.retryable).toBe(false);
    expect(err.hint).toBeTruthy();
  });

  it('reports a non-SQLite file as STATE_CORRUPT with a move-aside hint', () => {
    fs.mkdirSync(path.dirname(dbFile), { recursive: true });
    fs.writeFileSync(dbFile, 'this is certainly not a sqlite database, just some text that is long enough '.repeat(20));
    const err = caught(() => StateStore.open(dbFile));
    expect(err.code).toBe('STATE_CORRUPT');
    expect(err.hint).toMatch(/move the file aside/);
  });

  it('reports a DB with a table dropped as STATE_CORRUPT naming the table, from open and from the dry run\'s copy', () => {
    StateStore.open(dbFile).close();
    const raw = new Database(dbFile);
    raw.exec('DROP TABLE base');
    raw.close();
    for (const open of [() => StateStore.open(dbFile), () => StateStore.openScratchCopy(dbFile)]) {
      const err = caught(open);
      expect(err.code).toBe('STATE_CORRUPT');
      expect(err.message).toContain('its table base is missing');
      expect(err.hint).toMatch(/move it aside/);
    }
  });

  it('reports a path that cannot be a DB file (a directory) as STATE_OPEN', () => {
    fs.mkdirSync(dbFile, { recursive: true });
    const err = caught(() => StateStore.open(dbFile));
    expect(err.code).toBe('STATE_OPEN');
  });
});

describe('base rows', () => {
  it('put, get, get by key, upsert, delete', () => {
    const s = openStore();
    expect(s.getBase('doc-1')).toBeUndefined();
    s.putBase(base(1));
    s.putBase(base(2));
    expect(s.getBase('doc-1')).toEqual(base(1));
    expect(s.getBaseByKey(base(2).key)).toEqual(base(2));
    expect(s.getBaseByKey('nope')).toBeUndefined();

    const moved = base(1, { versionId: 'ver-1b', versionLabel: '2.0', relPath: 'New/place.txt', key: 'new/place.txt' });
    s.putBase(moved);
    expect(s.getBase('doc-1')).toEqual(moved);
    expect(s.getBaseByKey(base(1).key)).toBeUndefined();
    expect(s.loadBase().size).toBe(2);

    s.deleteBase('doc-1');
    expect(s.getBase('doc-1')).toBeUndefined();
    expect([...s.loadBase().keys()]).toEqual(['doc-2']);
  });

  it('round-trips 100k rows exactly (fractional mtimes, inodes above 2^53)', () => {
    const s = openStore();
    const N = 100_000;
    s.transaction(() => {
      for (let i = 0; i < N; i++) s.putBase(base(i));
    });
    s.close();
    const again = openStore();
    const all = again.loadBase();
    expect(all.size).toBe(N);
    for (const i of [0, 1, 4242, 77_777, N - 1]) expect(all.get(`doc-${i}`)).toEqual(base(i));
  });
});

describe('transactions', () => {
  it('roll back every write when the function throws', () => {
    const s = openStore();
    s.putBase(base(1));
    expect(() =>
      s.transaction(() => {
        s.putBase(base(2));
        s.deleteBase('doc-1');
        s.setMeta('k', 'v');
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(s.getBase('doc-1')).toEqual(base(1));
    expect(s.getBase('doc-2')).toBeUndefined();
    expect(s.getMeta('k')).toBeUndefined();
  });

  it('return the function value and nest', () => {
    const s = openStore();
    const v = s.transaction(() => {
      s.putBase(base(1));
      try {
        s.transaction(() => {
          s.putBase(base(2));
          throw new Error('inner');
        });
      } catch {
        /* the inner savepoint alone rolls back */
      }
      return 42;
    });
    expect(v).toBe(42);
    expect(s.getBase('doc-1')).toBeDefined();
    expect(s.getBase('doc-2')).toBeUndefined();
  });
});

describe('transactionSoon (group commit)', () => {
  const walSize = () => fs.statSync(`${dbFile}-wal`).size;

  it('commits the writes of one event-loop turn in one transaction, settling each promise after the commit', async () => {
    const s = openStore();
    s.putBase(base(0)); // the WAL exists and the base pages are in it
    // Four writes queued together, then the same four one turn apart: the shared commit writes each touched
    // page once, four commits write them four times.
    let before = walSize();
    const ids = await Promise.all([1, 2, 3, 4].map((n) => s.transactionSoon(() => s.addIntent('download', { n }))));
    const together = walSize() - before;
    before = walSize();
    for (const n of [5, 6, 7, 8]) await s.transactionSoon(() => s.addIntent('download', { n }));
    const apart = walSize() - before;
    expect(together).toBeLessThan(apart);
    expect(ids).toEqual([...ids].sort((a, b) => a - b)); // queued order is kept
    // Committed, not merely pending: another connection sees every row.
    const reader = StateStore.openReadOnly(dbFile);
    open.push(reader);
    expect(reader.listIntents().map((i) => i.payload)).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((n) => ({ n })));
  });

  it('rolls back and rejects only the write that threw', async () => {
    const s = openStore();
    const results = await Promise.allSettled([
      s.transactionSoon(() => s.putBase(base(1))),
      s.transactionSoon(() => {
        s.putBase(base(2));
        throw new Error('boom');
      }),
      s.transactionSoon(() => {
        s.putBase(base(3));
        return 'three';
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ message: 'boom' });
    expect((results[2] as PromiseFulfilledResult<string>).value).toBe('three');
    expect([...s.loadBase().keys()].sort()).toEqual(['doc-1', 'doc-3']);
  });

  it('a write alone rolls back alone too', async () => {
    const s = openStore();
    await expect(
      s.transactionSoon(() => {
        s.putBase(base(1));
        throw new Error('alone');
      }),
    ).rejects.toThrow('alone');
    expect(s.getBase('doc-1')).toBeUndefined();
  });

  it('close() commits what is still queued; writes queued after it reject', async () => {
    const s = openStore();
    const queued = s.transactionSoon(() => s.putBase(base(1)));
    s.close();
    await expect(queued).resolves.toBeUndefined();
    await expect(s.transactionSoon(() => 1)).rejects.toThrow(/closed/);
    const again = openStore();
    expect(again.getBase('doc-1')).toEqual(base(1));
  });
});

describe('outbox', () => {
  const planned = {
    relPath: 'Reports/q1.pdf',
    key: 'reports/q1.pdf',
    documentId: null,
    folderId: 'F1',
    fileName: 'q1.pdf',
    sha256: 'a'.repeat(64),
    size: 10,
    mtimeMs: 1.5,
    inode: 99,
    ctimeMs: 2.5,
    versionLabel: '1.0',
    reason: 'new-local',
  };

  it('records stages before they are taken and survives a reopen with the same uploadId', () => {
    const s = openStore();
    const id1 = s.addOutbox(planned);
    const id2 = s.addOutbox({ ...planned, relPath: 'Reports/q2.pdf', key: 'reports/q2.pdf', documentId: 'D9' });
    expect(id2).toBeGreaterThan(id1);
    s.setOutboxStage(id1, 'slot', { uploadId: 'U-1' });
    s.setOutboxStage(id1, 'put');
    s.close();

    const again = openStore();
    const rows = again.listOutbox();
    expect(rows.map((r) => r.id)).toEqual([id1, id2]);
    expect(rows[0]).toMatchObject({ ...planned, stage: 'put', uploadId: 'U-1', versionId: null });
    expect(rows[1]).toMatchObject({ documentId: 'D9', stage: 'planned', uploadId: null });
    expect(rows[0]?.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);

    again.setOutboxStage(id1, 'committed', { documentId: 'D1', versionId: 'V1' });
    expect(again.listOutbox()[0]).toMatchObject({ stage: 'committed', uploadId: 'U-1', documentId: 'D1', versionId: 'V1' });
    again.deleteOutbox(id1);
    expect(again.listOutbox().map((r) => r.id)).toEqual([id2]);
  });

  it('refuses an unknown id and an unknown stage', () => {
    const s = openStore();
    expect(caught(() => s.setOutboxStage(12345, 'slot')).code).toBe('STATE_OUTBOX_MISSING');
    const id = s.addOutbox(planned);
    expect(() => s.setOutboxStage(id, 'bogus' as 'slot')).toThrow(/CHECK constraint/);
  });
});

describe('conflicts, issues, folders, meta, counters', () => {
  it('lists conflicts newest first with a limit', () => {
    const s = openStore();
    for (let i = 0; i < 5; i++) {
      s.addConflict({
        relPath: `a/${i}.txt`,
        conflictPath: i === 0 ? null : `a/${i} (conflict).txt`,
        documentId: i === 1 ? null : `D${i}`,
        policy: 'keep-both',
        detail: `detail ${i}`,
        at: `2026-01-0${i + 1}T00:00:00.000Z`,
      });
    }
    const last2 = s.listConflicts(2);
    expect(last2.map((c) => c.relPath)).toEqual(['a/4.txt', 'a/3.txt']);
    expect(last2[0]).toMatchObject({ conflictPath: 'a/4 (conflict).txt', documentId: 'D4', policy: 'keep-both' });
    const all = s.listConflicts();
    expect(all).toHaveLength(5);
    expect(all[4]).toMatchObject({ relPath: 'a/0.txt', conflictPath: null });
    expect(all[3]).toMatchObject({ documentId: null });
  });

  it('replaces issues wholesale', () => {
    const s = openStore();
    const first: Issue[] = [
      { relPath: 'x.txt', code: 'root-files-unsupported', detail: 'files in the root cannot be uploaded' },
      { relPath: 'New/a.txt', documentId: 'D1', code: 'waiting-for-remote-folder', detail: 'no folder New' },
    ];
    s.replaceIssues(first);
    expect(s.listIssues()).toEqual(first);
    const second: Issue[] = [{ relPath: 'l', code: 'symlink', detail: 'not followed' }];
    s.replaceIssues(second);
    expect(s.listIssues()).toEqual(second);
    s.replaceIssues([]);
    expect(s.listIssues()).toEqual([]);
  });

  it('replaces the folder snapshot and loads it parents first', () => {
    const s = openStore();
    const folders: RemoteFolder[] = [
      { folderId: 'F2', name: 'Sub', parentId: 'F1', relPath: 'Top/Sub', key: 'top/sub' },
      { folderId: 'F1', name: 'Top', parentId: null, relPath: 'Top', key: 'top' },
    ];
    s.replaceFolders(folders);
    expect(s.loadFolders()).toEqual([folders[1], folders[0]]);
    s.replaceFolders([folders[1]!]);
    expect(s.loadFolders()).toEqual([folders[1]]);
  });

  it('meta set/overwrite/delete and counters accumulate', () => {
    const s = openStore();
    expect(s.getMeta('lastPoll')).toBeUndefined();
    s.setMeta('lastPoll', '1');
    s.setMeta('lastPoll', '2');
    expect(s.getMeta('lastPoll')).toBe('2');
    s.deleteMeta('lastPoll');
    expect(s.getMeta('lastPoll')).toBeUndefined();
  });

  it('close is idempotent and a closed store refuses work', () => {
    const s = openStore();
    s.close();
    s.close();
    expect(() => s.getMeta('x')).toThrow();
  });
});

describe('an empty state DB', () => {
  it('is refused as damaged by every opener (binder-sync never leaves one: it creates the file with its schema)', () => {
    const s = openStore();
    s.putBase(base(1));
    s.close();
    expect(fs.readdirSync(path.dirname(dbFile)).filter((n) => n.includes('creating'))).toEqual([]);
    fs.truncateSync(dbFile, 0);
    for (const opener of [() => StateStore.open(dbFile), () => StateStore.openReadOnly(dbFile), () => StateStore.openScratchCopy(dbFile)]) {
      const err = caught(opener);
      expect(err.code).toBe('STATE_CORRUPT');
      expect(err.message).toContain('is empty (0 bytes)');
      expect(err.hint).toMatch(/move it aside/);
    }
    expect(fs.statSync(dbFile).size).toBe(0); // left as it is, for the user to look at
  });

  it('one cut short (shorter than its header says, no write-ahead log left) is refused as damaged by every opener', () => {
    const s = openStore();
    for (let i = 0; i < 3000; i++) s.putBase(base(i));
    s.close();
    const full = fs.statSync(dbFile).size;
    expect(fs.existsSync(`${dbFile}-wal`)).toBe(false);
    // Untouched, it opens: the check does not refuse a whole file.
    openStore().close();
    fs.truncateSync(dbFile, Math.floor(full / 2));
    for (const opener of [() => StateStore.open(dbFile), () => StateStore.openReadOnly(dbFile), () => StateStore.openScratchCopy(dbFile)]) {
      const err = caught(opener);
      expect(err.code).toBe('STATE_CORRUPT');
      expect(err.message).toMatch(/is cut short: \d+ bytes, where its header says \d+ pages/);
      expect(err.hint).toMatch(/move it aside/);
    }
    expect(fs.statSync(dbFile).size).toBe(Math.floor(full / 2)); // left as it is, for the user to look at
  });

  it('a new state DB is made under a temporary name and linked into place with its schema; nothing else is left', () => {
    openStore().close();
    const raw = new Database(dbFile, { readonly: true, fileMustExist: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    raw.close();
    expect(fs.readdirSync(path.dirname(dbFile)).filter((n) => n.startsWith('state.db.'))).toEqual([]);
  });
});

describe('read-only open for status', () => {
  it('reads a DB of an older schema version (a daemon not yet restarted after an upgrade)', () => {
    const s = StateStore.open(dbFile);
    s.setMeta('lastPassAt', '2026-01-01T00:00:00.000Z');
    s.close();
    const raw = new Database(dbFile);
    raw.pragma('user_version = 1');
    raw.close();
    const ro = StateStore.openReadOnly(dbFile);
    open.push(ro);
    expect(ro.getMeta('lastPassAt')).toBe('2026-01-01T00:00:00.000Z');
  });

  it('reads a DB in a folder it may not write to (a read-only mount): from memory, as no process has it open', (ctx) => {
    const s = openStore();
    s.setMeta('lastPassAt', '2026-01-01T00:00:00.000Z');
    s.close();
    const ro = path.join(tmp, 'ro');
    fs.mkdirSync(ro);
    const mount = (...args: string[]) => spawnSync('mount', args, { stdio: 'ignore' }).status === 0;
    if (process.getuid?.() !== 0 || !mount('-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', ro)) return ctx.skip();
    try {
      fs.copyFileSync(dbFile, path.join(ro, 'state.db'));
      expect(mount('-o', 'remount,ro', ro)).toBe(true);
      const store = StateStore.openReadOnly(path.join(ro, 'state.db'));
      open.push(store);
      expect(store.getMeta('lastPassAt')).toBe('2026-01-01T00:00:00.000Z');
      store.close();
      expect(fs.readdirSync(ro)).toEqual(['state.db']);
    } finally {
      spawnSync('umount', [ro]);
    }
  });

  it('refuses a file with no schema at all', () => {
    fs.mkdirSync(path.dirname(dbFile), { recursive: true });
    new Database(dbFile).close();
    expect(() => StateStore.openReadOnly(dbFile)).toThrow(BinderSyncError);
  });
});

describe('scratch copy for sync --dry-run', () => {
  const filesIn = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir).sort() : []);

  it('a missing DB: an empty, current store, and nothing created on disk', () => {
    const s = StateStore.openScratchCopy(dbFile);
    open.push(s);
    expect(s.countBase()).toBe(0);
    s.putBase(base(1));
    s.setMeta('binderId', 'b1');
    expect(s.getBase('doc-1')).toEqual(base(1));
    s.close();
    expect(fs.existsSync(path.dirname(dbFile))).toBe(false);
  });

  it('a closed DB: its rows, with writes kept in memory; the file stays byte for byte, and no -wal or -shm appears', () => {
    const s = openStore();
    s.putBase(base(1));
    s.setMeta('binderId', 'b1');
    s.close();
    const before = fs.readFileSync(dbFile);
    const names = filesIn(path.dirname(dbFile));
    expect(names).toEqual(['state.db']);
    const copy = StateStore.openScratchCopy(dbFile);
    open.push(copy);
    expect(copy.getBase('doc-1')).toEqual(base(1));
    expect(copy.getMeta('binderId')).toBe('b1');
    copy.putBase(base(2));
    copy.deleteBase('doc-1');
    copy.setMeta('binderId', 'b2');
    copy.close();
    expect(fs.readFileSync(dbFile).equals(before)).toBe(true);
    expect(filesIn(path.dirname(dbFile))).toEqual(names);
    const again = openStore();
    expect(again.getBase('doc-1')).toEqual(base(1));
    expect(again.getBase('doc-2')).toBeUndefined();
    expect(again.getMeta('binderId')).toBe('b1');
  });

  it('a DB a daemon holds open: the rows it committed into its WAL are in the copy', () => {
    const daemon = openStore();
    daemon.putBase(base(1));
    daemon.putBase(base(2));
    expect(fs.existsSync(`${dbFile}-wal`)).toBe(true);
    const copy = StateStore.openScratchCopy(dbFile);
    open.push(copy);
    expect(copy.countBase()).toBe(2);
    copy.deleteBase('doc-2');
    expect(daemon.getBase('doc-2')).toEqual(base(2));
  });

  it('a DB of an older schema is migrated in the copy only; a newer one and garbage are refused as by open()', () => {
    const old = writeDbBeforeCtimes();
    const copy = StateStore.openScratchCopy(dbFile);
    open.push(copy);
    expect(copy.getBase('doc-1')).toEqual({ ...old, ctimeMs: 0 });
    copy.putBase(base(2));
    expect(copy.getBase('doc-2')).toEqual(base(2));
    const check = new Database(dbFile, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(3);
    check.close();
    const newer = new Database(dbFile);
    newer.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    newer.close();
    expect(caught(() => StateStore.openScratchCopy(dbFile)).code).toBe('STATE_TOO_NEW');
    fs.writeFileSync(dbFile, 'not a database, but long enough to have a header of a hundred bytes '.repeat(4));
    expect(caught(() => StateStore.openScratchCopy(dbFile)).code).toBe('STATE_CORRUPT');
  });
});

describe('versions a base row held before its present one (a listing older than the synced state)', () => {
  it('each version a row moves away from is recorded, by the upsert too; moving back to one unrecords it', () => {
    const s = openStore();
    s.putBase(base(1));
    expect(s.supersededVersions()).toEqual(new Map());
    s.putBase(base(1, { versionId: 'ver-1b' }));
    s.putBase(base(1, { versionId: 'ver-1c', relPath: 'moved.txt', key: 'moved.txt' }));
    s.putBase(base(1, { versionId: 'ver-1c', sha256: 'f'.repeat(64) })); // same version: nothing recorded
    expect(s.supersededVersions()).toEqual(new Map([['doc-1', new Set(['ver-1', 'ver-1b'])]]));
    s.putBase(base(1, { versionId: 'ver-1b' })); // back to an earlier one (recorded so on purpose)
    expect(s.supersededVersions().get('doc-1')).toEqual(new Set(['ver-1', 'ver-1c']));
    s.forgetSuperseded('doc-1');
    expect(s.supersededVersions()).toEqual(new Map());
  });

  it('is pruned by age, and survives a reopen', () => {
    const s = openStore();
    s.putBase(base(2));
    s.putBase(base(2, { versionId: 'ver-2b' }));
    s.close();
    open.length = 0;
    const again = openStore();
    expect(again.supersededVersions().get('doc-2')).toEqual(new Set(['ver-2']));
    const nowSec = Math.floor(Date.now() / 1000);
    expect(again.pruneSuperseded(nowSec - 60)).toBe(0);
    expect(again.pruneSuperseded(nowSec + 60)).toBe(1);
    expect(again.supersededVersions()).toEqual(new Map());
  });
});
