// Failure classification (transient vs config-like), retry delays, the timing environment overrides, and what
// the daemon reads from a pass report (pending counts, "did something", the one-line summary of what was done).
import { describe, expect, it } from 'vitest';
import { classifyFailure, jitter, retryDelay } from '../../src/daemon/backoff.js';
import { passDidSomething, pendingOf } from '../../src/daemon/pass-summary.js';
import { describeDone } from '../../src/sync/executor.js';
import { DEFAULT_TIMING, timingFromEnv } from '../../src/daemon/timing.js';
import { exitCodeFor } from '../../src/cli/common.js';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { BinderSyncError } from '../../src/errors.js';
import { stateDbWriteError } from '../../src/state/state-dir-error.js';
import { ServiceError } from '../../src/service/errors.js';
import type { Action } from '../../src/sync/model.js';
import type { PassReport } from '../../src/sync/pass.js';

const svc = (code: ConstructorParameters<typeof ServiceError>[1]['code'], status?: number) =>
  new ServiceError(`request failed (${code})`, { code, retryable: false, request: 'GET /x', ...(status ? { status } : {}) });

describe('classifyFailure', () => {
  it('treats outages, rate limits, auth and local-root trouble as transient', () => {
    for (const err of [
      svc('SERVICE_UNAVAILABLE', 503),
      svc('SERVICE_NETWORK'),
      svc('SERVICE_RATE_LIMITED', 429),
      svc('AUTH_FAILED', 400),
      svc('SERVICE_UNAUTHORIZED', 401),
      svc('SERVICE_FORBIDDEN', 403),
      new BinderSyncError('root missing', { code: 'LOCAL_ROOT', retryable: true }),
      new Error('something odd'),
    ]) {
      expect(classifyFailure(err).fatal, String(err)).toBe(false);
    }
  });

  it('treats bad metadata rules, a missing binder and a blocked pass as config-like', () => {
    for (const code of ['METADATA_RULES_INVALID', 'PASS_BLOCKED', 'PAIR_READ_ONLY', 'CONFIG_INVALID']) {
      expect(classifyFailure(new BinderSyncError('x', { code, retryable: false })).fatal, code).toBe(true);
    }
    expect(classifyFailure(svc('SERVICE_NOT_FOUND', 404)).fatal).toBe(true);
  });

  it('carries the reason with the hint, and Retry-After', () => {
    const err = svc('SERVICE_RATE_LIMITED', 429);
    err.retryAfterMs = 7000;
    const f = classifyFailure(new BinderSyncError('binder gone', { code: 'SERVICE_NOT_FOUND', retryable: false, hint: 'check binderId' }));
    expect(f.reason).toBe('binder gone (hint: check binderId)');
    expect(classifyFailure(err).retryAfterMs).toBe(7000);
    expect(classifyFailure(new Error('plain')).code).toBe('UNEXPECTED');
  });

  it('keeps every line of a multi-line message (the metadata rules that do not fit), not just the first', () => {
    const err = new BinderSyncError("pair second: metadata rules do not fit the binder's metadata elements:\n  metadata[2].values.Status: \"Bogus\" is not an allowed value\n  metadata[3].match: empty", {
      code: 'METADATA_RULES_INVALID', retryable: false, hint: 'fix the rules',
    });
    expect(classifyFailure(err).reason).toBe(
      'pair second: metadata rules do not fit the binder\'s metadata elements: metadata[2].values.Status: "Bogus" is not an allowed value; metadata[3].match: empty (hint: fix the rules)',
    );
  });
});

describe('retryDelay', () => {
  const half = () => 0.5;
  it('doubles from the base to the cap', () => {
    const f = classifyFailure(svc('SERVICE_UNAVAILABLE', 503));
    expect([1, 2, 3, 6, 7, 20].map((n) => retryDelay(f, n, DEFAULT_TIMING, half))).toEqual([5000, 10000, 20000, 160000, 300000, 300000]);
  });
  it('a missing sync root backs off like an outage, but never past the poll interval (the docs promise a look every poll; black-box round 28b, F4)', () => {
    const f = classifyFailure(new BinderSyncError('the local root /srv/x is missing', { code: 'LOCAL_ROOT', retryable: true }));
    expect(f.fatal).toBe(false);
    expect([1, 2, 3, 4, 9].map((n) => retryDelay(f, n, DEFAULT_TIMING, half, 30_000))).toEqual([5000, 10000, 20000, 30000, 30000]);
    expect(retryDelay(f, 9, DEFAULT_TIMING, half, 3_600_000)).toBe(300_000); // the back-off's own cap still holds
  });
  it('uses the slow fixed period for config-like failures', () => {
    const f = classifyFailure(new BinderSyncError('x', { code: 'METADATA_RULES_INVALID', retryable: false }));
    expect(retryDelay(f, 1, DEFAULT_TIMING, half)).toBe(300_000);
    expect(retryDelay(f, 9, DEFAULT_TIMING, half)).toBe(300_000);
  });
  it('jitters by at most 10% either way', () => {
    expect(jitter(1000, () => 0)).toBe(900);
    expect(jitter(1000, () => 0.9999999)).toBe(1100);
  });
});

