// Soak version of test/e2e/crash-random.test.ts (run with SOAK=1): 150 SIGKILLs at random instants during uploads,
// downloads, conflicts and remote moves, then convergence without loss or duplicates. Replay with CRASH_SEED.
import { describe, it } from 'vitest';
import { randomKillTest, seededRng } from '../e2e/reliability-helpers.js';

describe.skipIf(!process.env.SOAK)('random kills soak', () => {
  const rng = seededRng('CRASH_SEED');
  it(`150 SIGKILLs at random instants, then convergence without loss or duplicates (seed ${rng.seed})`, () =>
    randomKillTest(rng, { kills: 150, killAfterMs: [300, 3500], opsPerRound: 10 }), 1_800_000);
});
