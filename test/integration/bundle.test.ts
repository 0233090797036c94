// The bundle bin/binder-sync.js runs (dist/bundle/, rolldown.config.mjs, built by build.mjs: `npm test` builds it when stale):
// files it finds next to itself at run time must be there, and the CLI must still find package.json two
// folders up. Everything else about it is exercised by the e2e tests, which all run bin/binder-sync.js.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BUNDLE = path.join(ROOT, 'dist/bundle');

/** `new URL('./x.js', import.meta.url)` in a bundled file: a file it expects beside itself. */
const SIBLING_URL = /new URL\(\s*["'](\.\/[^"']+)["']\s*,\s*import\.meta\.url\s*\)/g;

describe('the bundled CLI (dist/bundle)', () => {
  it('is what bin/binder-sync.js loads', () => {
    expect(fs.readFileSync(path.join(ROOT, 'bin/binder-sync.js'), 'utf8')).toMatch(/new URL\('\.\.\/dist\/bundle\/cli\.js', import\.meta\.url\)/);
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

// Black-box round 32b, F5: a checkout whose node_modules were copied in never ran npm's prepare script.
describe('bin/binder-sync.js in a checkout that was not built', () => {
  let dir: string | null = null;
  afterEach(() => {
    if (dir !== null) fs.rmSync(dir, { recursive: true, force: true });
    dir = null;
  });
  /** A temp copy of the checkout's bin/ and package.json, without dist/. */
  const copy = (): string => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bin-unbuilt-'));
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.copyFileSync(path.join(ROOT, 'bin/binder-sync.js'), path.join(dir, 'bin/binder-sync.js'));
    fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
    return dir;
  };

  it('says in one line that it is not built and how to build it, and exits 2 (no stack trace)', () => {
    const d = copy();
    for (const args of [['--version'], ['demo']]) {
      const r = spawnSync(process.execPath, [path.join(d, 'bin/binder-sync.js'), ...args], { cwd: os.tmpdir(), encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toBe(`binder-sync is not built: run \`npm run build\` (or \`npm install\`) in ${fs.realpathSync(d)}\n`);
    }
  });

  it('does not hide another missing module behind "not built": a bundle that is there but broken fails as before', () => {
    const d = copy();
    fs.mkdirSync(path.join(d, 'dist/bundle'), { recursive: true });
    fs.writeFileSync(path.join(d, 'dist/bundle/cli.js'), "export { main } from './no-such-chunk.js';\n");
    const r = spawnSync(process.execPath, [path.join(d, 'bin/binder-sync.js'), '--version'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('ERR_MODULE_NOT_FOUND');
    expect(r.stderr).toContain('no-such-chunk.js');
    expect(r.stderr).not.toContain('is not built');
  });

  it('is built first by `npm start`, as by `npm test`: a fresh or pulled checkout does not run a missing or stale dist/', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts['start']).toBe('node build.mjs --if-stale && node bin/binder-sync.js demo');
    expect(pkg.scripts['test']).toMatch(/^node build\.mjs --if-stale && /);
    expect(pkg.scripts['prepare']).toBe('node build.mjs --if-stale');
  });
});
