// Edits meeting the service's changes around their commit. A colleague's version committed after our last look
// and before our commit (the service has no conditional commit) ends up under ours: the pass finds it after the
// commit and keeps their edit as a conflict copy, beside the file and on the service (black-box round 30b, F1).
// An upload-only pair compares before it goes on top (round 30b, F3). An upload left unfinished is found
// committed only in a version made after its base (round 30a, F1). Real passes, real state DB, the emulator on
// loopback; the colleague's commit is made by the emulator's control API when our commit request goes out.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { ServiceError } from '../../src/service/index.js';
import { BURIED_CHECK_ATTEMPTS } from '../../src/sync/buried-edit.js';
import { runPass } from '../../src/sync/pass.js';
import { openTestPair, type TestPair } from './pass-fixture.js';

let emu: Emulator;

beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});

afterAll(async () => {
  await emu?.close();
});

/**
 * A synced Docs/f.txt (v1), edited locally to MINE; `race` makes the colleague's version when our commit goes out
 * (`theirs`: the contents of their versions, one each). `afterCommit` runs once our commit is made (before its
 * answer is read); `answerLost` makes that answer a 503, as from a gateway that timed out after the commit.
 */
async function editedWithRace(
  p: TestPair, race: boolean, opts: { theirs?: string[]; afterCommit?: () => void; answerLost?: boolean } = {},
): Promise<{ documentId: string }> {
  const folder = emu.control.createFolder(p.binderId, { name: 'Docs' });
  const { document } = emu.control.addDocument(p.binderId, folder.id, 'f.txt', 'v1\n');
  // Also there locally (an upload-only pair downloads nothing): the first pass finds the two the same.
  fs.mkdirSync(path.join(p.local, 'Docs'), { recursive: true });
  fs.writeFileSync(path.join(p.local, 'Docs', 'f.txt'), 'v1\n');
  expect((await runPass(p.rt)).converged).toBe(true);
  fs.writeFileSync(path.join(p.local, 'Docs', 'f.txt'), 'MINE\n');
  const client = p.rt.client;
  const commit = client.commitUpload.bind(client);
  let raced = false;
  client.commitUpload = async (...args: Parameters<typeof commit>) => {
    const first = !raced && args[2].fileName === 'f.txt';
    if (race && first) for (const [i, content] of (opts.theirs ?? ['COLLEAGUE\n']).entries()) emu.control.addVersion(document.id, content, { versionLabel: `2.${i}` });
    raced ||= first;
    const version = await commit(...args);
    if (first) {
      opts.afterCommit?.();
      if (opts.answerLost === true) throw new ServiceError('POST /upload failed with HTTP 503', { code: 'SERVICE_UNAVAILABLE', request: 'POST /documents/drives/{domain}/{id}/{folderId}/upload', status: 503, retryable: true });
    }
    return version;
  };
  return { documentId: document.id };
}

/** The conflict copies beside Docs/f.txt, name -> content. */
function copiesOf(p: TestPair): Map<string, string> {
  const dir = path.join(p.local, 'Docs');
  return new Map(fs.readdirSync(dir).filter((n) => n.includes('(conflict ')).sort().map((n) => [n, fs.readFileSync(path.join(dir, n), 'utf8')]));
}

const contents = (documentId: string) => emu.control.listVersions(documentId).map((v) => emu.control.readContent(documentId, v.id).toString());
const docsNamed = (p: TestPair) => emu.control.listDocuments(p.binderId).map((d) => d.fileName).sort();

