// The human "not synced" list of `binder-sync status`: actionable issues first, many issues of one code in one
// folder folded into one line, the "more" line counting items, not lines, and names with control characters.
import { describe, expect, it } from 'vitest';
import { formatStatus, withStateDirFull, type PairStatus, type StatusDocument } from '../../src/cli/status-command.js';
import { groupIssues, printable } from '../../src/sync/issue-groups.js';
import type { Issue } from '../../src/sync/model.js';

const emptyTrash: PairStatus['trash'] = { dir: '/s/main/trash', files: 0, bytes: 0, oldestDay: null, newestDay: null, capped: false, retentionDays: 30 };

const waiting = (dir: string, n: number): Issue[] =>
  Array.from({ length: n }, (_, i) => ({ relPath: `${dir}/f${String(i).padStart(3, '0')}.txt`, code: 'waiting-for-remote-folder' as const, detail: `no remote folder for "${dir}" yet` }));

describe('groupIssues', () => {
  it('puts actionable codes first and folds 4+ items of one code in one folder', () => {
    const issues: Issue[] = [
      ...waiting('00 New', 40),
      { relPath: '01 Docs/b.txt', code: 'unreadable', detail: 'EACCES: permission denied' },
      { relPath: '01 Docs/a.txt', code: 'upload-refused', detail: 'the service refused it' },
      { relPath: '01 Docs/c.txt', code: 'local-delete-not-propagated', detail: 'kept remotely' },
      ...waiting('00 New/sub', 2),
    ];
    expect(groupIssues(issues).map((g) => [g.label, g.code, g.count])).toEqual([
      ['01 Docs/a.txt', 'upload-refused', 1],
      ['01 Docs/b.txt', 'unreadable', 1],
      ['00 New/ (40 files)', 'waiting-for-remote-folder', 40],
      ['00 New/sub/f000.txt', 'waiting-for-remote-folder', 1],
      ['00 New/sub/f001.txt', 'waiting-for-remote-folder', 1],
      ['01 Docs/c.txt', 'local-delete-not-propagated', 1],
    ]);
  });

  it('never lends one kind of local path the wording of another: unknown-state groups by what the path is, and counts items (round 28a, T7)', () => {
    const symlink = 'the local path is a symlink (never followed)';
    const special = 'the local path is not a regular file';
    const issues: Issue[] = [
      ...['a', 'b', 'c', 'd'].map((n): Issue => ({ relPath: `Docs/${n}-link`, code: 'unknown-state', detail: symlink })),
      ...['e', 'f', 'g', 'h'].map((n): Issue => ({ relPath: `Docs/${n}-fifo`, code: 'unknown-state', detail: special })),
    ];
    expect(groupIssues(issues)).toEqual([
      { label: 'Docs/ (4 items: a-link, b-link, c-link, d-link)', code: 'unknown-state', detail: symlink, count: 4 },
      { label: 'Docs/ (4 items: e-fifo, f-fifo, g-fifo, h-fifo)', code: 'unknown-state', detail: special, count: 4 },
    ]);
  });

  it('folds the files waiting for one missing folder into one line, however deep they lie under it (a .git)', () => {
    const detail = 'no remote folder for "P/.git" yet; the service cannot create folders';
    const git = ['P/.git/HEAD', 'P/.git/objects/aa/1', 'P/.git/objects/bb/2', 'P/.git/refs/heads/main', 'P/.git/objects/cc/3'].map((relPath): Issue => ({ relPath, code: 'waiting-for-remote-folder', detail }));
    expect(groupIssues(git)).toEqual([{ label: 'P/.git/ (5 files)', code: 'waiting-for-remote-folder', detail, count: 5 }]);
    // A detail that names no folder above the file is grouped by the file's own folder, as before.
    expect(groupIssues([{ relPath: 'Q/x/a', code: 'waiting-for-remote-folder', detail: 'no remote folder for "Z" yet' }])[0]?.label).toBe('Q/x/a');
  });

  it('names the first files of a folded line where each file is one to look at (held temp-like names), not of a waiting folder (round 30a, F5)', () => {
    const held = ['tmp.Ab12Cd34Ef', '20241127', 'DEADBEEF', '.x.Ab12Cd', 'sedAb12Cd'].map((n): Issue => ({ relPath: `Docs/${n}`, code: 'changing', detail: "held: its name looks like a program's temp file" }));
    expect(groupIssues(held)[0]?.label).toBe('Docs/ (5 files: .x.Ab12Cd, 20241127, DEADBEEF, and 2 more)');
    expect(groupIssues(held.map((i) => ({ ...i, relPath: i.relPath.slice('Docs/'.length) })))[0]?.label).toBe('5 items (.x.Ab12Cd, 20241127, DEADBEEF, and 2 more)');
    expect(groupIssues(waiting('W', 5))[0]?.label).toBe('W/ (5 files)');
  });

  it('names the first of the files folded into the root\'s line: each must be moved into a folder (round 31b, F8)', () => {
    const detail = 'files directly in the sync root are not uploaded: documents live in folders';
    const root = ['notes.txt', 'a.pdf', 'todo.md', 'b.txt', 'c.txt', 'd.txt'].map((relPath): Issue => ({ relPath, code: 'root-files-unsupported', detail }));
    expect(groupIssues(root)).toEqual([{ label: '6 items (a.pdf, b.txt, c.txt, and 3 more)', code: 'root-files-unsupported', detail, count: 6 }]);
  });

  it('keeps a shared detail as is, and says "e.g." with the first file when the details differ', () => {
    const unreadable = ['d', 'a', 'c', 'b'].map((n): Issue => ({ relPath: `X/${n}.txt`, code: 'unreadable', detail: `EIO reading ${n}.txt` }));
    expect(groupIssues(unreadable)).toEqual([{ label: 'X/ (4 files: a.txt, b.txt, c.txt, d.txt)', code: 'unreadable', detail: 'e.g. a.txt: EIO reading a.txt', count: 4 }]);
    expect(groupIssues(waiting('W', 5))[0]?.detail).toBe('no remote folder for "W" yet');
    const remote = ['a.tmp', 'b.tmp', 'c.tmp', 'd.tmp'].map((n): Issue => ({ relPath: n, code: 'ignored', detail: "matches the ignore rule '*.tmp' (built-in rule): not downloaded, nothing deleted" }));
    expect(groupIssues(remote)[0]?.label).toBe('4 items');
  });
});

