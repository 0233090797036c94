// Soak version of test/e2e/chaos.test.ts (run with SOAK=1): 3,000 files under ~20% faults and token revocations for
// 30 s, edits on both sides, then convergence with the same invariants. Replay a failure with CHAOS_SEED=<seed>.
import { afterEach, describe, it } from 'vitest';
import { createWorkspace, type Workspace } from '../e2e/harness.js';
import { expectChaosInvariants, runChaosScenario, seededRng } from '../e2e/reliability-helpers.js';
import { startDaemonProcess, writeRunConfig, type DaemonProcess } from '../e2e/run-helpers.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await daemon?.dispose();
  await ws?.close();
  daemon = undefined;
  ws = undefined;
});

describe.skipIf(!process.env.SOAK)('chaos soak', () => {
  const rng = seededRng('CHAOS_SEED');
  it(`3,000 files, ~20% faults for 30 s, token revocations, edits on both sides (seed ${rng.seed})`, async () => {
    ws = await createWorkspace();
    const w = ws;
    writeRunConfig(w);
    const outcome = await runChaosScenario(w, rng, { files: 3000, faultShare: 0.2, chaosMs: 30_000, quietTimeoutMs: 480_000 }, (env) => {
      daemon = startDaemonProcess(w, { env });
      return daemon;
    });
    expectChaosInvariants(w, outcome, rng.seed);
  }, 600_000);
});
