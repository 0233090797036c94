// Partial rescans after watcher hints: scanning only the hinted subtrees and merging them into the previous
// observation must give exactly what a full scan gives, including for deleted and replaced folders.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createIgnoreMatcher } from '../../src/local/ignore.js';
import { coveringSubtrees, mergeScan, scanLocal } from '../../src/local/scanner.js';
import type { LocalObservation } from '../../src/sync/model.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'partial-scan-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const write = (rel: string, content: string) => {
  fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  fs.writeFileSync(path.join(root, rel), content);
};
const scan = (subtrees?: string[]) =>
  scanLocal({ root, caseInsensitive: false, ignore: createIgnoreMatcher([]), prior: () => undefined, ...(subtrees ? { subtrees } : {}) });
const plain = (o: LocalObservation) => ({
  files: [...o.files.values()].map((f) => `${f.relPath}:${f.sha256}`).sort(),
  dirs: [...o.dirs.values()].sort(),
  // With each one's inode: a merged observation must not keep the inode of a directory that was replaced.
  dirInodes: [...o.dirs.keys()].map((k) => `${k}:${o.dirInodes?.get(k) ?? 'none'}`).sort(),
  problems: o.problems.map((p) => `${p.relPath}:${p.reason}`).sort(),
});

describe('partial scans', () => {
  it('a merged rescan of the changed folders equals a full scan', async () => {
    write('A/a1.txt', '1');
    write('A/Sub/a2.txt', '2');
    write('B/b1.txt', '3');
    write('C/Deep/c1.txt', '4');
    const before = await scan();
    write('A/Sub/a2.txt', '2 changed');
    write('A/new.txt', 'new');
    fs.rmSync(path.join(root, 'C/Deep'), { recursive: true });
    fs.rmSync(path.join(root, 'A/Sub'), { recursive: true });
    write('A/Sub/a2.txt', '2 again');
    fs.rmSync(path.join(root, 'B/b1.txt'));
    const dirs = coveringSubtrees(['A/Sub', 'A', 'C', 'B']);
    expect(dirs).toEqual(['A', 'B', 'C']);
    const merged = mergeScan(before, await scan(dirs), dirs);
    expect(plain(merged)).toEqual(plain(await scan()));
    expect(plain(merged).files).not.toContain(expect.stringMatching(/^B\/b1/));
  });

  it('two hinted folders with one key (NFD and NFC): the second is a collision, as in a full scan', async () => {
    write('Docs/Cafe\u0301/a.txt', 'nfd');
    write('Docs/Caf\u00e9/a.txt', 'nfc');
    const full = await scan();
    const partial = await scan(coveringSubtrees(['Docs/Cafe\u0301', 'Docs/Caf\u00e9']));
    expect(partial.files.size).toBe(1);
    const { files, problems } = plain(partial);
    expect({ files, problems }).toEqual({ files: plain(full).files, problems: plain(full).problems });
  });

  it('a hinted folder that no longer exists drops everything under it', async () => {
    write('Gone/x.txt', 'x');
    write('Stay/y.txt', 'y');
    const before = await scan();
    fs.rmSync(path.join(root, 'Gone'), { recursive: true });
    const merged = mergeScan(before, await scan(['Gone']), ['Gone']);
    expect(plain(merged)).toEqual(plain(await scan()));
  });

  it('the root in the list means a full scan', async () => {
    write('A/a.txt', 'a');
    expect(coveringSubtrees(['A', ''])).toEqual(['']);
    expect(plain(await scan(['']))).toEqual(plain(await scan()));
  });

  it('an unchanged subtree rescanned gives the same observation', async () => {
    write('A/a.txt', 'a');
    write('B/b.txt', 'b');
    const before = await scan();
    expect(plain(mergeScan(before, await scan(['A']), ['A']))).toEqual(plain(before));
  });
});
