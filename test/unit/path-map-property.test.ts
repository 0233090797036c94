// Property tests of the tree mapping over arbitrary (including hostile) names and broken trees: no path
// escapes the root, no two items share a key, every item is accounted for, and input order does not matter.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TEMP_PREFIX, utf8Length } from '../../src/remote/names.js';
import { UNMAPPABLE, mapRemoteTree, type RemoteTreeInput } from '../../src/remote/path-map.js';
import { pathKey } from '../../src/sync/path-key.js';

const HOSTILE = [
  '', '.', '..', '...', '../x', '/etc/passwd', 'a/../../b', '\u0000', 'a\u0000b', 'CON', 'nul.txt', ' ', 'x ', 'x.',
  '.binder-sync-tmp', 'Cafe\u0301', 'Caf\u00e9', 'CAF\u00c9', 'x.txt', 'X.TXT', 'x (dup-aaaaaaaa).txt', '\uFF0E', '\uFF0E\uFF0E',
  'a\uFF0Fb', 'a/b', '\u2400', 'e\u0301'.repeat(90), 'z'.repeat(256), '日'.repeat(86), `${'q'.repeat(252)}.txt`, '\uD800',
  'ΑΣ', 'ας', 'ß', 'SS', '\u0130', 'i\u0307',
];
const anyChar = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
// A small pool of colliding names is drawn most often, so that collisions (and dup-of-dup) are common.
const COLLIDING = ['x.txt', 'X.TXT', 'x (dup-aaaaaaaa).txt', 'x (dup-AAAAAAAA).txt', 'x', 'Caf\u00e9', 'Cafe\u0301'];
const nameArb = fc.oneof(
  { arbitrary: fc.constantFrom(...COLLIDING), weight: 6 },
  fc.constantFrom(...HOSTILE),
  fc.string({ maxLength: 12, unit: 'grapheme' }),
  fc.string({ maxLength: 12, unit: anyChar }),
  fc.string({ maxLength: 6, unit: fc.constantFrom('a', 'A', '.', '/', 'e', '\u0301', '\u00e9', ' ', '\u0000') }),
  fc.string({ minLength: 80, maxLength: 140, unit: 'binary' }),
);
// Few distinct id characters so that 8-character prefixes collide.
const idArb = fc.oneof(
  fc.string({ minLength: 1, maxLength: 10, unit: fc.constantFrom('a', 'b', 'A', '-', '/', '.') }),
  fc.tuple(fc.constantFrom('aaaaaaaa', 'AAAAAAAA'), fc.string({ maxLength: 2, unit: fc.constantFrom('1', '2', '-') })).map(([a, b]) => a + b),
);

const treeArb = fc
  .record({
    folderIds: fc.uniqueArray(idArb, { maxLength: 10 }),
    folderNames: fc.array(nameArb, { minLength: 10, maxLength: 10 }),
    parentPicks: fc.array(fc.integer({ min: -2, max: 10 }), { minLength: 10, maxLength: 10 }),
    docs: fc.array(fc.record({ id: idArb, name: nameArb, folderPick: fc.integer({ min: -1, max: 3 }), v: fc.constantFrom('v1', 'v2') }), { maxLength: 25 }),
    caseInsensitive: fc.boolean(),
    preferPick: fc.integer({ min: 0, max: 3 }),
  })
  .map((t) => {
    const ids = t.folderIds;
    // parent: -2 = a folder missing from the listing, -1 = top-level tab, otherwise any folder (cycles possible).
    const folders = ids.map((id, i) => {
      const pick = t.parentPicks[i] ?? -1;
      const parentId = pick === -1 ? null : pick === -2 ? 'missing-folder' : (ids[pick % ids.length] ?? null);
      return { id, name: t.folderNames[i] ?? 'f', parentId };
    });
    const docs = t.docs.map((d) => ({
      documentId: d.id,
      fileName: d.name,
      folderId: d.folderPick < 0 || ids.length === 0 ? 'missing-folder' : (ids[d.folderPick % ids.length] ?? 'missing-folder'),
      versionId: d.v,
    }));
    return { folders, docs, caseInsensitive: t.caseInsensitive, preferPick: t.preferPick };
  });

