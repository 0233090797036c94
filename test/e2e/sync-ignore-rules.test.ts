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
