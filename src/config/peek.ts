// The stateDir a config file names, read from a file that does not pass validation (a value out of range, an
// unknown key): `status` still finds the daemon's state through it (black-box round 31b, F3). Best effort, and
// never an error: null when the file cannot be read, is not YAML, or its stateDir is not a usable string.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { expandDocument } from './env.js';
import { resolveConfigPath } from './paths.js';
import { DEFAULT_STATE_DIR } from './schema.js';

export function peekStateDir(file: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch {
    return null;
  }
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) return null;
  // Only stateDir's own ${VAR}s matter: a problem elsewhere (an unset service variable) is not this one's.
  const problems = expandDocument(doc, env).filter((p) => p.path[0] === 'stateDir');
  if (problems.length > 0) return null;
  const data: unknown = doc.toJS({ maxAliasCount: 100 });
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return null;
  const value = (data as { stateDir?: unknown }).stateDir ?? DEFAULT_STATE_DIR;
  if (typeof value !== 'string' || value.trim() === '') return null;
  return resolveConfigPath(value, path.dirname(abs), env);
}
