// Upload metadata rules against a binder with a required enumerated element, and a read-only client, end to
// end: what is uploaded (with which valueId), what waits with an issue, and what is refused before any upload.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, readLocal, runCli, sync, writeLocal, type Workspace } from './harness.js';
import { eventually, msgHas, startDaemonProcess, writeRunConfig } from './run-helpers.js';
import { docNamed, expectConvergedPass, explain, issueCodes, remoteText, syncJson } from './scenario-helpers.js';

// The binder's metadata elements failing with a 500 are each tried six times: the spacing of those attempts is
// not what these tests are about (every CLI child of this file inherits it).
process.env.BINDER_SYNC_RETRY_BASE_MS = '5';

let ws: Workspace;
afterEach(async () => {
  await ws?.close();
});

const DEPARTMENT = {
  id: 'Department',
  label: 'Department',
  dataType: 'enum',
  required: true,
  allowedValues: [
    { id: 'eng', label: 'Engineering' },
    { id: 'fin', label: 'Finance' },
  ],
};

/** A binder whose documents need a Department; one remote document to download; one new local file. */
async function binderWithRequiredElement(): Promise<{ tabId: string }> {
  ws = await createWorkspace();
  const c = ws.emulator.control;
  c.addMetadataElement(ws.binderId, DEPARTMENT);
  const tab = c.createFolder(ws.binderId, { name: 'T' });
  c.addDocument(ws.binderId, tab.id, 'remote.txt', 'from remote', { metadata: [{ metadataElementId: 'Department', valueId: 'fin' }] });
  writeLocal(ws, 'T/new.txt', 'needs a department');
  return { tabId: tab.id };
}

describe('metadata rules', () => {
  it('without a rule a new file is withheld (metadata-missing); with a rule it uploads with the value id', async () => {
    const { tabId } = await binderWithRequiredElement();
    const c = ws.emulator.control;
    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(1);
    expect(issueCodes(r)).toEqual(['metadata-missing T/new.txt']);
    expect(r.report?.issues[0]?.detail).toMatch(/Department/);
    expect(r.report?.failures).toEqual([]);
    // Downloads are not held back by it; nothing was uploaded.
    expect(readLocal(ws, 'T/remote.txt')).toBe('from remote');
    expect(c.listDocuments(ws.binderId).map((d) => d.fileName)).toEqual(['remote.txt']);
    // (The pass may ask for one slot to probe write access; nothing is PUT or committed.)
    expect(c.counters()['storage-put'] + c.counters().commit).toBe(0);

    // Rules name the element and the value by label; the service gets the value's id.
    ws.writeConfig({ metadata: [{ match: '**', values: { Department: 'Engineering' } }] });
    await expectConvergedPass(ws);
    const doc = docNamed(ws, 'new.txt');
    expect(doc.folderId).toBe(tabId);
    expect(remoteText(ws, doc.id)).toBe('needs a department');
    expect(doc.metadata).toContainEqual({ metadataElementId: 'Department', valueId: 'eng' });
    const [version] = c.listVersions(doc.id);
    expect(version?.metadata).toContainEqual({ metadataElementId: 'Department', valueId: 'eng' });
  });

  it("an edit of a document whose required metadata was set on the service needs no rule; a retired value without a rule is said as such, before any bytes are sent", async () => {
    const { tabId } = await binderWithRequiredElement();
    const c = ws.emulator.control;
    c.addDocument(ws.binderId, tabId, 'retired.txt', 'old value', { metadata: [{ metadataElementId: 'Department', valueId: 'gone' }] });
    fs.rmSync(path.join(ws.local, 'T', 'new.txt'));
    await expectConvergedPass(ws);
    writeLocal(ws, 'T/remote.txt', 'edited here');
    await expectConvergedPass(ws);
    expect(remoteText(ws, docNamed(ws, 'remote.txt').id)).toBe('edited here');
    expect(docNamed(ws, 'remote.txt').metadata.filter((m) => m.metadataElementId === 'Department')).toEqual([{ metadataElementId: 'Department', valueId: 'fin' }]);

    const putsBefore = c.counters()['storage-put'];
    writeLocal(ws, 'T/retired.txt', 'edited too');
    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(1);
    expect(r.report?.failures.map((f) => `${f.relPath} ${f.code}`)).toEqual(['T/retired.txt METADATA_MISSING']);
    expect(r.report?.failures[0]?.message).toMatch(/required metadata without a value: Department: neither its document nor the pair's metadata rules give one \(the document's Department value "gone" is no longer one the binder takes\)/);
    expect(c.counters()['storage-put']).toBe(putsBefore);
    expect(remoteText(ws, docNamed(ws, 'retired.txt').id)).toBe('old value');

    // A rule fills the retired value.
    ws.writeConfig({ metadata: [{ match: '**', values: { Department: 'Engineering' } }] });
    await expectConvergedPass(ws);
    expect(remoteText(ws, docNamed(ws, 'retired.txt').id)).toBe('edited too');
    expect(docNamed(ws, 'retired.txt').metadata.filter((m) => m.metadataElementId === 'Department')).toEqual([{ metadataElementId: 'Department', valueId: 'eng' }]);
  });

  it('a rule naming an unknown element or an unknown value: exit 2 naming it, before any upload or download', async () => {
    await binderWithRequiredElement();
    const c = ws.emulator.control;
    ws.writeConfig({ metadata: [{ match: '**', values: { Departmnt: 'Engineering' } }] });
    const badElement = await sync(ws);
    expect(badElement.code, badElement.stderr).toBe(2);
    expect(badElement.stderr).toMatch(/Departmnt/);

    ws.writeConfig({ metadata: [{ match: 'T/**', values: { Department: 'Marketing' } }] });
    const badValue = await sync(ws);
    expect(badValue.code, badValue.stderr).toBe(2);
    expect(badValue.stderr).toMatch(/"Marketing" is not an allowed value/);
    expect(badValue.stderr).toMatch(/eng \(Engineering\)/);

    const n = c.counters();
    expect(n.presignedupload + n['storage-put'] + n.commit + n['storage-get']).toBe(0);
    expect(c.listDocuments(ws.binderId).map((d) => d.fileName)).toEqual(['remote.txt']);
  });
});

