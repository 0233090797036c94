// Downloads that could not put the file in place (an immutable file: EPERM at the rename) are held back until the
// file changes, the document gets another version, or a hold that doubles with each failure runs out.
import { describe, expect, it } from 'vitest';
import type { ActionFailure } from '../../src/sync/executor.js';
import type { Action, FileStat, Plan } from '../../src/sync/model.js';
import { FIRST_HOLD_MS, holdMs, MAX_HOLD_MS, rememberUnreplaceable, withheldAsUnreplaceable, type FolderCheck, type FolderState, type UnreplaceableDownloads } from '../../src/sync/unreplaceable.js';

const stat = (ctimeMs = 1000): FileStat => ({ size: 10, mtimeMs: 1000, inode: 7, ctimeMs });
const download = (relPath: string, versionId: string, expectLocal: FileStat | null = stat()): Action => ({
  kind: 'download',
  relPath,
  key: relPath,
  doc: { documentId: `doc-${relPath}`, fileName: relPath.split('/').pop()!, folderId: 'F', versionId, relPath, key: relPath },
  expectLocal,
  reason: 'remote-modified',
});
const plan = (...actions: Action[]): Plan => ({ groups: actions.map((a) => [a]), issues: [], blocked: null });
const failure = (relPath: string, errno: string | undefined, code = 'LOCAL_IO'): ActionFailure => ({
  kind: 'download',
  relPath,
  code,
  retryable: false,
  message: `commit failed for /root/${relPath}: ${errno ?? 'x'}`,
  ...(errno !== undefined ? { errno } : {}),
});

