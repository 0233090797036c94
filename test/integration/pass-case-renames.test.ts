// Renamed on both sides to names that differ only in case: `file.txt` became `File.txt` locally and
// `FILE.txt` on the service (a folder likewise). The local rename cannot be sent and the two names cannot be two
// documents of one folder on a service that compares names loosely, so the service's name wins: the file moves
// to it and stays that document (black-box round 30b, F9: it was uploaded as a new document that waited for
// ever, and the remote one was downloaded beside it). A real pass, real files and state DB, the emulator.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runPass } from '../../src/sync/pass.js';
import { openTestPair } from './pass-fixture.js';

let emu: Emulator;

beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});

afterAll(async () => {
  await emu?.close();
});

it('the service\'s name wins: files and a folder move to it, an edit becomes the next version, nothing is copied', async () => {
  const p = await openTestPair(emu, 'case-both');
  const { rt, binderId, local } = p;
  const c = emu.control;
  const docs = c.createFolder(binderId, { name: 'Docs' });
  const reports = c.createFolder(binderId, { name: 'Reports' });
  const one = c.addDocument(binderId, docs.id, 'one.txt', 'one').document;
  const two = c.addDocument(binderId, docs.id, 'two.txt', 'two').document;
  c.addDocument(binderId, reports.id, 'r.csv', 'a,b');
  const at = (rel: string) => path.join(local, rel);
  try {
    expect((await runPass(rt)).converged).toBe(true);
    c.renameDocument(one.id, 'ONE.txt');
    fs.renameSync(at('Docs/one.txt'), at('Docs/One.txt'));
    c.renameDocument(two.id, 'TWO.txt');
    fs.renameSync(at('Docs/two.txt'), at('Docs/Two.txt'));
    fs.appendFileSync(at('Docs/Two.txt'), ', edited here');
    c.renameFolder(reports.id, 'REPORTS');
    fs.renameSync(at('Reports'), at('reports'));
    rt.cache.foldersAt = 0; // the next listing walks the folder tree

    const pass = await runPass(rt);
    expect(pass.issues, JSON.stringify(pass.issues)).toEqual([]);
    expect(pass.execution?.failures ?? []).toEqual([]);
    expect(fs.readdirSync(local).sort()).toEqual(['Docs', 'REPORTS']);
    expect(fs.readdirSync(at('Docs')).sort()).toEqual(['ONE.txt', 'TWO.txt']);
    expect(fs.readFileSync(at('Docs/TWO.txt'), 'utf8')).toBe('two, edited here');
    expect(fs.readFileSync(at('REPORTS/r.csv'), 'utf8')).toBe('a,b');
    const remote = c.listDocuments(binderId);
    expect(remote.map((d) => d.fileName).sort()).toEqual(['ONE.txt', 'TWO.txt', 'r.csv']);
    expect(c.readContent(two.id).toString()).toBe('two, edited here');
    expect(c.listVersions(one.id)).toHaveLength(1);
    expect(c.listVersions(two.id)).toHaveLength(2);
    const next = await runPass(rt);
    expect(next.converged, JSON.stringify(next.issues)).toBe(true);
  } finally {
    await p.close();
  }
});
