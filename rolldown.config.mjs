// The bundle that bin/binder-sync.js runs: dist/ (tsc's output, one file per module) joined into a few files
// in dist/bundle/. Unbundled, `binder-sync sync` makes Node resolve, read and compile about 400 files (170 ES
// modules, 231 CommonJS files of undici and pino; bundled: 20 and 13): ~0.1 s of each `sync`, `status` and
// daemon restart (docs/BENCHMARKS.md, eleventh session). Commands stay lazily loaded: each dynamic import in
// src/cli.ts becomes its own chunk.
//
// Everything lands in one folder, on purpose: tree-digest finds its worker as './tree-digest-worker.js' next to
// itself, and cli.js reads '../../package.json' from there (test/integration/bundle.test.ts checks both).
export default {
  input: {
    cli: 'dist/cli.js',
    'tree-digest-worker': 'dist/local/tree-digest-worker.js',
  },
  platform: 'node',
  // Native addons load their .node file from their own package folder, so they stay in node_modules.
  external: ['better-sqlite3', '@parcel/watcher', /^node:/],
  output: {
    dir: 'dist/bundle',
    format: 'esm',
    entryFileNames: '[name].js',
    chunkFileNames: '[name]-[hash].js',
    // Stack traces in logs map back to src/ with `node --enable-source-maps`.
    sourcemap: true,
    cleanDir: true,
  },
};