describe('an edit committed over a version made during its upload', () => {
  it('keep-both: their edit comes down as a conflict copy, goes up as its own document, and is recorded', async () => {
    const p = await openTestPair(emu, 'buried-keep-both');
    try {
      const { documentId } = await editedWithRace(p, true);
      const pass = await runPass(p.rt);
      expect(pass.execution?.failures).toEqual([]);
      expect(contents(documentId)).toEqual(['v1\n', 'COLLEAGUE\n', 'MINE\n']);
      const copies = fs.readdirSync(path.join(p.local, 'Docs')).filter((n) => n.includes('(conflict '));
      expect(copies).toHaveLength(1);
      expect(fs.readFileSync(path.join(p.local, 'Docs', copies[0]!), 'utf8')).toBe('COLLEAGUE\n');
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'f.txt'), 'utf8')).toBe('MINE\n');
      expect(docsNamed(p)).toEqual(['f.txt', copies[0]!].sort());
      const copyDoc = emu.control.listDocuments(p.binderId).find((d) => d.fileName === copies[0])!;
      expect(contents(copyDoc.id)).toEqual(['COLLEAGUE\n']);
      expect(p.rt.store.listConflicts()).toEqual([expect.objectContaining({ relPath: 'Docs/f.txt', conflictPath: `Docs/${copies[0]}`, policy: 'keep-both' })]);
      // Their version is older than ours: a lagging search index that still lists it is no change (round 35a, F1).
      const theirs = emu.control.listVersions(documentId)[1]!.id;
      expect(p.rt.store.supersededVersions().get(documentId)?.has(theirs)).toBe(true);
      expect(pass.execution?.conflicts).toEqual([expect.objectContaining({ relPath: 'Docs/f.txt', conflictPath: `Docs/${copies[0]}` })]);
      // Both sides agree: nothing left to do.
      const next = await runPass(p.rt);
      expect(next.converged).toBe(true);
      expect(next.execution?.failures ?? []).toEqual([]);
      expect(docsNamed(p)).toHaveLength(2);
    } finally {
      await p.close();
    }
  });

  // An upload-only pair records it as local-wins too, and writes nothing locally (round 31a, F4).
  it.each([['local-wins', 'conflictPolicy: local-wins'], ['an upload-only pair', 'direction: upload']])('%s: ours stays on top, no copy, the conflict is recorded', async (name, pairYaml) => {
    const p = await openTestPair(emu, `buried-${name.replace(/ /g, '-')}`, pairYaml);
    try {
      const { documentId } = await editedWithRace(p, true);
      await runPass(p.rt);
      expect(contents(documentId)).toEqual(['v1\n', 'COLLEAGUE\n', 'MINE\n']);
      expect(fs.readdirSync(path.join(p.local, 'Docs'))).toEqual(['f.txt']);
      expect(docsNamed(p)).toEqual(['f.txt']);
      expect(p.rt.store.listConflicts()).toEqual([expect.objectContaining({ relPath: 'Docs/f.txt', conflictPath: null, policy: 'local-wins' })]);
    } finally {
      await p.close();
    }
  });

  it("a colleague's version committed just after ours, which the listing puts before ours (their creation times tie): a remote change after ours, downloaded, no conflict copy (black-box round 40c, F1)", async () => {
    const p = await openTestPair(emu, 'buried-tie-after');
    try {
      let theirs = '';
      const { documentId } = await editedWithRace(p, false, { afterCommit: () => { theirs = emu.control.addVersion(documentId, 'COLLEAGUE AFTER\n').id; } });
      // A server that orders versions made in one second either way: theirs listed just before ours.
      const list = p.rt.client.listVersions.bind(p.rt.client);
      p.rt.client.listVersions = async (id: string) => {
        const versions = await list(id);
        const i = versions.findIndex((v) => v.id === theirs);
        if (i <= 0) return versions;
        const out = [...versions];
        [out[i - 1], out[i]] = [out[i]!, out[i - 1]!];
        return out;
      };
      const pass = await runPass(p.rt);
      expect(pass.execution?.failures).toEqual([]);
      expect(contents(documentId)).toEqual(['v1\n', 'MINE\n', 'COLLEAGUE AFTER\n']);
      expect(copiesOf(p).size).toBe(0);
      expect(p.rt.store.supersededVersions().get(documentId)?.has(theirs) ?? false).toBe(false);
      p.rt.cache.foldersAt = 0;
      const next = await runPass(p.rt);
      expect(next.execution?.failures ?? []).toEqual([]);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'f.txt'), 'utf8')).toBe('COLLEAGUE AFTER\n');
      expect(docsNamed(p)).toEqual(['f.txt']);
      expect(p.rt.store.listConflicts()).toEqual([]);
      // A later edit goes up on top of theirs.
      fs.writeFileSync(path.join(p.local, 'Docs', 'f.txt'), 'MINE AGAIN\n');
      expect((await runPass(p.rt)).execution?.failures ?? []).toEqual([]);
      expect(contents(documentId).at(-1)).toBe('MINE AGAIN\n');
      // Our earlier version, which the tie puts between theirs and this one, is no version made during this upload:
      // no conflict copy of it (black-box rounds 41a, FAIL 2 and 41c, F4).
      expect(copiesOf(p).size).toBe(0);
      expect(docsNamed(p)).toEqual(['f.txt']);
      expect(p.rt.store.listConflicts()).toEqual([]);
    } finally {
      await p.close();
    }
  });

  it("a colleague's version committed during our upload, which the listing puts after ours (their creation times tie): still kept as a conflict copy (black-box round 41b, B4)", async () => {
    const p = await openTestPair(emu, 'buried-tie-before');
    try {
      const { documentId } = await editedWithRace(p, true);
      // A server that orders versions made in one second either way: theirs listed just after ours.
      const list = p.rt.client.listVersions.bind(p.rt.client);
      p.rt.client.listVersions = async (id: string) => {
        const versions = await list(id);
        const mine = versions.findIndex((v) => emu.control.readContent(id, v.id).toString() === 'MINE\n');
        const theirs = versions.findIndex((v) => emu.control.readContent(id, v.id).toString() === 'COLLEAGUE\n');
        if (mine < 0 || theirs < 0) return versions;
        const out = [...versions];
        [out[mine], out[theirs]] = [out[theirs]!, out[mine]!];
        return out;
      };
      const pass = await runPass(p.rt);
      expect(pass.execution?.failures).toEqual([]);
      expect(contents(documentId)).toEqual(['v1\n', 'COLLEAGUE\n', 'MINE\n']);
      expect([...copiesOf(p).values()]).toEqual(['COLLEAGUE\n']);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'f.txt'), 'utf8')).toBe('MINE\n');
      expect(p.rt.store.listConflicts()).toEqual([expect.objectContaining({ relPath: 'Docs/f.txt', policy: 'keep-both' })]);
      p.rt.cache.foldersAt = 0;
      expect((await runPass(p.rt)).converged).toBe(true);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'f.txt'), 'utf8')).toBe('MINE\n');
    } finally {
      await p.close();
    }
  });

  it("a version made during our upload and another just after, all in one second, listed in the tie's order: the one during is kept as a copy, the one after comes down (black-box round 41b, B4 ab)", async () => {
    const p = await openTestPair(emu, 'buried-tie-three');
    try {
      let after = '';
      const { documentId } = await editedWithRace(p, true, { afterCommit: () => { after = emu.control.addVersion(documentId, 'COLLEAGUE AFTER\n').id; } });
      // Newest first with the tie oldest first: [theirs during, ours, theirs after, v1], here oldest first.
      const list = p.rt.client.listVersions.bind(p.rt.client);
      p.rt.client.listVersions = async (id: string) => {
        const versions = await list(id);
        const named = (text: string) => versions.find((v) => emu.control.readContent(id, v.id).toString() === text)!;
        if (after === '' || versions.length !== 4) return versions;
        return [named('v1\n'), named('COLLEAGUE AFTER\n'), named('MINE\n'), named('COLLEAGUE\n')];
      };
      const pass = await runPass(p.rt);
      expect(pass.execution?.failures).toEqual([]);
      expect([...copiesOf(p).values()]).toEqual(['COLLEAGUE\n']);
      p.rt.cache.foldersAt = 0;
      await runPass(p.rt);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'f.txt'), 'utf8')).toBe('COLLEAGUE AFTER\n');
      expect([...copiesOf(p).values()]).toEqual(['COLLEAGUE\n']);
    } finally {
      await p.close();
    }
  });

  it('without a race: one version, no copy, no conflict', async () => {
    const p = await openTestPair(emu, 'buried-none');
    try {
      const { documentId } = await editedWithRace(p, false);
      await runPass(p.rt);
      expect(contents(documentId)).toEqual(['v1\n', 'MINE\n']);
      expect(fs.readdirSync(path.join(p.local, 'Docs'))).toEqual(['f.txt']);
      expect(p.rt.store.listConflicts()).toEqual([]);
    } finally {
      await p.close();
    }
  });
});

