// Tree mapping tests (src/remote/path-map.ts): nesting, encoded names, collisions, stability, ignore rules
// and broken trees.
import { describe, expect, it } from 'vitest';
import { UNMAPPABLE, mapRemoteTree, type RemoteTreeInput } from '../../src/remote/path-map.js';

type Folder = RemoteTreeInput['folders'][number];
type Doc = RemoteTreeInput['docs'][number];
const folder = (id: string, name: string, parentId: string | null = null): Folder => ({ id, name, parentId });
const doc = (documentId: string, fileName: string, folderId: string): Doc => ({ documentId, fileName, folderId, versionId: `v-${documentId}` });

function paths(input: Partial<RemoteTreeInput> & Pick<RemoteTreeInput, 'folders' | 'docs'>) {
  const r = mapRemoteTree({ caseInsensitive: false, ...input });
  return {
    folders: Object.fromEntries([...r.folders.values()].map((f) => [f.folderId, f.relPath])),
    docs: Object.fromEntries([...r.docs.values()].map((d) => [d.documentId, d.relPath])),
    unmappable: r.unmappable,
    raw: r,
  };
}

describe('mapRemoteTree: placement', () => {
  it('maps nested folders and documents from the top-level tab down', () => {
    const r = paths({
      folders: [folder('T', 'Tab'), folder('S', 'Sub', 'T'), folder('U', 'Deeper', 'S')],
      docs: [doc('d1', 'a.txt', 'T'), doc('d2', 'b.txt', 'U')],
    });
    expect(r.folders).toEqual({ T: 'Tab', S: 'Tab/Sub', U: 'Tab/Sub/Deeper' });
    expect(r.docs).toEqual({ d1: 'Tab/a.txt', d2: 'Tab/Sub/Deeper/b.txt' });
    expect(r.unmappable).toEqual([]);
    expect(r.raw.docs.get('d2')).toEqual({ documentId: 'd2', fileName: 'b.txt', folderId: 'U', versionId: 'v-d2', relPath: 'Tab/Sub/Deeper/b.txt', key: 'Tab/Sub/Deeper/b.txt' });
    expect(r.raw.folders.get('S')).toEqual({ folderId: 'S', name: 'Sub', parentId: 'T', relPath: 'Tab/Sub', key: 'Tab/Sub' });
  });

  it('encodes hostile names and keeps the remote name in fileName', () => {
    const r = paths({
      folders: [folder('T', '..'), folder('S', 'a/b', 'T')],
      docs: [doc('d1', '/etc/passwd', 'S'), doc('d2', '', 'S')],
    });
    expect(r.folders).toEqual({ T: '\uFF0E\uFF0E', S: '\uFF0E\uFF0E/a\uFF0Fb' });
    expect(r.docs).toEqual({ d1: '\uFF0E\uFF0E/a\uFF0Fb/\uFF0Fetc\uFF0Fpasswd', d2: '\uFF0E\uFF0E/a\uFF0Fb/_' });
    expect(r.raw.docs.get('d1')?.fileName).toBe('/etc/passwd');
  });

  it('keys are lower-cased only on case-insensitive file systems', () => {
    expect(mapRemoteTree({ folders: [folder('T', 'Tab')], docs: [doc('d', 'A.TXT', 'T')], caseInsensitive: true }).docs.get('d')?.key).toBe('tab/a.txt');
    expect(mapRemoteTree({ folders: [folder('T', 'Tab')], docs: [doc('d', 'A.TXT', 'T')], caseInsensitive: false }).docs.get('d')?.key).toBe('Tab/A.TXT');
  });
});

