// A directory left empty by a remote change that cannot be removed (a mount point: EBUSY; a symbolic link now:
// ENOTDIR) is left as it is: tidying only. It failed the whole pass with "check the local disk" (black-box round
// 36a, F5). rmdir is made to refuse as a mount point would (no mount in a test); the rest is real.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { BinderSyncError } from '../../src/errors.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runPass } from '../../src/sync/pass.js';
import { openTestPair } from './pass-fixture.js';

vi.mock('../../src/local/fs-ops.js', async (importOriginal) => {
  const orig = await importOriginal<typeof import('../../src/local/fs-ops.js')>();
  return {
    ...orig,
    removeDirIfEmpty: async (absDir: string) => {
      if (path.basename(absDir) === 'Mounted') throw new BinderSyncError(`rmdir failed for ${absDir}: EBUSY`, { code: 'LOCAL_IO', retryable: false, context: { op: 'rmdir', path: absDir, errno: 'EBUSY' } });
      return orig.removeDirIfEmpty(absDir);
    },
  };
});

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});
afterAll(async () => {
  await emu?.close();
});

it('a vacated directory that cannot be removed stays, and the pass goes on', async () => {
  const p = await openTestPair(emu, 'vacated-stays');
  try {
    const c = emu.control;
    const mounted = c.createFolder(p.binderId, { name: 'Mounted' });
    const other = c.createFolder(p.binderId, { name: 'Other' });
    const { document } = c.addDocument(p.binderId, mounted.id, 'a.txt', 'a');
    c.addDocument(p.binderId, other.id, 'b.txt', 'b');
    expect((await runPass(p.rt)).converged).toBe(true);
    c.moveDocument(document.id, other.id);
    c.deleteFolder(mounted.id);
    p.rt.cache.foldersAt = 0;
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(fs.readFileSync(path.join(p.local, 'Other', 'a.txt'), 'utf8')).toBe('a');
    expect(fs.existsSync(path.join(p.local, 'Mounted'))).toBe(true);
    expect((await runPass(p.rt)).converged).toBe(true);
  } finally {
    await p.close();
  }
});
