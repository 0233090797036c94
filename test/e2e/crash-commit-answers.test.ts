// A crash right after a commit, against servers that answer a repeated commit of the same uploadId in each way
// the spec leaves open (4.9: "what the second call returns: not shown"): the version, 204 No Content, 409, the
// document's latest version whoever made it, or a version id the server does not have. The restart must finish the upload without a second document
// or a second version, and must not take someone else's version for its own.
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, localTree, readLocal, remoteTree, sha256, sync, writeLocal, type Workspace } from './harness.js';
import { eventually } from './run-helpers.js';

let ws: Workspace | undefined;
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

const RECOVERED = /finished an upload an earlier pass left unfinished|an upload an earlier pass left unfinished \(a restart, or a failed commit request\) was already on the service: a version with its content was made since the edit; recorded, nothing sent/;

/** T/a.txt, version 1 ('v1') on the service, synced; returns its document. */
async function syncedAtV1(w: Workspace): Promise<{ id: string }> {
  const c = w.emulator.control;
  const folder = c.createFolder(w.binderId, { name: 'T' });
  const { document } = c.addDocument(w.binderId, folder.id, 'a.txt', 'v1', { versionLabel: '1' });
  expect((await sync(w)).code).toBe(0);
  return document;
}

describe.each(['version', 'no-content', 'conflict', 'latest', 'unknown'] as const)('repeated commit answered with %s', (answer) => {
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
    // Finished from the outbox, not dropped and adopted later: the repeat's answer was settled (committed now, or
    // found committed by its content, as the killed run had made it).
    expect(`${again.stdout}${again.stderr}`).toMatch(RECOVERED);
    // Said in the run's summary too, which said "nothing to do" (black-box round 29a, F6).
    expect(again.stdout).toMatch(/^\[main\] 1 upload an earlier run left unfinished, committed; /m);
    const [doc] = c.listDocuments(w.binderId);
    expect(c.listDocuments(w.binderId)).toHaveLength(1);
    expect(c.listVersions(doc!.id)).toHaveLength(1);

    writeLocal(w, 'T/new.txt', 'second');
    expect((await sync(w, [], { env: { BINDER_SYNC_FAILPOINT: 'upload-after-commit' } })).signal).toBe('SIGKILL');
    const third = await sync(w);
    expect(third.code, third.stderr).toBe(0);
    expect(`${third.stdout}${third.stderr}`).toMatch(RECOVERED);
    expect(c.listDocuments(w.binderId)).toHaveLength(1);
    expect(c.listVersions(doc!.id).map((v) => c.readContent(doc!.id, v.id).toString())).toEqual(['first', 'second']);
    expect(localTree(w.local)).toEqual(remoteTree(w));
  });
});

// Black-box round 22, K1: the answer to the repeated commit was the colleague's version made in between. Taken as
// ours it became the base: the colleague's edit was never downloaded, both sides said "in sync", and the next
// local edit was stacked on it without a conflict.
describe("a repeated commit answered with the document's latest version, a colleague's made meanwhile", () => {
  it('is not taken as ours: our version is found by its content, and the colleague\'s edit comes down next', async () => {
    ws = await createWorkspace({ emulator: { repeatCommitAnswer: 'latest' } });
    const w = ws;
    const c = w.emulator.control;
    const document = await syncedAtV1(w);

    writeLocal(w, 'T/a.txt', 'my edit');
    expect((await sync(w, [], { env: { BINDER_SYNC_FAILPOINT: 'upload-after-commit' } })).signal).toBe('SIGKILL');
    c.addVersion(document.id, 'colleague edit');
    for (let i = 0; i < 2; i++) {
      const r = await sync(w);
      expect(r.code, r.stderr).toBe(0);
    }
    expect(c.listVersions(document.id).map((v) => c.readContent(document.id, v.id).toString())).toEqual(['v1', 'my edit', 'colleague edit']);
    expect(readLocal(w, 'T/a.txt')).toBe('colleague edit');
    expect(localTree(w.local)).toEqual(remoteTree(w));
  });
});

// Black-box round 29a, F1: a commit that failed (a 503 for as long as the client retried) left its row at
// 'committing', and the next run committed it blindly, on top of the colleague's version made meanwhile: their
// edit was buried under ours (labels 1, 2, 2), never downloaded, and no conflict was said.
describe('a commit that failed, then a colleague\'s version before the next run', () => {
  it('is not committed onto their version: the next run keeps both edits as a conflict', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const document = await syncedAtV1(w);

    writeLocal(w, 'T/a.txt', 'my edit');
    c.injectFault({ route: 'commit', status: 503 });
    const failed = await sync(w);
    expect(failed.code, failed.stderr).toBe(1); // the item failed; its row waits at 'committing'
    expect(c.listVersions(document.id)).toHaveLength(1);
    c.clearFaults();
    c.addVersion(document.id, 'colleague edit', { versionLabel: '2' });

    const r = await sync(w);
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
    expect(`${r.stdout}${r.stderr}`).toContain('dropped an upload an earlier pass left unfinished');
    expect(c.listVersions(document.id).map((v) => c.readContent(document.id, v.id).toString())).toEqual(['v1', 'colleague edit']);
    expect(readLocal(w, 'T/a.txt')).toBe('colleague edit');
    const copies = [...localTree(w.local)].filter(([p]) => p !== 'T/a.txt');
    expect(copies.map(([, hash]) => hash)).toEqual([sha256('my edit')]);
    expect(copies[0]![0]).toMatch(/^T\/a \(conflict .*\)\.txt$/);
    expect(localTree(w.local)).toEqual(remoteTree(w));
  });
});

// Black-box round 31a, F1: a colleague's version committed while ours was on its way, then the daemon killed
// right after our commit: the look for a version made during the upload was never made (it ran once, in memory,
// after the commit), and their edit stayed under ours, unsaid. It is recorded with the commit now.
describe('a colleague\'s version made during our commit, then a SIGKILL right after it', () => {
  it('the next run finds it under ours and keeps it as a conflict copy, on both sides', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const document = await syncedAtV1(w);

    writeLocal(w, 'T/a.txt', 'my edit');
    c.injectFault({ route: 'commit', latencyMs: 1500, times: 1 }); // our commit waits; theirs lands meanwhile
    const killed = sync(w, [], { env: { BINDER_SYNC_FAILPOINT: 'upload-after-commit' } });
    await eventually(() => (c.counters().commit ?? 0) > 0, 15_000, 'our commit to go out');
    c.addVersion(document.id, 'colleague edit', { versionLabel: '2' });
    expect((await killed).signal).toBe('SIGKILL');
    expect(c.listVersions(document.id).map((v) => c.readContent(document.id, v.id).toString())).toEqual(['v1', 'colleague edit', 'my edit']);

    const r = await sync(w);
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/conflict T\/a\.txt: kept both \(their version was committed during our upload\)/);
    expect(readLocal(w, 'T/a.txt')).toBe('my edit');
    const copies = [...localTree(w.local)].filter(([p]) => p !== 'T/a.txt');
    expect(copies.map(([, hash]) => hash)).toEqual([sha256('colleague edit')]);
    expect(localTree(w.local)).toEqual(remoteTree(w));
    expect((await sync(w)).stdout).toMatch(/in sync/);
  });
});