describe('mapRemoteTree: collisions', () => {
  it('two documents with one name: the lowest documentId keeps it', () => {
    const r = paths({ folders: [folder('T', 'Tab')], docs: [doc('bbbbbbbb-2222', 'x.txt', 'T'), doc('aaaaaaaa-1111', 'x.txt', 'T')] });
    expect(r.docs).toEqual({ 'aaaaaaaa-1111': 'Tab/x.txt', 'bbbbbbbb-2222': 'Tab/x (dup-bbbbbbbb).txt' });
  });

  it('a folder beats a document of the same name', () => {
    const r = paths({ folders: [folder('T', 'Tab'), folder('zzz', 'x', 'T')], docs: [doc('aaa', 'x', 'T')] });
    expect(r.folders.zzz).toBe('Tab/x');
    expect(r.docs.aaa).toBe('Tab/x (dup-aaa)');
  });

  it('two folders of one name: the lowest id keeps it, the other gets the suffix at the end', () => {
    const r = paths({ folders: [folder('T', 'Tab'), folder('f2-xxxxxxxx', 'v1.2', 'T'), folder('f1', 'v1.2', 'T')], docs: [doc('d', 'in.txt', 'f2-xxxxxxxx')] });
    expect(r.folders).toEqual({ T: 'Tab', f1: 'Tab/v1.2', 'f2-xxxxxxxx': 'Tab/v1.2 (dup-f2-xxxxx)' });
    expect(r.docs.d).toBe('Tab/v1.2 (dup-f2-xxxxx)/in.txt');
  });

  it('case-insensitive collisions only on case-insensitive file systems', () => {
    const input = { folders: [folder('T', 'Tab')], docs: [doc('d1', 'Report.PDF', 'T'), doc('d2', 'report.pdf', 'T')] };
    expect(paths({ ...input, caseInsensitive: false }).docs).toEqual({ d1: 'Tab/Report.PDF', d2: 'Tab/report.pdf' });
    expect(paths({ ...input, caseInsensitive: true }).docs).toEqual({ d1: 'Tab/Report.PDF', d2: 'Tab/report (dup-d2).pdf' });
  });

  it('NFC and NFD spellings of one name collide even on a case-sensitive file system', () => {
    const r = paths({ folders: [folder('T', 'Tab')], docs: [doc('d2', 'Cafe\u0301.txt', 'T'), doc('d1', 'Caf\u00e9.txt', 'T')] });
    expect(r.docs).toEqual({ d1: 'Tab/Caf\u00e9.txt', d2: 'Tab/Cafe\u0301 (dup-d2).txt' });
  });

  it('an encoded name colliding with a literal one is resolved too', () => {
    const r = paths({ folders: [folder('T', 'Tab')], docs: [doc('d1', 'a/b', 'T'), doc('d2', 'a\uFF0Fb', 'T')] });
    expect(r.docs).toEqual({ d1: 'Tab/a\uFF0Fb', d2: 'Tab/a\uFF0Fb (dup-d2)' });
  });

  it('a dup name already taken by another document falls back to the full id', () => {
    const r = paths({
      folders: [folder('T', 'Tab')],
      docs: [doc('aaaaaaaa', 'x.txt', 'T'), doc('bbbbbbbb-9', 'x.txt', 'T'), doc('cccc', 'x (dup-bbbbbbbb).txt', 'T')],
    });
    expect(r.docs).toEqual({ aaaaaaaa: 'Tab/x.txt', cccc: 'Tab/x (dup-bbbbbbbb).txt', 'bbbbbbbb-9': 'Tab/x (dup-bbbbbbbb-9).txt' });
  });

  it('ids sharing their first 8 characters still get distinct names', () => {
    const r = paths({ folders: [folder('T', 'Tab')], docs: [doc('0', 'x', 'T'), doc('abcdefgh-1', 'x', 'T'), doc('abcdefgh-2', 'x', 'T')] });
    expect(new Set(Object.values(r.docs)).size).toBe(3);
    expect(r.docs).toEqual({ 0: 'Tab/x', 'abcdefgh-1': 'Tab/x (dup-abcdefgh)', 'abcdefgh-2': 'Tab/x (dup-abcdefgh-2)' });
  });

  it('the document whose base path is the plain path keeps it (stable mapping)', () => {
    const first = paths({ folders: [folder('T', 'Tab')], docs: [doc('m-old', 'x.txt', 'T')] });
    expect(first.docs['m-old']).toBe('Tab/x.txt');
    // A new document with a lower id and the same name appears: without a preference it would win.
    const docs = [doc('m-old', 'x.txt', 'T'), doc('a-new', 'x.txt', 'T')];
    expect(paths({ folders: [folder('T', 'Tab')], docs }).docs).toEqual({ 'a-new': 'Tab/x.txt', 'm-old': 'Tab/x (dup-m-old).txt' });
    const base = new Map(Object.entries(first.docs));
    const stable = paths({ folders: [folder('T', 'Tab')], docs, preferredPath: (id) => base.get(id) });
    expect(stable.docs).toEqual({ 'm-old': 'Tab/x.txt', 'a-new': 'Tab/x (dup-a-new).txt' });
  });

  it('preferredPath is compared as a key (NFD base path, case-insensitive disk)', () => {
    const docs = [doc('b', 'Caf\u00e9.txt', 'T'), doc('a', 'CAF\u00c9.TXT', 'T')];
    const r = paths({ folders: [folder('T', 'Tab')], docs, caseInsensitive: true, preferredPath: (id) => (id === 'b' ? 'tab/Cafe\u0301.txt' : undefined) });
    expect(r.docs).toEqual({ b: 'Tab/Caf\u00e9.txt', a: 'Tab/CAF\u00c9 (dup-a).TXT' });
  });
});

