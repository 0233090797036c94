// Hostile remote names end to end: path tricks, reserved and over-long names, case and NFC/NFD twins, exact
// duplicates and names that look like the daemon's own temp files. Nothing may be written outside the root,
// no file may clobber another, every document lands at one deterministic place, and a second pass is quiet.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, localTree, readLocal, sha256, writeLocal, type Workspace } from './harness.js';
import { expectConvergedPass, expectQuietPass, explain, issueCodes, listDir, syncJson, tempFilesUnder } from './scenario-helpers.js';

let ws: Workspace;
afterEach(async () => {
  await ws?.close();
});

const LONG_300_BYTES = `${'é'.repeat(148)}.txt`; // 148 * 2 + 4 = 300 UTF-8 bytes, 152 UTF-16 units
const NFC = 'caf\u00e9.txt';
const NFD = 'cafe\u0301.txt';

const DOC_NAMES = [
  '../../escape.txt', 'a/b.txt', 'a\\b.txt', '..', '.', 'x\u0000y', 'tab\there.txt', LONG_300_BYTES, 'CON', 'con.txt', 'NUL.txt',
  'Same.txt', 'same.txt', NFC, NFD, '.binder-sync-tmp-evil', '.binder-sync-probe-1-case', '...', ' lead space.txt',
  'trail.', '*?<>|":.txt', 'emoji 😀.txt', 'clash',
];
const FOLDER_NAMES = ['..', '../up', '...', 'CON', '.binder-sync-tmp-dir', 'clash', 'Clash'];

/** Tries each name; returns the ones the emulator accepted (a refused one must be refused as a 400). */
function tryAll<T>(names: string[], add: (name: string) => T): Array<{ name: string; made: T }> {
  const out: Array<{ name: string; made: T }> = [];
  for (const name of names) {
    try {
      out.push({ name, made: add(name) });
    } catch (err) {
      expect((err as { status?: number }).status, `${JSON.stringify(name)}: ${(err as Error).message}`).toBe(400);
    }
  }
  return out;
}

/** Multiset of the latest content of every remote document, as sorted sha256 values. */
function remoteContents(ws: Workspace): string[] {
  const c = ws.emulator.control;
  return c.listDocuments(ws.binderId).map((d) => sha256(c.readContent(d.id))).sort();
}