describe('formatStatus "not synced"', () => {
  it('shows at most 10 lines and counts the items left out', () => {
    const issues = Array.from({ length: 12 }, (_, i) => waiting(`dir ${String(i).padStart(2, '0')}`, 5)).flat();
    const pair: PairStatus = {
      name: 'main', localPath: '/data', binderId: 'B', direction: 'both', state: 'not-running', stateDb: '/s/main/state.db', stateError: null,
      lastPassAt: null, lastPassStopped: null, lastPollAt: null, lastScanAt: null, nextPassAt: null, activitySince: null, watcher: null, changesWaitingSince: null, inDaemon: null, lastError: null, lastErrorOfOtherSettings: null, filesInSync: 0, filesHiddenByIgnore: 0,
      pendingUploads: [], pendingUploadCount: null, pendingDownloads: 0, passBytes: null, passDone: null, passSteps: null, conflicts: [], moreConflicts: false, trash: emptyTrash, issues,
    };
    const doc: StatusDocument = {
      version: 1, generatedAt: new Date(0).toISOString(), config: '/c.yaml', stateDir: '/s', stateDirFreeBytes: null,
      daemon: { running: false, pid: null, startedAt: null, metricsPort: null, reloadRejected: null, pairsNotInConfig: [] }, pairs: [pair],
    };
    const out = formatStatus(doc, new Date(0));
    expect(out).toMatch(/^ {2}not synced +60 items$/m);
    expect(out.split('\n').filter((l) => /^ {4}dir \d\d\/ \(5 files\) {2}waiting-for-remote-folder: /.test(l))).toHaveLength(10);
    expect(out).toMatch(/^ {4}\.\.\. 10 more items in 2 more lines \(see --json\)$/m);
  });
});