// Black-box round 31a, F1: the check was made once, in memory, after the commit: a lost answer, a crash or a
// failed listing skipped it, and their edit stayed under ours unsaid. It is recorded with the base row now.
describe('the look for a version made during the upload is not skipped', () => {
  it('when the version listing after the commit fails: the next pass keeps their edit', async () => {
    const p = await openTestPair(emu, 'buried-list-fails');
    try {
      const { documentId } = await editedWithRace(p, true, { afterCommit: () => emu.control.injectFault({ route: 'versions', status: 400, times: 1 }) });
      const first = await runPass(p.rt);
      expect(first.execution?.failures).toEqual([]);
      expect(copiesOf(p).size).toBe(0); // not yet: the listing failed
      expect(p.rt.store.listBuriedChecks()).toHaveLength(1);
      const next = await runPass(p.rt);
      expect([...copiesOf(p).values()]).toEqual(['COLLEAGUE\n']);
      expect(next.execution?.conflicts).toEqual([expect.objectContaining({ relPath: 'Docs/f.txt' })]);
      expect(p.rt.store.listBuriedChecks()).toEqual([]);
      expect(contents(documentId)).toEqual(['v1\n', 'COLLEAGUE\n', 'MINE\n']);
      expect(docsNamed(p)).toHaveLength(2);
      expect((await runPass(p.rt)).converged).toBe(true);
    } finally {
      await p.close();
    }
  });

  it('when the commit was made but its answer lost (503): the recovery that finishes it keeps their edit', async () => {
    const p = await openTestPair(emu, 'buried-answer-lost');
    try {
      const { documentId } = await editedWithRace(p, true, { answerLost: true });
      const first = await runPass(p.rt);
      expect(first.execution?.failures.map((f) => f.kind)).toEqual(['upload']);
      const next = await runPass(p.rt);
      expect(next.recoveredUploads).toBe(1);
      expect([...copiesOf(p).values()]).toEqual(['COLLEAGUE\n']);
      expect(next.execution?.conflicts).toEqual([expect.objectContaining({ relPath: 'Docs/f.txt' })]);
      expect(contents(documentId)).toEqual(['v1\n', 'COLLEAGUE\n', 'MINE\n']);
      expect(p.rt.store.listConflicts()).toHaveLength(1);
      expect((await runPass(p.rt)).converged).toBe(true);
      expect(docsNamed(p)).toHaveLength(2);
    } finally {
      await p.close();
    }
  });

  it('when the copy cannot be downloaded at first: tried again next pass (round 31a, F11), not given up', async () => {
    const p = await openTestPair(emu, 'buried-copy-fails');
    try {
      await editedWithRace(p, true, { afterCommit: () => emu.control.injectFault({ route: 'downloadlink', status: 400, times: 1 }) });
      await runPass(p.rt);
      expect(copiesOf(p).size).toBe(0);
      expect(p.rt.store.listConflicts()).toEqual([]);
      await runPass(p.rt);
      expect([...copiesOf(p).values()]).toEqual(['COLLEAGUE\n']);
      expect(p.rt.store.listConflicts()).toEqual([expect.objectContaining({ conflictPath: expect.stringContaining('(conflict ') })]);
    } finally {
      await p.close();
    }
  });

  it('a service out of reach does not use the tries up: the check waits, uncounted, and is done once it answers', async () => {
    const p = await openTestPair(emu, 'buried-outage');
    try {
      const client = p.rt.client;
      const list = client.listVersions.bind(client);
      let down = false; // from our commit on
      await editedWithRace(p, true, { afterCommit: () => { down = true; } });
      client.listVersions = async (...args: Parameters<typeof list>) => {
        if (down) throw new ServiceError('GET /versions failed with HTTP 503', { code: 'SERVICE_UNAVAILABLE', request: 'GET /documents/{documentId}/versions', status: 503, retryable: true });
        return list(...args);
      };
      for (let i = 0; i < BURIED_CHECK_ATTEMPTS + 1; i++) await runPass(p.rt);
      expect(p.rt.store.listBuriedChecks()).toEqual([expect.objectContaining({ attempts: 0 })]);
      expect(p.rt.store.listConflicts()).toEqual([]);
      down = false;
      await runPass(p.rt);
      expect([...copiesOf(p).values()]).toEqual(['COLLEAGUE\n']);
      expect(p.rt.store.listBuriedChecks()).toEqual([]);
    } finally {
      await p.close();
    }
  });

  it('given up after BURIED_CHECK_ATTEMPTS failed tries: recorded and said as in the version history', async () => {
    const p = await openTestPair(emu, 'buried-given-up');
    try {
      await editedWithRace(p, true, { afterCommit: () => emu.control.injectFault({ route: 'versions', status: 400, times: BURIED_CHECK_ATTEMPTS }) });
      let last = await runPass(p.rt);
      for (let i = 1; i < BURIED_CHECK_ATTEMPTS; i++) {
        expect(p.rt.store.listConflicts(), `pass ${i}`).toEqual([]);
        last = await runPass(p.rt);
      }
      expect(p.rt.store.listBuriedChecks()).toEqual([]);
      expect(p.rt.store.listConflicts()).toEqual([expect.objectContaining({ relPath: 'Docs/f.txt', conflictPath: null, detail: expect.stringContaining('left in the version history') })]);
      expect(last.execution?.conflicts).toEqual([expect.objectContaining({ outcome: expect.stringContaining('look at the version history') })]);
      expect(copiesOf(p).size).toBe(0);
    } finally {
      await p.close();
    }
  });

  it('a copy written before a crash is not written again by the retry', async () => {
    const p = await openTestPair(emu, 'buried-copy-crash');
    try {
      await editedWithRace(p, true, { theirs: ['A\n', 'B\n'] });
      // The second download fails: the first copy (B's, the newest) is in place with no record, as after a crash.
      const client = p.rt.client;
      const download = client.downloadVersionTo.bind(client);
      let calls = 0;
      client.downloadVersionTo = (...args: Parameters<typeof download>) => {
        if (++calls === 2) throw new ServiceError('GET /raw failed with HTTP 400', { code: 'SERVICE_BAD_REQUEST', request: 'GET /documents/{documentId}/versions/{versionId}/raw', status: 400, retryable: false });
        return download(...args);
      };
      await runPass(p.rt);
      expect([...copiesOf(p).values()]).toEqual(['B\n']);
      expect(p.rt.store.listConflicts()).toEqual([]);
      expect(p.rt.store.listBuriedChecks()[0]?.attempts).toBe(1);
      const next = await runPass(p.rt);
      // B's copy is found where the first try put it (same name, same bytes): A's is the only new one.
      expect([...copiesOf(p).values()].sort()).toEqual(['A\n', 'B\n']);
      expect(next.execution?.conflicts).toHaveLength(2);
      expect(p.rt.store.listBuriedChecks()).toEqual([]);
      expect((await runPass(p.rt)).converged).toBe(true);
      expect(docsNamed(p)).toHaveLength(3);
    } finally {
      await p.close();
    }
  });
});

