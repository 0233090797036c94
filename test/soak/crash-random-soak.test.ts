// Soak version of test/e2e/crash-random.test.ts (run with SOAK=1): 50 SIGKILLs at random instants during uploads,
// downloads, conflicts and remote moves, then convergence without loss or duplicates. Replay with CRASH_SEED.
import { afterEach, describe, it } from 'vitest';
import { createWorkspace, type Workspace } from '../e2e/harness.js';
import { expectKillRunInvariants, runRandomKills, seededRng } from '../e2e/reliability-helpers.js';
import { startDaemonProcess, writeRunConfig, type DaemonProcess } from '../e2e/run-helpers.js';

let ws: Workspace | undefined;
const daemons: DaemonProcess[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.dispose();
  await ws?.close();
  ws = undefined;
});

describe.skipIf(!process.env.SOAK)('random kills soak', () => {
  const rng = seededRng('CRASH_SEED');
  it(`50 SIGKILLs at random instants, then convergence without loss or duplicates (seed ${rng.seed})`, async () => {
    ws = await createWorkspace();
    const w = ws;
    writeRunConfig(w);
    const outcome = await runRandomKills(w, rng, { kills: 50, killAfterMs: [300, 3000], opsPerRound: 8 }, () => {
      const d = startDaemonProcess(w, { env: { BINDER_SYNC_POLL_INTERVAL_MS: '500' } });
      daemons.push(d);
      return d;
    });
    await expectKillRunInvariants(w, outcome, rng.seed, 50);
  }, 600_000);
});