describe('formatStatus "watcher"', () => {
  const pair = (watcher: string | null): PairStatus => ({
    name: 'main', localPath: '/data', binderId: 'B', direction: 'both', state: 'idle', stateDb: '/s/main/state.db', stateError: null,
    lastPassAt: null, lastPassStopped: null, lastPollAt: null, lastScanAt: null, nextPassAt: null, activitySince: null, watcher, changesWaitingSince: null, inDaemon: null, lastError: null, lastErrorOfOtherSettings: null, filesInSync: 0, filesHiddenByIgnore: 0,
    pendingUploads: [], pendingUploadCount: null, pendingDownloads: 0, passBytes: null, passDone: null, passSteps: null, conflicts: [], moreConflicts: false, trash: emptyTrash, issues: [],
  });
  const doc = (running: boolean, watcher: string | null): StatusDocument => ({
    version: 1, generatedAt: new Date(0).toISOString(), config: '/c.yaml', stateDir: '/s', stateDirFreeBytes: null,
    daemon: running ? { running: true, pid: 42, startedAt: null, metricsPort: null, reloadRejected: null, pairsNotInConfig: [] } : { running: false, pid: null, startedAt: null, metricsPort: null, reloadRejected: null, pairsNotInConfig: [] },
    pairs: [pair(watcher)],
  });

  it("shows what watches the tree while the daemon runs, right under the pair's state", () => {
    const lines = formatStatus(doc(true, 'folders'), new Date(0)).split('\n');
    const at = lines.findIndex((l) => /^ {2}state /.test(l));
    expect(lines[at + 1]).toMatch(/^ {2}watcher +folders$/);
    expect(formatStatus(doc(true, 'none: WATCH_LIMIT (changes are found by polls and rescans)'), new Date(0))).toMatch(/^ {2}watcher +none: WATCH_LIMIT \(changes are found by polls and rescans\)$/m);
  });

  it('calls a pass long past due OVERDUE: the daemon is not writing its status (a full stateDir disk)', () => {
    const due = (secondsAgo: number): StatusDocument => {
      const d = doc(true, 'folders');
      d.pairs[0]!.nextPassAt = new Date(100_000 - secondsAgo * 1000).toISOString();
      return d;
    };
    expect(formatStatus(due(20), new Date(100_000))).toMatch(/^ {2}state +idle \(next pass 20 s ago\)$/m);
    expect(formatStatus(due(-20), new Date(100_000))).not.toMatch(/OVERDUE/);
    expect(formatStatus(due(90), new Date(100_000))).toMatch(/^ {2}state +idle \(next pass 1 min ago\); OVERDUE: the daemon has not updated its status since.*is the disk of \/s full\?\)$/m);
  });

  it('shows no watcher line when the daemon is not running or has not started one yet', () => {
    expect(formatStatus(doc(false, 'folders'), new Date(0))).not.toMatch(/watcher/);
    expect(formatStatus(doc(true, null), new Date(0))).not.toMatch(/watcher/);
  });
});

