// The per-root lock between processes (src/local/root-lock.ts): real child processes, real abstract sockets, a
// symlink and (as root) a bind mount of one folder. The child runs the built module (dist/, made by `npm test`).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { holdRoot, releaseRoot } from '../../src/local/root-lock.js';

const BUILT = fileURLToPath(new URL('../../dist/local/root-lock.js', import.meta.url));

/**
 * A child that tries to hold `root`: exit 0 when it could (it lets go at once), 5 when another process holds it.
 * Asynchronous, so that this process can answer the child's question when it is the holder.
 */
function tryInChild(root: string): Promise<{ code: number | null; said: string }> {
  const script = `import { holdRoot } from ${JSON.stringify(BUILT)};
try { await holdRoot(${JSON.stringify(root)}, { pair: 'child', stateDir: '/child-state' }); process.exit(0); }
catch (e) { process.stdout.write(e.message); process.exit(e.code === 'ROOT_LOCKED' ? 5 : 1); }`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let said = '';
  child.stdout.on('data', (d: Buffer) => (said += d.toString()));
  child.stderr.on('data', (d: Buffer) => (said += d.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, said })));
}

/** A child that holds `root` until killed; resolves once it holds it. */
async function holderChild(root: string): Promise<{ pid: number; kill: () => void }> {
  const script = `import { holdRoot } from ${JSON.stringify(BUILT)};
await holdRoot(${JSON.stringify(root)}, { pair: 'holder', stateDir: '/holder-state' });
process.stdout.write('held\\n'); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => d.toString().includes('held') && resolve());
    child.on('exit', (code) => reject(new Error(`holder exited ${code}`)));
  });
  return { pid: child.pid!, kill: () => child.kill('SIGKILL') };
}

let dir: string;
const cleanups: Array<() => void> = [];
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'root-lock-'));
});
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(process.platform !== 'linux')('one process per sync root', () => {
  it('another process holding the folder (by its path, a symlink, or a bind mount) is refused with its pid, pair and stateDir', async () => {
    const root = path.join(dir, 'root');
    fs.mkdirSync(root);
    const holder = await holderChild(root);
    cleanups.push(holder.kill);
    for (const via of [root, `${root}/`]) {
      await expect(holdRoot(via, { pair: 'me', stateDir: '/me' })).rejects.toMatchObject({
        code: 'ROOT_LOCKED',
        message: `the local root ${via} is being synced by another binder-sync process (pid ${holder.pid}, pair holder, stateDir /holder-state)`,
      });
    }
    fs.symlinkSync(root, path.join(dir, 'link'));
    await expect(holdRoot(path.join(dir, 'link'), { pair: 'me', stateDir: '/me' })).rejects.toMatchObject({ code: 'ROOT_LOCKED' });
    const bind = path.join(dir, 'bind');
    fs.mkdirSync(bind);
    if (process.getuid?.() === 0 && spawnSync('mount', ['--bind', root, bind], { stdio: 'ignore' }).status === 0) {
      cleanups.push(() => spawnSync('umount', [bind]));
      await expect(holdRoot(bind, { pair: 'me', stateDir: '/me' })).rejects.toMatchObject({ code: 'ROOT_LOCKED' });
    }
    // Another folder is free; and once the holder is gone (killed: nothing to clean up), so is this one.
    fs.mkdirSync(path.join(dir, 'other'));
    expect((await tryInChild(path.join(dir, 'other'))).code).toBe(0);
    holder.kill();
    await new Promise((r) => setTimeout(r, 300));
    expect((await tryInChild(root)).code).toBe(0);
  });

  it('a root inside or above another process\'s root is refused; a sibling is not (black-box round 11, F3)', async () => {
    const root = path.join(dir, 'root');
    fs.mkdirSync(path.join(root, 'Docs', 'Sub'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'sibling'));
    const holder = await holderChild(root);
    cleanups.push(holder.kill);
    const inside = path.join(root, 'Docs', 'Sub');
    await expect(holdRoot(inside, { pair: 'me', stateDir: '/me' })).rejects.toMatchObject({
      code: 'ROOT_LOCKED',
      message: `the local root ${inside} is inside ${root}, which is being synced by another binder-sync process (pid ${holder.pid}, pair holder, stateDir /holder-state)`,
    });
    await expect(holdRoot(dir, { pair: 'me', stateDir: '/me' })).rejects.toMatchObject({
      code: 'ROOT_LOCKED',
      message: `the local root ${dir} holds a folder that is being synced by another binder-sync process (pid ${holder.pid}, pair holder, stateDir /holder-state)`,
    });
    expect((await tryInChild(path.join(dir, 'sibling'))).code).toBe(0);
    // This process as the holder, of a root deep down: a child is refused above it and inside it.
    holder.kill();
    await new Promise((r) => setTimeout(r, 300));
    await holdRoot(inside, { pair: 'deep', stateDir: '/s' });
    cleanups.push(() => releaseRoot(inside, 'deep'));
    for (const other of [root, path.join(inside, 'x')]) {
      fs.mkdirSync(other, { recursive: true });
      const refused = await tryInChild(other);
      expect(refused.code, refused.said).toBe(5);
      expect(refused.said).toContain(`(pid ${process.pid}, pair deep, stateDir /s)`);
    }
    expect((await tryInChild(path.join(dir, 'sibling'))).code).toBe(0);
  });

  it.runIf(process.getuid?.() === 0)('nested through a bind mount of a folder inside the root: refused both ways (black-box round 12, G2)', async (ctx) => {
    const root = path.join(dir, 'root');
    fs.mkdirSync(path.join(root, 'Docs', 'Sub'), { recursive: true });
    const bind = path.join(dir, 'bindDocs');
    fs.mkdirSync(bind);
    if (spawnSync('mount', ['--bind', path.join(root, 'Docs'), bind], { stdio: 'ignore' }).status !== 0) ctx.skip(); // no mounts here: said as skipped
    cleanups.push(() => spawnSync('umount', [bind]));
    const holder = await holderChild(root);
    cleanups.push(holder.kill);
    await expect(holdRoot(bind, { pair: 'me', stateDir: '/me' })).rejects.toMatchObject({
      code: 'ROOT_LOCKED',
      message: expect.stringMatching(/is inside \/.*\(on filesystem .*, through a bind mount\), which is being synced by another binder-sync process \(pid \d+, pair holder/),
    });
    holder.kill();
    await new Promise((r) => setTimeout(r, 300));
    const inner = await holderChild(path.join(bind, 'Sub')); // root/Docs/Sub, seen through the bind mount
    cleanups.push(inner.kill);
    await expect(holdRoot(root, { pair: 'me', stateDir: '/me' })).rejects.toMatchObject({
      code: 'ROOT_LOCKED',
      message: expect.stringContaining(`the local root ${root} holds a folder that is being synced by another binder-sync process (pid ${inner.pid}`),
    });
    // A bind mount of the root's parent, whose mount point is the parent itself inside that filesystem (round 13, H3).
    inner.kill();
    await new Promise((r) => setTimeout(r, 300));
    const again = await holderChild(root);
    cleanups.push(again.kill);
    const outer = path.join(dir, 'outer');
    fs.mkdirSync(outer);
    expect(spawnSync('mount', ['--bind', dir, outer], { stdio: 'ignore' }).status).toBe(0);
    cleanups.push(() => spawnSync('umount', [outer]));
    await expect(holdRoot(outer, { pair: 'me', stateDir: '/me' })).rejects.toMatchObject({
      code: 'ROOT_LOCKED',
      message: expect.stringContaining(`the local root ${outer} holds a folder that is being synced by another binder-sync process (pid ${again.pid}`),
    });
  });

  it('is let go when the last pair holding it in this process releases it (a reload that removes or moves the pair)', async () => {
    const root = path.join(dir, 'root');
    fs.mkdirSync(root);
    await holdRoot(root, { pair: 'a', stateDir: '/s' });
    await holdRoot(root, { pair: 'b', stateDir: '/s' }); // the same process: no conflict
    await holdRoot(root, { pair: 'a', stateDir: '/s' }); // a reopened pair: nothing more to hold
    const refused = await tryInChild(root);
    expect(refused.code, refused.said).toBe(5);
    expect(refused.said).toContain(`(pid ${process.pid}, pair a, stateDir /s)`);
    releaseRoot(root, 'a');
    expect((await tryInChild(root)).code).toBe(5); // b still holds it
    // Released as it was held, even after the folder is gone.
    fs.rmSync(root, { recursive: true });
    releaseRoot(root, 'b');
    fs.mkdirSync(root);
    expect((await tryInChild(root)).code).toBe(0);
  });
});
