// A crash right after a commit, against servers that answer a repeated commit of the same uploadId in each way
// the spec leaves open (4.9: "what the second call returns: not shown"): the version, 204 No Content, or 409.
// The restart must finish the upload without a second document or a second version.
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, localTree, remoteTree, sync, writeLocal, type Workspace } from './harness.js';

let ws: Workspace | undefined;
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

describe.each(['version', 'no-content', 'conflict'] as const)('repeated commit answered with %s', (answer) => {
  it('a new file and an edit, each killed right after the commit, end as one document with the right versions', async () => {
    ws = await createWorkspace({ emulator: { repeatCommitAnswer: answer } });
    const w = ws;
    const c = w.emulator.control;
    c.createFolder(w.binderId, { name: 'T' });
    expect((await sync(w)).code).toBe(0);

    writeLocal(w, 'T/new.txt', 'first');
    const killed = await sync(w, [], { env: { BINDER_SYNC_FAILPOINT: 'upload-after-commit' } });
    expect(killed.signal).toBe('SIGKILL');
    const again = await sync(w);
    expect(again.code, again.stderr).toBe(0);
    const [doc] = c.listDocuments(w.binderId);
    expect(c.listDocuments(w.binderId)).toHaveLength(1);
    expect(c.listVersions(doc!.id)).toHaveLength(1);

    writeLocal(w, 'T/new.txt', 'second');
    expect((await sync(w, [], { env: { BINDER_SYNC_FAILPOINT: 'upload-after-commit' } })).signal).toBe('SIGKILL');
    const third = await sync(w);
    expect(third.code, third.stderr).toBe(0);
    expect(c.listDocuments(w.binderId)).toHaveLength(1);
    expect(c.listVersions(doc!.id).map((v) => c.readContent(doc!.id, v.id).toString())).toEqual(['first', 'second']);
    expect(localTree(w.local)).toEqual(remoteTree(w));
  });
});