describe('names with control characters', () => {
  it('stay on one line of status: a newline, a tab and other control characters are shown escaped', () => {
    expect(printable('N/new\nline.txt')).toBe('N/new\\nline.txt');
    expect(printable('N/tab\tname\r.txt')).toBe('N/tab\\tname\\r.txt');
    // An unpaired surrogate (a remote name can hold one) is shown escaped, not as U+FFFD; a valid pair is kept.
    expect(printable('Docs/sur\ud800.txt')).toBe('Docs/sur\\ud800.txt');
    expect(printable('Docs/\ud83d\ude00.txt')).toBe('Docs/\ud83d\ude00.txt');
    expect(printable('N/bell\u0007 del\u007f c1\u0085.txt')).toBe('N/bell\\x07 del\\x7f c1\\x85.txt');
    expect(printable('N/café ␁ ok.txt')).toBe('N/café ␁ ok.txt');
    const issues: Issue[] = [
      { relPath: 'N/new\nline.txt', code: 'name-not-representable', detail: 'the name holds a newline' },
      { relPath: 'N/x.txt', code: 'path-collision', detail: 'its copy "N/ta\tb.txt" is in the way' },
    ];
    const pair: PairStatus = {
      name: 'main', localPath: '/data', binderId: 'B', direction: 'both', state: 'idle', stateDb: '/s/main/state.db', stateError: null,
      lastPassAt: null, lastPassStopped: null, lastPollAt: null, lastScanAt: null, nextPassAt: null, activitySince: null, watcher: null, changesWaitingSince: null, inDaemon: null, lastError: 'LOCAL_IO: N/e\tsc\u001b[31m.txt', lastErrorOfOtherSettings: null, filesInSync: 0, filesHiddenByIgnore: 0,
      pendingUploads: [{ relPath: 'N/up\tload.txt', stage: 'slot', since: new Date(0).toISOString() }], pendingUploadCount: null, pendingDownloads: 0, passBytes: null, passDone: null, passSteps: null,
      conflicts: [{ relPath: 'N/con\nflict.txt', conflictPath: 'N/con\nflict (conflict).txt', policy: 'keep-both', detail: 'x', at: new Date(0).toISOString() }],
      moreConflicts: false, trash: emptyTrash, issues,
    };
    const doc: StatusDocument = {
      version: 1, generatedAt: new Date(0).toISOString(), config: '/c.yaml', stateDir: '/s', stateDirFreeBytes: null,
      daemon: { running: false, pid: null, startedAt: null, metricsPort: null, reloadRejected: null, pairsNotInConfig: [] }, pairs: [pair],
    };
    const out = formatStatus(doc, new Date(0));
    expect(out).toContain('N/new\\nline.txt  name-not-representable: the name holds a newline');
    expect(out).toContain('N/up\\tload.txt');
    expect(out).toContain('its copy "N/ta\\tb.txt" is in the way');
    expect(out).toContain('LOCAL_IO: N/e\\tsc\\x1b[31m.txt');
    expect(out).toContain('N/con\\nflict.txt  -> N/con\\nflict (conflict).txt');
    expect(out).not.toMatch(/[\t\u0000-\u0009\u000b-\u001f]/);
    for (const line of out.split('\n')) expect(line.startsWith('line') || line.startsWith('flict'), line).toBe(false);
  });
});

describe('formatStatus: the running config against the file', () => {
  it('names pairs the daemon runs that the file no longer has', () => {
    const out = formatStatus({
      version: 1, generatedAt: new Date(0).toISOString(), config: '/c.yaml', stateDir: '/s', stateDirFreeBytes: null,
      daemon: { running: true, pid: 42, startedAt: null, metricsPort: null, reloadRejected: null, pairsNotInConfig: ['b'] },
      pairs: [],
    }, new Date(0));
    expect(out).toMatch(/^also runs +b: no longer in the config file, still synced until the daemon is reloaded$/m);
    expect(out).not.toMatch(/^reload/m);
  });
});

