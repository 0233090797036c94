// Downloads and uploads whose presigned URLs storage refused (black-box round 37b, F7, and its upload side): the
// hold's length, and what ends or keeps it.
import { describe, expect, it } from 'vitest';
import type { ActionFailure } from '../../src/sync/executor.js';
import type { Action, LocalFile, Plan } from '../../src/sync/model.js';
import { FIRST_HOLD_MS, holdMs, holdRanOut, MAX_HOLD_MS, rememberRefusedUrls, withheldAsRefusedUrls, type RefusedUrls } from '../../src/sync/refused-urls.js';

const download = (relPath: string, versionId = 'v1'): Action => ({
  kind: 'download',
  relPath,
  key: relPath,
  doc: { documentId: `doc-${relPath}`, fileName: relPath.split('/').pop()!, folderId: 'F', versionId, relPath, key: relPath },
  expectLocal: null,
  reason: 'new-remote',
});
const local = (relPath: string, sha256: string | null = 'aaa', size = 3): LocalFile => ({ relPath, key: relPath, size, mtimeMs: 1, inode: 2, ctimeMs: 3, sha256 });
const upload = (relPath: string, sha256: string | null = 'aaa', size = 3): Action => ({
  kind: 'upload',
  relPath,
  key: relPath,
  local: local(relPath, sha256, size),
  target: { documentId: null, folderId: 'F', fileName: relPath.split('/').pop()! },
  reason: 'new-local',
  replacesBase: null,
});
const conflict = (relPath: string, versionId = 'v1', sha256 = 'aaa'): Action => ({
  kind: 'conflict',
  relPath,
  key: relPath,
  local: local(relPath, sha256),
  doc: { documentId: `doc-${relPath}`, fileName: relPath.split('/').pop()!, folderId: 'F', versionId, relPath, key: relPath },
  base: null,
  policy: 'local-wins',
  conflictPath: `${relPath} (conflict)`,
  uploadConflictCopy: false,
  keepLocal: false,
});
const plan = (...actions: Action[]): Plan => ({ groups: actions.map((a) => [a]), issues: [], blocked: null });
const failure = (relPath: string, code = 'STORAGE_LINK_EXPIRED', kind: ActionFailure['kind'] = 'download'): ActionFailure => ({ kind, relPath, code, retryable: true, message: `${relPath}: ${code}` });
const refusedUpload = (relPath: string) => failure(relPath, 'STORAGE_SLOT_EXPIRED', 'upload');
const ran = (failures: ActionFailure[], stoppedBy: unknown = null) => ({ failures, stoppedBy });
const kept = (p: Plan) => p.groups.map((g) => (g[0] as { relPath?: string }).relPath);

describe('downloads whose links storage refused', () => {
  it('are held a minute, doubling with each refusal in a row, at most 15 minutes', () => {
    expect([1, 2, 3, 4, 5, 6, 20].map(holdMs)).toEqual([1, 2, 4, 8, 15, 15, 15].map((m) => m * 60_000));
    expect(FIRST_HOLD_MS).toBe(60_000);
    expect(MAX_HOLD_MS).toBe(15 * 60_000);
    const memo: RefusedUrls = new Map();
    for (let i = 0; i < 3; i++) rememberRefusedUrls(memo, plan(download('a.txt')), ran([failure('a.txt')]), i * 1_000_000);
    expect(memo.get('a.txt')?.tries).toBe(3);
    expect(holdRanOut(memo, 2_000_000 + 4 * 60_000 - 1)).toBe(false);
    expect(holdRanOut(memo, 2_000_000 + 4 * 60_000)).toBe(true);
    expect(holdRanOut(memo, 1_000)).toBe(true); // a clock set back
  });

  it('start again at a minute after a failure of another kind, and are forgotten once they went through', () => {
    const memo: RefusedUrls = new Map();
    rememberRefusedUrls(memo, plan(download('a.txt')), ran([failure('a.txt')]), 0);
    rememberRefusedUrls(memo, plan(download('a.txt')), ran([failure('a.txt')]), 60_000);
    expect(memo.get('a.txt')?.tries).toBe(2);
    rememberRefusedUrls(memo, plan(download('a.txt')), ran([failure('a.txt', 'SERVICE_UNAVAILABLE')]), 200_000);
    expect(memo.size).toBe(0);
    rememberRefusedUrls(memo, plan(download('a.txt')), ran([failure('a.txt')]), 300_000);
    expect(memo.get('a.txt')?.tries).toBe(1);
    rememberRefusedUrls(memo, plan(download('a.txt')), ran([]), 400_000);
    expect(memo.size).toBe(0);
  });

  it('keep their count when a pass the service stopped early may not have run them', () => {
    const memo: RefusedUrls = new Map();
    rememberRefusedUrls(memo, plan(download('a.txt')), ran([failure('a.txt')]), 0);
    const stopped = new Error('the service keeps failing');
    rememberRefusedUrls(memo, plan(download('a.txt'), download('b.txt')), ran([failure('b.txt')], stopped), 60_000);
    expect(memo.get('a.txt')?.tries).toBe(1);
    expect(memo.get('b.txt')?.tries).toBe(1);
  });

  it('hold back only the version refused, and drop entries nothing plans any more', () => {
    const memo: RefusedUrls = new Map();
    rememberRefusedUrls(memo, plan(download('a.txt'), download('gone.txt')), ran([failure('a.txt'), failure('gone.txt')]), 0);
    const same = withheldAsRefusedUrls(plan(download('a.txt'), download('other.txt')), memo, 30_000);
    expect(kept(same)).toEqual(['other.txt']);
    expect(same.issues.map((i) => [i.relPath, i.code])).toEqual([['a.txt', 'remote-change-not-downloaded']]);
    expect([...memo.keys()]).toEqual(['a.txt']);
    const newer = withheldAsRefusedUrls(plan(download('a.txt', 'v2')), memo, 30_000);
    expect(newer.groups).toHaveLength(1);
    expect(newer.issues).toEqual([]);
  });
});

