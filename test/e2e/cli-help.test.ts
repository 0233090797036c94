// `binder-sync --help` (the real CLI): lists the commands and the exit codes (docs/OPERATIONS.md points there),
// the same codes as src/cli/exit-codes.ts.
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { runCli } from './harness.js';

describe('binder-sync --help', () => {
  it('lists the commands and every exit code', async () => {
    const r = await runCli(null, ['--help']);
    expect(r.code, r.stderr).toBe(0);
    for (const cmd of ['sync', 'run', 'status', 'check', 'emulator', 'demo']) expect(r.stdout).toMatch(new RegExp(`^  ${cmd}\\b`, 'm'));
    const section = r.stdout.slice(r.stdout.indexOf('Exit codes'));
    expect(section.length, r.stdout).toBeGreaterThan(10);
    for (const code of [...Object.values(ExitCode), 130]) expect(section, `exit code ${code}`).toMatch(new RegExp(`^ +${code} +\\S`, 'm'));
    expect(section).toMatch(/^ +0 .*conflict/m);
  });
});
