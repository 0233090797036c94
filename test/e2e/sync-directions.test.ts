// `direction: download` and `direction: upload` end to end: what each one-way mode moves, and what it must
// never touch (no upload at all in download mode; no local file change at all in upload mode).
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, localTree, readLocal, sha256, writeLocal, type Workspace } from './harness.js';
import {
  docNamed, docsByName, expectConvergedPass, explain, issueCodes, localSnapshot, remoteText, syncJson, versionContents,
} from './scenario-helpers.js';

let ws: Workspace;
afterEach(async () => {
  await ws?.close();
});

describe('direction: download', () => {
  it('never uploads: local edits and new files stay local and are reported, remote changes arrive, conflicts keep a local-only copy', async () => {
    ws = await createWorkspace({ pair: { direction: 'download' } });
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    const a = c.addDocument(ws.binderId, tab.id, 'a.txt', 'a base').document;
    const b = c.addDocument(ws.binderId, tab.id, 'b.txt', 'b base').document;
    const d = c.addDocument(ws.binderId, tab.id, 'c.txt', 'c base').document;
    await expectConvergedPass(ws);
    expect(readLocal(ws, 'T/a.txt')).toBe('a base');

    writeLocal(ws, 'T/a.txt', 'a local edit');
    c.addVersion(b.id, 'b remote edit');
    writeLocal(ws, 'T/c.txt', 'c local edit');
    c.addVersion(d.id, 'c remote edit');
    writeLocal(ws, 'T/new.txt', 'brand new local');
    c.resetCounters();

    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(1);
    expect(issueCodes(r)).toEqual(expect.arrayContaining(['local-change-not-uploaded T/a.txt', 'local-change-not-uploaded T/new.txt']));
    // Nothing was uploaded: no slot asked for, nothing PUT, nothing committed.
    const n = c.counters();
    expect(n.presignedupload + n['storage-put'] + n.commit).toBe(0);
    expect([...docsByName(ws).keys()].sort()).toEqual(['a.txt', 'b.txt', 'c.txt']);
    expect(versionContents(ws, a.id)).toEqual(['a base']);
    expect(versionContents(ws, d.id)).toEqual(['c base', 'c remote edit']);

    // Local: the edit stays, the remote change arrived, the conflict kept both (the copy only locally).
    expect(readLocal(ws, 'T/a.txt')).toBe('a local edit');
    expect(readLocal(ws, 'T/b.txt')).toBe('b remote edit');
    expect(readLocal(ws, 'T/c.txt')).toBe('c remote edit');
    expect(readLocal(ws, 'T/new.txt')).toBe('brand new local');
    const copies = fs.readdirSync(path.join(ws.local, 'T')).filter((f) => f.includes('conflict'));
    expect(copies).toHaveLength(1);
    expect(readLocal(ws, `T/${copies[0]}`)).toBe('c local edit');
    // The copy stays local, and this pass says so, as the next one does (black-box round 11, F5).
    expect(issueCodes(r)).toContain(`local-change-not-uploaded T/${copies[0]}`);

    // The next pass changes nothing on either side and keeps saying why the local edits are not synced.
    c.resetCounters();
    const before = localSnapshot(ws.local);
    const again = await syncJson(ws);
    expect(again.code, explain(again)).toBe(1);
    expect(again.report?.actions).toEqual([]);
    expect(issueCodes(again)).toEqual(issueCodes(r));
    expect(localSnapshot(ws.local)).toEqual(before);
    expect(c.counters().commit).toBe(0);
  });
});

describe('direction: upload', () => {
  it('never changes local files: remote edits stay remote, local edits become versions, remote deletes are re-uploaded', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    const a = c.addDocument(ws.binderId, tab.id, 'a.txt', 'a base').document;
    const b = c.addDocument(ws.binderId, tab.id, 'b.txt', 'b base').document;
    const d = c.addDocument(ws.binderId, tab.id, 'c.txt', 'c base').document;
    await expectConvergedPass(ws);
    ws.writeConfig({ direction: 'upload' });

    c.addVersion(a.id, 'a remote edit');
    writeLocal(ws, 'T/b.txt', 'b local edit');
    c.deleteDocument(d.id);
    // A colleague's document in the shared binder, which this pair never had.
    c.addDocument(ws.binderId, tab.id, 'theirs.txt', 'a colleague\'s');
    const snapshot = localSnapshot(ws.local);

    const r = await syncJson(ws);
    // The remote edit and the colleague's document are not downloaded, and said so, as notes: by the pair's
    // direction, nothing is pending, so the pass exits 0 (exit 1 on every run made the code useless to a cron job).
    expect(r.code, explain(r)).toBe(0);
    expect(issueCodes(r)).toEqual(expect.arrayContaining(['upload-only T/a.txt', 'upload-only T/theirs.txt']));
    expect(fs.existsSync(path.join(ws.local, 'T', 'theirs.txt'))).toBe(false);
    expect(localSnapshot(ws.local)).toEqual(snapshot);
    expect(readLocal(ws, 'T/a.txt')).toBe('a base');

    // Local edit uploaded as a new version of the same document.
    expect(docNamed(ws, 'b.txt').id).toBe(b.id);
    expect(versionContents(ws, b.id)).toEqual(['b base', 'b local edit']);
    // Remote delete: the local file is uploaded again, as a new document.
    const recreated = docNamed(ws, 'c.txt');
    expect(recreated.id).not.toBe(d.id);
    expect(recreated.folderId).toBe(tab.id);
    expect(remoteText(ws, recreated.id)).toBe('c base');
    expect(versionContents(ws, a.id)).toEqual(['a base', 'a remote edit']);
    expect([...docsByName(ws).keys()].sort()).toEqual(['a.txt', 'b.txt', 'c.txt', 'theirs.txt']);

    // A second pass uploads nothing more and still leaves local files alone.
    const again = await syncJson(ws);
    expect(again.report?.actions, explain(again)).toEqual([]);
    expect(versionContents(ws, b.id)).toHaveLength(2);
    expect(localSnapshot(ws.local)).toEqual(snapshot);
    expect(localTree(ws.local).get('T/a.txt')).toBe(sha256('a base'));
  });
});