describe('what is kept of the versions made during the upload', () => {
  it('one with our content (two people saving the same bytes): nothing kept, nothing recorded (round 31a, F7)', async () => {
    const p = await openTestPair(emu, 'buried-same');
    try {
      const { documentId } = await editedWithRace(p, true, { theirs: ['MINE\n'] });
      const pass = await runPass(p.rt);
      expect(contents(documentId)).toEqual(['v1\n', 'MINE\n', 'MINE\n']);
      expect(copiesOf(p).size).toBe(0);
      expect(pass.execution?.conflicts).toEqual([]);
      expect(p.rt.store.listConflicts()).toEqual([]);
      expect(docsNamed(p)).toEqual(['f.txt']);
    } finally {
      await p.close();
    }
  });

  it('several: each with content of its own is kept, once (round 31a, F10)', async () => {
    const p = await openTestPair(emu, 'buried-several');
    try {
      await editedWithRace(p, true, { theirs: ['A\n', 'B\n', 'A\n', 'MINE\n'] });
      const pass = await runPass(p.rt);
      expect([...copiesOf(p).values()].sort()).toEqual(['A\n', 'B\n']);
      expect(pass.execution?.conflicts).toHaveLength(2);
      expect(docsNamed(p)).toHaveLength(3);
      expect((await runPass(p.rt)).converged).toBe(true);
    } finally {
      await p.close();
    }
  });

});

