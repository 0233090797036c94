// Conflict policies (keep-both, remote-wins, local-wins), "no base, both present" after a lost state DB, and
// the local delete policy (restore / forget), end to end through the CLI.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, readLocal, sha256, writeLocal, type Workspace } from './harness.js';
import {
  docNamed, docsByName, expectConvergedPass, expectQuietPass, expectSidesEqual, explain, issueCodes, remoteText, syncJson,
  trashHashes, versionContents,
} from './scenario-helpers.js';

let ws: Workspace;
afterEach(async () => {
  await ws?.close();
});

/** A synced T/plan.md ('base'), then edited on both sides. */
async function bothEdited(policy?: string): Promise<{ docId: string; tabId: string }> {
  ws = await createWorkspace(policy ? { pair: { conflictPolicy: policy } } : {});
  const c = ws.emulator.control;
  const tab = c.createFolder(ws.binderId, { name: 'T' });
  const { document } = c.addDocument(ws.binderId, tab.id, 'plan.md', 'base');
  await expectConvergedPass(ws);
  writeLocal(ws, 'T/plan.md', 'local edit');
  c.addVersion(document.id, 'remote edit');
  return { docId: document.id, tabId: tab.id };
}

describe('conflict policies', () => {
  it('keep-both (default): remote content at the path, local edit as a conflict copy uploaded as its own document', async () => {
    const { docId, tabId } = await bothEdited();
    const r = await expectConvergedPass(ws);
    expect(r.report?.conflicts).toHaveLength(1);
    expect(readLocal(ws, 'T/plan.md')).toBe('remote edit');
    const copies = fs.readdirSync(path.join(ws.local, 'T')).filter((n) => n !== 'plan.md');
    expect(copies).toHaveLength(1);
    const copy = copies[0]!;
    expect(copy).toMatch(/conflict/);
    expect(readLocal(ws, `T/${copy}`)).toBe('local edit');
    // The original document did not get the local edit; the copy is a separate document in the same folder.
    expect(versionContents(ws, docId)).toEqual(['base', 'remote edit']);
    const copyDoc = docNamed(ws, copy);
    expect(copyDoc.folderId).toBe(tabId);
    expect(versionContents(ws, copyDoc.id)).toEqual(['local edit']);
    expectSidesEqual(ws);
    await expectQuietPass(ws);
  });

  it('remote-wins: remote content at the path, the local edit kept in the trash, nothing uploaded', async () => {
    const { docId } = await bothEdited('remote-wins');
    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(0);
    expect(r.report?.conflicts).toHaveLength(1);
    expect(readLocal(ws, 'T/plan.md')).toBe('remote edit');
    expect(fs.readdirSync(path.join(ws.local, 'T'))).toEqual(['plan.md']);
    expect(trashHashes(ws)).toContain(sha256('local edit'));
    expect(fs.existsSync(path.join(ws.stateDir, 'main', 'trash'))).toBe(true);
    expect(versionContents(ws, docId)).toEqual(['base', 'remote edit']);
    expect(docsByName(ws).size).toBe(1);
    expectSidesEqual(ws);
  });

  it('local-wins: the local edit becomes the newest version, the remote edit stays in the version history', async () => {
    const { docId } = await bothEdited('local-wins');
    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(0);
    expect(r.report?.conflicts).toHaveLength(1);
    expect(readLocal(ws, 'T/plan.md')).toBe('local edit');
    expect(fs.readdirSync(path.join(ws.local, 'T'))).toEqual(['plan.md']);
    expect(versionContents(ws, docId)).toEqual(['base', 'remote edit', 'local edit']);
    expect(docsByName(ws).size).toBe(1);
    expectSidesEqual(ws);
  });
});

