// Turns zod issues into the config's "<key.path>: <what is wrong>" lines, including "unknown key; did you
// mean X?" suggestions taken from the schema's own key list.
import type { z } from 'zod';
import { formatPath, type KeyPath } from './key-path.js';

/** A problem in the config, tied to a key path. */
export interface ConfigProblem {
  path: KeyPath;
  message: string;
}

export function problemLine(p: ConfigProblem): string {
  return `${formatPath(p.path)}: ${p.message}`;
}

/** Per-parse zod error map: the wording of every generic message (schemas override a few). */
export function configErrorMap(iss: z.core.$ZodRawIssue): string | undefined {
  const got = describeInput(iss.input);
  switch (iss.code) {
    case 'invalid_type': {
      if (iss.input === undefined) return 'is required';
      if (iss.expected === 'int') return `must be an integer (got ${got})`;
      const hint = iss.expected === 'string' && typeof iss.input === 'number' ? '; put it in quotes' : '';
      return `must be ${expectedName(String(iss.expected))} (got ${got}${hint})`;
    }
    case 'invalid_value':
      return `must be one of ${iss.values.map(String).join(', ')} (got ${showValue(iss.input)})`;
    case 'too_small': {
      const min = Number(iss.minimum);
      if (iss.origin === 'array') return min === 1 ? 'must list at least one entry' : `must list at least ${min} entries`;
      if (iss.origin === 'string') return 'must not be empty';
      return `must be ${iss.inclusive === false ? 'greater than' : 'at least'} ${min} (got ${showValue(iss.input)})`;
    }
    case 'too_big': {
      const max = Number(iss.maximum);
      if (iss.origin === 'array') return `must list at most ${max} entries`;
      if (iss.origin === 'string') return `must be at most ${max} characters`;
      return `must be ${iss.inclusive === false ? 'less than' : 'at most'} ${max} (got ${showValue(iss.input)})`;
    }
    case 'invalid_format':
      return 'has an invalid format';
    case 'invalid_union':
      return 'has an invalid value';
    case 'invalid_key':
      return 'has an invalid key';
    case 'unrecognized_keys':
      return 'unknown key'; // replaced by one line per key in zodProblems
    default:
      return undefined;
  }
}

/** Converts zod issues to problems; an unrecognized-keys issue becomes one problem per key. */
export function zodProblems(issues: readonly z.core.$ZodIssue[], root: z.core.$ZodType): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  for (const iss of issues) {
    if (iss.code === 'unrecognized_keys') {
      const known = knownKeysAt(root, iss.path);
      for (const key of iss.keys) {
        const suggestion = suggestKey(key, known);
        out.push({ path: [...iss.path, key], message: `unknown key${suggestion ? `; did you mean ${suggestion}?` : ''}` });
      }
    } else {
      out.push({ path: iss.path, message: iss.message });
    }
  }
  return out;
}

/** The closest known key within edit distance 2 (case differences count as nothing), else undefined. */
export function suggestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    const d = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

export function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0] ?? 0;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j] ?? 0;
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      prev[j] = Math.min(up + 1, (prev[j - 1] ?? 0) + 1, diag + cost);
      diag = up;
    }
  }
  return prev[b.length] ?? 0;
}

/** Keys of the object schema found at `path` (array indices step into the element schema). */
function knownKeysAt(root: z.core.$ZodType, path: KeyPath): string[] {
  let node: z.core.$ZodType | undefined = unwrap(root);
  for (const seg of path) {
    if (!node) return [];
    const def = node._zod.def as unknown as Record<string, unknown>;
    if (typeof seg === 'number' && def.type === 'array') node = unwrap(def.element as z.core.$ZodType);
    else if (def.type === 'object') node = unwrap((def.shape as Record<string, z.core.$ZodType>)[String(seg)]);
    else return [];
  }
  const def = node?._zod.def as unknown as Record<string, unknown> | undefined;
  return def?.type === 'object' ? Object.keys(def.shape as object) : [];
}

/** Steps through optional/default/prefault/pipe wrappers to the schema that holds the shape. */
function unwrap(schema: z.core.$ZodType | undefined): z.core.$ZodType | undefined {
  let node = schema;
  for (let i = 0; node && i < 10; i++) {
    const def = node._zod.def as unknown as Record<string, unknown>;
    if (def.innerType) node = def.innerType as z.core.$ZodType;
    else if (def.type === 'pipe') node = def.in as z.core.$ZodType;
    else break;
  }
  return node;
}

function expectedName(expected: string): string {
  if (expected === 'object') return 'a mapping';
  if (expected === 'array') return 'a list';
  if (expected === 'boolean') return 'true or false';
  return `a ${expected}`;
}

function describeInput(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'a list';
  if (typeof input === 'object') return 'a mapping';
  if (typeof input === 'string') return 'a string';
  return typeof input;
}

/** Values shown in messages are short and never from secret fields (only enums and numbers get here). */
function showValue(input: unknown): string {
  const text = typeof input === 'string' || typeof input === 'number' ? JSON.stringify(input) : describeInput(input);
  return text.length > 42 ? `${text.slice(0, 40)}…"` : text;
}
