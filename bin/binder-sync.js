#!/usr/bin/env node
// Thin launcher: the compiled CLI, bundled into dist/bundle/ (built by build.mjs, which `npm install` runs through the prepare script;
// see rolldown.config.mjs). dist/cli.js is the same code, one file per module.
import { main } from '../dist/bundle/cli.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  },
);