// Black-box round 31a, F6: an unfinished upload whose commit the service kept failing (a 500 for that one file)
// failed every later pass at its start: nothing else was downloaded or uploaded, and no file was named.
describe('an unfinished upload whose commit keeps failing', () => {
  it('holds its own file only: the rest of the pair syncs, and it is committed once the service takes it', async () => {
    const p = await openTestPair(emu, 'held-commit');
    try {
      const folder = emu.control.createFolder(p.binderId, { name: 'Docs' });
      const a = emu.control.addDocument(p.binderId, folder.id, 'a.txt', 'v1\n').document;
      expect((await runPass(p.rt)).converged).toBe(true);
      fs.writeFileSync(path.join(p.local, 'Docs', 'a.txt'), 'MINE\n');
      const client = p.rt.client;
      const commit = client.commitUpload.bind(client);
      let failing = true;
      client.commitUpload = async (...args: Parameters<typeof commit>) => {
        if (failing && args[2].fileName === 'a.txt') throw new ServiceError('POST /upload failed with HTTP 500', { code: 'SERVICE_UNAVAILABLE', request: 'POST /documents/drives/{domain}/{id}/{folderId}/upload', status: 500, retryable: true });
        return commit(...args);
      };
      expect((await runPass(p.rt)).execution?.failures.map((f) => f.relPath)).toEqual(['Docs/a.txt']);
      emu.control.addDocument(p.binderId, folder.id, 'b.txt', 'remote b\n');
      fs.writeFileSync(path.join(p.local, 'Docs', 'c.txt'), 'local c\n');

      const held = await runPass(p.rt);
      expect(held.converged).toBe(false);
      expect(held.issues).toEqual([expect.objectContaining({ relPath: 'Docs/a.txt', code: 'local-change-not-uploaded', detail: expect.stringContaining('could not be committed now (POST /upload failed with HTTP 500)') })]);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'b.txt'), 'utf8')).toBe('remote b\n');
      expect(docsNamed(p)).toEqual(['a.txt', 'b.txt', 'c.txt']);
      expect(contents(a.id)).toEqual(['v1\n']);

      failing = false;
      // Refused in its pass and at the next one, the commit is held a minute (black-box round 40b, A5).
      const next = await runPass(p.rt, { now: () => new Date(Date.now() + 61_000) });
      expect(next.recoveredUploads).toBe(1);
      expect(contents(a.id)).toEqual(['v1\n', 'MINE\n']);
      expect((await runPass(p.rt)).converged).toBe(true);
    } finally {
      await p.close();
    }
  });
});

