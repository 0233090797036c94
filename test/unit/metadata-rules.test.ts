// compileMetadataRules: names resolve exactly before loosely, anything that names more than one element or value
// is refused (it would attach a value to the wrong element with nothing to say so), and accepts() tells which of
// a document's own values the binder still takes.
import { describe, expect, it } from 'vitest';
import { BinderSyncError } from '../../src/errors.js';
import type { MetadataElement } from '../../src/service/schemas.js';
import { compileMetadataRules, type MetadataRule } from '../../src/sync/metadata-rules.js';

const elements: MetadataElement[] = [
  { id: 'GLOBAL_BinderId', label: 'Binder', required: true },
  { id: 'CUST_Owner', label: 'Owner', required: true },
  { id: 'CUST_owner2', label: 'OWNER' },
  { id: 'CUST_S1', label: 'Status' },
  { id: 'CUST_S2', label: 'Status' },
  { id: 'CUST_Dept', label: 'Department', allowedValues: [{ id: 'd-eng', label: 'Engineering' }, { id: 'd-fin', label: 'Finance' }] },
  { id: 'CUST_Dup', label: 'DupLbl', allowedValues: [{ id: 'v1', label: 'Same' }, { id: 'v2', label: 'Same' }] },
] as MetadataElement[];

function problemsOf(rules: MetadataRule[]): string[] {
  try {
    compileMetadataRules(rules, elements, 'main');
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(BinderSyncError);
    expect((err as BinderSyncError).code).toBe('METADATA_RULES_INVALID');
    return (err as Error).message.split('\n').slice(1).map((l) => l.trim());
  }
}

const sent = (values: Record<string, string>, relPath = 'a.txt') => compileMetadataRules([{ match: '**', values: { Owner: 'o', ...values } }], elements, 'main').forPath(relPath);

describe('compileMetadataRules: which element and value a name means', () => {
  it.each([
    ['an exact label before the same label in another case', { OWNER: 'upper' }, { metadataElementId: 'CUST_owner2', value: 'upper' }],
    ['an id before a label', { CUST_S1: 'x' }, { metadataElementId: 'CUST_S1', value: 'x' }],
    ['a label in another case when only one element has it', { department: 'finance' }, { metadataElementId: 'CUST_Dept', value: 'd-fin' }],
    ['an id in another case when nothing matches exactly', { cust_dept: 'd-eng' }, { metadataElementId: 'CUST_Dept', value: 'd-eng' }],
    ['a value id before a value label', { Department: 'd-fin' }, { metadataElementId: 'CUST_Dept', value: 'd-fin' }],
    ['a value label exactly', { Department: 'Engineering' }, { metadataElementId: 'CUST_Dept', value: 'd-eng' }],
    ['a value id where labels are shared', { DupLbl: 'v2' }, { metadataElementId: 'CUST_Dup', value: 'v2' }],
  ])('%s', (_what, values, expected) => {
    expect(sent(values)).toContainEqual(expected);
    expect(sent(values)).toContainEqual({ metadataElementId: 'CUST_Owner', value: 'o' });
  });

  it('refuses a key that names two elements, a value that names two values, and two keys for one element, naming the candidates', () => {
    expect(problemsOf([{ match: '**', values: { Status: 'Draft' } }])).toEqual([
      'metadata[0].values.Status: names 2 metadata elements (CUST_S1 (Status), CUST_S2 (Status)); use the id of the one meant',
    ]);
    expect(problemsOf([{ match: '**', values: { DupLbl: 'Same' } }])).toEqual([
      'metadata[0].values.DupLbl: "Same" names 2 allowed values (v1, v2); use the value id (allowed: v1 (Same), v2 (Same))',
    ]);
    expect(problemsOf([{ match: '**', values: { Owner: 'o', CUST_Owner: 'p' } }])).toEqual([
      'metadata[0].values: Owner and CUST_Owner both name the element CUST_Owner (Owner); keep one',
    ]);
    // The same element in two rules is an override, not a clash.
    expect(problemsOf([{ match: '**', values: { Owner: 'o' } }, { match: 'Docs/**', values: { CUST_Owner: 'p' } }])).toEqual([]);
  });

  it('lists every problem at once, unknown keys with the known elements', () => {
    const problems = problemsOf([{ match: '**', values: { Nope: 'x', Department: 'Marketing', GLOBAL_BinderId: 'b' } }]);
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^metadata\[0\]\.values\.Nope: no metadata element with this id or label on the binder \(known: GLOBAL_BinderId \(Binder\), CUST_Owner \(Owner\), /);
    expect(problems[1]).toBe('metadata[0].values.Department: "Marketing" is not an allowed value (allowed: d-eng (Engineering), d-fin (Finance))');
    expect(problems[2]).toBe('metadata[0].values.GLOBAL_BinderId: GLOBAL_ elements are set by the service, not by rules');
  });
});

describe('MetadataResolver.accepts: the document values a new version may carry', () => {
  const resolver = compileMetadataRules([], elements, 'main');
  it.each([
    ['free-form value of a defined element', 'CUST_Owner', 'anyone', true],
    ['enumerated value by id', 'CUST_Dept', 'd-fin', true],
    ['enumerated value by label', 'CUST_Dept', 'Finance', true],
    ['retired enumerated value', 'CUST_Dept', 'd-retired', false],
    ['element the binder no longer has', 'CUST_Gone', 'zz', false],
  ])('%s', (_what, id, value, ok) => {
    expect(resolver.accepts(id, value)).toBe(ok);
  });

  it('takes everything when the binder defines no elements (nothing to check against)', () => {
    expect(compileMetadataRules([], [], 'main').accepts('CUST_Gone', 'zz')).toBe(true);
  });
});

// Black-box round 30b, F6: rules' globs are matched as ignore rules are, in either Unicode form.
describe('compileMetadataRules: a match glob in one Unicode form', () => {
  it('applies to a path written in the other form', () => {
    const rules = (match: string) => compileMetadataRules([{ match: '**', values: { Owner: 'o' } }, { match, values: { Department: 'Finance' } }], elements, 'main');
    expect(rules('Caf\u00e9/**').forPath('Cafe\u0301/menu.txt')).toContainEqual({ metadataElementId: 'CUST_Dept', value: 'd-fin' });
    expect(rules('Cafe\u0301/**').forPath('Caf\u00e9/menu.txt')).toContainEqual({ metadataElementId: 'CUST_Dept', value: 'd-fin' });
    expect(rules('Cafe\u0301/**').forPath('Cafe/menu.txt')).not.toContainEqual({ metadataElementId: 'CUST_Dept', value: 'd-fin' });
  });
});