describe('hostile remote names', () => {
  it('nothing escapes the root, nothing is clobbered, every document lands once, deterministically', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const h = c.createFolder(ws.binderId, { name: 'H' });
    const docs = tryAll(DOC_NAMES, (name) => c.addDocument(ws.binderId, h.id, name, `content of ${JSON.stringify(name)}`).document);
    const folders = tryAll(FOLDER_NAMES, (name) => c.createFolder(ws.binderId, { name, parentId: h.id }));
    for (const f of folders) c.addDocument(ws.binderId, f.made.id, 'inside.txt', `inside ${JSON.stringify(f.name)}`);
    // The emulator refuses path separators, control characters, '.' and '..' (spec-valid names only).
    const accepted = docs.map((d) => d.name);
    expect(accepted).toEqual(expect.arrayContaining([LONG_300_BYTES, 'CON', 'Same.txt', 'same.txt', NFC, NFD, '.binder-sync-tmp-evil', 'clash']));
    const tmpBefore = listDir(os.tmpdir()).filter((n) => n.includes('escape'));

    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(0);
    // Nothing beside the root (or above the workspace) was created.
    expect(listDir(ws.dir)).toEqual(['local', 'state', 'sync.yaml']);
    expect(listDir(os.tmpdir()).filter((n) => n.includes('escape'))).toEqual(tmpBefore);
    // Every document is one local file with its content: none lost, none overwritten by another.
    const local = localTree(ws.local);
    expect([...local.values()].sort()).toEqual(remoteContents(ws));
    expect(local.size).toBe(c.listDocuments(ws.binderId).length);
    // Every local path stays inside the root, each segment is a valid name, and none looks like a temp file.
    for (const rel of local.keys()) {
      for (const seg of rel.split('/')) {
        expect(seg === '' || seg === '.' || seg === '..', rel).toBe(false);
        expect(Buffer.byteLength(seg), rel).toBeLessThanOrEqual(255);
      }
    }
    expect(tempFilesUnder(ws.local)).toEqual([]);
    const names = fs.readdirSync(path.join(ws.local, 'H'));
    expect(names).toEqual(expect.arrayContaining(['CON', 'Same.txt', 'same.txt']));
    expect(names.filter((n) => n.normalize('NFC') === NFC || n.normalize('NFC').startsWith('café (dup-'))).toHaveLength(2);
    expect(names.find((n) => n.endsWith('.txt') && n.startsWith('é') && Buffer.byteLength(n) <= 255)).toBeDefined();
    const firstLayout = [...local.keys()].sort();

    // Quiet next pass: in particular the temp-looking document survives the stale-temp cleanup.
    await expectQuietPass(ws);
    expect([...localTree(ws.local).values()].sort()).toEqual(remoteContents(ws));

    // Deterministic: a fresh sync of the same binder (state and local tree gone) lays out the same paths.
    fs.rmSync(ws.local, { recursive: true });
    fs.rmSync(ws.stateDir, { recursive: true });
    await expectConvergedPass(ws);
    expect([...localTree(ws.local).keys()].sort()).toEqual(firstLayout);
  });

  it('renames into hostile names and exact duplicates are followed without clobbering', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const h = c.createFolder(ws.binderId, { name: 'H' });
    const ids = ['one.txt', 'two.txt', 'three.txt', 'four.txt', 'Twin.txt', NFC].map(
      (name) => c.addDocument(ws.binderId, h.id, name, `content ${name}`).document.id,
    );
    await expectConvergedPass(ws);

    c.renameDocument(ids[0]!, '.binder-sync-tmp-renamed');
    c.renameDocument(ids[1]!, 'Twin.txt'); // the emulator allows two documents with one exact name
    c.renameDocument(ids[2]!, NFD); // the NFD twin of an existing NFC name
    c.renameDocument(ids[3]!, 'twin.txt');
    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(0);
    const local = localTree(ws.local);
    expect([...local.values()].sort()).toEqual(remoteContents(ws));
    expect(local.size).toBe(6);
    expect(tempFilesUnder(ws.local)).toEqual([]);
    expect(listDir(ws.dir)).toEqual(['local', 'state', 'sync.yaml']);
    // The documents that kept their names keep their paths (a base path is preferred on a collision).
    expect(local.get('H/Twin.txt')).toBe(sha256('content Twin.txt'));
    expect(local.get(`H/${NFC}`)).toBe(sha256(`content ${NFC}`));
    await expectQuietPass(ws);
  });

  it('an edit of a document whose name another one in its folder shares waits (a commit goes by name), and goes once one is renamed', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const h = c.createFolder(ws.binderId, { name: 'H' });
    const one = c.addDocument(ws.binderId, h.id, 'one.txt', 'one v1').document.id;
    const two = c.addDocument(ws.binderId, h.id, 'two.txt', 'two v1').document.id;
    c.addDocument(ws.binderId, h.id, 'Notes.txt', 'notes v1');
    await expectConvergedPass(ws);
    c.renameDocument(two, 'one.txt'); // a service that does not keep names unique
    await expectConvergedPass(ws);
    const dupName = fs.readdirSync(path.join(ws.local, 'H')).find((n) => n.startsWith('one (dup-'));
    expect(dupName, listDir(path.join(ws.local, 'H')).join(', ')).toBeDefined();
    const dupPath = `H/${dupName!}`;

    // Both twins edited, and a new file whose name differs from Notes.txt only in case.
    fs.writeFileSync(path.join(ws.local, 'H/one.txt'), 'one v2 (local)');
    fs.writeFileSync(path.join(ws.local, dupPath), 'two v2 (local)');
    fs.writeFileSync(path.join(ws.local, 'H/notes.txt'), 'a second notes file');
    const held = await syncJson(ws);
    expect(held.code, explain(held)).toBe(1);
    expect(issueCodes(held)).toEqual([`ambiguous-remote-name ${dupPath}`, 'ambiguous-remote-name H/notes.txt', 'ambiguous-remote-name H/one.txt'].sort());
    // Nothing went to the service, and no edit was touched.
    expect(c.listVersions(one).map((v) => v.version)).toEqual(['1']);
    expect(c.listVersions(two).map((v) => v.version)).toEqual(['1']);
    expect(c.listDocuments(ws.binderId)).toHaveLength(3);
    expect(fs.readFileSync(path.join(ws.local, 'H/one.txt'), 'utf8')).toBe('one v2 (local)');
    expect(fs.readFileSync(path.join(ws.local, dupPath), 'utf8')).toBe('two v2 (local)');

    // The twin renamed on the service: the local file follows it, and each edit lands on its own document.
    c.renameDocument(two, 'two again.txt');
    const after = await syncJson(ws);
    expect(after.code, explain(after)).toBe(1); // notes.txt still waits
    expect(issueCodes(after)).toEqual(['ambiguous-remote-name H/notes.txt']);
    expect(c.readContent(one).toString()).toBe('one v2 (local)');
    expect(c.readContent(two).toString()).toBe('two v2 (local)');
    expect(fs.readFileSync(path.join(ws.local, 'H/two again.txt'), 'utf8')).toBe('two v2 (local)');
    expect(c.listVersions(one)).toHaveLength(2);
    expect(c.listVersions(two)).toHaveLength(2);
  });

  // Both twins edited locally, then one of the two documents deleted on the service. The edit of the deleted
  // one is uploaded as a new document under its local name (the remote name is another document's), and the
  // other's edit goes on: nothing waits forever as "ambiguous" any more, and nothing is lost.
  it.each(['the "(dup-<id>)" one', 'the plain-named one'])('twins both edited, %s deleted on the service: every edit ends up on the service', async (which) => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const h = c.createFolder(ws.binderId, { name: 'H' });
    const first = c.addDocument(ws.binderId, h.id, 'same.txt', 'first v1').document.id;
    const second = c.addDocument(ws.binderId, h.id, 'other.txt', 'second v1').document.id;
    c.renameDocument(second, 'same.txt'); // a service that does not keep names unique
    await expectConvergedPass(ws);
    const names = fs.readdirSync(path.join(ws.local, 'H')).sort();
    const dupName = names.find((n) => n.startsWith('same (dup-'));
    expect(dupName, names.join(', ')).toBeDefined();
    const dupId = /\(dup-([0-9a-f]+)\)/.exec(dupName!)?.[1] ?? 'none';
    const [atDup, atPlain] = first.startsWith(dupId) ? [first, second] : [second, first];
    expect(fs.readFileSync(path.join(ws.local, 'H', dupName!), 'utf8')).toBe(atDup === first ? 'first v1' : 'second v1');

    fs.writeFileSync(path.join(ws.local, 'H/same.txt'), 'plain edited');
    fs.writeFileSync(path.join(ws.local, 'H', dupName!), 'dup edited');
    const deleted = which.includes('dup') ? atDup : atPlain;
    c.deleteDocument(deleted);
    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(0);
    await expectQuietPass(ws);
    // Both edits are the latest version of some document, each once; the survivor's content is local.
    const latest = c.listDocuments(ws.binderId).map((d) => c.readContent(d.id).toString()).sort();
    for (const edit of ['plain edited', 'dup edited']) expect(latest.filter((x) => x === edit), latest.join(' | ')).toHaveLength(1);
    const local = [...localTree(ws.local).values()];
    for (const edit of ['plain edited', 'dup edited']) expect(local).toContain(sha256(edit));
    expect(localTree(ws.local).size).toBe(c.listDocuments(ws.binderId).length);
  });
  // Black-box round 30b, F4: U+FFFD is a valid character (bytes ef bf bd) that a bad conversion leaves in names.
  // Such a document was downloaded once, then the scan called its name "not valid UTF-8" and nothing under it
  // synced again (every pass exited 1). Only a name whose bytes are not UTF-8 is refused, shown with \xNN.
  it('remote names holding U+FFFD stay in sync both ways; only a local name that is not UTF-8 is refused, shown by its bytes', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const docs = c.createFolder(ws.binderId, { name: 'Docs' });
    const cafe = c.addDocument(ws.binderId, docs.id, 'caf\uFFFD.txt', 'cafe v1').document.id;
    const resume = c.createFolder(ws.binderId, { name: 'R\uFFFDsum\uFFFD', parentId: docs.id });
    const inside = c.addDocument(ws.binderId, resume.id, 'inside.txt', 'inside v1').document.id;
    await expectConvergedPass(ws);
    expect(readLocal(ws, 'Docs/caf\uFFFD.txt')).toBe('cafe v1');
    await expectQuietPass(ws);

    // Edits of both, a new file with a valid U+FFFD name, and beside it a Latin-1 name that reads the same.
    writeLocal(ws, 'Docs/caf\uFFFD.txt', 'cafe v2 (local)');
    writeLocal(ws, 'Docs/R\uFFFDsum\uFFFD/inside.txt', 'inside v2 (local)');
    writeLocal(ws, 'Docs/new\uFFFD.txt', 'new');
    const latin1 = Buffer.concat([Buffer.from(`${ws.local}/Docs/new`), Buffer.from([0xe9]), Buffer.from('.txt')]);
    fs.writeFileSync(latin1, 'latin-1');
    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(1);
    expect(issueCodes(r)).toEqual(['name-not-representable Docs/new\\xe9.txt']);
    expect(r.report?.issues[0]?.detail).toContain('not valid UTF-8');
    expect(c.readContent(cafe).toString()).toBe('cafe v2 (local)');
    expect(c.readContent(inside).toString()).toBe('inside v2 (local)');
    expect(c.listDocuments(ws.binderId).map((d) => d.fileName).sort()).toEqual(['caf\uFFFD.txt', 'inside.txt', 'new\uFFFD.txt']);

    // A new remote version comes down as well.
    c.addVersion(cafe, 'cafe v3 (remote)');
    const down = await syncJson(ws);
    expect(down.code, explain(down)).toBe(1); // the Latin-1 name is still there
    expect(readLocal(ws, 'Docs/caf\uFFFD.txt')).toBe('cafe v3 (remote)');
    fs.rmSync(latin1);
    await expectQuietPass(ws);
  });
});


