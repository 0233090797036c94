// The build: tsc (src/ -> dist/) then rolldown (dist/ -> dist/bundle/, see rolldown.config.mjs), and a stamp of
// what it was built from. `node build.mjs --if-stale` (npm's prepare script) skips both when the stamp matches
// the sources: the first `npx binder-sync` in a checkout installs the checkout as a package, and npm then runs
// prepare in the checkout itself. Rebuilt every time, that took ~30 s, silently, and rolldown's cleanDir left no
// dist/bundle/cli.js for a while, failing every binder-sync started meanwhile (black-box round 26, Q2).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const root = path.dirname(new URL(import.meta.url).pathname);
const STAMP = path.join(root, 'dist', '.build-stamp');
const INPUTS = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'rolldown.config.mjs', 'build.mjs', 'src'];

/** SHA-256 over the inputs' paths and contents (files in sorted order). */
function sourcesDigest() {
  const hash = createHash('sha256');
  const add = (rel) => {
    const abs = path.join(root, rel);
    const st = fs.statSync(abs, { throwIfNoEntry: false });
    if (st === undefined) return;
    if (st.isDirectory()) {
      for (const name of fs.readdirSync(abs).sort()) add(path.join(rel, name));
      return;
    }
    hash.update(`${rel}\0`);
    hash.update(fs.readFileSync(abs));
    hash.update('\0');
  };
  for (const rel of INPUTS) add(rel);
  return hash.digest('hex');
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', opts.quiet ? 'ignore' : 'inherit', 'inherit'] });
  if (r.status !== 0) {
    process.stderr.write(`build: ${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})\n`);
    process.exit(r.status ?? 1);
  }
}

const digest = sourcesDigest();
const built = fs.existsSync(path.join(root, 'dist', 'bundle', 'cli.js')) && fs.existsSync(STAMP) ? fs.readFileSync(STAMP, 'utf8').trim() : null;
if (process.argv.includes('--if-stale') && built === digest) {
  process.stdout.write('binder-sync: dist/ is up to date with src/ (build skipped)\n');
  process.exit(0);
}
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
fs.rmSync(STAMP, { force: true }); // a build cut short must not look current
run(bin('tsc'), ['-p', 'tsconfig.build.json']);
run(bin('rolldown'), ['-c', 'rolldown.config.mjs'], { quiet: true });
fs.writeFileSync(STAMP, `${digest}\n`);