describe('read-only client', () => {
  it('downloads work and the first pass says once, clearly, that local changes cannot be uploaded', async () => {
    ws = await createWorkspace({ readOnly: true });
    const c = ws.emulator.control;
    const tab = c.createFolder(ws.binderId, { name: 'T' });
    c.addDocument(ws.binderId, tab.id, 'remote.txt', 'downloaded');
    writeLocal(ws, 'T/local.txt', 'stays local');

    const r = await syncJson(ws, [], { readOnly: true });
    expect(readLocal(ws, 'T/remote.txt')).toBe('downloaded');
    expect(readLocal(ws, 'T/local.txt')).toBe('stays local');
    expect(c.listDocuments(ws.binderId).map((d) => d.fileName)).toEqual(['remote.txt']);
    expect(c.counters()['storage-put'] + c.counters().commit).toBe(0);
    // The pair runs download-only: the local file is an open issue (not a failed upload with a 403), and
    // the reason (read-only credentials) is given once.
    expect(r.code, explain(r)).toBe(1);
    expect(r.report?.failures, explain(r)).toEqual([]);
    expect(issueCodes(r)).toEqual(['local-change-not-uploaded T/local.txt']);
    // Its reason is the access, not a direction the config does not have.
    expect(r.report?.issues[0]?.detail).toMatch(/^the API client has read-only access: /);
    expect(r.stderr.match(/read-only/gi) ?? [], r.stderr).toHaveLength(1);
    expect(r.stderr).toMatch(/download-only/);

    // Later passes keep downloading; still nothing is uploaded.
    c.addDocument(ws.binderId, tab.id, 'later.txt', 'later too');
    const again = await syncJson(ws, [], { readOnly: true });
    expect(again.code, explain(again)).toBe(1);
    expect(readLocal(ws, 'T/later.txt')).toBe('later too');
    expect(c.listDocuments(ws.binderId)).toHaveLength(2);
    expect(c.counters()['storage-put'] + c.counters().commit).toBe(0);
  });
});

/** Whether the local file holds exactly `content` (false while it does not exist). */
const localIs = (rel: string, content: string) => () => fs.existsSync(path.join(ws.local, rel)) && readLocal(ws, rel) === content;

