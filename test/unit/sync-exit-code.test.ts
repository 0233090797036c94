// `binder-sync sync`'s exit code for a pass that did not converge (README "Exit codes"): 6 only when every
// failure is the local filesystem's own (disk full, permissions), never for a file a program was still writing.
import { describe, expect, it } from 'vitest';
import { ExitCode, isLocalFailure } from '../../src/cli/exit-codes.js';
import { notConvergedExit } from '../../src/cli/sync-command.js';
import { summarizeReport } from '../../src/cli/report-format.js';
import type { ActionFailure } from '../../src/sync/executor.js';
import type { PassReport } from '../../src/sync/pass.js';

function reportWith(failures: ActionFailure[]): PassReport {
  return {
    pair: 'main',
    plan: { groups: [], issues: [], blocked: null },
    execution: { stoppedBy: null, done: {}, failures, bytesDownloaded: 0, bytesUploaded: 0, vacatedDirs: new Set(), followedDirs: new Map(), conflicts: [], identical: 0 },
    issues: [],
    hashed: 0,
    remoteRequests: 0,
    listingMethod: 'search',
    durationMs: 1,
    converged: false,
    deferred: [],
    recheckInMs: null,
    folderTreeFrom: null,
    blockedAgain: false,
  };
}
const failure = (code: string, over: Partial<ActionFailure> = {}): ActionFailure => ({ kind: 'upload', relPath: 'Docs/a.txt', code, retryable: true, message: `${code} happened`, ...over });

describe('sync exit code of a pass with failures', () => {
  it('is 6 when every failure is the local filesystem failing', () => {
    expect(notConvergedExit(reportWith([failure('LOCAL_IO'), failure('PATH_ESCAPE')]))).toBe(ExitCode.local);
  });
  it('is 1 when a program was writing the file (LOCAL_CHANGED), alone or among local failures', () => {
    expect(notConvergedExit(reportWith([failure('LOCAL_CHANGED', { postponed: true })]))).toBe(ExitCode.incomplete);
    expect(notConvergedExit(reportWith([failure('LOCAL_IO'), failure('LOCAL_CHANGED')]))).toBe(ExitCode.incomplete);
    expect(isLocalFailure('LOCAL_CHANGED')).toBe(false);
    expect(isLocalFailure('LOCAL_ROOT')).toBe(true);
  });
  it('says "postponed", not FAILED, for a file changed while it was being synced', () => {
    const text = summarizeReport(reportWith([failure('LOCAL_CHANGED', { postponed: true }), failure('LOCAL_IO', { relPath: 'Docs/b.txt' })]), false);
    expect(text).toContain('[main] postponed upload Docs/a.txt: a program changed it while it was being synced');
    expect(text).toContain('[main] FAILED upload Docs/b.txt: LOCAL_IO happened (will retry)');
    expect(text).not.toContain('FAILED upload Docs/a.txt');
    const remote = summarizeReport(reportWith([failure('REMOTE_CHANGED', { postponed: true })]), false);
    expect(remote).toContain('[main] postponed upload Docs/a.txt: its document changed on the service meanwhile; the next pass takes it up');
  });
  it('counts failed and postponed steps in the summary line: not "nothing to do" above a FAILED line (black-box round 11, F7)', () => {
    const text = summarizeReport(reportWith([failure('STORAGE_FAILED', { kind: 'download' })]), false);
    expect(text).toMatch(/^\[main\] 1 failed; 0 B down, 0 B up in /m);
    expect(text).not.toContain('nothing to do');
    const mixed = summarizeReport({ ...reportWith([failure('LOCAL_CHANGED', { postponed: true }), failure('LOCAL_IO')]), execution: { ...reportWith([]).execution!, done: { download: 2 }, failures: [failure('LOCAL_CHANGED', { postponed: true }), failure('LOCAL_IO')] } }, false);
    expect(mixed).toMatch(/^\[main\] 2 download, 1 failed, 1 postponed; /m);
    expect(summarizeReport(reportWith([]), false)).toMatch(/^\[main\] nothing to do; /m);
  });
  it('counts steps a stop cut short apart from failures, as the daemon does', () => {
    const text = summarizeReport(reportWith([failure('ABORTED'), failure('LOCAL_IO', { relPath: 'Docs/b.txt' })]), false);
    expect(text).toMatch(/^\[main\] 1 failed, 1 stopped by the shutdown; /m);
    expect(text).toContain('[main] stopped upload Docs/a.txt: cut short by the shutdown, nothing half-done left; the next run takes it up');
    expect(text).not.toContain('FAILED upload Docs/a.txt');
  });
  it('says how many items are not synced when that is all a pass found, not "nothing to do" above them', () => {
    const issue = { relPath: 'Docs/aux.txt', code: 'name-not-representable', detail: 'a reserved name' } as PassReport['issues'][number];
    const text = summarizeReport({ ...reportWith([]), issues: [issue] }, false);
    expect(text).toMatch(/^\[main\] nothing done, 1 item not synced \(below\); /m);
    expect(text).toContain('[main] not synced: Docs/aux.txt: name-not-representable: a reserved name');
    expect(text).not.toContain('nothing to do');
  });
});

