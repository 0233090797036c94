// `binder-sync trash` and `trash restore` through the real CLI (child process) against the emulator: a file the
// service deleted goes to the trash, is listed, is restored byte for byte, and the next sync uploads it again;
// nothing that exists is overwritten without --replace, and nothing is written outside the sync root.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { TrashDocument } from '../../src/cli/trash-command.js';
import { createWorkspace, readLocal, runCli, sync, writeLocal, type Workspace } from './harness.js';

let ws: Workspace;
afterEach(async () => {
  await ws?.close();
});

const trash = (...args: string[]) => runCli(ws, ['trash', '--config', ws.configFile, ...args]);

it('lists a file the service deleted, restores it byte for byte (never over an existing file unless --replace), and the next sync uploads it', async () => {
  ws = await createWorkspace();
  const c = ws.emulator.control;
  const folder = c.createFolder(ws.binderId, { name: 'Docs' });
  const { document } = c.addDocument(ws.binderId, folder.id, 'gone.txt', 'kept in the trash');
  for (const n of ['a', 'b', 'c']) c.addDocument(ws.binderId, folder.id, `${n}.txt`, n); // one delete in four passes the safety gate
  expect((await sync(ws)).code).toBe(0);
  const empty = await trash();
  expect(empty.code, empty.stderr).toBe(0);
  expect(empty.stdout).toMatch(/^ {2}empty$/m);

  c.deleteDocument(document.id);
  expect((await sync(ws)).code).toBe(0);
  expect(fs.existsSync(path.join(ws.local, 'Docs', 'gone.txt'))).toBe(false);

  const listed = await trash('--json');
  expect(listed.code, listed.stderr).toBe(0);
  const doc = JSON.parse(listed.stdout) as TrashDocument;
  expect(doc.pairs).toHaveLength(1);
  const [entry] = doc.pairs[0]!.entries;
  expect(entry).toMatchObject({ originalPath: 'Docs/gone.txt', size: 17 });
  expect(entry!.entry).toMatch(/^\d{4}-\d{2}-\d{2}\/Docs\/gone\.txt$/);
  const human = await trash();
  expect(human.stdout).toContain(`  ${entry!.entry}`);
  expect(human.stdout).toContain('restore one: binder-sync trash restore');

  const restored = await trash('restore', entry!.entry);
  expect(restored.code, restored.stderr).toBe(0);
  expect(restored.stdout).toContain(`to ${path.join(ws.local, 'Docs', 'gone.txt')}`);
  expect(readLocal(ws, 'Docs/gone.txt')).toBe('kept in the trash');
  // The trash keeps its copy; the restored file is the kept content with its modification time.
  expect(fs.statSync(path.join(ws.local, 'Docs', 'gone.txt')).mtime.toISOString()).toBe(entry!.mtime);
  expect((JSON.parse((await trash('--json')).stdout) as TrashDocument).pairs[0]!.entries).toHaveLength(1);

  // Restored = a local file again: the next pass uploads it as a new document.
  expect((await sync(ws)).code).toBe(0);
  const back = c.listDocuments(ws.binderId).filter((d) => d.fileName === 'gone.txt');
  expect(back).toHaveLength(1);

  // A file at the target: refused (exit 1), nothing changed; --replace keeps it in the trash first.
  writeLocal(ws, 'Docs/gone.txt', 'edited since');
  const refused = await trash('restore', entry!.entry);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/a file is there \(nothing was changed\)/);
  expect(refused.stderr).toMatch(/--replace/);
  expect(readLocal(ws, 'Docs/gone.txt')).toBe('edited since');
  const replaced = await trash('restore', entry!.entry, '--replace');
  expect(replaced.code, replaced.stderr).toBe(0);
  expect(readLocal(ws, 'Docs/gone.txt')).toBe('kept in the trash');
  const keptAt = /kept in the trash: (.+)$/m.exec(replaced.stdout)![1]!;
  expect(fs.readFileSync(keptAt, 'utf8')).toBe('edited since');

  // --to: another path inside the root (absolute inside it too); one that would never sync is said so.
  const elsewhere = await trash('restore', entry!.entry, '--to', path.join(ws.local, 'Restored', 'copy.txt'));
  expect(elsewhere.code, elsewhere.stderr).toBe(0);
  expect(readLocal(ws, 'Restored/copy.txt')).toBe('kept in the trash');
  // No folder Restored on the service (as the last pass saw it), and no endpoint to create one: said, not promised.
  expect(elsewhere.stdout).toContain('note: it waits: the service had no folder Restored at the last pass');
  expect(elsewhere.stdout).not.toContain('uploads it within its quiet period');
  const dot = await trash('restore', entry!.entry, '--to', './Docs//dot.txt');
  expect(dot.code, dot.stderr).toBe(0);
  expect(readLocal(ws, 'Docs/dot.txt')).toBe('kept in the trash');
  expect(dot.stdout).toContain('a running daemon uploads it within its quiet period');
  expect(dot.stdout).not.toContain('note:');
  expect((await trash('restore', entry!.entry, '--to', 'Docs/Sub/')).code).toBe(0); // into a folder, under its name
  expect(readLocal(ws, 'Docs/Sub/gone.txt')).toBe('kept in the trash');
  const atRoot = await trash('restore', entry!.entry, '--to', 'top.txt');
  expect(atRoot.code, atRoot.stderr).toBe(0);
  expect(atRoot.stdout).toContain('note: it stays local: files directly in the sync root are not uploaded');

  // Its mode comes back with it (a private file stays private), and a filesystem failure is exit 6.
  const kept = path.join(ws.stateDir, 'main', 'trash', entry!.entry);
  fs.chmodSync(kept, 0o600);
  expect((await trash('restore', entry!.entry, '--to', 'Docs/private.txt')).code).toBe(0);
  expect(fs.statSync(path.join(ws.local, 'Docs', 'private.txt')).mode & 0o777).toBe(0o600);
  fs.writeFileSync(path.join(ws.local, 'Docs', 'afile'), 'a file, not a folder');
  const notDir = await trash('restore', entry!.entry, '--to', 'Docs/afile/x.txt');
  expect(notDir.code, notDir.stderr).toBe(6);
  expect(notDir.stderr).toMatch(/restore from the trash failed for .*Docs\/afile\/x\.txt: ENOTDIR/);
}, 90_000); // a dozen CLI runs: several seconds each on a loaded machine

