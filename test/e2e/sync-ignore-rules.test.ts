// An ignore rule added after files were synced (black-box round 9): while it hides a synced file, that file is
// not "deleted locally", so a remote rename or delete made meanwhile is applied once the rule goes, not turned
// into a second document or a resurrected one. Real CLI, real emulator over HTTP.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, readLocal, sync, type Workspace } from './harness.js';

const workspaces: Workspace[] = [];
afterEach(async () => {
  for (const ws of workspaces.splice(0)) await ws.close();
});

async function syncedWithLog(): Promise<{ ws: Workspace; docId: string }> {
  const ws = await createWorkspace();
  workspaces.push(ws);
  const c = ws.emulator.control;
  const folder = c.createFolder(ws.binderId, { name: 'A' });
  c.addDocument(ws.binderId, folder.id, 'keep.txt', 'keep');
  const docId = c.addDocument(ws.binderId, folder.id, 'notes.log', 'the notes').document.id;
  expect((await sync(ws)).code).toBe(0);
  ws.writeConfig({ ignore: ['*.log'] });
  return { ws, docId };
}

const docNames = (ws: Workspace) => ws.emulator.control.listDocuments(ws.binderId).map((d) => d.fileName).sort();

describe('a synced file hidden by a new ignore rule', () => {
  it('renamed on the service meanwhile: once the rule goes, the local file follows the rename (no second document)', async () => {
    const { ws, docId } = await syncedWithLog();
    ws.emulator.control.renameDocument(docId, 'notes.txt');
    const hidden = await sync(ws);
    expect(hidden.code, hidden.stdout).toBe(0);
    // Not downloaded at its new name while the old file is hidden.
    expect(fs.existsSync(path.join(ws.local, 'A/notes.txt'))).toBe(false);
    expect(readLocal(ws, 'A/notes.log')).toBe('the notes');

    ws.writeConfig({ ignore: [] });
    expect((await sync(ws)).code).toBe(0);
    expect(readLocal(ws, 'A/notes.txt')).toBe('the notes');
    expect(fs.existsSync(path.join(ws.local, 'A/notes.log'))).toBe(false);
    expect(docNames(ws)).toEqual(['keep.txt', 'notes.txt']);
  });

  it('deleted on the service meanwhile: once the rule goes, the local file goes to the trash (the document is not re-created)', async () => {
    const { ws, docId } = await syncedWithLog();
    ws.emulator.control.deleteDocument(docId);
    expect((await sync(ws)).code).toBe(0);
    expect(readLocal(ws, 'A/notes.log')).toBe('the notes'); // hidden: left alone

    ws.writeConfig({ ignore: [] });
    expect((await sync(ws)).code).toBe(0);
    expect(fs.existsSync(path.join(ws.local, 'A/notes.log'))).toBe(false);
    expect(docNames(ws)).toEqual(['keep.txt']);
  });
});

describe('a local folder the pair ignores, and a remote name onto it (black-box round 26, Q1)', () => {
  it('a remote rename or a new document onto its name is a path-collision issue (exit 1) every pass, never a failed step; the folder is untouched', async () => {
    const ws = await createWorkspace({ pair: { ignore: ['private/'] } });
    workspaces.push(ws);
    const c = ws.emulator.control;
    const docs = c.createFolder(ws.binderId, { name: 'Docs' });
    const doc = c.addDocument(ws.binderId, docs.id, 'file7.txt', 'file 7').document;
    c.addDocument(ws.binderId, docs.id, 'other.txt', 'other');
    fs.mkdirSync(path.join(ws.local, 'Docs', 'private'), { recursive: true });
    fs.writeFileSync(path.join(ws.local, 'Docs', 'private', 'secret.txt'), 'mine alone');
    expect((await sync(ws)).code).toBe(0);

    c.renameDocument(doc.id, 'private');
    const root = c.listFolders(ws.binderId).find((f) => f.name === 'Docs')!;
    c.addDocument(ws.binderId, root.id, 'other2.txt', 'arrives anyway');
    for (let pass = 0; pass < 2; pass++) {
      const r = await sync(ws, ['--json']);
      expect(r.code, r.stderr).toBe(1);
      const [report] = JSON.parse(r.stdout) as Array<{ failures: unknown[]; issues: Array<{ relPath: string; code: string; detail: string }> }>;
      expect(report!.failures).toEqual([]);
      expect(report!.issues).toContainEqual({ relPath: 'Docs/file7.txt', code: 'path-collision', detail: expect.stringMatching(/^cannot follow the remote rename or move to "Docs\/private": a local folder the pair ignores \('private\/'/) });
    }
    expect(readLocal(ws, 'Docs/private/secret.txt')).toBe('mine alone');
    expect(readLocal(ws, 'Docs/file7.txt')).toBe('file 7');
    expect(readLocal(ws, 'Docs/other2.txt')).toBe('arrives anyway');
  });
});

// Black-box round 30b, F6: the user types a rule in NFC ('é' from a keyboard) while a colleague on macOS
// creates the name in NFD ('e' + U+0301), or the other way round: the rule applies to both spellings.
describe('ignore rules in one Unicode form, names in the other', () => {
  it('hide a remote folder and file and a local file named in the other form', async () => {
    const NFC = 'Caf\u00e9';
    const NFD = 'Cafe\u0301';
    const ws = await createWorkspace({ pair: { ignore: [`${NFC}/`, `${NFD}.txt`, `${NFC}.md`] } });
    workspaces.push(ws);
    const c = ws.emulator.control;
    const docs = c.createFolder(ws.binderId, { name: 'Docs' });
    const cafe = c.createFolder(ws.binderId, { name: NFD, parentId: docs.id });
    c.addDocument(ws.binderId, cafe.id, 'menu.txt', 'menu');
    c.addDocument(ws.binderId, docs.id, `${NFC}.txt`, 'nfc file');
    c.addDocument(ws.binderId, docs.id, 'keep.txt', 'keep');
    fs.mkdirSync(path.join(ws.local, 'Docs'), { recursive: true });
    fs.writeFileSync(path.join(ws.local, 'Docs', `${NFD}.md`), 'local nfd file');
    const r = await sync(ws);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(fs.readdirSync(path.join(ws.local, 'Docs')).sort()).toEqual([`${NFD}.md`, 'keep.txt']);
    expect(docNames(ws)).toEqual([`${NFC}.txt`, 'keep.txt', 'menu.txt'].sort());
  });
});