/** Docs/f.txt holding v1 on both sides, synced; returns its document. */
async function syncedAtV1(p: TestPair): Promise<{ id: string }> {
  const folder = emu.control.createFolder(p.binderId, { name: 'Docs' });
  const doc = emu.control.addDocument(p.binderId, folder.id, 'f.txt', 'v1\n').document;
  fs.mkdirSync(path.join(p.local, 'Docs'), { recursive: true });
  fs.writeFileSync(path.join(p.local, 'Docs', 'f.txt'), 'v1\n');
  expect((await runPass(p.rt)).converged).toBe(true);
  return doc;
}

describe('an upload-only pair meeting content on both sides (black-box round 30b, F3)', () => {
  it('first sync: an identical file makes no version, a different one goes on top, the local files are untouched', async () => {
    const p = await openTestPair(emu, 'upload-first', 'direction: upload');
    try {
      const folder = emu.control.createFolder(p.binderId, { name: 'Docs' });
      const same = emu.control.addDocument(p.binderId, folder.id, 'same.txt', 'equal\n').document;
      const other = emu.control.addDocument(p.binderId, folder.id, 'other.txt', 'remote\n').document;
      fs.mkdirSync(path.join(p.local, 'Docs'), { recursive: true });
      fs.writeFileSync(path.join(p.local, 'Docs', 'same.txt'), 'equal\n');
      fs.writeFileSync(path.join(p.local, 'Docs', 'other.txt'), 'local\n');
      const pass = await runPass(p.rt);
      expect(pass.execution?.failures).toEqual([]);
      expect(contents(same.id)).toEqual(['equal\n']);
      expect(contents(other.id)).toEqual(['remote\n', 'local\n']);
      expect(fs.readdirSync(path.join(p.local, 'Docs')).sort()).toEqual(['other.txt', 'same.txt']);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'other.txt'), 'utf8')).toBe('local\n');
      expect((await runPass(p.rt)).converged).toBe(true);
    } finally {
      await p.close();
    }
  });

  it('both sides edited: compared, then the local edit on top (whatever the policy), recorded for status', async () => {
    const p = await openTestPair(emu, 'upload-both', 'direction: upload, conflictPolicy: remote-wins');
    try {
      const doc = await syncedAtV1(p);
      expect(contents(doc.id)).toEqual(['v1\n']);
      emu.control.addVersion(doc.id, 'theirs\n');
      fs.writeFileSync(path.join(p.local, 'Docs', 'f.txt'), 'mine\n');
      await runPass(p.rt);
      expect(contents(doc.id)).toEqual(['v1\n', 'theirs\n', 'mine\n']);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'f.txt'), 'utf8')).toBe('mine\n');
      expect(p.rt.store.listConflicts()).toEqual([expect.objectContaining({ relPath: 'Docs/f.txt', policy: 'local-wins' })]);
    } finally {
      await p.close();
    }
  });
});