describe('no base, both present', () => {
  it('first sync over an existing local tree: equal content is adopted silently, different content keeps both', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    const same = c.addDocument(ws.binderId, tab.id, 'same.txt', 'identical').document;
    const diff = c.addDocument(ws.binderId, tab.id, 'diff.txt', 'remote side').document;
    writeLocal(ws, 'T/same.txt', 'identical');
    writeLocal(ws, 'T/diff.txt', 'local side');
    const inodeSame = fs.statSync(path.join(ws.local, 'T/same.txt')).ino;

    const r = await expectConvergedPass(ws);
    // Equal content: no conflict, no upload, the local file is not even rewritten.
    expect(versionContents(ws, same.id)).toEqual(['identical']);
    expect(fs.statSync(path.join(ws.local, 'T/same.txt')).ino).toBe(inodeSame);
    expect(r.report?.conflicts.map((x) => x.relPath)).toEqual(['T/diff.txt']);
    // Both were planned as conflicts (no base); the summary tells the identical one apart from a real one.
    expect(r.report?.done.conflict).toBe(2);
    expect(r.report?.identical).toBe(1);
    // Different content: a conflict, never "remote wins": the local content survives as an uploaded copy.
    expect(readLocal(ws, 'T/diff.txt')).toBe('remote side');
    expect(versionContents(ws, diff.id)).toEqual(['remote side']);
    const names = fs.readdirSync(path.join(ws.local, 'T')).sort();
    expect(names).toHaveLength(3);
    const copy = names.find((n) => n.includes('conflict'));
    expect(copy).toBeDefined();
    expect(readLocal(ws, `T/${copy}`)).toBe('local side');
    expect(remoteText(ws, docNamed(ws, copy!).id)).toBe('local side');
    expectSidesEqual(ws);
    await expectQuietPass(ws);
  });

  // DESIGN.md: a missing state DB must never make older remote files overwrite newer local ones; with no base
  // and different content the result is a conflict that keeps both, whatever conflictPolicy says.
  it('a lost state DB with conflictPolicy remote-wins still keeps both (local content stays in the tree)', async () => {
    ws = await createWorkspace({ pair: { conflictPolicy: 'remote-wins' } });
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    const kept = c.addDocument(ws.binderId, tab.id, 'kept.txt', 'unchanged').document;
    const edited = c.addDocument(ws.binderId, tab.id, 'edited.txt', 'v1').document;
    await expectConvergedPass(ws);
    fs.rmSync(ws.stateDir, { recursive: true, force: true });
    writeLocal(ws, 'T/edited.txt', 'newer local work');
    c.resetCounters();

    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(0);
    expect(versionContents(ws, kept.id)).toEqual(['unchanged']);
    expect(versionContents(ws, edited.id)).toEqual(['v1']);
    const names = fs.readdirSync(path.join(ws.local, 'T')).sort();
    const copy = names.find((n) => n.includes('conflict'));
    expect(copy, `local files: ${names.join(', ')}; trash: ${trashHashes(ws).length}`).toBeDefined();
    expect(readLocal(ws, `T/${copy}`)).toBe('newer local work');
    expect(readLocal(ws, 'T/edited.txt')).toBe('v1');
    expectSidesEqual(ws);
  });

  it('a lost state DB (default policy): unchanged files are adopted without any upload, an edited one keeps both', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    const kept = c.addDocument(ws.binderId, tab.id, 'kept.txt', 'unchanged').document;
    const edited = c.addDocument(ws.binderId, tab.id, 'edited.txt', 'v1').document;
    await expectConvergedPass(ws);
    fs.rmSync(ws.stateDir, { recursive: true, force: true });
    writeLocal(ws, 'T/edited.txt', 'newer local work');
    c.resetCounters();

    const r = await expectConvergedPass(ws);
    expect(r.report?.conflicts.map((x) => x.relPath)).toEqual(['T/edited.txt']);
    // One upload only: the conflict copy. kept.txt was compared and adopted.
    expect(c.counters().commit).toBe(1);
    expect(versionContents(ws, kept.id)).toEqual(['unchanged']);
    expect(versionContents(ws, edited.id)).toEqual(['v1']);
    const copy = fs.readdirSync(path.join(ws.local, 'T')).find((n) => n.includes('conflict'));
    expect(readLocal(ws, `T/${copy}`)).toBe('newer local work');
    expectSidesEqual(ws);
    await expectQuietPass(ws);
  });
});

