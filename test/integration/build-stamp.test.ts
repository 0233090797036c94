// build.mjs --if-stale (npm's prepare script, `npm test`): the build is skipped while dist/ was built from exactly
// the sources there are, and done again when one changes. Run in a temp copy with stand-ins for tsc and rolldown
// that record their calls and write what they would.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
let dir: string | null = null;
afterEach(() => {
  if (dir !== null) fs.rmSync(dir, { recursive: true, force: true });
  dir = null;
});

it('skips the build while the stamp matches the sources, rebuilds when a source changes, and a failed build leaves no stamp', () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'build-stamp-'));
  const d = dir;
  fs.copyFileSync(path.join(ROOT, 'build.mjs'), path.join(d, 'build.mjs'));
  for (const f of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'rolldown.config.mjs']) fs.writeFileSync(path.join(d, f), `${f}\n`);
  fs.mkdirSync(path.join(d, 'src', 'sub'), { recursive: true });
  fs.writeFileSync(path.join(d, 'src', 'sub', 'a.ts'), 'export const a = 1;\n');
  fs.mkdirSync(path.join(d, 'node_modules', '.bin'), { recursive: true });
  const calls = path.join(d, 'calls.log');
  const tool = (name: string, body: string) => {
    fs.writeFileSync(path.join(d, 'node_modules', '.bin', name), `#!/bin/sh\necho ${name} >> "${calls}"\n${body}\n`, { mode: 0o755 });
  };
  tool('tsc', 'mkdir -p dist && [ ! -f fail ]');
  tool('rolldown', 'mkdir -p dist/bundle && echo built > dist/bundle/cli.js');
  const build = (...args: string[]) => spawnSync(process.execPath, ['build.mjs', ...args], { cwd: d, encoding: 'utf8' });
  const called = () => (fs.existsSync(calls) ? fs.readFileSync(calls, 'utf8').trim().split('\n') : []);

  expect(build('--if-stale').status).toBe(0); // nothing built yet
  expect(called()).toEqual(['tsc', 'rolldown']);
  const skipped = build('--if-stale');
  expect(skipped.status).toBe(0);
  expect(skipped.stdout).toContain('up to date');
  expect(called()).toHaveLength(2);
  expect(build().status).toBe(0); // without --if-stale: always
  expect(called()).toHaveLength(4);

  fs.writeFileSync(path.join(d, 'src', 'sub', 'a.ts'), 'export const a = 2;\n');
  expect(build('--if-stale').status).toBe(0);
  expect(called()).toHaveLength(6);

  fs.writeFileSync(path.join(d, 'fail'), '');
  fs.writeFileSync(path.join(d, 'src', 'b.ts'), 'export const b = 1;\n');
  const failed = build('--if-stale');
  expect(failed.status).not.toBe(0);
  expect(failed.stderr).toMatch(/build: .*tsc -p tsconfig\.build\.json failed/);
  fs.rmSync(path.join(d, 'fail'));
  fs.rmSync(path.join(d, 'src', 'b.ts')); // back to the sources of the last good build: the stamp was dropped all the same
  expect(build('--if-stale').status).toBe(0);
  expect(called().slice(-2)).toEqual(['tsc', 'rolldown']);
});
