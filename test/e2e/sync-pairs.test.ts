// Several pairs in one config: `--pair` picks one or several (repeated), and `sync --json` has an entry for
// every pair it ran, a failed one too (with its error), so that a script never reads success from a list that
// just lacks the pair that failed (black-box round 24, M6 and M9).
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createWorkspace, runCli, type Workspace } from './harness.js';

let ws: Workspace | undefined;
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

/** Pairs a and b on two binders with one document each, and pair bad on a binder the service does not have. */
async function threePairs(): Promise<Workspace> {
  const w = await createWorkspace();
  const c = w.emulator.control;
  const other = c.createBinder({ name: 'Other' }).id;
  for (const [binder, name] of [[w.binderId, 'one.txt'], [other, 'two.txt']] as const) {
    const folder = c.createFolder(binder, { name: 'Docs' });
    c.addDocument(binder, folder.id, name, `content of ${name}`);
  }
  const cred = w.emulator.credentials;
  const config = {
    service: { baseUrl: w.emulator.baseUrl, authUrl: w.emulator.authUrl, tenantId: cred.tenantId, clientId: cred.clientId, clientSecret: '${E2E_SECRET}' },
    stateDir: './state',
    pairs: [
      { name: 'a', localPath: './a', binderId: w.binderId },
      { name: 'b', localPath: './b', binderId: other },
      { name: 'bad', localPath: './c', binderId: 'NoSuchBnd' },
    ],
  };
  fs.writeFileSync(w.configFile, stringify(config), { mode: 0o600 });
  return w;
}

describe('sync with several pairs', () => {
  it('--pair given twice runs both pairs, and only them', async () => {
    ws = await threePairs();
    const r = await runCli(ws, ['sync', '--config', ws.configFile, '--pair', 'a', '--pair', 'b', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const entries = JSON.parse(r.stdout) as Array<{ pair: string; converged: boolean; error: unknown }>;
    expect(entries.map((e) => [e.pair, e.converged, e.error])).toEqual([['a', true, null], ['b', true, null]]);
    expect(fs.readFileSync(path.join(ws.dir, 'a', 'Docs', 'one.txt'), 'utf8')).toBe('content of one.txt');
    expect(fs.readFileSync(path.join(ws.dir, 'b', 'Docs', 'two.txt'), 'utf8')).toBe('content of two.txt');
    expect(fs.existsSync(path.join(ws.dir, 'c'))).toBe(false);
  });

  it('--pair with a name the config lacks is refused (exit 2), naming it and the pairs there are; nothing runs', async () => {
    ws = await threePairs();
    const r = await runCli(ws, ['sync', '--config', ws.configFile, '--pair', 'a', '--pair', 'nope']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`no pair named "nope" in ${ws.configFile} (pairs: a, b, bad)`);
    expect(fs.existsSync(path.join(ws.dir, 'a'))).toBe(false);
  });

  it('--json lists a pair that failed, with its error and exit code, beside the ones that synced', async () => {
    ws = await threePairs();
    const r = await runCli(ws, ['sync', '--config', ws.configFile, '--json']);
    expect(r.code).toBe(3);
    const entries = JSON.parse(r.stdout) as Array<Record<string, any>>;
    expect(entries.map((e) => e.pair)).toEqual(['a', 'b', 'bad']);
    expect(entries.slice(0, 2).every((e) => e.converged === true && e.error === null)).toBe(true);
    // Every key a pass's entry has, so that a script can read them all the same way.
    expect(Object.keys(entries[2]!).sort()).toEqual(Object.keys(entries[0]!).sort());
    expect(entries[2]).toMatchObject({ actions: [], failures: [], issues: [], blocked: null, done: {} });
    expect(entries[2]).toMatchObject({
      pair: 'bad',
      converged: false,
      error: {
        code: 'SERVICE_NOT_FOUND',
        message: expect.stringContaining('pair bad: the service has no binder NoSuchBnd'),
        hint: expect.stringContaining('binderId'),
        retryable: false,
        exitCode: 3,
      },
    });
    expect(r.stdout).not.toContain(ws.emulator.credentials.clientSecret);

    const only = await runCli(ws, ['sync', '--config', ws.configFile, '--pair', 'bad', '--json']);
    expect(only.code).toBe(3);
    expect((JSON.parse(only.stdout) as unknown[]).length).toBe(1);
  });
});

describe('a 404 for the metadata elements of a binder the service lists', () => {
  it('is said as the service\'s fault, not as a wrong binderId', async () => {
    ws = await createWorkspace();
    ws.emulator.control.injectFault({ route: 'metadataelements', status: 404 });
    const r = await runCli(ws, ['sync', '--config', ws.configFile]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`pair main: binder ${ws.binderId} ("E2E") is listed by the service, but its metadata elements answered 404`);
    expect(r.stderr).toContain('the binderId is right');
    expect(r.stderr).not.toContain('no such binder');

    const check = await runCli(ws, ['check', '--config', ws.configFile]);
    expect(check.stdout).toMatch(/^FAIL  metadata \(pair main\): .*404.*\(hint: the binder is listed, so the binderId is right/m);
    expect(check.stdout).not.toContain('no such binder');

    ws.emulator.control.clearFaults();
    ws.writeConfig({ name: 'other', localPath: './other', binderId: 'NoSuchBnd' });
    const wrong = await runCli(ws, ['sync', '--config', ws.configFile]);
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toContain('pair other: the service has no binder NoSuchBnd');
  });
});