it('refuses an unknown entry, an entry or a --to outside the trash or the root, and a missing pair, changing nothing', async () => {
  ws = await createWorkspace();
  writeLocal(ws, 'x.txt', 'x');
  for (const [args, pattern] of [
    [['restore', '2026-01-01/none.txt'], /no file "2026-01-01\/none\.txt" in the trash .*: not there/],
    [['restore', 'none.txt'], /an entry is <YYYY-MM-DD>\/<path>/],
    [['restore', '2026-01-01/../../../x.txt'], /not a path inside the trash/],
    [['restore', '2026-01-01/x.txt', '--pair', 'nope'], /no pair named "nope"/],
  ] as const) {
    const r = await trash(...args);
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
    expect(r.stderr).toMatch(pattern);
  }
  // A real entry, sent outside the root: refused before anything is written.
  const day = path.join(ws.stateDir, 'main', 'trash', '2026-01-01');
  fs.mkdirSync(day, { recursive: true });
  fs.writeFileSync(path.join(day, 'x.txt'), 'old x');
  const before = fs.readdirSync(path.dirname(ws.local)).sort();
  const out = await trash('restore', '2026-01-01/x.txt', '--to', '../escaped.txt');
  expect(out.code).toBe(2);
  expect(out.stderr).toMatch(/Refusing path "\.\.\/escaped\.txt"/);
  expect(out.stderr).toContain('hint: --to names a path inside the sync root');
  expect(fs.readdirSync(path.dirname(ws.local)).sort()).toEqual(before);
  expect(readLocal(ws, 'x.txt')).toBe('x');
  const usage = await runCli(ws, ['trash', 'restore', '2026-01-01/x.txt']);
  expect(usage.code).toBe(2);
  expect(usage.stderr).toMatch(/--config/);
});