describe('timingFromEnv', () => {
  it('reads the overrides and ignores invalid values', () => {
    const t = timingFromEnv({ BINDER_SYNC_POLL_INTERVAL_MS: '700', BINDER_SYNC_BACKOFF_BASE_MS: 'soon', BINDER_SYNC_FATAL_RETRY_MS: '-5' });
    expect(t.pollIntervalOverrideMs).toBe(700);
    expect(t.backoffBaseMs).toBe(DEFAULT_TIMING.backoffBaseMs);
    expect(t.fatalRetryMs).toBe(DEFAULT_TIMING.fatalRetryMs);
    expect(timingFromEnv({})).toEqual(DEFAULT_TIMING);
  });
});

describe('pass report reading', () => {
  const action = (kind: 'upload' | 'download' | 'conflict' | 'adopt'): Action => ({ kind, relPath: `${kind}.txt` }) as unknown as Action;
  const report = (groups: Action[][], done: PassReport['execution'] extends infer E ? (E extends { done: infer D } ? D : never) : never, blocked = false): PassReport => ({
    pair: 'p',
    plan: { groups, issues: [], blocked: blocked ? { code: 'max-delete', message: 'too many' } : null },
    execution: blocked ? null : { stoppedBy: null, vacatedDirs: new Set(), followedDirs: new Map(), done, failures: [], bytesDownloaded: 0, bytesUploaded: 0, conflicts: [], identical: 0 },
    issues: [],
    hashed: 0,
    remoteRequests: 1,
    listingMethod: 'search',
    durationMs: 5,
    converged: true,
    deferred: [],
    recheckInMs: null,
    folderTreeFrom: null,
    blockedAgain: false,
  });

  it('counts planned transfers that were not done', () => {
    const groups = [[action('upload')], [action('upload')], [action('download')], [action('conflict')], [action('adopt')]];
    expect(pendingOf(report(groups, { upload: 1, adopt: 1 }))).toEqual({ uploads: 1, downloads: 2 });
    expect(pendingOf(report(groups, { upload: 2, download: 1, conflict: 1, adopt: 1 }))).toEqual({ uploads: 0, downloads: 0 });
    expect(pendingOf(report(groups, {}, true))).toEqual({ uploads: 2, downloads: 2 });
  });

  it('counts a conflict that failed at its upload (storage refused the URLs) as an upload left, not a download', () => {
    const r = report([[action('conflict')], [action('download')]], { download: 1 });
    r.execution!.failures = [{ kind: 'conflict', relPath: 'conflict.txt', code: 'STORAGE_SLOT_EXPIRED', retryable: true, message: 'refused' }];
    expect(pendingOf(r)).toEqual({ uploads: 1, downloads: 0 });
    r.execution!.failures = [{ kind: 'conflict', relPath: 'conflict.txt', code: 'STORAGE_LINK_EXPIRED', retryable: true, message: 'refused' }];
    expect(pendingOf(r)).toEqual({ uploads: 0, downloads: 1 });
  });

  it('counts what a safety gate held back as pending (a blocked plan has no groups)', () => {
    const blocked = report([], {}, true);
    blocked.plan.blocked = { code: 'max-delete', message: 'too many', held: { upload: 1, 'trash-local': 25, download: 3, conflict: 1 } };
    expect(pendingOf(blocked)).toEqual({ uploads: 1, downloads: 4 });
  });

  it('calls a pass with nothing done quiet, and one that did or was blocked not', () => {
    expect(passDidSomething(report([], {}))).toBe(false);
    expect(passDidSomething(report([[action('upload')]], { upload: 1 }))).toBe(true);
    expect(passDidSomething(report([[action('upload')]], {}, true))).toBe(true);
    // Only uploads an earlier pass left unfinished, committed now: work done (black-box round 29a, F6).
    expect(passDidSomething({ ...report([], {}), recoveredUploads: 1 })).toBe(true);
  });
});

