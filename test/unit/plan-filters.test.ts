// The plan filters: files still being written wait for a later pass; uploads without required metadata wait
// with an issue. Everything else passes through untouched.
import { describe, expect, it } from 'vitest';
import type { MetadataResolver } from '../../src/sync/metadata-rules.js';
import type { Action, LocalFile, Plan } from '../../src/sync/model.js';
import { deferRecentlyWritten, TRANSFER_TEMP_QUIET_MS, withheldAsRefused, withheldForMetadata } from '../../src/sync/plan-filters.js';

const file = (relPath: string, mtimeMs: number, ctimeMs = mtimeMs): LocalFile => ({ relPath, key: relPath, size: 1, mtimeMs, inode: 1, ctimeMs, sha256: 'h' });
const upload = (f: LocalFile): Action => ({ kind: 'upload', relPath: f.relPath, key: f.key, local: f, target: { documentId: null, folderId: 'F', fileName: 'x' }, reason: 'new-local', replacesBase: null });
const mkdir = (relPath: string): Action => ({ kind: 'mkdir-local', relPath, key: relPath, folderId: 'F' });
const plan = (groups: Action[][]): Plan => ({ groups, issues: [], blocked: null });

describe('deferRecentlyWritten', () => {
  it('drops the groups reading a file younger than the minimum age and says when to look again', () => {
    const now = 10_000;
    const r = deferRecentlyWritten(plan([[upload(file('A/old.txt', 5_000))], [upload(file('A/new.txt', 9_700))], [mkdir('B')]]), 1_000, now);
    expect(r.plan.groups.map((g) => g[0]!.kind + ' ' + (g[0] as { relPath: string }).relPath)).toEqual(['upload A/old.txt', 'mkdir-local B']);
    expect(r.deferred).toEqual(['A/new.txt']);
    expect(r.recheckInMs).toBe(9_700 + 1_000 - now + 50);
  });

  it('goes by the ctime, which no program sets: a file tar gave a future mtime is not held until then', () => {
    const now = 10_000;
    const ahead = now + 7_200_000; // the archive's clock was two hours ahead
    const r = deferRecentlyWritten(plan([[upload(file('A/extracted-earlier.txt', ahead, 8_000))], [upload(file('A/extracting.txt', ahead, 9_800))]]), 1_000, now);
    expect(r.plan.groups.map((g) => (g[0] as { relPath: string }).relPath)).toEqual(['A/extracted-earlier.txt']);
    expect(r.deferred).toEqual(['A/extracting.txt']);
    expect(r.recheckInMs).toBe(9_800 + 1_000 - now + 50);
    // ...and an old mtime (tar x, cp -p) does not make a file still being written look settled.
    expect(deferRecentlyWritten(plan([[upload(file('A/old-mtime.txt', 1, 9_900))]]), 1_000, now).deferred).toEqual(['A/old-mtime.txt']);
  });

  it('a ctime up to a minute ahead (a file server clock) waits; further ahead (a clock set back) does not', () => {
    const now = 10_000;
    const r = deferRecentlyWritten(plan([[upload(file('A/server.txt', 0, now + 30_000))], [upload(file('A/set-back.txt', 0, now + 3_600_000))]]), 1_000, now);
    expect(r.deferred).toEqual(['A/server.txt']);
    expect(r.plan.groups.map((g) => (g[0] as { relPath: string }).relPath)).toEqual(['A/set-back.txt']);
  });

  it("holds the in-flight files of rsync, sed -i and mktemp for a minute, even with a zero minimum age (sync)", () => {
    const now = 100_000;
    const names = ['A/.dataset.bin.DqhFLr', 'A/sedX1b2C3', 'A/tmp.0123456789', 'A/.bashrc.backup'];
    for (const minAge of [0, 1_000]) {
      const r = deferRecentlyWritten(plan(names.map((n) => [upload(file(n, 1, now - 5_000))])), minAge, now);
      expect(r.deferred).toEqual(names);
      expect(r.recheckInMs).toBe(now - 5_000 + TRANSFER_TEMP_QUIET_MS - now + 50);
    }
    // Still for a minute: uploaded like any file (a real file of that shape is only late).
    expect(deferRecentlyWritten(plan([[upload(file(names[0]!, 1, now - TRANSFER_TEMP_QUIET_MS))]]), 0, now).deferred).toEqual([]);
    // Ordinary names with a dot are not held beyond the minimum age.
    expect(deferRecentlyWritten(plan([[upload(file('A/report.2026.pdf', 1, now - 5_000)), upload(file('A/.config', 1, now - 5_000))]]), 1_000, now).deferred).toEqual([]);
  });

  it('does nothing with a zero minimum age (the sync command)', () => {
    const p = plan([[upload(file('A/new.txt', 10_000))]]);
    expect(deferRecentlyWritten(p, 0, 10_000)).toEqual({ plan: p, deferred: [], recheckInMs: null });
  });
});

describe('withheldForMetadata', () => {
  it('holds back uploads whose required metadata has no rule, with an issue naming the element', () => {
    const resolver: MetadataResolver = { forPath: () => [], missingFor: (p) => (p.startsWith('A/') ? ['Department'] : []) };
    const r = withheldForMetadata(plan([[upload(file('A/x.txt', 1))], [upload(file('B/y.txt', 1))]]), resolver);
    expect(r.groups).toHaveLength(1);
    expect((r.groups[0]![0] as { relPath: string }).relPath).toBe('B/y.txt');
    expect(r.issues).toEqual([{ relPath: 'A/x.txt', code: 'metadata-missing', detail: expect.stringContaining('Department') }]);
  });
});

describe('withheldAsRefused', () => {
  it('holds back an upload of exactly the refused content, with the reason; other content and paths go on', () => {
    const refused = new Map([['A/x.txt', { content: 'h', detail: 'the service refused: bad name' }]]);
    const changed = { ...file('A/x.txt', 1), sha256: 'other' };
    const r = withheldAsRefused(plan([[upload(file('A/x.txt', 1))], [upload(file('B/y.txt', 1))]]), refused);
    expect(r.groups.map((g) => (g[0] as { relPath: string }).relPath)).toEqual(['B/y.txt']);
    expect(r.issues).toEqual([{ relPath: 'A/x.txt', code: 'upload-refused', detail: expect.stringContaining('bad name') }]);
    expect(withheldAsRefused(plan([[upload(changed)]]), refused).groups).toHaveLength(1);
    const p = plan([[upload(file('A/x.txt', 1))]]);
    expect(withheldAsRefused(p, new Map())).toBe(p);
  });
});