describe('formatStatus "pending" during a long pass', () => {
  const doc = (pendingUploads: PairStatus['pendingUploads'], pendingUploadCount: number | null, pendingDownloads: number | null, passBytes: number | null = null, activitySince: string | null = null, changesWaitingSince: string | null = null): StatusDocument => ({
    version: 1, generatedAt: new Date(0).toISOString(), config: '/c.yaml', stateDir: '/s', stateDirFreeBytes: null,
    daemon: { running: true, pid: 42, startedAt: null, metricsPort: null, reloadRejected: null, pairsNotInConfig: [] },
    pairs: [{
      name: 'main', localPath: '/data', binderId: 'B', direction: 'both', state: 'syncing', stateDb: '/s/main/state.db', stateError: null,
      lastPassAt: null, lastPassStopped: null, lastPollAt: null, lastScanAt: null, nextPassAt: null, activitySince, watcher: null, changesWaitingSince, inDaemon: null, lastError: null, lastErrorOfOtherSettings: null, filesInSync: 700, filesHiddenByIgnore: 0,
      pendingUploads, pendingUploadCount, pendingDownloads, passBytes, passDone: null, passSteps: null, conflicts: [], moreConflicts: false, trash: emptyTrash, issues: [],
    }],
  });
  const inFlight = ['a.txt', 'b.txt', 'c.txt', 'd.txt'].map((n) => ({ relPath: `Docs/${n}`, stage: 'slot' as const, since: new Date(0).toISOString() }));

  it('says when local changes wait for the running pass (one pass at a time per pair; black-box round 28b, F1)', () => {
    const now = new Date('2026-11-27T10:00:30Z');
    const waiting = formatStatus(doc([], 0, 1, null, '2026-11-27T10:00:00Z', '2026-11-27T10:00:20Z'), now);
    expect(waiting).toMatch(/^ {2}waiting +local changes seen 10 s ago: the next pass takes them up when this one ends \(one pass at a time per pair\)$/m);
    expect(formatStatus(doc([], 0, 1, null, '2026-11-27T10:00:00Z'), now)).not.toMatch(/^ {2}waiting/m);
  });

  it('counts what the pass planned, and names the uploads in flight', () => {
    expect(formatStatus(doc(inFlight, 4300, 0), new Date(0))).toMatch(/^ {2}pending +4300 uploads \(4 in flight: Docs\/a\.txt, Docs\/b\.txt, Docs\/c\.txt, \.\.\.\), 0 downloads$/m);
    expect(formatStatus(doc([], 4300, 120), new Date(0))).toMatch(/^ {2}pending +4300 uploads, 120 downloads$/m);
    // Without the daemon's count (a state DB written by `sync` alone), the uploads in flight are all it knows.
    expect(formatStatus(doc(inFlight.slice(0, 1), null, null), new Date(0))).toMatch(/^ {2}pending +1 upload \(Docs\/a\.txt\), downloads unknown$/m);
  });

  it('shows how many of the steps the running pass planned are done (round 29b, finding 5: the pending counts looked stuck)', () => {
    const d = doc([], 2919, 0, 1024, new Date(0).toISOString());
    d.pairs[0] = { ...d.pairs[0]!, passDone: 1234, passSteps: 2919 };
    expect(formatStatus(d, new Date(10_000))).toMatch(/^ {2}progress +1234 of the 2919 steps this pass planned are done \(pending counts what it planned at its start\)$/m);
    expect(formatStatus(doc([], 0, 0, null), new Date(0))).not.toMatch(/progress/);
  });

  it('shows what the running pass has moved, and how fast (one large file can take minutes)', () => {
    const started = new Date(0).toISOString();
    const out = formatStatus(doc(inFlight.slice(0, 1), 1, 0, 120 * 1024 * 1024, started), new Date(10_000));
    expect(out).toMatch(/^ {2}transferred +120\.0 MiB this pass \(12\.0 MiB\/s\)$/m);
    // Nothing moved yet, or no pass running: no such line.
    expect(formatStatus(doc(inFlight.slice(0, 1), 1, 0, 0, started), new Date(10_000))).not.toMatch(/transferred/);
    expect(formatStatus(doc([], 0, 0, null), new Date(0))).not.toMatch(/transferred/);
  });
});

