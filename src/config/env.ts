// ${ENV_VAR} expansion in every string value of the parsed config, before validation.
// Supports ${NAME}, ${NAME:-default} (default when unset or empty, as in sh) and $${ for a literal ${.
import { Scalar, isPair, isScalar, isSeq, visit, type Document } from 'yaml';
import type { KeyPath } from './key-path.js';

export interface EnvProblem {
  path: KeyPath;
  message: string;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Expands one string; problems are returned as messages (the caller adds the key path). */
export function expandString(text: string, env: NodeJS.ProcessEnv): { value: string; problems: string[] } {
  const problems: string[] = [];
  let out = '';
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      out += '${';
      i += 3;
      continue;
    }
    if (!text.startsWith('${', i)) {
      out += text[i];
      i += 1;
      continue;
    }
    const end = text.indexOf('}', i + 2);
    if (end < 0) {
      problems.push('unterminated ${ (write $${ for a literal ${)');
      out += text.slice(i);
      break;
    }
    const body = text.slice(i + 2, end);
    const sep = body.indexOf(':-');
    const name = sep < 0 ? body : body.slice(0, sep);
    if (!NAME.test(name)) {
      problems.push(`invalid environment variable reference \${${body.slice(0, 40)}}`);
    } else {
      const val = env[name];
      if (sep >= 0) out += val === undefined || val === '' ? body.slice(sep + 2) : val;
      else if (val === undefined) problems.push(`environment variable ${name} is not set`);
      else out += val;
    }
    i = end + 1;
  }
  return { value: out, problems };
}

/**
 * Expands every string scalar (values only, never keys) of a parsed YAML document in place. An unquoted
 * scalar that contained a reference is then typed as YAML would type the substituted text, so
 * `port: ${PORT}` is a number while `tenantId: "${TENANT}"` stays a string. Null is never produced.
 */
export function expandDocument(doc: Document, env: NodeJS.ProcessEnv): EnvProblem[] {
  const problems: EnvProblem[] = [];
  visit(doc, {
    Scalar(key, node, ancestors) {
      if (key === 'key' || typeof node.value !== 'string' || !node.value.includes('$')) return;
      const original = node.value;
      const r = expandString(original, env);
      for (const message of r.problems) problems.push({ path: keyPathOf(ancestors, node), message });
      node.value = node.type === Scalar.PLAIN && original.includes('${') ? retype(r.value) : r.value;
    },
  });
  return problems;
}

const INT = /^[-+]?[0-9]+$/;
const FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
const BOOL = /^(true|True|TRUE|false|False|FALSE)$/;

function retype(text: string): string | number | boolean {
  if (INT.test(text) || FLOAT.test(text)) return Number(text);
  if (BOOL.test(text)) return text.toLowerCase() === 'true';
  return text;
}

/** Key path of a node from the visitor's ancestor chain (Document, maps, pairs, sequences). */
function keyPathOf(ancestors: readonly unknown[], node: unknown): KeyPath {
  const chain = [...ancestors, node];
  const out: PropertyKey[] = [];
  for (let i = 0; i < chain.length - 1; i++) {
    const parent = chain[i];
    const child = chain[i + 1];
    if (isPair(parent)) out.push(isScalar(parent.key) ? String(parent.key.value) : String(parent.key));
    else if (isSeq(parent)) out.push(parent.items.indexOf(child as never));
  }
  return out;
}

/** The environment variables a raw string value reads (${NAME} and ${NAME:-default}; $${ is a literal), in order, once each. */
export function envReferences(text: string): string[] {
  const names: string[] = [];
  for (const m of text.matchAll(/\$?\$\{([^}:]*)(?::-[^}]*)?\}/g)) {
    const name = m[1] ?? '';
    if (!m[0].startsWith('$$') && NAME.test(name) && !names.includes(name)) names.push(name);
  }
  return names;
}

/** True when a raw string value is nothing but environment references (so the file holds no literal secret). */
export function isOnlyEnvReference(text: string): boolean {
  return /^(\$\{[^}]*\})+$/.test(text.trim());
}
