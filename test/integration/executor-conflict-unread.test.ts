// A conflict whose local side the scan left unread (sha256 null: a large new file) against the emulator: the
// executor hashes the local file only after fetching the remote content, and only if the file is still as
// planned. Equal content is adopted; a file changed or removed since the plan is LOCAL_CHANGED, untouched.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { toFileStat } from '../../src/local/fs-ops.js';
import { executePlan } from '../../src/sync/executor.js';
import type { Action, LocalFile, Plan } from '../../src/sync/model.js';
import { executorFixture } from './executor-fixture.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups.length = 0;
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const relPath = 'Docs/big.bin';

/** A new local file and a new remote document at one path, no base: the plan the scan's observation gives. */
async function unreadConflict(localContent: Buffer, remoteContent: Buffer) {
  const f = await executorFixture(cleanups, 'exec-unread-');
  const abs = path.join(f.root, relPath);
  fs.writeFileSync(abs, localContent);
  const doc = f.emu.control.addDocument(f.binderId, f.folderId, 'big.bin', remoteContent).document;
  const local: LocalFile = { relPath, key: relPath, sha256: null, ...toFileStat(fs.lstatSync(abs)) };
  const action: Action = {
    kind: 'conflict', relPath, key: relPath, local, base: null, policy: 'keep-both', conflictPath: 'Docs/big (conflict).bin', uploadConflictCopy: true, keepLocal: false,
    doc: { documentId: doc.id, fileName: 'big.bin', folderId: f.folderId, versionId: doc.latestVersionId, relPath, key: relPath },
  };
  const plan: Plan = { groups: [[action]], issues: [], blocked: null };
  return { ...f, abs, plan, docId: doc.id };
}

describe('conflict on a file the scan did not read', () => {
  it('equal content: hashed after the download, adopted as base, nothing renamed or uploaded', async () => {
    const content = Buffer.alloc(5 << 20, 0x5a);
    const { d, abs, plan, store, emu, docId } = await unreadConflict(content, content);
    const report = await executePlan(plan, d);
    expect(report.failures).toEqual([]);
    expect(report.conflicts).toEqual([]);
    expect(store.loadBase().get(docId)).toMatchObject({ relPath, sha256: sha(content), ...toFileStat(fs.lstatSync(abs)) });
    expect(fs.readdirSync(path.dirname(abs))).toEqual(['big.bin']);
    expect(emu.control.listVersions(docId)).toHaveLength(1);
  });

  it('changed (same size) or removed since the plan: LOCAL_CHANGED, the local file as the user left it, no temp file', async () => {
    // 'rewrite-as-remote': the new content equals the remote's, so only the stat check after hashing sees it.
    for (const change of ['rewrite', 'rewrite-as-remote', 'remove'] as const) {
      const { d, abs, plan, store, docId } = await unreadConflict(Buffer.alloc(5 << 20, 1), Buffer.alloc(5 << 20, 3));
      const edited = Buffer.alloc(5 << 20, change === 'rewrite' ? 2 : 3);
      if (change !== 'remove') {
        fs.writeFileSync(abs, edited);
        const later = new Date(Date.now() + 60_000);
        fs.utimesSync(abs, later, later);
      } else fs.rmSync(abs);
      const report = await executePlan(plan, d);
      expect(report.failures.map((x) => [x.code, x.retryable]), change).toEqual([['LOCAL_CHANGED', true]]);
      expect(store.loadBase().get(docId), change).toBeUndefined();
      expect(fs.readdirSync(path.dirname(abs)), change).toEqual(change === 'remove' ? [] : ['big.bin']);
      if (change !== 'remove') expect(sha(fs.readFileSync(abs))).toBe(sha(edited));
    }
  });
});

describe('a keep-both conflict whose folder is moved out of the root and linked back during its download', () => {
  it('is refused, and its temp file is not left in the moved folder (black-box round 33a, F5)', async () => {
    const { d, root, plan, store, docId } = await unreadConflict(Buffer.from('mine'), Buffer.from('theirs, longer'));
    const outside = path.join(path.dirname(root), 'outside');
    const real = d.client.downloadVersionTo.bind(d.client);
    // The temp file exists when the body is asked for: the folder goes (with it), a symbolic link takes its place.
    d.client.downloadVersionTo = (...args: Parameters<typeof real>) => {
      fs.mkdirSync(outside);
      fs.renameSync(path.join(root, 'Docs'), path.join(outside, 'Docs'));
      fs.symlinkSync(path.join(outside, 'Docs'), path.join(root, 'Docs'));
      return real(...args);
    };
    const report = await executePlan(plan, d);
    expect(report.failures.map((x) => x.code)).toEqual(['PATH_ESCAPE']);
    expect(fs.readdirSync(path.join(outside, 'Docs'))).toEqual(['big.bin']);
    expect(fs.readFileSync(path.join(outside, 'Docs', 'big.bin'), 'utf8')).toBe('mine');
    expect(store.loadBase().get(docId)).toBeUndefined();
  });
});