it('lists a file whose own name ends in ~N at its own path and restores it there, not over the file without the ~N (black-box round 30b, F5)', async () => {
  ws = await createWorkspace();
  const c = ws.emulator.control;
  const folder = c.createFolder(ws.binderId, { name: 'Docs' });
  const docs = Object.fromEntries(
    ['report~2.txt', 'notes.txt', 'notes~1.txt'].map((name) => [name, c.addDocument(ws.binderId, folder.id, name, `${name} v1`).document]),
  );
  expect((await sync(ws)).code).toBe(0);
  // New versions: each file's old content goes to the trash (notes.txt's too, so its name is taken there).
  for (const [name, doc] of Object.entries(docs)) c.addVersion(doc.id, `${name} v2`);
  expect((await sync(ws)).code).toBe(0);

  const listed = JSON.parse((await trash('--json')).stdout) as TrashDocument;
  const entries = listed.pairs[0]!.entries;
  expect(entries.map((e) => [e.entry.slice(e.day.length + 1), e.originalPath, e.originalPathGuessed])).toEqual([
    ['Docs/notes.txt', 'Docs/notes.txt', false],
    ['Docs/notes~1.txt', 'Docs/notes~1.txt', false],
    ['Docs/report~2.txt', 'Docs/report~2.txt', false],
  ]);
  expect((await trash()).stdout).not.toContain('(was');

  const notes1 = entries.find((e) => e.entry.endsWith('notes~1.txt'))!;
  const restored = await trash('restore', '--replace', notes1.entry);
  expect(restored.code, restored.stderr).toBe(0);
  expect(restored.stdout).toContain(`to ${path.join(ws.local, 'Docs', 'notes~1.txt')}`);
  expect(readLocal(ws, 'Docs/notes~1.txt')).toBe('notes~1.txt v1');
  expect(readLocal(ws, 'Docs/notes.txt')).toBe('notes.txt v2');
  fs.rmSync(path.join(ws.local, 'Docs', 'report~2.txt'));
  const report = await trash('restore', entries.find((e) => e.entry.endsWith('report~2.txt'))!.entry);
  expect(report.code, report.stderr).toBe(0);
  expect(fs.readdirSync(path.join(ws.local, 'Docs')).sort()).toEqual(['notes.txt', 'notes~1.txt', 'report~2.txt']);
  expect(readLocal(ws, 'Docs/report~2.txt')).toBe('report~2.txt v1');

  // The records are no entries to restore.
  const records = path.join(ws.stateDir, 'main', 'trash', notes1.day, '.binder-sync-origins');
  const record = await trash('restore', `${notes1.day}/.binder-sync-origins/${fs.readdirSync(records)[0]!}`);
  expect(record.code).toBe(2);
  expect(record.stderr).toMatch(/a record of where a kept file came from, not a kept file/);
  // Nor is a copy into the trash a crash cut short (black-box round 36a, F2).
  const partial = `${notes1.day}/.binder-sync-tmp-0000dead00000001`;
  fs.writeFileSync(path.join(ws.stateDir, 'main', 'trash', ...partial.split('/')), 'trunc');
  const cut = await trash('restore', partial, '--to', 'Docs/restored.txt');
  expect(cut.code).toBe(2);
  expect(cut.stderr).toMatch(/a copy into the trash not finished/);
  expect(fs.existsSync(path.join(ws.local, 'Docs', 'restored.txt'))).toBe(false);

  // Kept by a version before the records: read from the name where the day shows a copy, and said to be guessed.
  const old = path.join(ws.stateDir, 'main', 'trash', '2026-01-01', 'Docs');
  fs.mkdirSync(old, { recursive: true });
  for (const name of ['a.txt', 'a~1.txt', 'b~1.txt']) fs.writeFileSync(path.join(old, name), name);
  const human = (await trash()).stdout;
  expect(human).toMatch(/^ {2}2026-01-01\/Docs\/a~1\.txt .* \(was Docs\/a\.txt\?\)$/m);
  expect(human).toMatch(/^ {2}2026-01-01\/Docs\/b~1\.txt .*UTC$/m);
  expect(human).toContain('(was ...?): kept by an older binder-sync, which recorded no origins');
  const guessed = await trash('restore', '2026-01-01/Docs/a~1.txt');
  expect(guessed.code, guessed.stderr).toBe(0);
  expect(readLocal(ws, 'Docs/a.txt')).toBe('a~1.txt');
  expect(guessed.stdout).toContain('note: kept by an older binder-sync, which recorded no origins: the path is read from the name');
  expect(guessed.stdout).toContain('if it was Docs/a~1.txt, rename the restored file to that');
});

