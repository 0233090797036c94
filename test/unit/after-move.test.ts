// The steps after a move-local take the stat the move left (its new ctime), but only when they expected the
// very stat the move verified; see src/sync/after-move.ts.
import { describe, expect, it } from 'vitest';
import { expectingMovedFile, type SettledMove } from '../../src/sync/after-move.js';
import { download, moveLocal, upload, versionOf } from '../../src/sync/reconcile-steps.js';
import { statOf } from '../../src/sync/model.js';
import { World } from './reconcile-fixtures.js';

function scenario() {
  const w = new World();
  const file = w.file('A/old.txt', 'h-edit');
  const doc = w.doc('d1', 'A/new.txt', 'v2', 'fA');
  const moved = { ...file, relPath: doc.relPath, key: doc.key };
  const move = moveLocal(file, doc);
  if (move.kind !== 'move-local') throw new Error('not a move');
  const settled: SettledMove = { to: move.to, before: move.expectLocal, after: { ...move.expectLocal, ctimeMs: move.expectLocal.ctimeMs + 5 } };
  return { file, doc, moved, settled };
}

describe('expectingMovedFile', () => {
  it('an upload, a download and a conflict of the moved file expect the stat the move left', () => {
    const { doc, moved, settled } = scenario();
    const up = expectingMovedFile(upload(moved, versionOf(doc), 'local-modified', 'd1'), settled);
    expect(up.kind === 'upload' && statOf(up.local)).toEqual(settled.after);
    expect(up.kind === 'upload' && up.local.sha256).toBe('h-edit'); // the rest of the file's record is kept
    const down = expectingMovedFile(download(doc, statOf(moved), 'remote-modified'), settled);
    expect(down.kind === 'download' && down.expectLocal).toEqual(settled.after);
  });

  it('a step that expected something else, or another path, or no file, is left as planned', () => {
    const { doc, moved, settled } = scenario();
    const other = { ...moved, size: moved.size + 1 };
    const up = upload(other, versionOf(doc), 'local-modified', 'd1');
    expect(expectingMovedFile(up, settled)).toBe(up);
    const elsewhere = upload({ ...moved, relPath: 'B/x.txt' }, versionOf(doc), 'new-local', null);
    expect(expectingMovedFile(elsewhere, settled)).toBe(elsewhere);
    const fresh = download(doc, null, 'new-remote');
    expect(expectingMovedFile(fresh, settled)).toBe(fresh);
  });
});
