// `binder-sync demo` parts: the config it writes (valid, secret in a private file, polling every 10 s as the
// guide promises: pollCpuBudget 0, the in-process emulator's CPU must not space the polls out), and the guide's
// headline after the first pass (in sync only when it is).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { demoPaths, firstPassHeadline, writeDemoConfig } from '../../src/cli/demo-command.js';
import { loadConfig } from '../../src/config/load.js';
import type { Emulator } from '../../src/emulator/index.js';
import type { PassReport } from '../../src/sync/pass.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('writeDemoConfig', () => {
  it('writes a valid config that polls every 10 s with no poll CPU budget', () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'binder-demo-config-'));
    dirs.push(cwd);
    const paths = demoPaths(cwd);
    fs.mkdirSync(paths.dir);
    const emu = {
      baseUrl: 'http://127.0.0.1:8470/api/v1',
      authUrl: 'http://127.0.0.1:8470/auth',
      credentials: { tenantId: '00000000-0000-0000-0000-000000000000', clientId: 'rw-client', clientSecret: 'demo-secret-123456' },
    } as unknown as Emulator;
    writeDemoConfig(paths, emu, 'Binder123');
    const { config } = loadConfig(paths.config, {});
    const pair = config.pairs[0]!;
    expect(pair.pollInterval).toBe(10_000);
    expect(pair.pollCpuBudget).toBe(0);
    expect(config.service.clientSecret).toBe('demo-secret-123456');
    expect(fs.readFileSync(paths.config, 'utf8')).not.toContain('demo-secret-123456');
  });
});

describe('firstPassHeadline', () => {
  const status = 'npx binder-sync status --config demo/sync.yaml';
  const report = (o: { converged?: boolean; conflicts?: number; failures?: number; issues?: number; deferred?: number } = {}): PassReport =>
    ({
      pair: 'project-atlas',
      plan: { groups: [], issues: [], blocked: null },
      execution: {
        stoppedBy: null,
        done: {},
        failures: Array.from({ length: o.failures ?? 0 }, () => ({ kind: 'upload', relPath: 'x', code: 'E', retryable: true, message: 'm' })),
        bytesDownloaded: 0,
        bytesUploaded: 0,
        vacatedDirs: new Set(),
        conflicts: Array.from({ length: o.conflicts ?? 0 }, () => ({ relPath: 'a', conflictPath: 'b', outcome: 'kept-both' })),
      },
      issues: Array.from({ length: o.issues ?? 0 }, (_, i) => ({ relPath: `n/${i}`, code: 'waiting-for-remote-folder', detail: 'd' })),
      hashed: 0,
      remoteRequests: 0,
      listingMethod: 'search',
      durationMs: 1,
      converged: o.converged ?? true,
      deferred: Array.from({ length: o.deferred ?? 0 }, (_, i) => `d${i}`),
      recheckInMs: null,
    }) as unknown as PassReport;

  it('says "in sync" only when the pass left nothing, with the file count', () => {
    expect(firstPassHeadline(report(), 304, 'demo/Project Atlas', status)).toBe('The binder "Project Atlas" is in sync with the folder demo/Project Atlas (304 files)');
  });

  it('counts conflicts, failures and items not synced, and points at status', () => {
    expect(firstPassHeadline(report({ converged: false, conflicts: 1, failures: 1, issues: 30, deferred: 1 }), 310, 'demo/Project Atlas', status)).toBe(
      'First sync done: 310 files in sync; 1 conflict, 1 failed, 31 items not synced: see `npx binder-sync status --config demo/sync.yaml`',
    );
    expect(firstPassHeadline(report({ conflicts: 2 }), 1, 'demo/Project Atlas', status)).toBe(
      'First sync done: 1 file in sync; 2 conflicts: see `npx binder-sync status --config demo/sync.yaml`',
    );
  });

  it('says when the first pass failed or has not ended', () => {
    expect(firstPassHeadline(null, null, 'demo/Project Atlas', status)).toMatch(/^The first sync of the binder "Project Atlas" failed .*retried with back-off: `npx binder-sync status/);
    expect(firstPassHeadline(undefined, null, 'demo/Project Atlas', status)).toMatch(/still running or retrying/);
  });
});