it('--path lists only what was at or under a path (or went on a day): the listing stops at 200 files (black-box round 30b, F11)', async () => {
  ws = await createWorkspace();
  const day = (d: string) => path.join(ws.stateDir, 'main', 'trash', d);
  const put = (entry: string) => {
    fs.mkdirSync(path.dirname(path.join(day(''), entry)), { recursive: true });
    fs.writeFileSync(path.join(day(''), entry), entry);
  };
  for (let i = 0; i < 210; i++) put(`2026-01-02/Docs/f${String(i).padStart(3, '0')}.txt`);
  for (const name of ['a.txt', 'b.txt', 'Sub/c.txt']) put(`2026-01-01/Other/${name}`);
  put('2026-01-01/Other2/d.txt');
  const entriesOf = (stdout: string) => stdout.split('\n').filter((l) => /^ {2}\d{4}-/.test(l)).map((l) => l.trim().split(/\s+/)[0]);

  const all = await trash();
  expect(all.code, all.stderr).toBe(0);
  expect(entriesOf(all.stdout)).toHaveLength(200); // all of 2026-01-02's Docs: Other is never reached
  expect(all.stdout).toContain('... more than 200 files (see --json, or narrow it with --path <folder>)');

  const other = ['2026-01-01/Other/Sub/c.txt', '2026-01-01/Other/a.txt', '2026-01-01/Other/b.txt'];
  for (const at of ['Other', './Other/', path.join(ws.local, 'Other')]) {
    const r = await trash('--path', at);
    expect(r.code, r.stderr).toBe(0);
    expect(entriesOf(r.stdout), at).toEqual(other);
    expect(r.stdout).not.toContain('more than');
  }
  expect(entriesOf((await trash('--path', 'Other/Sub', '--path', 'Other2')).stdout)).toEqual(['2026-01-01/Other/Sub/c.txt', '2026-01-01/Other2/d.txt']);
  expect(entriesOf((await trash('--path', '2026-01-01')).stdout)).toEqual([...other, '2026-01-01/Other2/d.txt']);
  const json = JSON.parse((await trash('--json', '--path', 'Docs/f007.txt')).stdout) as TrashDocument;
  expect(json.pairs[0]!.entries.map((e) => e.entry)).toEqual(['2026-01-02/Docs/f007.txt']);
  const none = await trash('--path', 'Oth');
  expect(none.code).toBe(0);
  expect(none.stdout).toMatch(/^ {2}no file at or under Oth$/m);
  const outside = await trash('--path', '../Other');
  expect(outside.code).toBe(2);
  expect(outside.stderr).toContain('--path "../Other" leaves the sync root');
  // An absolute path outside the root leaves it too: a usage error, not "no file at or under" (black-box round 31a, F16).
  for (const at of ['/etc', path.join(path.dirname(ws.local), 'elsewhere'), `${ws.local}2`]) {
    const abs = await trash('--path', 'Other', '--path', at);
    expect(abs.code, at).toBe(2);
    expect(abs.stderr).toContain(`--path ${JSON.stringify(at)} leaves the sync root ${ws.local}: name a folder or file in it`);
    expect(abs.stdout).toBe('');
  }
});
