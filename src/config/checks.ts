// Checks across keys that a per-field schema cannot express: exactly one secret source, unique pair names,
// no nested sync roots, no root inside stateDir (or the reverse). They run on the env-expanded data even
// when the schema found other problems, so that every problem is reported at once.
import { DEFAULT_STATE_DIR } from './schema.js';
import type { ConfigProblem } from './issues.js';
import { canonicalPath, isSameOrInside, resolveConfigPath } from './paths.js';

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const usable = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '';

export function crossChecks(data: unknown, baseDir: string, env: NodeJS.ProcessEnv): ConfigProblem[] {
  if (!isRecord(data)) return [];
  const problems: ConfigProblem[] = [];

  const service = data.service;
  if (isRecord(service)) {
    const hasSecret = service.clientSecret !== undefined;
    const hasFile = service.clientSecretFile !== undefined;
    if (hasSecret && hasFile) {
      problems.push({ path: ['service', 'clientSecretFile'], message: 'set either clientSecret or clientSecretFile, not both' });
    } else if (!hasSecret && !hasFile) {
      problems.push({ path: ['service', 'clientSecret'], message: 'is required (or set service.clientSecretFile)' });
    }
  }

  const stateDirValue = data.stateDir === undefined ? DEFAULT_STATE_DIR : data.stateDir;
  const stateDir = usable(stateDirValue) ? canonicalPath(resolveConfigPath(stateDirValue, baseDir, env)) : null;
  const pairs = Array.isArray(data.pairs) ? data.pairs : [];
  const names = new Map<string, number>();
  const roots: Array<{ index: number; abs: string }> = [];

  pairs.forEach((pair, index) => {
    if (!isRecord(pair)) return;
    if (typeof pair.name === 'string') {
      // Compared without case: the state files named after pairs may live on a case-insensitive disk.
      const folded = pair.name.toLowerCase();
      const first = names.get(folded);
      if (first === undefined) names.set(folded, index);
      else problems.push({ path: ['pairs', index, 'name'], message: `duplicate pair name "${pair.name}" (also pairs[${first}].name)` });
    }
    if (!usable(pair.localPath)) return;
    const abs = canonicalPath(resolveConfigPath(pair.localPath, baseDir, env));
    for (const other of roots) {
      if (abs === other.abs) {
        problems.push({ path: ['pairs', index, 'localPath'], message: `is the same directory as pairs[${other.index}].localPath (${abs})` });
      } else if (isSameOrInside(abs, other.abs) || isSameOrInside(other.abs, abs)) {
        // Overlapping roots would let one pair sync (or trash) the other's files.
        problems.push({
          path: ['pairs', index, 'localPath'],
          message: `overlaps pairs[${other.index}].localPath (${abs} and ${other.abs}); sync roots must not be nested`,
        });
      }
    }
    roots.push({ index, abs });
    if (stateDir !== null) {
      if (isSameOrInside(abs, stateDir)) {
        problems.push({ path: ['pairs', index, 'localPath'], message: `must not be inside stateDir (${stateDir})` });
      } else if (isSameOrInside(stateDir, abs)) {
        problems.push({ path: ['stateDir'], message: `must not be inside pairs[${index}].localPath (${abs})` });
      }
    }
  });
  return problems;
}