describe('uploads whose presigned URLs storage refused', () => {
  it('are held as downloads are, said as a local change not uploaded with when it is tried again', () => {
    const memo: RefusedUrls = new Map();
    const said = rememberRefusedUrls(memo, plan(upload('Docs/a.txt'), upload('Docs/b.txt')), ran([refusedUpload('Docs/a.txt')]), Date.UTC(2026, 0, 1, 12, 0, 0));
    expect(said).toEqual([
      {
        relPath: 'Docs/a.txt',
        code: 'local-change-not-uploaded',
        detail: "storage refused every upload URL for it (STORAGE_SLOT_EXPIRED, once): check this machine's clock and any proxy between it and storage; tried again at 2026-01-01 12:01:00 UTC, or at once when the file changes",
      },
    ]);
    expect([...memo.keys()]).toEqual(['Docs/a.txt']);
    const within = withheldAsRefusedUrls(plan(upload('Docs/a.txt'), upload('Docs/c.txt')), memo, Date.UTC(2026, 0, 1, 12, 0, 59));
    expect(kept(within)).toEqual(['Docs/c.txt']);
    expect(within.issues.map((i) => i.detail)).toEqual([said[0]!.detail]);
    expect(withheldAsRefusedUrls(plan(upload('Docs/a.txt')), memo, Date.UTC(2026, 0, 1, 12, 1, 0)).groups).toHaveLength(1);
    rememberRefusedUrls(memo, plan(upload('Docs/a.txt')), ran([refusedUpload('Docs/a.txt')]), Date.UTC(2026, 0, 1, 12, 1, 0));
    expect(memo.get('Docs/a.txt')?.tries).toBe(2);
    expect(holdRanOut(memo, Date.UTC(2026, 0, 1, 12, 2, 59))).toBe(false);
    expect(holdRanOut(memo, Date.UTC(2026, 0, 1, 12, 3, 0))).toBe(true);
  });

  it('are tried at once with other content (by hash, or by stat for a file not read yet), and start again at a minute', () => {
    const memo: RefusedUrls = new Map();
    rememberRefusedUrls(memo, plan(upload('a.txt')), ran([refusedUpload('a.txt')]), 0);
    rememberRefusedUrls(memo, plan(upload('a.txt')), ran([refusedUpload('a.txt')]), 60_000);
    expect(memo.get('a.txt')?.tries).toBe(2);
    expect(withheldAsRefusedUrls(plan(upload('a.txt', 'bbb')), memo, 70_000).groups).toHaveLength(1);
    rememberRefusedUrls(memo, plan(upload('a.txt', 'bbb')), ran([refusedUpload('a.txt')]), 70_000);
    expect(memo.get('a.txt')?.tries).toBe(1);
    const big: RefusedUrls = new Map();
    rememberRefusedUrls(big, plan(upload('big.bin', null, 5)), ran([refusedUpload('big.bin')]), 0);
    expect(withheldAsRefusedUrls(plan(upload('big.bin', null, 5)), big, 1_000).groups).toHaveLength(0);
    expect(withheldAsRefusedUrls(plan(upload('big.bin', null, 6)), big, 1_000).groups).toHaveLength(1);
  });

  it("a keep-both conflict whose copy's upload was refused: said at the copy, and the copy's upload (the next pass's new file) is held", () => {
    const memo: RefusedUrls = new Map();
    const keepBoth: Action = { ...conflict('c.txt'), policy: 'keep-both', uploadConflictCopy: true } as Action;
    const said = rememberRefusedUrls(memo, plan(keepBoth), ran([failure('c.txt', 'STORAGE_SLOT_EXPIRED', 'conflict')]), 0);
    expect(said.map((i) => [i.relPath, i.code])).toEqual([['c.txt (conflict)', 'local-change-not-uploaded']]);
    expect(withheldAsRefusedUrls(plan(upload('c.txt (conflict)')), memo, 1_000).groups).toHaveLength(0);
    expect(withheldAsRefusedUrls(plan(upload('c.txt (conflict)', 'bbb')), memo, 1_000).groups).toHaveLength(1);
  });
  it('a refusal of one direction does not pass for the other: a conflict whose upload was refused is said as an upload', () => {
    const memo: RefusedUrls = new Map();
    const said = rememberRefusedUrls(memo, plan(conflict('c.txt')), ran([failure('c.txt', 'STORAGE_SLOT_EXPIRED', 'conflict')]), 0);
    expect(said.map((i) => [i.code, i.documentId])).toEqual([['local-change-not-uploaded', 'doc-c.txt']]);
    // Held while both sides are as they were; another remote version or other local content is tried at once.
    expect(withheldAsRefusedUrls(plan(conflict('c.txt')), memo, 1_000).groups).toHaveLength(0);
    expect(withheldAsRefusedUrls(plan(conflict('c.txt', 'v2')), memo, 1_000).groups).toHaveLength(1);
    expect(withheldAsRefusedUrls(plan(conflict('c.txt', 'v1', 'bbb')), memo, 1_000).groups).toHaveLength(1);
  });
});
