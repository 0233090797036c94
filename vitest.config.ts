import os from 'node:os';
import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/longest-first-sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A safety net for a hung test, not an assertion: e2e tests take several times as long on a loaded machine.
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    sequence: { sequencer: LongestFirstSequencer },
    // Two test files at a time even on two cores (vitest's default is cores - 1): most e2e time is spent
    // waiting on child processes, polls and watchers, not on CPU. Measured on 2 cores: 425 s against 637 s.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
  },
});
