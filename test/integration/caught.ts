// The BinderSyncError a call throws, failing the test when it throws nothing or something else.
import { expect } from 'vitest';
import { BinderSyncError } from '../../src/errors.js';

export function caught(fn: () => unknown): BinderSyncError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(BinderSyncError);
    return err as BinderSyncError;
  }
  throw new Error('expected a throw');
}
