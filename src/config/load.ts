// Loads the YAML config: read -> YAML parse -> ${ENV} expansion -> schema -> cross-key checks -> resolved
// Config. Every problem is collected and thrown at once as a ConfigError, one "<key.path>: <message>" line each.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { BinderSyncError } from '../errors.js';
import { crossChecks } from './checks.js';
import { envReferences, expandDocument, isOnlyEnvReference } from './env.js';
import { configErrorMap, problemLine, zodProblems, type ConfigProblem } from './issues.js';
import { resolveConfigPath } from './paths.js';
import { configFileSchema, type Config, type ParsedConfigFile } from './schema.js';

/** A config that cannot be used. `problems` holds one line per problem (e.g. "pairs[0].name: is required"). */
export class ConfigError extends BinderSyncError {
  readonly problems: string[];

  constructor(source: string, problems: string[], code = 'CONFIG_INVALID', hint?: string) {
    const head = problems.length === 1 ? `config ${source}: ${problems[0]}` : `invalid config ${source}:\n  ${problems.join('\n  ')}`;
    super(head, {
      code,
      retryable: false,
      // One problem is on the same line as the hint, or just above it: nothing is "listed" (round 31b, F8).
      hint: hint ?? `${problems.length === 1 ? 'fix it' : 'fix the problems listed above'}; every option is described in sync.config.example.yaml`,
      context: { source },
    });
    this.problems = problems;
  }
}

/** The resolved config and the non-fatal findings a user should see (e.g. a secret readable by others). */
export interface LoadedConfig {
  config: Config;
  warnings: string[];
}

export interface ParseOptions {
  /** Directory relative paths resolve against (the config file's directory). */
  baseDir: string;
  env?: NodeJS.ProcessEnv;
  /** Name used in messages, usually the file path. */
  sourceName?: string;
  /**
   * For commands that read only local state (`status`): the service section is not resolved or checked (its
   * ${VAR}s may be unset in this shell, its secret file unreadable by this user), and a placeholder stands in.
   */
  localOnly?: boolean;
}

/** What stands in for the service section under ParseOptions.localOnly: valid, and never contacted. */
const LOCAL_ONLY_SERVICE = { baseUrl: 'http://service.invalid/', authUrl: 'http://service.invalid/', tenantId: '-', clientId: '-', clientSecret: '-' };

/**
 * Reads and resolves a config file. Throws ConfigError: CONFIG_NOT_FOUND (no such file), CONFIG_UNREADABLE
 * (permissions, a directory...), CONFIG_INVALID (anything wrong with the contents, all problems listed).
 */
export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env, opts: { localOnly?: boolean } = {}): LoadedConfig {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new ConfigError(abs, ['file not found'], 'CONFIG_NOT_FOUND', 'create it from sync.config.example.yaml, or pass --config <file>');
    }
    const why = code === 'EISDIR' ? 'is a directory, not a file' : code === 'EACCES' ? 'permission denied' : `cannot be read (${code ?? 'error'})`;
    throw new ConfigError(abs, [why], 'CONFIG_UNREADABLE', 'check the path and the file permissions');
  }
  const loaded = parseConfigText(text, { baseDir: path.dirname(abs), env, sourceName: abs, ...(opts.localOnly === true ? { localOnly: true } : {}) });
  if (containsLiteralSecret(text) && readableByOthers(abs)) {
    loaded.warnings.unshift(`config file is readable by others and contains a secret; chmod 600 ${abs}`);
  }
  return loaded;
}