function inputOf(t: { folders: RemoteTreeInput['folders']; docs: RemoteTreeInput['docs']; caseInsensitive: boolean; preferPick: number }): RemoteTreeInput {
  const plain: RemoteTreeInput = { folders: t.folders, docs: t.docs, caseInsensitive: t.caseInsensitive, ignoredBy: (relPath) => (relPath.endsWith('.tmp') ? "'*.tmp'" : undefined) };
  // Documents "remember" the path another document got in a baseline mapping (preferPick = 0: their own),
  // so preferences are sometimes right, sometimes stale and sometimes contested.
  const baseline = mapRemoteTree(plain);
  const ids = [...new Set(t.docs.map((d) => d.documentId))].sort();
  const preferred = new Map<string, string>();
  ids.forEach((id, i) => {
    const partner = ids[(i + t.preferPick) % ids.length];
    const path = partner === undefined ? undefined : baseline.docs.get(partner)?.relPath;
    if (path !== undefined) preferred.set(id, path);
  });
  return { ...plain, preferredPath: (id) => preferred.get(id) };
}

function shuffle<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let s = seed >>> 0 || 1;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s ^ (s >>> 15), 2654435761) + 0x6d2b79f5) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

const serialize = (r: ReturnType<typeof mapRemoteTree>) =>
  JSON.stringify({ folders: [...r.folders.entries()], docs: [...r.docs.entries()], unmappable: r.unmappable });

describe('mapRemoteTree properties', () => {
  it('never escapes the root: no absolute path, no empty, "." or ".." segment, no NUL, no temp-prefixed or over-long name', () => {
    fc.assert(
      fc.property(treeArb, (t) => {
        const r = mapRemoteTree(inputOf(t));
        for (const item of [...r.folders.values(), ...r.docs.values()]) {
          expect(item.relPath.startsWith('/')).toBe(false);
          for (const seg of item.relPath.split('/')) {
            expect(seg).not.toBe('');
            expect(seg).not.toBe('.');
            expect(seg).not.toBe('..');
            expect(seg.includes('\u0000')).toBe(false);
            expect(seg.startsWith(TEMP_PREFIX)).toBe(false);
            expect(utf8Length(seg)).toBeLessThanOrEqual(255);
          }
          expect(item.key).toBe(pathKey(item.relPath, t.caseInsensitive));
        }
      }),
      { numRuns: 400 },
    );
  });

  it('never maps two items (folders or documents) to the same key, and keeps documents under their folder', () => {
    fc.assert(
      fc.property(treeArb, (t) => {
        const r = mapRemoteTree(inputOf(t));
        const keys = [...r.folders.values(), ...r.docs.values()].map((i) => i.key);
        expect(new Set(keys).size).toBe(keys.length);
        // Uniqueness must come from collision resolution, not from the last-resort safety net.
        expect(r.unmappable.filter((u) => u.reason === UNMAPPABLE.collision)).toEqual([]);
        for (const d of r.docs.values()) {
          const f = r.folders.get(d.folderId);
          expect(f).toBeDefined();
          expect(d.relPath.startsWith(`${f?.relPath}/`)).toBe(true);
          expect(d.relPath.slice((f?.relPath.length ?? 0) + 1).includes('/')).toBe(false);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('accounts for every input id: mapped or unmappable, never both, never silently dropped', () => {
    fc.assert(
      fc.property(treeArb, (t) => {
        const r = mapRemoteTree(inputOf(t));
        const unFolders = new Set(r.unmappable.flatMap((u) => (u.folderId !== undefined ? [u.folderId] : [])));
        const unDocs = new Set(r.unmappable.flatMap((u) => (u.documentId !== undefined ? [u.documentId] : [])));
        for (const f of t.folders) expect(r.folders.has(f.id) !== unFolders.has(f.id)).toBe(true);
        for (const d of t.docs) expect(r.docs.has(d.documentId) !== unDocs.has(d.documentId)).toBe(true);
        expect(r.unmappable.length).toBe(unFolders.size + unDocs.size);
      }),
      { numRuns: 400 },
    );
  });

  it('does not depend on input order', () => {
    fc.assert(
      fc.property(treeArb, fc.integer(), (t, seed) => {
        const a = mapRemoteTree(inputOf(t));
        const b = mapRemoteTree(inputOf({ ...t, folders: shuffle(t.folders, seed), docs: shuffle(t.docs, seed + 1) }));
        expect(serialize(b)).toBe(serialize(a));
      }),
      { numRuns: 400 },
    );
  });
});
