// refusalReason: what a refused commit complains about, read from field names (or, without them, from text).
import { describe, expect, it } from 'vitest';
import { refusalReason } from '../../src/service/client.js';
import { ServiceError } from '../../src/service/errors.js';

const refused = (problem: ServiceError['problem']) =>
  new ServiceError('refused', { code: 'SERVICE_BAD_REQUEST', retryable: false, request: 'POST /x', status: 400, ...(problem ? { problem } : {}) });

describe('refusalReason', () => {
  it('field paths made of spelling fields only are spelling complaints, and tell which spelling', () => {
    expect(refusalReason(refused({ errors: { version: ['Unknown field.'], additionalMetadata: ['Unknown field.'] } }))).toEqual({ named: true, other: false, spelling: true, referenceKeys: true, walkthroughKeys: false });
    expect(refusalReason(refused({ errors: { '$.versionLabel': ['unknown'], 'metadata[0].valueId': ['unknown'] } }))).toMatchObject({ spelling: true, other: false, referenceKeys: false, walkthroughKeys: true });
    expect(refusalReason(refused({ errors: { VersionLabel: ['x'] } }))).toMatchObject({ spelling: true, walkthroughKeys: true });
  });

  it('an entry of a metadata array, or any other field, is a reason of its own', () => {
    expect(refusalReason(refused({ errors: { 'metadata.0': ["Unknown metadata element 'X'."] } }))).toMatchObject({ named: true, other: true, spelling: false });
    expect(refusalReason(refused({ errors: { fileName: ['bad'], versionLabel: ['Unknown field.'] } }))).toMatchObject({ other: true, spelling: true });
  });

  it('without field names, texts naming a spelling field are spelling complaints; others are reasons', () => {
    expect(refusalReason(refused({ detail: 'Unknown property versionLabel' }))).toMatchObject({ named: false, spelling: true, walkthroughKeys: true, other: false });
    expect(refusalReason(refused({ detail: 'Validation failed: {"version":["Unknown field."]}' }))).toMatchObject({ spelling: true, referenceKeys: true });
    expect(refusalReason(refused({ detail: 'the file name may not contain a backslash; version not created' }))).toMatchObject({ spelling: false, other: true });
    expect(refusalReason(refused({ errors: { '': ['additionalMetadata is not allowed'] } }))).toMatchObject({ named: false, spelling: true, referenceKeys: true });
    expect(refusalReason(refused(undefined))).toEqual({ named: false, other: false, spelling: false, referenceKeys: false, walkthroughKeys: false });
  });
});
