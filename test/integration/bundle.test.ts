// The bundle bin/binder-sync.js runs (dist/bundle/, rolldown.config.mjs, built by build.mjs: `npm test` builds it when stale):
// files it finds next to itself at run time must be there, and the CLI must still find package.json two
// folders up. Everything else about it is exercised by the e2e tests, which all run bin/binder-sync.js.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BUNDLE = path.join(ROOT, 'dist/bundle');

/** `new URL('./x.js', import.meta.url)` in a bundled file: a file it expects beside itself. */
const SIBLING_URL = /new URL\(\s*["'](\.\/[^"']+)["']\s*,\s*import\.meta\.url\s*\)/g;

describe('the bundled CLI (dist/bundle)', () => {
  it('is what bin/binder-sync.js loads', () => {
    expect(fs.readFileSync(path.join(ROOT, 'bin/binder-sync.js'), 'utf8')).toMatch(/from '\.\.\/dist\/bundle\/cli\.js'/);
    expect(fs.existsSync(path.join(BUNDLE, 'cli.js'))).toBe(true);
  });

  it('has every file its modules locate beside themselves, the tree digest worker among them', () => {
    const wanted: string[] = [];
    for (const name of fs.readdirSync(BUNDLE).filter((n) => n.endsWith('.js'))) {
      const code = fs.readFileSync(path.join(BUNDLE, name), 'utf8');
      for (const m of code.matchAll(SIBLING_URL)) wanted.push(m[1] as string);
    }
    expect(wanted).toContain('./tree-digest-worker.js');
    for (const rel of wanted) expect(fs.existsSync(path.join(BUNDLE, rel)), rel).toBe(true);
  });

  // rolldown.config.mjs: a single non-ASCII character makes V8 hold and scan a whole chunk two bytes wide.
  it('is ASCII only, so that every chunk loads as one-byte source', () => {
    const wide: string[] = [];
    for (const name of fs.readdirSync(BUNDLE).filter((n) => n.endsWith('.js'))) {
      const at = fs.readFileSync(path.join(BUNDLE, name), 'latin1').search(/[^\x00-\x7f]/);
      if (at !== -1) wide.push(`${name} at ${at}`);
    }
    expect(wide).toEqual([]);
  });

  it('reports the version in package.json', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = spawnSync(process.execPath, [path.join(ROOT, 'bin/binder-sync.js'), '--version'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });
});
