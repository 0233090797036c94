// summarizeTrash over a real temp dir: counts files and bytes of the day folders, stops at its limit.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { summarizeTrash } from '../../src/local/trash-summary.js';

let dir: string;
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function put(rel: string, bytes: number): void {
  const abs = path.join(dir, rel);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, Buffer.alloc(bytes, 1));
}

describe('summarizeTrash', () => {
  it('is empty for a trash that does not exist yet', () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trash-sum-'));
    expect(summarizeTrash(path.join(dir, 'trash'))).toEqual({ dir: path.join(dir, 'trash'), files: 0, bytes: 0, oldestDay: null, newestDay: null, capped: false });
  });

  it('counts the files and bytes of every day folder, nested ones too, and names the oldest and newest day', () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trash-sum-'));
    put('2026-11-20/Docs/a.txt', 100);
    put('2026-11-20/Docs/deep/b.txt', 200);
    put('2026-11-26/c.txt', 5);
    fs.mkdirSync(path.join(dir, '2026-11-27')); // an empty day folder counts for nothing
    put('not-a-day/x.txt', 1000); // nothing the trash made
    expect(summarizeTrash(dir)).toEqual({ dir, files: 3, bytes: 305, oldestDay: '2026-11-20', newestDay: '2026-11-26', capped: false });
  });

  it('stops counting at its limit and says so', () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trash-sum-'));
    for (let i = 0; i < 5; i++) put(`2026-11-20/f${i}.txt`, 1);
    put('2026-11-25/g.txt', 1);
    const s = summarizeTrash(dir, 3);
    expect(s).toMatchObject({ files: 3, bytes: 3, capped: true, oldestDay: '2026-11-20', newestDay: '2026-11-25' });
  });
});