describe('metadata problems do not stop downloads', () => {
  it('a daemon whose rules do not fit the binder holds every upload back, says why, and keeps downloading; sync refuses the config', async () => {
    await binderWithRequiredElement();
    const c = ws.emulator.control;
    const rules = [{ match: '**', values: { Department: 'Marketing' } }];
    writeRunConfig(ws, { pairs: [{ name: 'main', localPath: './local', binderId: ws.binderId, metadata: rules }] });
    const refused = await sync(ws);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('"Marketing" is not an allowed value');

    const d = startDaemonProcess(ws);
    try {
      await eventually(localIs('T/remote.txt', 'from remote'), 15_000, 'the remote document downloaded', d.tail);
      const said = await d.waitForLog(msgHas('metadata rules do not fit'), 10_000, 'the rules error');
      expect(said.level).toBe(50);
      expect(said.msg).toContain('no upload goes until the rules are fixed (downloads go on)');
      const tab = c.listFolders(ws.binderId).find((f) => f.name === 'T')!;
      c.addDocument(ws.binderId, tab.id, 'later.txt', 'arrives while uploads are held');
      await eventually(localIs('T/later.txt', 'arrives while uploads are held'), 15_000, 'a later remote document downloaded', d.tail);
      const status = await runCli(ws, ['status', '--config', ws.configFile, '--json']);
      const issues = (JSON.parse(status.stdout) as { pairs: Array<{ issues: Array<{ relPath: string; code: string; detail: string }> }> }).pairs[0]!.issues;
      expect(issues).toContainEqual({ relPath: 'T/new.txt', code: 'metadata-missing', detail: expect.stringMatching(/^not uploaded: pair main: metadata rules do not fit the binder's metadata elements: metadata\[0\]\.values\.Department: "Marketing" is not an allowed value/) });
      const human = await runCli(ws, ['status', '--config', ws.configFile]);
      expect(human.stdout).toMatch(/^ {2}last error +pair main: metadata rules do not fit the binder's metadata elements: /m);
      expect(c.listDocuments(ws.binderId).map((x) => x.fileName).sort()).toEqual(['later.txt', 'remote.txt']);
    } finally {
      await d.dispose();
    }
  }, 60_000);

  // Black-box round 31b, F5: the conflicts were held whole, said under copy names that did not exist (a new time
  // each pass), and even a conflict of equal sides, which needs no upload, was never settled.
  it('conflicts still run while uploads are held: equal sides settled, the remote content in place, the copy kept and named as it is', async () => {
    await binderWithRequiredElement();
    const c = ws.emulator.control;
    writeRunConfig(ws, { pairs: [{ name: 'main', localPath: './local', binderId: ws.binderId, metadata: [{ match: '**', values: { Department: 'Engineering' } }] }] });
    expect((await syncJson(ws)).code).toBe(0);
    const remote = docNamed(ws, 'remote.txt');
    const tab = c.listFolders(ws.binderId).find((f) => f.name === 'T')!;
    const same = c.addDocument(ws.binderId, tab.id, 'same.txt', 'v1', { metadata: [{ metadataElementId: 'Department', valueId: 'fin' }] }).document;
    expect((await syncJson(ws)).code).toBe(0);
    c.addVersion(remote.id, 'their edit');
    writeLocal(ws, 'T/remote.txt', 'my edit');
    c.addVersion(same.id, 'both made this');
    writeLocal(ws, 'T/same.txt', 'both made this');
    c.injectFault({ route: 'metadataelements', status: 500 });
    const commitsBefore = c.counters().commit;

    const r = await syncJson(ws);
    expect(r.code, explain(r)).toBe(3);
    expect(readLocal(ws, 'T/remote.txt')).toBe('their edit');
    const copies = fs.readdirSync(path.join(ws.local, 'T')).filter((n) => n.includes('(conflict '));
    expect(copies).toHaveLength(1);
    expect(readLocal(ws, `T/${copies[0]}`)).toBe('my edit');
    // Named as it is on disk, and the same name the next pass gives it.
    expect(r.report?.issues).toEqual([{ relPath: `T/${copies[0]}`, code: 'metadata-missing', detail: expect.stringMatching(/^not uploaded: the binder's metadata elements could not be read/) }]);
    const again = await syncJson(ws);
    expect(again.report?.issues.map((i) => i.relPath)).toEqual([`T/${copies[0]}`]);
    expect(c.counters().commit).toBe(commitsBefore);

    c.clearFaults();
    expect((await syncJson(ws)).code).toBe(0);
    expect(c.listDocuments(ws.binderId).map((x) => x.fileName).sort()).toEqual([copies[0], 'new.txt', 'remote.txt', 'same.txt'].sort());
  }, 60_000);

  it("a two-way pair whose binder's metadata elements cannot be read downloads, holds uploads back saying why (sync: exit 3), and the daemon uploads once they can be read", async () => {
    await binderWithRequiredElement();
    const c = ws.emulator.control;
    c.injectFault({ route: 'metadataelements', status: 500 });
    writeRunConfig(ws, { pairs: [{ name: 'main', localPath: './local', binderId: ws.binderId, metadata: [{ match: '**', values: { Department: 'Engineering' } }] }] });
    const once = await syncJson(ws);
    expect(once.code, explain(once)).toBe(3);
    expect(readLocal(ws, 'T/remote.txt')).toBe('from remote');
    expect(once.report?.issues).toEqual([{ relPath: 'T/new.txt', code: 'metadata-missing', detail: expect.stringMatching(/^not uploaded: the binder's metadata elements could not be read, .*HTTP 500/) }]);
    expect(once.stderr).toMatch(/binder-sync: pair main: uploads held back \(the rest of the pass ran\): the binder's metadata elements could not be read: .*HTTP 500/);
    expect(c.counters()['storage-put'] + c.counters().commit).toBe(0);

    const d = startDaemonProcess(ws);
    try {
      await d.waitForLog(msgHas('uploads wait until they can be read'), 10_000, 'the warning');
      const tab = c.listFolders(ws.binderId).find((f) => f.name === 'T')!;
      c.addDocument(ws.binderId, tab.id, 'later.txt', 'arrives while uploads wait');
      await eventually(localIs('T/later.txt', 'arrives while uploads wait'), 15_000, 'a remote document downloaded by the daemon', d.tail);
      await eventually(async () => {
        const status = await runCli(ws, ['status', '--config', ws.configFile, '--json']);
        const issues = (JSON.parse(status.stdout) as { pairs: Array<{ issues: Array<{ relPath: string; code: string; detail: string }> }> }).pairs[0]!.issues;
        return issues.some((i) => i.relPath === 'T/new.txt' && i.code === 'metadata-missing' && /metadata elements could not be read/.test(i.detail) && /HTTP 500/.test(i.detail));
      }, 15_000, 'the held upload listed with its reason', d.tail);
      expect(c.listDocuments(ws.binderId).map((x) => x.fileName).sort()).toEqual(['later.txt', 'remote.txt']);
      expect(c.counters().commit).toBe(0);

      c.clearFaults();
      await d.waitForLog(msgHas("read the binder's metadata elements: uploads go again"), 20_000, 'the elements read again');
      await eventually(() => c.listDocuments(ws.binderId).some((x) => x.fileName === 'new.txt'), 15_000, 'the held file uploaded', d.tail);
      // By the pass that read them: its upload did not fail with the old error first (and wait for a retry).
      expect(d.count((l) => l.msg === 'action failed' && l.relPath === 'T/new.txt'), d.tail()).toBe(0);
      expect(docNamed(ws, 'new.txt').metadata).toContainEqual({ metadataElementId: 'Department', valueId: 'eng' });
    } finally {
      await d.dispose();
    }
  }, 60_000);

  it('a download-only pair downloads when the binder\'s metadata elements cannot be read (only a 404 would say the binder is wrong)', async () => {
    await binderWithRequiredElement();
    ws.emulator.control.injectFault({ route: 'metadataelements', status: 500 });
    // Its rules (unused by a download-only pair) are not checked against elements it could not read.
    ws.writeConfig({ direction: 'download', metadata: [{ match: '**', values: { Department: 'Engineering' } }] });
    fs.rmSync(path.join(ws.local, 'T', 'new.txt')); // nothing local to leave out: the pass is complete
    const r = await sync(ws);
    expect(r.code, explain(r)).toBe(0);
    expect(readLocal(ws, 'T/remote.txt')).toBe('from remote');
    expect(r.stdout + r.stderr).toContain("could not read the binder's metadata elements");
  });
});
