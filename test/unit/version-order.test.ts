// Which versions came before or between others, whichever way the service lists them (spec 4.11 leaves it open).
import { describe, expect, it } from 'vitest';
import { versionsBefore, versionsBetween, versionsBeyond } from '../../src/sync/version-order.js';

const list = (...ids: string[]) => ids.map((id) => ({ id, documentId: 'D' }));
const ids = (vs: Array<{ id: string }> | null) => (vs === null ? null : vs.map((v) => v.id));

describe('versionsBetween', () => {
  it('is the same set, newest first, for a list in either direction', () => {
    expect(ids(versionsBetween(list('v1', 'v2', 'v3', 'v4'), 'v1', 'v4'))).toEqual(['v3', 'v2']);
    expect(ids(versionsBetween(list('v4', 'v3', 'v2', 'v1'), 'v1', 'v4'))).toEqual(['v3', 'v2']);
  });
  it('is empty for neighbours and null when either version is missing', () => {
    expect(ids(versionsBetween(list('v1', 'v2'), 'v1', 'v2'))).toEqual([]);
    expect(versionsBetween(list('v1', 'v2'), 'v0', 'v2')).toBeNull();
    expect(versionsBetween(list('v1', 'v2'), 'v1', 'v9')).toBeNull();
  });
});

describe('versionsBeyond', () => {
  it('is what the list puts after the newer one, nearest first, in either direction', () => {
    expect(ids(versionsBeyond(list('v1', 'v2', 'v3', 'v4'), 'v1', 'v2'))).toEqual(['v3', 'v4']);
    expect(ids(versionsBeyond(list('v4', 'v3', 'v2', 'v1'), 'v1', 'v2'))).toEqual(['v3', 'v4']);
    expect(ids(versionsBeyond(list('v1', 'v2'), 'v1', 'v2'))).toEqual([]);
    expect(versionsBeyond(list('v1', 'v2'), 'v1', 'v9')).toBeNull();
  });
});

describe('versionsBefore', () => {
  it('walks away from the latest when it is at either end', () => {
    expect(ids(versionsBefore(list('v1', 'v2', 'v3'), 'v3'))).toEqual(['v2', 'v1']);
    expect(ids(versionsBefore(list('v3', 'v2', 'v1'), 'v3'))).toEqual(['v2', 'v1']);
    expect(ids(versionsBefore(list('v1'), 'v1'))).toEqual([]);
  });
  it('is null when the latest is missing or in the middle (the direction cannot be told)', () => {
    expect(versionsBefore(list('v1', 'v2'), 'v9')).toBeNull();
    expect(versionsBefore(list('v1', 'v3', 'v2'), 'v3')).toBeNull();
  });
});