describe('describeDone', () => {
  it('counts each kind, and tells conflicts that held the same content on both sides apart from real ones', () => {
    expect(describeDone({ done: { download: 2, upload: 1 }, identical: 0 })).toBe('2 download, 1 upload');
    expect(describeDone({ done: { conflict: 2 }, identical: 0 })).toBe('2 conflict');
    expect(describeDone({ done: { download: 1, conflict: 3 }, identical: 1 })).toBe('1 download, 2 conflict, 1 identical on both sides');
    expect(describeDone({ done: { conflict: 2 }, identical: 2 })).toBe('2 identical on both sides');
    expect(describeDone({ done: {}, identical: 0 })).toBe('');
    // The stale-copy rule (a local file holding an earlier version) is a replacement, not a conflict (round 30a, F5).
    expect(describeDone({ done: { conflict: 1 }, identical: 0, staleReplaced: 1 })).toBe('1 earlier version replaced by the latest');
    expect(describeDone({ done: { conflict: 4 }, identical: 1, staleReplaced: 2 })).toBe('1 conflict, 1 identical on both sides, 2 earlier versions replaced by the latest');
    expect(describeDone({ done: { conflict: 2, upload: 1 }, identical: 0, staleKept: 1 })).toBe('1 conflict, 1 earlier version kept, not uploaded over newer ones, 1 upload');
  });
});

describe('a state DB that cannot be written', () => {
  it('is a LOCAL_STATE_DIR failure with a hint (a real SQLITE_FULL), transient for the daemon and exit 6 for sync', async () => {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (x BLOB)');
    db.pragma('max_page_count = 8'); // a "disk" of 8 pages: the same SQLITE_FULL a full file system gives
    let full: unknown;
    try {
      for (let i = 0; i < 100; i++) db.prepare('INSERT INTO t VALUES (?)').run(Buffer.alloc(4096));
    } catch (err) {
      full = err;
    } finally {
      db.close();
    }
    expect((full as { code?: string }).code).toBe('SQLITE_FULL');
    const mapped = stateDbWriteError(full);
    expect(mapped).toBeInstanceOf(BinderSyncError);
    expect(mapped).toMatchObject({ code: 'LOCAL_STATE_DIR', retryable: true });
    expect((mapped as BinderSyncError).message).toBe('the state database cannot be written: the disk holding it is full (SQLITE_FULL)');
    expect((mapped as BinderSyncError).hint).toContain('free some disk space where stateDir is');
    expect(classifyFailure(full)).toMatchObject({ fatal: false, code: 'LOCAL_STATE_DIR' });
    expect(exitCodeFor(full)).toBe(ExitCode.local);
    // Other SQLite errors, and errors of our own, pass through unchanged.
    const other = Object.assign(new Error('constraint'), { code: 'SQLITE_CONSTRAINT_UNIQUE' });
    expect(stateDbWriteError(other)).toBe(other);
    expect(stateDbWriteError(Object.assign(new Error('io'), { code: 'SQLITE_IOERR_WRITE' }))).toMatchObject({ code: 'LOCAL_STATE_DIR' });
    // Damage met mid-pass (the header was fine at open): said as such, with the move-aside hint, and not retried.
    const corrupt = stateDbWriteError(Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT' }));
    expect(corrupt).toMatchObject({ code: 'STATE_CORRUPT', retryable: false, message: 'the state database is damaged (SQLITE_CORRUPT)' });
    expect((corrupt as BinderSyncError).hint).toMatch(/move the pair's state.db aside/);
    // Named where the caller knows the pair's file (the daemon's pass, `sync`): black-box round 29a, F6.
    const named = stateDbWriteError(Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT' }), '/var/lib/binder-sync/main/state.db');
    expect(named).toMatchObject({ code: 'STATE_CORRUPT', message: 'the state database /var/lib/binder-sync/main/state.db is damaged (SQLITE_CORRUPT)' });
    expect((named as BinderSyncError).hint).toContain('move /var/lib/binder-sync/main/state.db aside');
  });
});