describe('a remote tree deeper than the local file system allows', () => {
  it('is reported as not synced (exit 1), not a local failure (exit 6); the rest syncs, and a daemon-style second pass is the same', async () => {
    ws = await createWorkspace();
    const c = ws.emulator.control;
    const top = c.createFolder(ws.binderId, { name: 'Deep' });
    c.addDocument(ws.binderId, top.id, 'shallow.txt', 'fits');
    // 20 levels of 220-byte names: over 4096 bytes (PATH_MAX) below the root.
    let parent = top;
    for (let i = 0; i < 20; i++) parent = c.createFolder(ws.binderId, { name: `${String(i).padStart(2, '0')}${'d'.repeat(218)}`, parentId: parent.id });
    c.addDocument(ws.binderId, parent.id, 'long.txt', 'too deep to place');

    for (let run = 0; run < 2; run++) {
      const r = await syncJson(ws);
      expect(r.code, explain(r)).toBe(1);
      expect(r.report?.failures, explain(r)).toEqual([]);
      const tooLong = r.report!.issues.filter((i) => i.detail.includes('longer than the system allows'));
      expect(tooLong.map((i) => i.code)).toContain('name-not-representable');
      expect(tooLong.some((i) => i.relPath.endsWith('/long.txt'))).toBe(true);
    }
    expect(localTree(ws.local).get('Deep/shallow.txt')).toBe(sha256('fits'));
    expect(tempFilesUnder(ws.local)).toEqual([]);
  });
});
