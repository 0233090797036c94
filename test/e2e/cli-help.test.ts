// `binder-sync --help` (the real CLI): lists the commands and the exit codes (docs/OPERATIONS.md points there),
// the same codes as src/cli/exit-codes.ts.
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { createWorkspace, remoteTree, runCli, sha256, sync, writeLocal } from './harness.js';

describe('binder-sync --help', () => {
  it('lists the commands and every exit code', async () => {
    const r = await runCli(null, ['--help']);
    expect(r.code, r.stderr).toBe(0);
    for (const cmd of ['sync', 'run', 'status', 'check', 'trash', 'emulator', 'demo']) expect(r.stdout).toMatch(new RegExp(`^  ${cmd}\\b`, 'm'));
    const section = r.stdout.slice(r.stdout.indexOf('Exit codes'));
    expect(section.length, r.stdout).toBeGreaterThan(10);
    for (const code of [...Object.values(ExitCode), 130]) expect(section, `exit code ${code}`).toMatch(new RegExp(`^ +${code} +\\S`, 'm'));
    expect(section).toMatch(/^ +0 .*conflict/m);
    // Which environment variable exit 2 is about: not every one (black-box round 31b, F8).
    expect(section).toMatch(/^ +2 +bad command line, config .*\n +BINDER_SYNC_LOG_LEVEL: nothing touched$/m);
  });

  it('`help trash restore` shows the subcommand\'s own help, as `trash restore --help` does', async () => {
    const viaHelp = await runCli(null, ['help', 'trash', 'restore']);
    const direct = await runCli(null, ['trash', 'restore', '--help']);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.stdout).toContain('Usage: binder-sync trash restore [options] <entry>');
    expect(viaHelp.stdout).toContain('--replace');
    expect(viaHelp.stdout).toBe(direct.stdout);
  });
});

// `binder-sync status | head -1`, `sync | true`: the reader goes away and writes to stdout fail with EPIPE. The
// command must still do its work and exit with its own code, without a stack trace (src/cli/broken-pipe.ts).
describe('a reader that stops reading stdout', () => {
  const noCrash = (stderr: string) => expect(stderr).not.toMatch(/EPIPE|Unhandled 'error'|node:events/);

  // Black-box round 29b, finding 9.
  it('`help nosuch` says the name is unknown and lists the commands; a command\'s usage error points to its own help', async () => {
    const unknown = await runCli(null, ['help', 'nosuch']);
    expect(unknown.code).toBe(ExitCode.usage);
    expect(unknown.stderr).toContain("error: unknown command 'nosuch' (the commands: sync, run, status, check, trash, emulator, demo;");
    expect(unknown.stdout).toBe('');
    const noConfig = await runCli(null, ['sync']);
    expect(noConfig.code).toBe(ExitCode.usage);
    expect(noConfig.stderr).toContain('(run binder-sync sync --help for usage)');
    const noEntry = await runCli(null, ['trash', 'restore']);
    expect(noEntry.code).toBe(ExitCode.usage);
    expect(noEntry.stderr).toContain('(run binder-sync trash restore --help for usage)');
  });

  it('--help exits 0 quietly', async () => {
    const r = await runCli(null, ['--help'], { closeStdout: true });
    noCrash(r.stderr);
    expect(r.code, r.stderr).toBe(0);
  });

  it('sync and status keep their own exit codes, and sync still does its work', async () => {
    const ws = await createWorkspace();
    try {
      ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' });
      writeLocal(ws, 'Docs/a.txt', 'a');
      const first = await sync(ws, [], { closeStdout: true });
      noCrash(first.stderr);
      expect(first.code, first.stderr).toBe(ExitCode.ok);
      expect(remoteTree(ws).get('Docs/a.txt')).toBe(sha256('a'));
      // Two names that differ only in Unicode form cannot both be uploaded: the pass ends with exit code 1.
      writeLocal(ws, 'Docs/caf\u00e9.txt', 'nfc');
      writeLocal(ws, 'Docs/cafe\u0301.txt', 'nfd');
      const open = await sync(ws, ['--json']);
      expect(open.code, open.stderr).toBe(ExitCode.incomplete);
      const closed = await sync(ws, ['--json'], { closeStdout: true });
      noCrash(closed.stderr);
      expect(closed.code, closed.stderr).toBe(ExitCode.incomplete);
      for (const args of [['status'], ['status', '--json']]) {
        const s = await runCli(ws, [...args, '--config', ws.configFile], { closeStdout: true });
        noCrash(s.stderr);
        expect(s.code, `${args.join(' ')}: ${s.stderr}`).toBe(0);
      }
    } finally {
      await ws.close();
    }
  });
});