describe("the daemon's pass line", () => {
  it('counts files changed while being synced as postponed, not failed; a pass of repeats only goes to debug', async () => {
    const { Writable } = await import('node:stream');
    const { createLogger } = await import('../../src/log.js');
    const { logPassSummary } = await import('../../src/daemon/pass-summary.js');
    const lines: Array<{ level: number; msg: string }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as { level: number; msg: string });
        done();
      },
    });
    const log = createLogger({ destination: sink, level: 'debug', pretty: false });
    logPassSummary(log, reportWith([failure('LOCAL_CHANGED', { postponed: true }), failure('LOCAL_IO', { relPath: 'Docs/b.txt' })]), 'poll');
    expect(lines.at(-1)).toMatchObject({ level: 30, msg: expect.stringMatching(/^pass: nothing done, 1 failed, 1 postponed \(changed while being synced\);/) });
    logPassSummary(log, reportWith([failure('ABORTED'), failure('ABORTED', { relPath: 'Docs/b.txt' }), failure('LOCAL_IO', { relPath: 'Docs/c.txt' })]), 'watch');
    expect(lines.at(-1)).toMatchObject({ level: 30, msg: expect.stringMatching(/^pass: nothing done, 1 failed, 2 stopped by the shutdown \(the next run takes them up\);/) });
    // The line's fields count as the text does (black-box round 42c, P1-d: failed=3 beside "1 failed").
    expect(lines.at(-1)).toMatchObject({ failed: 1, stopped: 2 });
    // Waiting for a file another program holds open for writing: said as that, not as a change (round 36a, F3).
    logPassSummary(log, reportWith([failure('LOCAL_CHANGED', { postponed: true, heldOpen: 'not replaced by the remote version: sleep (pid 9) has it open for writing' })]), 'poll');
    expect(lines.at(-1)).toMatchObject({ level: 30, msg: expect.stringMatching(/^pass: nothing done, 1 waiting \(open for writing by another program\);/) });
    logPassSummary(log, reportWith([failure('LOCAL_IO', { repeated: true })]), 'retry');
    expect(lines.at(-1)).toMatchObject({ level: 20, msg: 'pass: the same 1 failure(s) again' });
  });
});

describe('files put back after a local delete', () => {
  it('are one warning per pass in the daemon log (a folder of 1,000 files moved away is not 1,000 warnings)', async () => {
    const { Writable } = await import('node:stream');
    const { createLogger } = await import('../../src/log.js');
    const { logPassSummary } = await import('../../src/daemon/pass-summary.js');
    const lines: Array<{ level: number; msg: string; count?: number }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as { level: number; msg: string });
        done();
      },
    });
    const r = reportWith([]);
    r.execution = { ...r.execution!, done: { download: 1001 }, restored: { count: 1001, first: 'P/A/f0.txt' } };
    logPassSummary(createLogger({ destination: sink, level: 'info', pretty: false }), r, 'watch');
    const warnings = lines.filter((l) => l.level === 40);
    expect(warnings.map((l) => l.msg)).toEqual(['restored 1001 files deleted or renamed locally (P/A/f0.txt, ...): the remote documents still exist']);
    expect(warnings[0]?.count).toBe(1001);
    r.execution = { ...r.execution, done: { download: 1 }, restored: { count: 1, first: 'P/one.txt' } };
    logPassSummary(createLogger({ destination: sink, level: 'info', pretty: false }), r, 'watch');
    expect(lines.filter((l) => l.level === 40).at(-1)?.msg).toBe('restored P/one.txt, deleted or renamed locally: the remote document still exists');
  });
});
