// A commit answered with a version of a document that does not exist (a buggy service, a proxy mixing answers): the
// new file was recorded as uploaded, the next listing lacked the document, GET said 404, and the file, whose
// content was on no document of the service, went to the trash as "deleted on the service", both passes saying
// "in sync" (black-box round 41c, F2). A document created here that no listing has shown is not a colleague's
// delete: its file is uploaded again. Real passes, real state DB, the emulator on loopback; the one wrong commit
// answer is made by wrapping the client's commit.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runPass } from '../../src/sync/pass.js';
import type { DocumentVersion } from '../../src/service/index.js';
import { openTestPair, type TestPair } from './pass-fixture.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});
afterAll(async () => {
  await emu?.close();
});

/** The client's first commit is not made: answered with `version` instead (what a faulty service says). */
function answerFirstCommitWith(p: TestPair, version: DocumentVersion): void {
  const client = p.rt.client;
  const commit = client.commitUpload.bind(client);
  let lied = false;
  client.commitUpload = async (...args: Parameters<typeof commit>) => {
    if (lied) return commit(...args);
    lied = true;
    return version;
  };
}

it('a new file whose commit answer named a document that does not exist is uploaded again, not trashed', async () => {
  const p = await openTestPair(emu, 'never-listed');
  try {
    const c = emu.control;
    const docs = c.createFolder(p.binderId, { name: 'Docs' });
    c.addDocument(p.binderId, docs.id, 'other.txt', 'a colleague\'s\n'); // an empty binder's listing is held (remote-empty)
    await runPass(p.rt);
    answerFirstCommitWith(p, { id: '7d1f0f5e-0000-4000-8000-000000000001', documentId: '7d1f0f5e-0000-4000-8000-00000000000d', version: '1' });
    const file = path.join(p.local, 'Docs', 'new.txt');
    fs.writeFileSync(file, 'only copy\n');
    expect((await runPass(p.rt)).execution?.done).toEqual({ upload: 1 });
    expect(c.listDocuments(p.binderId).map((d) => d.fileName)).toEqual(['other.txt']);
    expect(p.rt.store.neverListed()).toEqual(new Set(['7d1f0f5e-0000-4000-8000-00000000000d']));

    p.rt.cache.foldersAt = 0;
    const second = await runPass(p.rt);
    expect(second.execution?.done).toEqual(expect.objectContaining({ upload: 1 }));
    expect(second.execution?.done['trash-local']).toBeUndefined();
    expect(fs.readFileSync(file, 'utf8')).toBe('only copy\n');
    const made = c.listDocuments(p.binderId).filter((d) => d.fileName === 'new.txt');
    expect(made).toHaveLength(1);
    expect(c.readContent(made[0]!.id).toString()).toBe('only copy\n');
    const third = await runPass(p.rt);
    expect(third.plan.groups).toEqual([]);
    expect(p.rt.store.neverListed()).toEqual(new Set()); // listed now: a later 404 would be a delete again
  } finally {
    await p.close();
  }
});

// Black-box round 41c, F2b: the answer named another synced file's document. Recorded as this file's, the next
// pass overwrote that file's local copy with the new file's content and trashed the new file.
it("a new file whose commit answer named another synced file's document is not recorded as it: both files stay as they are", async () => {
  const p = await openTestPair(emu, 'commit-other-doc');
  try {
    const c = emu.control;
    const docs = c.createFolder(p.binderId, { name: 'Docs' });
    const other = c.addDocument(p.binderId, docs.id, 'other.txt', "a colleague's\n");
    await runPass(p.rt);
    answerFirstCommitWith(p, { id: other.version.id, documentId: other.document.id, version: '1' });
    const file = path.join(p.local, 'Docs', 'new.txt');
    fs.writeFileSync(file, 'only copy\n');
    const first = await runPass(p.rt);
    expect(first.execution?.failures.map((f) => f.code)).toEqual(['COMMIT_MISDIRECTED']);
    expect(first.execution?.failures[0]?.message).toContain(`the service attached this new file's upload to document ${other.document.id}, which is "Docs/other.txt"`);
    expect(p.rt.store.getBase(other.document.id)?.relPath).toBe('Docs/other.txt');
    p.rt.cache.foldersAt = 0;
    await runPass(p.rt);
    const third = await runPass(p.rt);
    expect(fs.readFileSync(file, 'utf8')).toBe('only copy\n');
    expect(fs.readFileSync(path.join(p.local, 'Docs', 'other.txt'), 'utf8')).toBe("a colleague's\n");
    // The content is not sent again until the file changes (as for any misdirected commit), and says so.
    expect(third.issues.map((i) => `${i.relPath} ${i.code}`)).toEqual(['Docs/new.txt upload-refused']);
    fs.appendFileSync(file, 'more\n');
    await runPass(p.rt);
    expect(c.listDocuments(p.binderId).map((d) => d.fileName).sort()).toEqual(['new.txt', 'other.txt']);
    expect(fs.readFileSync(path.join(p.local, 'Docs', 'other.txt'), 'utf8')).toBe("a colleague's\n");
  } finally {
    await p.close();
  }
});
