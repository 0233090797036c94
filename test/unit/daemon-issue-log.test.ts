// The daemon's log of items it cannot sync: each new issue once (warn; info for the informational codes),
// grouped as `status` groups them, capped per pass; nothing repeated by the next pass; one line when they clear.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ISSUE_LOG_LIMIT, logIssueChanges } from '../../src/daemon/pass-summary.js';
import { createLogger } from '../../src/log.js';
import type { Issue } from '../../src/sync/model.js';

function capture() {
  const records: Array<{ level: number; msg: string; [k: string]: unknown }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) records.push(JSON.parse(line) as (typeof records)[number]);
      cb();
    },
  });
  return { log: createLogger({ level: 'info', destination: sink, pretty: false }), records };
}

const WARN = 40;
const INFO = 30;
const unreadable = (relPath: string): Issue => ({ relPath, code: 'unreadable', detail: 'cannot read: EACCES' });

describe('logIssueChanges', () => {
  it('a file found still being written while read is no news at info, coming or going: the next pass looks again by itself (black-box round 35b, F4)', () => {
    const { log, records } = capture();
    const writing: Issue = { relPath: 'Docs/grow.log', code: 'changing', detail: 'the file changed while it was being read' };
    let open = logIssueChanges(log, new Map(), [writing, unreadable('Docs/a.txt')]);
    open = logIssueChanges(log, open, [unreadable('Docs/a.txt')]); // settled for a moment: not "no longer blocked"
    open = logIssueChanges(log, open, [writing, unreadable('Docs/a.txt')]); // appended again
    logIssueChanges(log, open, []);
    expect(records.map((r) => [r.level, r.msg])).toEqual([
      [WARN, 'not synced: Docs/a.txt: unreadable: cannot read: EACCES'],
      [INFO, 'no longer blocked: Docs/a.txt'],
    ]);
    // A temp-like name held (code changing too, another detail) is still said at info.
    const held: Issue = { relPath: 'Docs/.x.swp', code: 'changing', detail: 'held: its name looks like a program\'s temp file' };
    logIssueChanges(log, new Map(), [held]);
    expect(records.at(-1)).toMatchObject({ level: INFO, msg: `not synced: Docs/.x.swp: changing: ${held.detail}` });
  });

  it('says a file still being written at debug', () => {
    const records: Array<{ level: number; msg: string }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const line of chunk.toString().split('\n')) if (line.trim()) records.push(JSON.parse(line) as (typeof records)[number]);
        cb();
      },
    });
    logIssueChanges(createLogger({ level: 'debug', destination: sink, pretty: false }), new Map(), [{ relPath: 'Docs/big.iso', code: 'changing', detail: 'the file changed while it was being read' }]);
    expect(records.map((r) => [r.level, r.msg])).toEqual([[20, 'still being written: Docs/big.iso']]);
  });

  it('a path whose issue changes is logged with its new issue, not also as no longer blocked', () => {
    const { log, records } = capture();
    let open = logIssueChanges(log, new Map(), [unreadable('Docs/a.txt')]);
    open = logIssueChanges(log, open, [{ relPath: 'Docs/a.txt', code: 'path-collision', detail: 'a local directory has this name' }]);
    expect(records.map((r) => r.msg)).toEqual([
      'not synced: Docs/a.txt: unreadable: cannot read: EACCES',
      'not synced: Docs/a.txt: path-collision: a local directory has this name',
    ]);
    logIssueChanges(log, open, []);
    expect(records.at(-1)?.msg).toBe('no longer blocked: Docs/a.txt');
  });

  it('logs new issues once, at warn, and the informational ones at info', () => {
    const { log, records } = capture();
    const kept: Issue = { relPath: 'Docs/old.txt', code: 'local-delete-not-propagated', detail: 'kept remotely' };
    let open = logIssueChanges(log, new Map(), [unreadable('Docs/a.txt'), kept]);
    expect(records.map((r) => [r.level, r.msg])).toEqual([
      [WARN, 'not synced: Docs/a.txt: unreadable: cannot read: EACCES'],
      [INFO, 'not synced: Docs/old.txt: local-delete-not-propagated: kept remotely'],
    ]);
    expect(records[0]).toMatchObject({ relPath: 'Docs/a.txt', code: 'unreadable', count: 1 });

    // The same issues again (a quiet pass, a parked one): nothing is logged.
    open = logIssueChanges(log, open, [kept, unreadable('Docs/a.txt')]);
    expect(records).toHaveLength(2);

    // One more, one gone: the new one is logged, the gone one is named as no longer blocked.
    open = logIssueChanges(log, open, [kept, unreadable('Docs/b.txt')]);
    expect(records.slice(2).map((r) => [r.level, r.msg])).toEqual([
      [WARN, 'not synced: Docs/b.txt: unreadable: cannot read: EACCES'],
      [INFO, 'no longer blocked: Docs/a.txt'],
    ]);
    expect(open.size).toBe(2);
  });

  it('folds many items of one folder into one line, caps the lines per pass and points at status for the rest', () => {
    const { log, records } = capture();
    const folders = ISSUE_LOG_LIMIT + 5;
    const issues = Array.from({ length: folders }, (_, f) =>
      Array.from({ length: 4 }, (_, i): Issue => ({ relPath: `New ${String(f).padStart(2, '0')}/f${i}.txt`, code: 'waiting-for-remote-folder', detail: 'no remote folder yet' })),
    ).flat();
    const open = logIssueChanges(log, new Map(), issues);
    expect(open.size).toBe(folders * 4);
    expect(records).toHaveLength(ISSUE_LOG_LIMIT + 1);
    expect(records[0]).toMatchObject({ level: WARN, msg: 'not synced: New 00/ (4 files): waiting-for-remote-folder: no remote folder yet', count: 4 });
    expect(records.at(-1)).toMatchObject({ level: WARN, msg: 'not synced: 20 more items; run `binder-sync status` for the list', count: 20 });

    // All cleared at once: one line, a bounded list of names.
    logIssueChanges(log, open, []);
    const last = records.at(-1)!;
    expect(last.level).toBe(INFO);
    expect(last.count).toBe(folders * 4);
    expect(last.msg).toMatch(/^no longer blocked: New 00\/f0\.txt, New 00\/f1\.txt, .*, \.\.\. \(90 more\)$/);
  });

  it('the line for the items past the cap is at info when all of them are informational', () => {
    const { log, records } = capture();
    const issues = Array.from({ length: ISSUE_LOG_LIMIT + 3 }, (_, f): Issue => ({ relPath: `Dir ${String(f).padStart(2, '0')}/x.log`, code: 'ignored', detail: "matches the ignore rule '*.log'" }));
    logIssueChanges(log, new Map(), issues);
    expect(records).toHaveLength(ISSUE_LOG_LIMIT + 1);
    expect(records.every((r) => r.level === INFO)).toBe(true);
    expect(records.at(-1)).toMatchObject({ msg: 'not synced: 3 more items; run `binder-sync status` for the list', count: 3 });
  });

  it('tells apart two issues of one path with different codes, and one code for two documents', () => {
    const { log, records } = capture();
    const a: Issue = { relPath: 'x.txt', code: 'path-collision', detail: 'taken', documentId: 'd1' };
    const b: Issue = { ...a, documentId: 'd2' };
    const c: Issue = { relPath: 'x.txt', code: 'unknown-state', detail: 'not observed' };
    const open = logIssueChanges(log, new Map(), [a, b, c]);
    expect(open.size).toBe(3);
    expect(records).toHaveLength(3);
    // One of them clears: x.txt is still blocked by the other two, so it is not named as no longer blocked.
    const left = logIssueChanges(log, open, [a, c]);
    expect(left.size).toBe(2);
    expect(records).toHaveLength(3);
    logIssueChanges(log, left, []);
    expect(records.at(-1)?.msg).toBe('no longer blocked: x.txt');
  });

  it('a group already shown folded is not announced again as it grows (a copy into a new folder going on); a small one names each new item', () => {
    const { log, records } = capture();
    const waiting = (dir: string, from: number, n: number): Issue[] =>
      Array.from({ length: n }, (_, i): Issue => ({ relPath: `${dir}/f${from + i}.txt`, code: 'waiting-for-remote-folder', detail: 'no remote folder yet' }));
    let open = logIssueChanges(log, new Map(), [...waiting('Big', 0, 5), ...waiting('Small', 0, 2)]);
    expect(records.map((r) => r.msg)).toEqual([
      'not synced: Big/ (5 files): waiting-for-remote-folder: no remote folder yet',
      'not synced: Small/f0.txt: waiting-for-remote-folder: no remote folder yet',
      'not synced: Small/f1.txt: waiting-for-remote-folder: no remote folder yet',
    ]);
    open = logIssueChanges(log, open, [...waiting('Big', 0, 50), ...waiting('Small', 0, 3)]);
    expect(records.slice(3).map((r) => r.msg)).toEqual(['not synced: Small/f2.txt: waiting-for-remote-folder: no remote folder yet']);
    expect(open.size).toBe(53);
    // Another code in the same folder is a group of its own.
    logIssueChanges(log, open, [...waiting('Big', 0, 50), ...waiting('Small', 0, 3), unreadable('Big/locked.txt')]);
    expect(records.at(-1)?.msg).toBe('not synced: Big/locked.txt: unreadable: cannot read: EACCES');
  });
});