describe('downloads onto a file that cannot be replaced', () => {
  it('holds back the same version onto the same file, with an issue, and lets everything else through', () => {
    const memo: UnreplaceableDownloads = new Map();
    const first = plan(download('D/locked.bin', 'v2'), download('D/other.txt', 'v5'));
    expect(rememberUnreplaceable(memo, first, [failure('D/locked.bin', 'EPERM')], 0)).toBe(true);
    expect([...memo.keys()]).toEqual(['D/locked.bin']);

    const next = withheldAsUnreplaceable(plan(download('D/locked.bin', 'v2'), download('D/other.txt', 'v6')), memo, 60_000);
    expect(next.groups.map((g) => (g[0] as Extract<Action, { kind: 'download' }>).relPath)).toEqual(['D/other.txt']);
    expect(next.issues).toEqual([
      {
        relPath: 'D/locked.bin',
        documentId: 'doc-D/locked.bin',
        code: 'remote-change-not-downloaded',
        detail: expect.stringMatching(/^the local file could not be replaced \(EPERM: is it immutable or append-only\? lsattr shows it, chattr -i \/ -a clears it; .*\); not downloaded again until the file changes or the document gets another version \(else tried again in 9 min\)$/),
      },
    ]);
    // The file changed (`chattr -i` moves its ctime), or the document has a newer version: tried at once.
    expect(withheldAsUnreplaceable(plan(download('D/locked.bin', 'v2', stat(2000))), memo, 60_000).groups).toHaveLength(1);
    memo.clear();
    rememberUnreplaceable(memo, first, [failure('D/locked.bin', 'EPERM')], 0);
    expect(withheldAsUnreplaceable(plan(download('D/locked.bin', 'v3')), memo, 60_000).groups).toHaveLength(1);
  });

  it('only failures of the local file or folder count: not the service, not a file changed meanwhile, not other errors', () => {
    const memo: UnreplaceableDownloads = new Map();
    const p = plan(download('a', 'v'), download('b', 'v'), download('c', 'v'), download('d', 'v'), download('e', 'v'));
    rememberUnreplaceable(memo, p, [failure('a', 'ENOSPC'), failure('b', undefined, 'SERVICE_UNAVAILABLE'), failure('c', undefined, 'LOCAL_CHANGED'), failure('d', 'EROFS'), failure('e', 'ENAMETOOLONG')], 0);
    expect([...memo.keys()].sort()).toEqual(['d', 'e']);
  });

  it('a hold doubles with each failure of the same download, up to six hours, and a clock set back ends it', () => {
    expect([1, 2, 3, 10].map(holdMs)).toEqual([FIRST_HOLD_MS, 2 * FIRST_HOLD_MS, 4 * FIRST_HOLD_MS, MAX_HOLD_MS]);
    const memo: UnreplaceableDownloads = new Map();
    const p = plan(download('x', 'v'));
    rememberUnreplaceable(memo, p, [failure('x', 'EPERM')], 0);
    expect(withheldAsUnreplaceable(p, memo, FIRST_HOLD_MS - 1).groups).toHaveLength(0);
    expect(withheldAsUnreplaceable(p, memo, FIRST_HOLD_MS).groups).toHaveLength(1); // tried again
    rememberUnreplaceable(memo, p, [failure('x', 'EPERM')], FIRST_HOLD_MS); // ...and failed again
    expect(memo.get('x')?.tries).toBe(2);
    expect(withheldAsUnreplaceable(p, memo, 3 * FIRST_HOLD_MS - 1).groups).toHaveLength(0);
    expect(withheldAsUnreplaceable(p, memo, 3 * FIRST_HOLD_MS).groups).toHaveLength(1);
    expect(withheldAsUnreplaceable(p, memo, FIRST_HOLD_MS - 1).groups).toHaveLength(1); // clock set back
  });

  it('a trash that could not take the old content holds the download only until the trash can take it (round 29a, F4)', () => {
    const memo: UnreplaceableDownloads = new Map();
    const p = plan(download('x', 'v'));
    const trashFailure: ActionFailure = { ...failure('x', 'ENOSPC', 'LOCAL_TRASH'), trash: '/state/main/trash' };
    rememberUnreplaceable(memo, p, [trashFailure], 0);
    expect(memo.get('x')?.trash).toEqual({ dir: '/state/main/trash', errno: 'ENOSPC', bytes: 10 });
    const asked: Array<[string, string, number]> = [];
    const held = withheldAsUnreplaceable(p, memo, 1_000, (...a) => (asked.push(a), false));
    expect(held.groups).toHaveLength(0);
    expect(held.issues[0]?.detail).toMatch(/^the local file's old content could not be kept in the trash \(ENOSPC: the pair's trash \/state\/main\/trash cannot take the local file's old content\), so it was not replaced; not downloaded again until the trash can take it/);
    expect(asked).toEqual([['/state/main/trash', 'ENOSPC', 10]]);
    expect(withheldAsUnreplaceable(p, memo, 1_000, () => true).groups).toHaveLength(1); // room again: at once
    expect(withheldAsUnreplaceable(p, memo, 1_000).groups).toHaveLength(0); // no check given: the hold stands
  });

  it('forgets a download that went through, and one no longer planned', () => {
    const memo: UnreplaceableDownloads = new Map();
    rememberUnreplaceable(memo, plan(download('x', 'v'), download('y', 'v')), [failure('x', 'EPERM'), failure('y', 'EPERM')], 0);
    rememberUnreplaceable(memo, plan(download('x', 'v')), [], FIRST_HOLD_MS);
    expect([...memo.keys()]).toEqual(['y']);
    withheldAsUnreplaceable(plan(download('z', 'v')), memo, 0);
    expect(memo.size).toBe(0);
  });

  describe('a folder that refused (black-box round 32a, F2)', () => {
    // The folder as the check reports it: `state` stands for its stat and write verdict.
    let folder: FolderState = { dir: 'A/Sub', state: 'mode 555', writable: false };
    const check: FolderCheck = () => folder;
    const p = plan(download('A/Sub/f.txt', 'v2'), download('A/Sub/new.txt', 'v1', null));
    const failures = [failure('A/Sub/f.txt', 'EACCES'), failure('A/Sub/new.txt', 'EACCES')];

    it('EACCES holds the download on its folder, said so, until the folder changes and lets this process write', () => {
      folder = { dir: 'A/Sub', state: 'mode 555', writable: false };
      const memo: UnreplaceableDownloads = new Map();
      rememberUnreplaceable(memo, p, failures, 0, check);
      expect(memo.get('A/Sub/f.txt')?.folder).toEqual({ dir: 'A/Sub', state: 'mode 555' });
      const held = withheldAsUnreplaceable(p, memo, 1_000, undefined, check);
      expect(held.groups).toHaveLength(0);
      expect(held.issues.map((i) => i.detail)).toEqual([
        'the local file could not be replaced (EACCES: no permission to write in its folder); not downloaded again until its folder A/Sub lets this process write in it (looked at every pass), the file changes or the document gets another version (else tried again in 10 min)',
        'the new file could not be written (EACCES: no permission to write in its folder); not downloaded again until its folder A/Sub lets this process write in it (looked at every pass), the file changes or the document gets another version (else tried again in 10 min)',
      ]);
      folder = { dir: 'A/Sub', state: 'mode 575', writable: false }; // changed, but still refuses: held
      expect(withheldAsUnreplaceable(p, memo, 1_000, undefined, check).groups).toHaveLength(0);
      folder = { dir: 'A/Sub', state: 'mode 755', writable: true }; // `chmod 755`: both at once
      expect(withheldAsUnreplaceable(p, memo, 1_000, undefined, check).groups).toHaveLength(2);
      expect(withheldAsUnreplaceable(p, memo, 1_000).groups).toHaveLength(0); // no check given: the hold stands
    });

    it('a folder already writable when the failure was noted is released only by a change of it', () => {
      folder = { dir: 'A/Sub', state: 'mode 755', writable: true };
      const memo: UnreplaceableDownloads = new Map();
      rememberUnreplaceable(memo, p, failures, 0, check);
      expect(withheldAsUnreplaceable(p, memo, 1_000, undefined, check).groups).toHaveLength(0);
      folder = { dir: 'A/Sub', state: 'mode 755, ACL changed', writable: true };
      expect(withheldAsUnreplaceable(p, memo, 1_000, undefined, check).groups).toHaveLength(2);
    });

    it('EROFS is the folder\'s; EPERM only while the folder refuses writing (else an immutable file: the file\'s)', () => {
      const q = plan(download('A/Sub/f.txt', 'v2'));
      folder = { dir: 'A/Sub', state: 'ro', writable: false };
      const memo: UnreplaceableDownloads = new Map();
      rememberUnreplaceable(memo, q, [failure('A/Sub/f.txt', 'EROFS')], 0, check);
      expect(memo.get('A/Sub/f.txt')?.folder).toEqual({ dir: 'A/Sub', state: 'ro' });
      rememberUnreplaceable(memo, q, [failure('A/Sub/f.txt', 'EPERM')], 0, check);
      expect(memo.get('A/Sub/f.txt')?.folder?.dir).toBe('A/Sub');
      expect(memo.get('A/Sub/f.txt')?.detail).toMatch(/^EPERM: its folder refuses to be written: is it immutable or append-only\? lsattr -d shows it/);
      folder = { dir: 'A/Sub', state: 'rw', writable: true };
      rememberUnreplaceable(memo, q, [failure('A/Sub/f.txt', 'EPERM')], 0, check);
      expect(memo.get('A/Sub/f.txt')?.folder).toBeUndefined();
      folder = { dir: 'A/Sub', state: 'rw, another file written', writable: true };
      const held = withheldAsUnreplaceable(q, memo, 1_000, undefined, check);
      expect(held.groups).toHaveLength(0);
      expect(held.issues[0]?.detail).toMatch(/not downloaded again until the file changes or the document gets another version/);
    });
  });
});