describe('mapRemoteTree: unmappable items', () => {
  const ignoredBy = (relPath: string) => (relPath.endsWith('.tmp') ? "'*.tmp'" : relPath.split('/').includes('node_modules') ? "'node_modules/'" : undefined);

  it('a path longer than the local file system takes is unmappable, with what is below it; shorter neighbours are placed', () => {
    const r = paths({
      folders: [folder('T', 'Tab'), folder('L', 'l'.repeat(12), 'T'), folder('D', 'deeper', 'L')],
      docs: [doc('d1', 'fits.txt', 'T'), doc('d2', 'far-too-long-a-name.txt', 'T'), doc('d3', 'x', 'L'), doc('d4', 'y.txt', 'D')],
      maxPathBytes: 20,
    });
    expect(r.folders).toEqual({ T: 'Tab', L: `Tab/${'l'.repeat(12)}` }); // 16 bytes
    expect(r.docs).toEqual({ d1: 'Tab/fits.txt', d3: `Tab/${'l'.repeat(12)}/x` }); // 12 and 18 bytes
    const tooLong = UNMAPPABLE.tooLong(20);
    expect([...r.unmappable].sort((a, b) => (a.path! < b.path! ? -1 : 1))).toEqual([
      { documentId: 'd2', name: 'far-too-long-a-name.txt', reason: tooLong, path: 'Tab/far-too-long-a-name.txt' },
      { folderId: 'D', name: 'deeper', reason: tooLong, path: `Tab/${'l'.repeat(12)}/deeper` },
      { documentId: 'd4', name: 'y.txt', reason: tooLong, path: `Tab/${'l'.repeat(12)}/deeper/y.txt` },
    ]);
    expect(tooLong).toContain('longer than the system allows');
  });

  it('documents and folders at ignored paths are unmappable, with their contents', () => {
    const r = paths({
      folders: [folder('T', 'Tab'), folder('N', 'node_modules', 'T'), folder('N2', 'deep', 'N')],
      docs: [doc('d1', 'keep.txt', 'T'), doc('d2', 'scratch.tmp', 'T'), doc('d3', 'x.js', 'N2')],
      ignoredBy,
    });
    expect(r.docs).toEqual({ d1: 'Tab/keep.txt' });
    expect(r.folders).toEqual({ T: 'Tab' });
    // Marked `ignored`, each with the rule that left it out (the whole subtree with its folder's rule).
    const tmp = UNMAPPABLE.ignored("'*.tmp'");
    const nm = UNMAPPABLE.ignored("'node_modules/'");
    expect(r.unmappable).toEqual([
      { documentId: 'd2', name: 'scratch.tmp', reason: tmp, path: 'Tab/scratch.tmp', ignored: true },
      { documentId: 'd3', name: 'x.js', reason: nm, path: 'Tab/node_modules/deep/x.js', ignored: true },
      { folderId: 'N', name: 'node_modules', reason: nm, path: 'Tab/node_modules', ignored: true },
      { folderId: 'N2', name: 'deep', reason: nm, path: 'Tab/node_modules/deep', ignored: true },
    ]);
    expect(tmp).toBe("matches the ignore rule '*.tmp': not downloaded, nothing deleted");
  });

  it('ignoredBy sees directories flagged as such', () => {
    const seen: Array<[string, boolean]> = [];
    mapRemoteTree({ folders: [folder('T', 'Tab')], docs: [doc('d', 'a', 'T')], caseInsensitive: false, ignoredBy: (p, d) => void seen.push([p, d]) });
    expect(seen).toEqual([['Tab', true], ['Tab/a', false]]);
  });

  it('a dup name that is ignored makes that document unmappable', () => {
    const r = paths({ folders: [folder('T', 'Tab')], docs: [doc('a', 'x.txt', 'T'), doc('b', 'x.txt', 'T')], ignoredBy: (p) => (p.includes('(dup-') ? "'*(dup-*'" : undefined) });
    expect(r.docs).toEqual({ a: 'Tab/x.txt' });
    expect(r.unmappable).toEqual([{ documentId: 'b', name: 'x.txt', reason: UNMAPPABLE.ignored("'*(dup-*'"), path: 'Tab/x.txt', ignored: true }]);
  });

  it('a bad name is not marked ignored, even where an ignore rule would match it', () => {
    const r = paths({ folders: [folder('T', 'Tab')], docs: [doc('a', 'bad\ud800.txt', 'T')], ignoredBy: (_p, dir) => (dir ? undefined : "'*'") });
    expect(r.unmappable).toHaveLength(1);
    expect(r.unmappable[0]?.ignored).toBeUndefined();
  });

  it('a document in a folder that is not in the tree is unmappable', () => {
    const r = paths({ folders: [folder('T', 'Tab')], docs: [doc('d', 'a.txt', 'ghost')] });
    expect(r.docs).toEqual({});
    expect(r.unmappable).toEqual([{ documentId: 'd', name: 'a.txt', reason: 'folder ghost is not in the listing', inconsistent: true }]);
  });

  it('a folder whose parent is missing is unmappable with everything below it', () => {
    const r = paths({
      folders: [folder('T', 'Tab'), folder('O', 'Orphan', 'ghost'), folder('C', 'Child', 'O')],
      docs: [doc('d1', 'a.txt', 'O'), doc('d2', 'b.txt', 'C'), doc('d3', 'ok.txt', 'T')],
    });
    expect(r.docs).toEqual({ d3: 'Tab/ok.txt' });
    const reason = UNMAPPABLE.missingParent('ghost');
    expect(r.unmappable).toEqual([
      { documentId: 'd1', name: 'a.txt', reason, inconsistent: true },
      { documentId: 'd2', name: 'b.txt', reason, inconsistent: true },
      { folderId: 'C', name: 'Child', reason, inconsistent: true },
      { folderId: 'O', name: 'Orphan', reason, inconsistent: true },
    ]);
  });

  it('folders in a cycle (and below it) are unmappable with their documents', () => {
    const r = paths({
      folders: [folder('A', 'a', 'B'), folder('B', 'b', 'A'), folder('C', 'c', 'B'), folder('S', 'self', 'S'), folder('T', 'Tab')],
      docs: [doc('d1', 'x', 'A'), doc('d2', 'y', 'C'), doc('d3', 'z', 'S')],
    });
    expect(r.folders).toEqual({ T: 'Tab' });
    expect(r.docs).toEqual({});
    expect(r.unmappable.map((u) => [u.folderId ?? u.documentId, u.reason])).toEqual([
      ['d1', 'folder cycle'],
      ['d2', 'folder cycle'],
      ['d3', 'folder cycle'],
      ['A', 'folder cycle'],
      ['B', 'folder cycle'],
      ['C', 'folder cycle'],
      ['S', 'folder cycle'],
    ]);
  });

  it('an id listed twice with different data is not placed; identical repeats are harmless', () => {
    const r = paths({
      folders: [folder('T', 'Tab'), folder('T', 'Tab'), folder('F', 'one', 'T'), folder('F', 'two', 'T')],
      docs: [doc('d1', 'a', 'T'), doc('d1', 'b', 'T'), doc('d2', 'c', 'T'), doc('d2', 'c', 'T'), doc('d3', 'in-F', 'F')],
    });
    expect(r.folders).toEqual({ T: 'Tab' });
    expect(r.docs).toEqual({ d2: 'Tab/c' });
    expect(r.unmappable).toEqual([
      { documentId: 'd1', name: 'a', reason: UNMAPPABLE.listedTwice, inconsistent: true },
      { documentId: 'd3', name: 'in-F', reason: UNMAPPABLE.listedTwice, inconsistent: true },
      { folderId: 'F', name: 'one', reason: UNMAPPABLE.listedTwice, inconsistent: true },
    ]);
  });

  it('a name that is not valid Unicode is unmappable, not dropped; its path for people shows the surrogate escaped', () => {
    const r = paths({ folders: [folder('T', 'Tab')], docs: [doc('d', 'bad\uD800', 'T')] });
    expect(r.unmappable).toEqual([{ documentId: 'd', name: 'bad\uD800', reason: 'name cannot be used locally: name is not valid Unicode (unpaired surrogate, shown escaped as \\ud800: a local file spelled so is another item)', path: 'Tab/bad\\ud800' }]);
  });
  it('two names with different unpaired surrogates get two distinct paths, neither the valid name that reads the same (round 37a, F4)', () => {
    const r = paths({ folders: [folder('T', 'Docs'), folder('S', 'sub\udc01', 'T')], docs: [doc('a', 'sur\ud800.txt', 'T'), doc('b', 'sur\udc00.txt', 'T'), doc('c', 'sur\ufffd.txt', 'T'), doc('e', 'in.txt', 'S')] });
    expect(r.unmappable.map((u) => u.path).sort()).toEqual(['Docs/sub\\udc01', 'Docs/sub\\udc01/in.txt', 'Docs/sur\\ud800.txt', 'Docs/sur\\udc00.txt']);
    expect(r.docs).toEqual({ c: 'Docs/sur\ufffd.txt' });
  });
});
