// Damage inside a state DB that keeps its length (black-box round 37b, F5), on real SQLite files in a temp dir:
// garbage written over the pages of the `base` table while nothing ran. Opening it and reading its meta and the
// base count still work (what `status` and a no-change pass read), so only SQLite's quick_check tells.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StateStore } from '../../src/state/store.js';
import type { BaseEntry } from '../../src/sync/model.js';
import { caught } from './caught.js';

let tmp: string;
let dbFile: string;

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bs-integrity-'));
  dbFile = path.join(tmp, 'main', 'state.db');
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

function row(n: number): BaseEntry {
  const rel = `Docs/file-${n}.txt`;
  return {
    documentId: `doc-${n}`, versionId: `ver-${n}`, versionLabel: '1.0', folderId: 'fold-1', fileName: `file-${n}.txt`,
    relPath: rel, key: rel.toLowerCase(), sha256: n.toString(16).padStart(64, '0'), size: n, mtimeMs: 1_700_000_000_000 + n,
    inode: 1000 + n, ctimeMs: 1_700_000_000_000 + n,
  };
}

/** A state DB of `rows` base rows and a meta value, closed (its -wal checkpointed into the file and removed). */
function syncedStateDb(rows: number): void {
  const s = StateStore.open(dbFile);
  s.transaction(() => {
    for (let i = 0; i < rows; i++) s.putBase(row(i));
  });
  s.setMeta('lastPassAt', '2026-11-28T00:00:00.000Z');
  s.close();
}

/** Writes garbage over the base table's root page (an interior page above its leaves at this size), as a stray write would. */
function garbageOverBaseRoot(): void {
  const raw = new Database(dbFile, { readonly: true });
  const root = raw.prepare("SELECT rootpage FROM sqlite_schema WHERE name = 'base'").pluck().get() as number;
  const pageSize = raw.pragma('page_size', { simple: true }) as number;
  raw.close();
  const size = fs.statSync(dbFile).size;
  const fd = fs.openSync(dbFile, 'r+');
  try {
    fs.writeSync(fd, Buffer.alloc(pageSize, 'stray bytes '), 0, pageSize, (root - 1) * pageSize);
  } finally {
    fs.closeSync(fd);
  }
  expect(fs.statSync(dbFile).size).toBe(size); // the length is kept: the cut-short check cannot tell
}

describe('a state DB damaged inside, its length kept', () => {
  it('an intact DB passes the check, by every way it is opened', () => {
    syncedStateDb(2000);
    for (const open of [() => StateStore.open(dbFile), () => StateStore.openReadOnly(dbFile), () => StateStore.openScratchCopy(dbFile)]) {
      const s = open();
      try {
        expect(() => s.assertIntact('main')).not.toThrow();
      } finally {
        s.close();
      }
    }
  });

  it('opens and answers what status and a no-change pass read, but the check refuses it: STATE_CORRUPT naming the pair and the file, with the move-aside hint', () => {
    syncedStateDb(2000);
    garbageOverBaseRoot();
    for (const open of [() => StateStore.open(dbFile), () => StateStore.openReadOnly(dbFile), () => StateStore.openScratchCopy(dbFile)]) {
      const s = open();
      try {
        // What went unnoticed: the meta page and the count (answered from an index) read fine.
        expect(s.getMeta('lastPassAt')).toBe('2026-11-28T00:00:00.000Z');
        expect(s.countBase()).toBe(2000);
        const err = caught(() => s.assertIntact('main'));
        expect(err.code).toBe('STATE_CORRUPT');
        expect(err.retryable).toBe(false);
        expect(err.message).toContain(`pair main: its state DB ${dbFile} is damaged (SQLite's quick_check: `);
        expect(err.message).not.toContain('*** in database');
        expect(err.hint).toMatch(/move it aside \(e\.g\. add \.broken to its name.*differences become conflicts/);
        // And the damage is real: reading the rows fails as the first pass with a change would.
        expect(caught(() => s.loadBase()).code).toBe('STATE_CORRUPT');
      } finally {
        s.close();
      }
    }
  });
});
