#!/usr/bin/env node
// Thin launcher: the compiled CLI, bundled into dist/bundle/ (built by build.mjs, which `npm install` runs through the prepare script,
// and `npm start` and `npm test` when stale; see rolldown.config.mjs). dist/cli.js is the same code, one file per module.
// A checkout that was never built (node_modules copied in, so prepare never ran) gets one line saying so, and exit 2
// (nothing touched; systemd does not restart on it), not Node's module-not-found stack (black-box round 32b, F5).
// The check costs nothing when the bundle is there: the file is looked for only after its import failed.
const BUNDLE = new URL('../dist/bundle/cli.js', import.meta.url);

let cli;
try {
  cli = await import(BUNDLE.href);
} catch (err) {
  const { existsSync } = await import('node:fs');
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || existsSync(BUNDLE)) throw err;
  const { fileURLToPath } = await import('node:url');
  console.error(`binder-sync is not built: run \`npm run build\` (or \`npm install\`) in ${fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '')}`);
  process.exit(2);
}

cli.main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  },
);
