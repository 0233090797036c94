// check's access line for a read-only client: what it means depends on the pairs' directions.
import { describe, expect, it } from 'vitest';
import { readOnlyAccess } from '../../src/cli/check-command.js';

describe('readOnlyAccess', () => {
  it('passes when every pair only downloads', () => {
    expect(readOnlyAccess([{ name: 'a', direction: 'download' }, { name: 'b', direction: 'download' }])).toMatchObject({ outcome: 'PASS', message: 'read-only, which is enough: every pair only downloads' });
  });

  it('names every two-way pair that runs download-only', () => {
    const r = readOnlyAccess([{ name: 'a', direction: 'both' }, { name: 'b', direction: 'download' }, { name: 'c', direction: 'both' }]);
    expect(r).toMatchObject({ outcome: 'WARN', message: 'read-only: pairs a, c run download-only, local changes are not uploaded' });
    expect(readOnlyAccess([{ name: 'a', direction: 'both' }]).message).toBe('read-only: pair a runs download-only, local changes are not uploaded');
  });

  it('warns without naming pairs when only upload pairs would write (each fails on its own line)', () => {
    expect(readOnlyAccess([{ name: 'u', direction: 'upload' }, { name: 'd', direction: 'download' }])).toMatchObject({ outcome: 'WARN', message: 'read-only' });
  });
});
