// The bundle that bin/binder-sync.js runs: dist/ (tsc's output, one file per module) joined into a few files
// in dist/bundle/. Unbundled, `binder-sync sync` makes Node resolve, read and compile about 400 files (170 ES
// modules, 231 CommonJS files of undici and pino; bundled: 20 and 13): ~0.1 s of each `sync`, `status` and
// daemon restart (docs/BENCHMARKS.md, eleventh session). Commands stay lazily loaded: each dynamic import in
// src/cli.ts becomes its own chunk.
//
// Everything lands in one folder, on purpose: tree-digest finds its worker as './tree-digest-worker.js' next to
// itself, and cli.js reads '../../package.json' from there (test/integration/bundle.test.ts checks both).
//
// ASCII only: V8 keeps a source with a single non-ASCII character (a dash in a comment) as two bytes per
// character, which Node's loader must decode and V8 must scan at twice the width. `charset: 'ascii'` escapes
// non-ASCII in code, JSDoc is dropped (the source maps lead back to it), and asciiComments below escapes what
// is left in the licence comments that are kept.
export default {
  input: {
    cli: 'dist/cli.js',
    'tree-digest-worker': 'dist/local/tree-digest-worker.js',
  },
  platform: 'node',
  // Native addons load their .node file from their own package folder, so they stay in node_modules.
  external: ['better-sqlite3', '@parcel/watcher', /^node:/],
  plugins: [asciiComments()],
  output: {
    dir: 'dist/bundle',
    format: 'esm',
    entryFileNames: '[name].js',
    chunkFileNames: '[name]-[hash].js',
    // Stack traces in logs map back to src/ with `node --enable-source-maps`.
    sourcemap: true,
    cleanDir: true,
    charset: 'ascii',
    comments: { legal: true, annotation: true, jsdoc: false },
  },
};

/**
 * Escapes the non-ASCII characters `charset: 'ascii'` leaves (it does not touch comments). Only comments hold
 * any by then, so the escape changes no behaviour, and no code moves: the source map stays as it was (map null).
 */
function asciiComments() {
  return {
    name: 'ascii-comments',
    renderChunk(code, chunk) {
      if (!/[^\x00-\x7f]/.test(code)) return null;
      const escaped = code.replace(/[^\x00-\x7f]/g, (c, at) => {
        // In code an escape could change a meaning (String.raw): stop the build rather than guess.
        const blockOpen = code.lastIndexOf('/*', at);
        const inBlock = blockOpen !== -1 && code.indexOf('*/', blockOpen) > at;
        const inLine = code.slice(code.lastIndexOf('\n', at) + 1, at).includes('//');
        if (!inBlock && !inLine) this.error(`${chunk.fileName}: a non-ASCII character outside a comment (${JSON.stringify(code.slice(at - 30, at + 10))})`);
        return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
      });
      return { code: escaped, map: null };
    },
  };
}