/** Parses config text as if it were a file in `opts.baseDir`. Throws ConfigError (CONFIG_INVALID). */
export function parseConfigText(text: string, opts: ParseOptions): LoadedConfig {
  const source = opts.sourceName ?? '<config>';
  const env = opts.env ?? process.env;
  const warnings: string[] = [];

  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      source,
      doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        const where = pos ? `line ${pos.line}, column ${pos.col}: ` : '';
        const what = (e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
        return `${where}YAML syntax error: ${what}`;
      }),
    );
  }
  for (const w of doc.warnings) warnings.push(`${source}: ${w.message.split('\n')[0] ?? ''}`);
  if (doc.contents === null) {
    throw new ConfigError(source, ['the file is empty; see sync.config.example.yaml for a starting point']);
  }
  // Where the secret comes from, for the hint of a refused secret (black-box round 32b, F6): read before expansion.
  const rawSecret = doc.getIn(['service', 'clientSecret']);
  const secretEnv = typeof rawSecret === 'string' ? envReferences(rawSecret) : [];
  let envProblems = expandDocument(doc, env);
  let data: unknown = doc.toJS({ maxAliasCount: 100 });
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    const got = Array.isArray(data) ? 'a list' : data === null ? 'null' : `a ${typeof data}`;
    throw new ConfigError(source, [`the file must be a YAML mapping of keys (service, stateDir, pairs...), got ${got}`]);
  }
  if (opts.localOnly === true) {
    data = { ...data, service: LOCAL_ONLY_SERVICE };
    envProblems = envProblems.filter((p) => p.path[0] !== 'service');
  }

  const problems: ConfigProblem[] = [...envProblems];
  const result = configFileSchema.safeParse(data, { reportInput: true, error: configErrorMap });
  if (!result.success) {
    // A value whose ${VAR} could not be expanded is already reported; its schema message would only repeat it.
    const envPaths = new Set(envProblems.map((p) => JSON.stringify(p.path)));
    problems.push(...zodProblems(result.error.issues, configFileSchema).filter((p) => !envPaths.has(JSON.stringify(p.path))));
  }
  problems.push(...crossChecks(data, opts.baseDir, env));

  const secret = result.success ? resolveSecret(result.data, opts.baseDir, env, problems, warnings) : null;
  if (problems.length > 0 || !result.success || secret === null) {
    throw new ConfigError(source, dedupe(problems.map(problemLine)));
  }
  const parsed = result.data;
  const config: Config = {
    ...parsed,
    stateDir: resolveConfigPath(parsed.stateDir, opts.baseDir, env),
    service: { ...withoutSecretKeys(parsed.service), clientSecret: secret.value, clientSecretFile: secret.file, clientSecretEnv: secret.file === null ? secretEnv : [] },
    pairs: parsed.pairs.map((p) => ({ ...p, localPath: resolveConfigPath(p.localPath, opts.baseDir, env) })),
  };
  const binders = new Map<string, string>();
  for (const p of config.pairs) {
    const other = binders.get(p.binderId);
    if (other !== undefined) warnings.push(`pairs ${other} and ${p.name} both sync binder ${p.binderId}; their changes will meet in the binder`);
    else binders.set(p.binderId, p.name);
  }
  return { config, warnings };
}

/** The secret from clientSecret or from the file; records a problem (and returns null) when it cannot be read. */
function resolveSecret(
  data: ParsedConfigFile,
  baseDir: string,
  env: NodeJS.ProcessEnv,
  problems: ConfigProblem[],
  warnings: string[],
): { value: string; file: string | null } | null {
  const { clientSecret, clientSecretFile } = data.service;
  if (clientSecret !== undefined) return { value: clientSecret, file: null };
  if (clientSecretFile === undefined) return null; // reported by crossChecks
  const file = resolveConfigPath(clientSecretFile, baseDir, env);
  const at = ['service', 'clientSecretFile'];
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'file not found' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'permission denied' : `cannot be read (${code ?? 'error'})`;
    problems.push({ path: at, message: `${why}: ${file}` });
    return null;
  }
  const value = text.replace(/(\r?\n)+$/, '');
  if (value.trim() === '') {
    problems.push({ path: at, message: `file is empty: ${file}` });
    return null;
  }
  // Group-readable too: unlike the config (0640 root:binder-sync), the secret file has no reader but the daemon's
  // own user, so a group that may read it is one too many (OPERATIONS section 3; black-box round 31b, F6).
  const who = secretReaders(file);
  if (who !== null) warnings.push(`secret file is readable by ${who}; chmod 600 ${file}`);
  return { value, file };
}

function withoutSecretKeys(service: ParsedConfigFile['service']): Omit<ParsedConfigFile['service'], 'clientSecret' | 'clientSecretFile'> {
  const { clientSecret: _s, clientSecretFile: _f, ...rest } = service;
  return rest;
}

/** True when the file text sets clientSecret to a literal (not only ${ENV} references). */
function containsLiteralSecret(text: string): boolean {
  const doc = parseDocument(text);
  const value = doc.getIn(['service', 'clientSecret']);
  return typeof value === 'string' && value !== '' && !isOnlyEnvReference(value);
}

/** "others", "its group" or null: who besides the file's owner may read it by its mode bits. */
function secretReaders(file: string): string | null {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    return null;
  }
  if ((mode & 0o004) !== 0) return 'others';
  return (mode & 0o040) !== 0 ? `its group (mode ${(mode & 0o777).toString(8).padStart(4, '0')})` : null;
}

function readableByOthers(file: string): boolean {
  try {
    // World-readable only: a 0640 file owned by root:binder-sync (the systemd setup) is fine.
    return (statSync(file).mode & 0o004) !== 0;
  } catch {
    return false;
  }
}

function dedupe(lines: string[]): string[] {
  return [...new Set(lines)];
}
