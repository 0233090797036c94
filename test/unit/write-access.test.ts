// The trial upload a pair sends first after the service refused commits for lack of write access.
import { describe, expect, it } from 'vitest';
import type { Action, Plan } from '../../src/sync/model.js';
import { pickTrialUpload, withoutGroup } from '../../src/sync/write-access.js';

const upload = (relPath: string, size: number): Action => ({ kind: 'upload', relPath, local: { relPath, size } }) as unknown as Action;
const other = (kind: 'download' | 'move-local' | 'conflict', relPath: string): Action => ({ kind, relPath, local: { size: 1 } }) as unknown as Action;
const planOf = (groups: Action[][]): Plan => ({ groups, issues: [], blocked: null });

describe('pickTrialUpload', () => {
  it('picks the lone upload of the smallest file', () => {
    const small = [upload('b.txt', 10)];
    const plan = planOf([[upload('a.txt', 500)], [other('download', 'x.txt')], small, [upload('c.txt', 11)]]);
    expect(pickTrialUpload(plan)).toBe(small);
  });

  it('never picks a group in which the upload goes with another step, nor anything but an upload', () => {
    const lone = [upload('big.txt', 9000)];
    const plan = planOf([[other('move-local', 'm.txt'), upload('m.txt', 1)], [other('conflict', 'k.txt')], [other('download', 'd.txt')], lone]);
    expect(pickTrialUpload(plan)).toBe(lone);
    expect(pickTrialUpload(planOf([[other('move-local', 'm.txt'), upload('m.txt', 1)], [other('download', 'd.txt')]]))).toBeNull();
    expect(pickTrialUpload(planOf([]))).toBeNull();
  });

  it('takes the first of equal sizes, and withoutGroup leaves exactly the others in order', () => {
    const first = [upload('a.txt', 7)];
    const second = [upload('b.txt', 7)];
    const d = [other('download', 'd.txt')];
    const plan = planOf([d, first, second]);
    expect(pickTrialUpload(plan)).toBe(first);
    expect(withoutGroup(plan, first).groups).toEqual([d, second]);
    expect(withoutGroup(plan, first).groups[1]).toBe(second);
  });
});
