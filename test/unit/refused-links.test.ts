// Downloads whose links storage refused (black-box round 37b, F7): the hold's length, and what ends or keeps it.
import { describe, expect, it } from 'vitest';
import type { ActionFailure } from '../../src/sync/executor.js';
import type { Action, Plan } from '../../src/sync/model.js';
import { FIRST_HOLD_MS, holdMs, holdRanOut, MAX_HOLD_MS, rememberRefusedLinks, withheldAsRefusedLinks, type RefusedLinks } from '../../src/sync/refused-links.js';

const download = (relPath: string, versionId = 'v1'): Action => ({
  kind: 'download',
  relPath,
  key: relPath,
  doc: { documentId: `doc-${relPath}`, fileName: relPath.split('/').pop()!, folderId: 'F', versionId, relPath, key: relPath },
  expectLocal: null,
  reason: 'new-remote',
});
const plan = (...actions: Action[]): Plan => ({ groups: actions.map((a) => [a]), issues: [], blocked: null });
const failure = (relPath: string, code = 'STORAGE_LINK_EXPIRED'): ActionFailure => ({ kind: 'download', relPath, code, retryable: true, message: `${relPath}: ${code}` });
const ran = (failures: ActionFailure[], stoppedBy: unknown = null) => ({ failures, stoppedBy });

describe('downloads whose links storage refused', () => {
  it('are held a minute, doubling with each refusal in a row, at most 15 minutes', () => {
    expect([1, 2, 3, 4, 5, 6, 20].map(holdMs)).toEqual([1, 2, 4, 8, 15, 15, 15].map((m) => m * 60_000));
    expect(FIRST_HOLD_MS).toBe(60_000);
    expect(MAX_HOLD_MS).toBe(15 * 60_000);
    const memo: RefusedLinks = new Map();
    for (let i = 0; i < 3; i++) rememberRefusedLinks(memo, plan(download('a.txt')), ran([failure('a.txt')]), i * 1_000_000);
    expect(memo.get('a.txt')?.tries).toBe(3);
    expect(holdRanOut(memo, 2_000_000 + 4 * 60_000 - 1)).toBe(false);
    expect(holdRanOut(memo, 2_000_000 + 4 * 60_000)).toBe(true);
    expect(holdRanOut(memo, 1_000)).toBe(true); // a clock set back
  });

  it('start again at a minute after a failure of another kind, and are forgotten once they went through', () => {
    const memo: RefusedLinks = new Map();
    rememberRefusedLinks(memo, plan(download('a.txt')), ran([failure('a.txt')]), 0);
    rememberRefusedLinks(memo, plan(download('a.txt')), ran([failure('a.txt')]), 60_000);
    expect(memo.get('a.txt')?.tries).toBe(2);
    rememberRefusedLinks(memo, plan(download('a.txt')), ran([failure('a.txt', 'SERVICE_UNAVAILABLE')]), 200_000);
    expect(memo.size).toBe(0);
    rememberRefusedLinks(memo, plan(download('a.txt')), ran([failure('a.txt')]), 300_000);
    expect(memo.get('a.txt')?.tries).toBe(1);
    rememberRefusedLinks(memo, plan(download('a.txt')), ran([]), 400_000);
    expect(memo.size).toBe(0);
  });

  it('keep their count when a pass the service stopped early may not have run them', () => {
    const memo: RefusedLinks = new Map();
    rememberRefusedLinks(memo, plan(download('a.txt')), ran([failure('a.txt')]), 0);
    const stopped = new Error('the service keeps failing');
    rememberRefusedLinks(memo, plan(download('a.txt'), download('b.txt')), ran([failure('b.txt')], stopped), 60_000);
    expect(memo.get('a.txt')?.tries).toBe(1);
    expect(memo.get('b.txt')?.tries).toBe(1);
  });

  it('hold back only the version refused, and drop entries nothing plans any more', () => {
    const memo: RefusedLinks = new Map();
    rememberRefusedLinks(memo, plan(download('a.txt'), download('gone.txt')), ran([failure('a.txt'), failure('gone.txt')]), 0);
    const same = withheldAsRefusedLinks(plan(download('a.txt'), download('other.txt')), memo, 30_000);
    expect(same.groups.map((g) => g[0]!.kind === 'download' && g[0]!.relPath)).toEqual(['other.txt']);
    expect(same.issues.map((i) => [i.relPath, i.code])).toEqual([['a.txt', 'remote-change-not-downloaded']]);
    expect([...memo.keys()]).toEqual(['a.txt']);
    const newer = withheldAsRefusedLinks(plan(download('a.txt', 'v2')), memo, 30_000);
    expect(newer.groups).toHaveLength(1);
    expect(newer.issues).toEqual([]);
  });
});