describe('formatStatus: the disk holding stateDir', () => {
  const doc = (stateDirFreeBytes: number | null): StatusDocument => ({
    version: 1, generatedAt: new Date(0).toISOString(), config: '/c.yaml', stateDir: '/s', stateDirFreeBytes,
    daemon: { running: false, pid: null, startedAt: null, metricsPort: null, reloadRejected: null, pairsNotInConfig: [] },
    pairs: [],
  });

  it('says DISK FULL and how much is free under 1 MiB, and nothing otherwise', () => {
    expect(formatStatus(doc(12 * 1024), new Date(0))).toContain('state dir  /s   DISK FULL (12 KiB free): no pass can record its work; free some space');
    for (const free of [null, 1 << 20, 50 * 2 ** 30]) expect(formatStatus(doc(free), new Date(0))).not.toContain('DISK FULL');
  });

  it("under a running daemon, says each pair is in error for it: the daemon cannot record its failing passes (round 33b, F2)", () => {
    const syncing: PairStatus = {
      name: 'main', localPath: '/data', binderId: 'B', direction: 'both', state: 'syncing', stateDb: '/s/main/state.db', stateError: null,
      lastPassAt: null, lastPassStopped: null, lastPollAt: null, lastScanAt: null, nextPassAt: null, activitySince: new Date(0).toISOString(), watcher: null, changesWaitingSince: null, inDaemon: true, lastError: null, lastErrorOfOtherSettings: null, filesInSync: 0, filesHiddenByIgnore: 0,
      pendingUploads: [], pendingUploadCount: null, pendingDownloads: 0, passBytes: null, passDone: null, passSteps: null, conflicts: [], moreConflicts: false, issues: [],
      trash: { files: 0, bytes: 0, days: [], capped: false, retentionDays: 30 } as unknown as PairStatus['trash'],
    };
    const [full] = withStateDirFull([syncing], 8 * 1024, true);
    expect(full).toMatchObject({ state: 'error', lastError: expect.stringMatching(/^the stateDir's disk is full: every pass fails at its first write/) });
    const [before] = withStateDirFull([{ ...syncing, lastError: 'SQLITE_FULL' }], 8 * 1024, true);
    expect(before?.lastError).toMatch(/; before that: SQLITE_FULL$/);
    for (const [free, running] of [[8 * 1024, false], [1 << 20, true], [null, true]] as const) {
      expect(withStateDirFull([syncing], free, running)).toEqual([syncing]);
    }
  });
});

describe('formatStatus "trash"', () => {
  const docWith = (trash: PairStatus['trash']): StatusDocument => ({
    version: 1, generatedAt: new Date(0).toISOString(), config: '/c.yaml', stateDir: '/s', stateDirFreeBytes: null,
    daemon: { running: false, pid: null, startedAt: null, metricsPort: null, reloadRejected: null, pairsNotInConfig: [] },
    pairs: [{
      name: 'main', localPath: '/data', binderId: 'B', direction: 'both', state: 'not-running', stateDb: '/s/main/state.db', stateError: null,
      lastPassAt: null, lastPassStopped: null, lastPollAt: null, lastScanAt: null, nextPassAt: null, activitySince: null, watcher: null, changesWaitingSince: null, inDaemon: null, lastError: null, lastErrorOfOtherSettings: null, filesInSync: 0, filesHiddenByIgnore: 0,
      pendingUploads: [], pendingUploadCount: null, pendingDownloads: 0, passBytes: null, passDone: null, passSteps: null, conflicts: [], moreConflicts: false, trash, issues: [],
    }],
  });

  it('says where replaced and removed files are, how many, and how long they are kept', () => {
    expect(formatStatus(docWith(emptyTrash), new Date(0))).toMatch(/^ {2}trash {12}empty$/m);
    const some = { ...emptyTrash, files: 3, bytes: 3 * 1024, oldestDay: '2026-11-20', newestDay: '2026-11-26' };
    expect(formatStatus(docWith(some), new Date(0))).toMatch(/^ {2}trash {12}3 files, 3\.0 KiB from 2026-11-20 to 2026-11-26 \(kept 30 days\) in \/s\/main\/trash$/m);
    const one = { ...emptyTrash, files: 1, bytes: 10, oldestDay: '2026-11-26', newestDay: '2026-11-26', retentionDays: 7 };
    expect(formatStatus(docWith(one), new Date(0))).toMatch(/^ {2}trash {12}1 file, 10 B from 2026-11-26 \(kept 7 days\) in /m);
    const many = { ...emptyTrash, files: 10_000, bytes: 5 * 1024 * 1024, oldestDay: '2026-11-01', newestDay: '2026-11-26', capped: true };
    expect(formatStatus(docWith(many), new Date(0))).toMatch(/^ {2}trash {12}10000\+ files, 5\.0 MiB\+ from 2026-11-01 to 2026-11-26 /m);
  });
});

describe('formatStatus "pending" while passes fail', () => {
  const docWith = (p: Partial<PairStatus>): StatusDocument => ({
    version: 1, generatedAt: new Date(0).toISOString(), config: '/c.yaml', stateDir: '/s', stateDirFreeBytes: null,
    daemon: { running: false, pid: null, startedAt: null, metricsPort: null, reloadRejected: null, pairsNotInConfig: [] },
    pairs: [{
      name: 'main', localPath: '/data', binderId: 'B', direction: 'both', state: 'not-running', stateDb: '/s/main/state.db', stateError: null,
      lastPassAt: null, lastPassStopped: null, lastPollAt: null, lastScanAt: null, nextPassAt: null, activitySince: null, watcher: null, changesWaitingSince: null, inDaemon: null, lastError: null, lastErrorOfOtherSettings: null, filesInSync: 19, filesHiddenByIgnore: 0,
      pendingUploads: [], pendingUploadCount: 0, pendingDownloads: 0, passBytes: null, passDone: null, passSteps: null, conflicts: [], moreConflicts: false, trash: emptyTrash, issues: [], ...p,
    }],
  });
  const now = new Date('2026-11-27T10:00:00Z');

  it('says the counts are those of the last pass that got through, not of changes made since', () => {
    const failing = docWith({ state: 'error', lastError: 'the service could not be reached', lastPassAt: '2026-11-27T09:55:00Z' });
    expect(formatStatus(failing, now)).toMatch(/^ {2}pending {10}0 uploads, 0 downloads {3}\(as of the last pass, 5 min ago; changes since are counted once a pass gets through\)$/m);
    expect(formatStatus(docWith({ state: 'not-running', lastPassAt: '2026-11-27T09:55:00Z' }), now)).toMatch(/^ {2}pending {10}0 uploads, 0 downloads$/m);
    // A retry running after the failure: the counts are still the old pass's.
    const retrying = docWith({ state: 'syncing', lastError: 'the service could not be reached', lastPassAt: '2026-11-27T09:55:00Z' });
    expect(formatStatus(retrying, now)).toMatch(/^ {2}pending {10}0 uploads, 0 downloads {3}\(as of the last pass, 5 min ago;/m);
  });

  it('says a pass a stop cut short as stopped, with the steps the next run takes up (black-box round 31a, F12)', () => {
    const stopped = formatStatus(docWith({ lastPassAt: '2026-11-27T09:55:00Z', lastPassStopped: 3, pendingUploadCount: 3 }), now);
    expect(stopped).toMatch(/^ {2}last pass {8}5 min ago, stopped by the shutdown: 3 steps left, the next run takes them up {3}\(poll never, scan never\)$/m);
    expect(stopped).toMatch(/^ {2}pending {10}3 uploads, 0 downloads$/m);
    expect(formatStatus(docWith({ lastPassAt: '2026-11-27T09:55:00Z', lastPassStopped: 1 }), now)).toContain('stopped by the shutdown: 1 step left, the next run takes it up');
  });
});