describe('an upload-only pair whose local file holds a version between its base and the latest', () => {
  it('is never replaced by the latest (this pair changes no local file), nor uploaded over it (round 31a, F5): recorded as that version', async () => {
    const p = await openTestPair(emu, 'upload-earlier', 'direction: upload');
    try {
      const doc = await syncedAtV1(p);
      emu.control.addVersion(doc.id, 'v2\n');
      emu.control.addVersion(doc.id, 'v3\n');
      fs.writeFileSync(path.join(p.local, 'Docs', 'f.txt'), 'v2\n');
      const pass = await runPass(p.rt);
      expect(pass.execution?.failures).toEqual([]);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'f.txt'), 'utf8')).toBe('v2\n');
      // The colleague's v3 stays the latest: an old version's bytes are no edit to put on top of it.
      expect(contents(doc.id)).toEqual(['v1\n', 'v2\n', 'v3\n']);
      expect(pass.execution?.staleKept).toBe(1);
      expect(p.rt.store.getBase(doc.id)?.versionId).toBe(emu.control.listVersions(doc.id)[1]!.id);
      // Then v3 is a remote change this pair does not download, said as such, and nothing is sent.
      const next = await runPass(p.rt);
      expect(next.issues).toEqual([expect.objectContaining({ relPath: 'Docs/f.txt', code: 'upload-only' })]);
      expect(contents(doc.id)).toHaveLength(3);
      // An edit made after it still goes up, on top.
      fs.writeFileSync(path.join(p.local, 'Docs', 'f.txt'), 'edited here\n');
      await runPass(p.rt);
      expect(contents(doc.id).at(-1)).toBe('edited here\n');
    } finally {
      await p.close();
    }
  });
});

describe('an upload left unfinished whose content equals an older version (black-box round 30a, F1)', () => {
  /** Synced at v2; the user puts v1's content back; its commit fails with a 503 and the row stays in the outbox. */
  async function revertLeftInOutbox(p: TestPair): Promise<{ documentId: string; folderId: string }> {
    const folder = emu.control.createFolder(p.binderId, { name: 'Docs' });
    const { document } = emu.control.addDocument(p.binderId, folder.id, 'f.txt', 'v1\n');
    emu.control.addVersion(document.id, 'v2 by a colleague\n');
    expect((await runPass(p.rt)).converged).toBe(true);
    fs.writeFileSync(path.join(p.local, 'Docs', 'f.txt'), 'v1\n');
    emu.control.injectFault({ route: 'commit', status: 503 });
    const failed = await runPass(p.rt);
    emu.control.clearFaults();
    expect(failed.execution?.failures.map((f) => f.relPath)).toEqual(['Docs/f.txt']);
    expect(p.rt.store.listOutbox().map((r) => r.stage)).toEqual(['committing']);
    return { documentId: document.id, folderId: folder.id };
  }

  it('a colleague version meanwhile: the revert is not taken as committed; both edits are kept', async () => {
    const p = await openTestPair(emu, 'revert-version');
    try {
      const { documentId } = await revertLeftInOutbox(p);
      emu.control.addVersion(documentId, 'v3 by a colleague\n');
      await runPass(p.rt);
      await runPass(p.rt);
      const local = fs.readdirSync(path.join(p.local, 'Docs')).sort();
      const copy = local.find((n) => n.includes('(conflict '));
      expect(copy, local.join(', ')).toBeDefined();
      expect(fs.readFileSync(path.join(p.local, 'Docs', copy!), 'utf8')).toBe('v1\n');
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'f.txt'), 'utf8')).toBe('v3 by a colleague\n');
      expect(p.rt.store.listOutbox()).toEqual([]);
    } finally {
      await p.close();
    }
  });

  it('the document only renamed meanwhile: the revert is committed as its next version', async () => {
    const p = await openTestPair(emu, 'revert-rename');
    try {
      const { documentId } = await revertLeftInOutbox(p);
      emu.control.renameDocument(documentId, 'g.txt');
      await runPass(p.rt);
      await runPass(p.rt);
      expect(contents(documentId)).toEqual(['v1\n', 'v2 by a colleague\n', 'v1\n']);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'g.txt'), 'utf8')).toBe('v1\n');
      expect(fs.existsSync(path.join(p.local, 'Docs', 'f.txt'))).toBe(false);
    } finally {
      await p.close();
    }
  });
});
