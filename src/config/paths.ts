// Path rules of the config: relative paths resolve against the config file's directory (never the cwd),
// '~/' is the home directory, and nested roots are detected on real paths (symlinks followed).
import { realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Absolute, normalized path for a config value. */
export function resolveConfigPath(value: string, baseDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const home = env.HOME !== undefined && env.HOME !== '' ? env.HOME : os.homedir();
  if (value === '~') return path.resolve(home);
  if (value.startsWith('~/')) return path.resolve(home, value.slice(2));
  return path.resolve(baseDir, value);
}

/**
 * The path with symlinks resolved as far as it exists: the deepest existing ancestor goes through
 * realpath and the missing rest is appended (stateDir and local roots may not exist yet).
 */
export function canonicalPath(absPath: string): string {
  let existing = path.resolve(absPath);
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(realpathSync(existing), ...rest.reverse());
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) return path.resolve(absPath);
      rest.push(path.basename(existing));
      existing = parent;
    }
  }
}

/** True when `inner` is `outer` itself or lies below it. */
export function isSameOrInside(inner: string, outer: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