describe('the same rename made on both sides', () => {
  /** A synced T/draft.md ('synced'), renamed to final.md remotely and locally; returns the document id. */
  async function renamedOnBothSides(): Promise<string> {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    const { document } = c.addDocument(ws.binderId, tab.id, 'draft.md', 'synced');
    await expectConvergedPass(ws);
    c.renameDocument(document.id, 'final.md');
    fs.renameSync(path.join(ws.local, 'T/draft.md'), path.join(ws.local, 'T/final.md'));
    return document.id;
  }

  it('then an edit at the new name: one new version of the document, no conflict copy, nothing downloaded', async () => {
    const docId = await renamedOnBothSides();
    fs.appendFileSync(path.join(ws.local, 'T/final.md'), ' and edited');

    const r = await expectConvergedPass(ws);
    expect(r.report?.conflicts, explain(r)).toEqual([]);
    expect(fs.readdirSync(path.join(ws.local, 'T'))).toEqual(['final.md']);
    expect(readLocal(ws, 'T/final.md')).toBe('synced and edited');
    expect(versionContents(ws, docId)).toEqual(['synced', 'synced and edited']);
    expect([...docsByName(ws).keys()]).toEqual(['final.md']);
    expectSidesEqual(ws);
    await expectQuietPass(ws);
  });

  it('a folder renamed alike on both sides, one file edited in it: one new version, the rest adopted, nothing copied', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'Q3' });
    const docs = ['a.txt', 'b.txt', 'c.txt'].map((n) => c.addDocument(ws.binderId, tab.id, n, `${n} synced`).document);
    await expectConvergedPass(ws);
    c.renameFolder(tab.id, 'Q3 final');
    fs.renameSync(path.join(ws.local, 'Q3'), path.join(ws.local, 'Q3 final'));
    fs.appendFileSync(path.join(ws.local, 'Q3 final/b.txt'), ', edited');

    const r = await expectConvergedPass(ws);
    expect(r.report?.done, explain(r)).toEqual({ adopt: 2, upload: 1 });
    expect(fs.readdirSync(ws.local)).toEqual(['Q3 final']);
    expect(fs.readdirSync(path.join(ws.local, 'Q3 final')).sort()).toEqual(['a.txt', 'b.txt', 'c.txt']);
    expect(versionContents(ws, docs[1]!.id)).toEqual(['b.txt synced', 'b.txt synced, edited']);
    expect(c.listDocuments(ws.binderId)).toHaveLength(3);
    expectSidesEqual(ws);
    await expectQuietPass(ws);
  });

  it('unchanged: adopted at the new name with no transfer at all', async () => {
    const docId = await renamedOnBothSides();

    const r = await expectConvergedPass(ws);
    expect(r.report?.done, explain(r)).toEqual({ adopt: 1 });
    expect(versionContents(ws, docId)).toEqual(['synced']);
    expectSidesEqual(ws);
    await expectQuietPass(ws);
  });
});

describe('local delete policy', () => {
  async function deletedLocally(policy: 'restore' | 'forget'): Promise<string> {
    ws = await createWorkspace({ pair: { localDeletePolicy: policy } });
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    const { document } = c.addDocument(ws.binderId, tab.id, 'gone.txt', 'keep me');
    c.addDocument(ws.binderId, tab.id, 'other.txt', 'other');
    await expectConvergedPass(ws);
    fs.rmSync(path.join(ws.local, 'T/gone.txt'));
    return document.id;
  }

  it('restore: the file comes back from the remote', async () => {
    const docId = await deletedLocally('restore');
    const r = await expectConvergedPass(ws);
    expect(r.report?.actions).toEqual(['download']);
    expect(readLocal(ws, 'T/gone.txt')).toBe('keep me');
    expect(versionContents(ws, docId)).toEqual(['keep me']);
    expectSidesEqual(ws);
    await expectQuietPass(ws);
  });

  // localDeletePolicy forget: the issue is informational (the user chose it), so the pass is in sync (exit 0);
  // the document is remembered as forgotten and not downloaded again until it changes remotely.
  it('forget: the file stays deleted (also on later passes), the remote is untouched, the pass says so', async () => {
    const docId = await deletedLocally('forget');
    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(0);
    expect(issueCodes(r)).toEqual(['local-delete-not-propagated T/gone.txt']);
    expect(fs.existsSync(path.join(ws.local, 'T/gone.txt'))).toBe(false);
    expect(versionContents(ws, docId)).toEqual(['keep me']);
    expect(docsByName(ws).size).toBe(2);

    const again = await syncJson(ws);
    expect(again.code, explain(again)).toBe(0);
    expect(again.report?.actions, explain(again)).toEqual([]);
    expect(fs.existsSync(path.join(ws.local, 'T/gone.txt'))).toBe(false);
    expect(versionContents(ws, docId)).toEqual(['keep me']);

    // A new remote version is news: the document is synced again.
    ws.emulator.control.addVersion(docId, 'changed remotely');
    await expectConvergedPass(ws);
    expect(readLocal(ws, 'T/gone.txt')).toBe('changed remotely');
    expectSidesEqual(ws);
  });

  it('forgotten, then the policy set to restore: the current policy applies and the file comes back (black-box round 30b, F7)', async () => {
    const docId = await deletedLocally('forget');
    expect((await syncJson(ws)).code).toBe(0);
    expect(fs.existsSync(path.join(ws.local, 'T/gone.txt'))).toBe(false);
    ws.writeConfig({ localDeletePolicy: 'restore' });
    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(0);
    expect(issueCodes(r)).toEqual([]);
    expect(readLocal(ws, 'T/gone.txt')).toBe('keep me');
    expect(versionContents(ws, docId)).toEqual(['keep me']);
    expectSidesEqual(ws);
  });
});
