// Loading valid configs: defaults, ${ENV} expansion, the secret file, path resolution against the config
// file's directory, overlapping roots through symlinks, warnings, and the file-level errors.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peekStateDir } from '../../src/config/peek.js';
import { ConfigError, loadConfig, parseConfigText } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { secretSourceOf } from '../../src/service/from-config.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'binder-sync-config-load-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MINIMAL = `
service:
  baseUrl: https://api.example.test/v1/
  authUrl: https://id.example.test
  tenantId: tenant-guid
  clientId: client
  clientSecret: \${SECRET}
pairs:
  - name: main
    localPath: ./local
    binderId: AbCdEfGhI
`;

function parse(text: string, env: NodeJS.ProcessEnv = { SECRET: 's' }, baseDir = dir) {
  return parseConfigText(text, { baseDir, env, sourceName: 'test.yaml' });
}
function problems(fn: () => unknown): { code: string; problems: string[] } {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { code: err.code, problems: err.problems };
  }
  throw new Error('no ConfigError thrown');
}
function write(name: string, text: string, mode = 0o600): string {
  const file = path.join(dir, name);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text, { mode });
  chmodSync(file, mode);
  return file;
}

describe('valid configs', () => {
  it('fills in every default and resolves durations and paths', () => {
    const { config, warnings } = parse(MINIMAL);
    const expected: Config = {
      service: {
        baseUrl: 'https://api.example.test/v1',
        authUrl: 'https://id.example.test',
        tenantId: 'tenant-guid',
        clientId: 'client',
        clientSecret: 's',
        clientSecretFile: null,
        clientSecretEnv: ['SECRET'],
        tenantHeader: 'x-service-tenantid',
        scope: 'service_public',
        maxConcurrentRequests: 8,
        requestsPerSecond: 100,
        maxConcurrentTransfers: 4,
        requestTimeout: 60_000,
      },
      stateDir: path.join(dir, 'state'),
      log: { level: 'info' },
      metrics: { host: '127.0.0.1' },
      pairs: [
        {
          name: 'main',
          localPath: path.join(dir, 'local'),
          binderId: 'AbCdEfGhI',
          direction: 'both',
          conflictPolicy: 'keep-both',
          localDeletePolicy: 'restore',
          maxDeleteShare: 0.5,
          ignore: [],
          pollInterval: 60_000,
          pollCpuBudget: 1,
          fullRescanInterval: 3_600_000,
          quietPeriod: 1_000,
          watcher: 'auto',
          trashRetentionDays: 30,
          versionLabel: { scheme: 'integer' },
          metadata: [],
          pageSize: 1000,
        },
      ],
    };
    expect(config).toEqual(expected);
    expect(warnings).toEqual([]);
  });

  it('keeps explicit values and converts every duration form to milliseconds', () => {
    const text = `${MINIMAL}    direction: download
    conflictPolicy: remote-wins
    pollInterval: 90
    fullRescanInterval: 1h30m
    maxDeleteShare: 1
    metadata:
      - match: "reports/**"
        values: { Category: Report, Year: 2024, Final: true }
  - name: two
    localPath: /tmp/../srv/two
    binderId: other-format-id
    pollInterval: 5s
    fullRescanInterval: 2d
service2: x
`.replace('service2: x\n', 'metrics: { port: 9464 }\nlog: { level: debug }\n');
    const { config } = parse(text);
    const [a, b] = config.pairs;
    expect(a).toMatchObject({ direction: 'download', conflictPolicy: 'remote-wins', pollInterval: 90_000, fullRescanInterval: 5_400_000, maxDeleteShare: 1 });
    expect(a?.metadata).toEqual([{ match: 'reports/**', values: { Category: 'Report', Year: '2024', Final: 'true' } }]);
    expect(b).toMatchObject({ name: 'two', localPath: '/srv/two', binderId: 'other-format-id', pollInterval: 5000, fullRescanInterval: 172_800_000 });
    expect(config.metrics).toEqual({ port: 9464, host: '127.0.0.1' });
    expect(config.log.level).toBe('debug');
  });

  it('accepts 250ms-style and bare-number durations', () => {
    const { config } = parse(MINIMAL.replace('  clientSecret', '  requestTimeout: 1500ms\n  clientSecret'));
    expect(config.service.requestTimeout).toBe(1500);
    expect(parse(MINIMAL.replace('  clientSecret', '  requestTimeout: 2.5\n  clientSecret')).config.service.requestTimeout).toBe(2500);
  });
});

describe('${ENV} expansion', () => {
  it('expands variables, defaults and literal $${', () => {
    const text = MINIMAL.replace('tenantId: tenant-guid', 'tenantId: "${TENANT}-x"')
      .replace('clientId: client', 'clientId: ${CLIENT:-fallback}')
      .replace('binderId: AbCdEfGhI', () => 'binderId: "$${NOT_A_VAR}"');
    const { config } = parse(text, { SECRET: 's', TENANT: 't1' });
    expect(config.service.tenantId).toBe('t1-x');
    expect(config.service.clientId).toBe('fallback');
    expect(config.pairs[0]?.binderId).toBe('${NOT_A_VAR}');
    expect(parse(text, { SECRET: 's', TENANT: 't1', CLIENT: 'set' }).config.service.clientId).toBe('set');
    expect(parse(text, { SECRET: 's', TENANT: 't1', CLIENT: '' }).config.service.clientId).toBe('fallback');
  });

  it('types an unquoted expanded value as YAML would; a quoted one stays a string', () => {
    const text = `${MINIMAL}metrics:\n  port: \${PORT}\n`.replace('tenantId: tenant-guid', 'tenantId: "${TENANT}"');
    const { config } = parse(text, { SECRET: 's', PORT: '9464', TENANT: '12345' });
    expect(config.metrics.port).toBe(9464);
    expect(config.service.tenantId).toBe('12345');
  });

  it('names the key and the variable when one is missing (and says nothing more about that key)', () => {
    const text = MINIMAL.replace('localPath: ./local', 'localPath: ${ROOT}/local');
    expect(problems(() => parse(text, {})).problems).toEqual([
      'service.clientSecret: environment variable SECRET is not set',
      'pairs[0].localPath: environment variable ROOT is not set',
    ]);
  });

  it('reports an unterminated reference', () => {
    expect(problems(() => parse(MINIMAL.replace('clientId: client', 'clientId: "${OOPS"'))).problems).toEqual([
      'service.clientId: unterminated ${ (write $${ for a literal ${)',
    ]);
  });

  it('leaves keys alone and a lone $ as it is', () => {
    const { config } = parse(MINIMAL.replace('clientId: client', () => 'clientId: "pa$$word $x"'));
    expect(config.service.clientId).toBe('pa$$word $x');
  });
});

describe('where the secret comes from, for the hint of a refused secret (black-box round 32b, F6)', () => {
  it('records the environment variables clientSecret is written as, none for a literal or a file', () => {
    expect(parse(MINIMAL).config.service.clientSecretEnv).toEqual(['SECRET']);
    const twice = parse(MINIMAL.replace('clientSecret: ${SECRET}', 'clientSecret: "${A:-x}${SECRET}-${A}"'), { SECRET: 's', A: 'a' }).config.service;
    expect(twice.clientSecretEnv).toEqual(['A', 'SECRET']);
    expect(parse(MINIMAL.replace('clientSecret: ${SECRET}', 'clientSecret: literal')).config.service.clientSecretEnv).toEqual([]);
    const escaped = parse(MINIMAL.replace('clientSecret: ${SECRET}', () => 'clientSecret: "pa$${SECRET}"')).config.service;
    expect([escaped.clientSecret, escaped.clientSecretEnv]).toEqual(['pa${SECRET}', []]);
    write('secrets/hint', 'from-file\n');
    const file = parse(MINIMAL.replace('clientSecret: ${SECRET}', 'clientSecretFile: secrets/hint')).config.service;
    expect([file.clientSecretFile, file.clientSecretEnv]).toEqual([path.join(dir, 'secrets/hint'), []]);
  });

  it('is named by the config key, with the file or the variables behind it', () => {
    expect(secretSourceOf({ clientSecretFile: null, clientSecretEnv: [] })).toBe('service.clientSecret');
    expect(secretSourceOf({ clientSecretFile: null, clientSecretEnv: ['BINDER_SYNC_CLIENT_SECRET'] })).toBe(
      'service.clientSecret (environment variable BINDER_SYNC_CLIENT_SECRET)',
    );
    expect(secretSourceOf({ clientSecretFile: null, clientSecretEnv: ['A', 'B'] })).toBe('service.clientSecret (environment variables A, B)');
    expect(secretSourceOf({ clientSecretFile: '/etc/binder-sync/client-secret', clientSecretEnv: [] })).toBe(
      'service.clientSecretFile (/etc/binder-sync/client-secret)',
    );
  });
});

describe('clientSecretFile', () => {
  it('is read relative to the config file, trailing newline trimmed', () => {
    write('secrets/client', 'from-file\n');
    const { config, warnings } = parse(MINIMAL.replace('clientSecret: ${SECRET}', 'clientSecretFile: secrets/client'));
    expect(config.service.clientSecret).toBe('from-file');
    expect(config.service.clientSecretFile).toBe(path.join(dir, 'secrets/client'));
    expect(warnings).toEqual([]);
  });

  it('warns when the secret file is readable by others', () => {
    const file = write('secrets/open', 'x\r\n', 0o644);
    const { config, warnings } = parse(MINIMAL.replace('clientSecret: ${SECRET}', 'clientSecretFile: secrets/open'));
    expect(config.service.clientSecret).toBe('x');
    expect(warnings).toEqual([`secret file is readable by others; chmod 600 ${file}`]);
  });

  it('warns when the secret file is readable by its group (0640, 0660): only its owner needs it (black-box round 31b, F6)', () => {
    for (const mode of [0o640, 0o660]) {
      const file = write(`secrets/group-${mode.toString(8)}`, 'x\n', mode);
      const { warnings } = parse(MINIMAL.replace('clientSecret: ${SECRET}', `clientSecretFile: secrets/group-${mode.toString(8)}`));
      expect(warnings).toEqual([`secret file is readable by its group (mode 0${mode.toString(8)}); chmod 600 ${file}`]);
    }
    write('secrets/owner', 'x\n', 0o600);
    expect(parse(MINIMAL.replace('clientSecret: ${SECRET}', 'clientSecretFile: secrets/owner')).warnings).toEqual([]);
  });

  it('a missing, empty or directory secret file is an error naming the key', () => {
    const missing = path.join(dir, 'secrets/none');
    expect(problems(() => parse(MINIMAL.replace('clientSecret: ${SECRET}', 'clientSecretFile: secrets/none'))).problems).toEqual([
      `service.clientSecretFile: file not found: ${missing}`,
    ]);
    const empty = write('secrets/empty', '\n');
    expect(problems(() => parse(MINIMAL.replace('clientSecret: ${SECRET}', 'clientSecretFile: secrets/empty'))).problems).toEqual([
      `service.clientSecretFile: file is empty: ${empty}`,
    ]);
    expect(problems(() => parse(MINIMAL.replace('clientSecret: ${SECRET}', 'clientSecretFile: secrets'))).problems).toEqual([
      `service.clientSecretFile: is a directory: ${path.join(dir, 'secrets')}`,
    ]);
  });
});

describe('paths', () => {
  it('resolve against the config directory, not the cwd; ~/ is the home directory', () => {
    const text = MINIMAL.replace('localPath: ./local', 'localPath: ~/sync/docs').replace('pairs:', 'stateDir: ../shared-state\npairs:');
    const { config } = parse(text, { SECRET: 's', HOME: '/home/someone' }, '/etc/binder-sync');
    expect(config.stateDir).toBe('/etc/shared-state');
    expect(config.pairs[0]?.localPath).toBe('/home/someone/sync/docs');
    expect(process.cwd()).not.toBe('/etc/binder-sync');
  });

  it('loadConfig resolves relative to the file even when given a relative file name', () => {
    const file = write('nested/dir/sync.yaml', MINIMAL);
    const rel = path.relative(process.cwd(), file);
    const { config } = loadConfig(rel, { SECRET: 's' });
    expect(config.pairs[0]?.localPath).toBe(path.join(dir, 'nested/dir/local'));
    expect(config.stateDir).toBe(path.join(dir, 'nested/dir/state'));
  });

  it('detects roots that overlap through a symlink', () => {
    const real = path.join(dir, 'real-root');
    mkdirSync(path.join(real, 'sub'), { recursive: true });
    symlinkSync(real, path.join(dir, 'link-root'));
    const text = `${MINIMAL}  - name: second\n    localPath: ./link-root/sub\n    binderId: X\n`.replace('localPath: ./local', 'localPath: ./real-root');
    expect(problems(() => parse(text)).problems).toEqual([
      `pairs[1].localPath: overlaps pairs[0].localPath (${path.join(real, 'sub')} and ${real}); sync roots must not be nested`,
    ]);
  });

  it('sibling roots with a common name prefix do not overlap', () => {
    const text = `${MINIMAL}  - name: second\n    localPath: ./local-2\n    binderId: X\n`;
    expect(parse(text).config.pairs.map((p) => p.localPath)).toEqual([path.join(dir, 'local'), path.join(dir, 'local-2')]);
  });
});

describe('warnings', () => {
  it('a literal secret in a file readable by others is flagged; one from ${ENV} is not', () => {
    const open = write('open.yaml', MINIMAL.replace('${SECRET}', 'literal-secret'), 0o644);
    expect(loadConfig(open, {}).warnings).toEqual([`config file is readable by others and contains a secret; chmod 600 ${open}`]);
    const closed = write('closed.yaml', MINIMAL.replace('${SECRET}', 'literal-secret'), 0o600);
    expect(loadConfig(closed, {}).warnings).toEqual([]);
    const viaEnv = write('env.yaml', MINIMAL, 0o644);
    expect(loadConfig(viaEnv, { SECRET: 's' }).warnings).toEqual([]);
  });

  it('two pairs on one binder are allowed but flagged', () => {
    const text = `${MINIMAL}  - name: second\n    localPath: ./other\n    binderId: AbCdEfGhI\n`;
    expect(parse(text).warnings).toEqual(['pairs main and second both sync binder AbCdEfGhI; their changes will meet in the binder']);
  });
});

describe('file-level errors', () => {
  it('a missing file is CONFIG_NOT_FOUND', () => {
    const file = path.join(dir, 'absent.yaml');
    try {
      loadConfig(file, {});
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).code).toBe('CONFIG_NOT_FOUND');
      expect((err as ConfigError).message).toBe(`config ${file}: file not found`);
      expect((err as ConfigError).hint).toMatch(/sync\.config\.example\.yaml/);
    }
  });

  it('the hint of an invalid config says "listed above" only when problems are listed (black-box round 31b, F8)', () => {
    const hint = (text: string) => {
      try {
        parse(text);
      } catch (err) {
        return (err as ConfigError).hint;
      }
      return expect.unreachable();
    };
    expect(hint(MINIMAL.replace('localPath: ./local', 'localPath: ./local\n    pollInterval: 4s'))).toBe('fix it; every option is described in sync.config.example.yaml');
    expect(hint(MINIMAL.replace('localPath: ./local', 'localPath: ./local\n    pollInterval: 4s\n    direction: sideways'))).toBe(
      'fix the problems listed above; every option is described in sync.config.example.yaml',
    );
  });

  it('an unreadable path (a directory) is CONFIG_UNREADABLE', () => {
    expect(problems(() => loadConfig(dir, {}))).toEqual({ code: 'CONFIG_UNREADABLE', problems: ['is a directory, not a file'] });
  });

  it.skipIf(process.getuid?.() === 0)('a file without read permission is CONFIG_UNREADABLE', () => {
    const file = write('locked.yaml', MINIMAL, 0o000);
    expect(problems(() => loadConfig(file, {}))).toEqual({ code: 'CONFIG_UNREADABLE', problems: ['permission denied'] });
  });

  it('an empty file, or one with only comments', () => {
    for (const text of ['', '   \n', '# nothing here\n']) {
      expect(problems(() => parse(text))).toEqual({
        code: 'CONFIG_INVALID',
        problems: ['the file is empty; see sync.config.example.yaml for a starting point'],
      });
    }
  });

  it('a file that is not a mapping', () => {
    expect(problems(() => parse('- a\n- b\n')).problems).toEqual(['the file must be a YAML mapping of keys (service, stateDir, pairs...), got a list']);
    expect(problems(() => parse('just text\n')).problems).toEqual(['the file must be a YAML mapping of keys (service, stateDir, pairs...), got a string']);
  });

  it('a YAML syntax error names the line and column', () => {
    expect(problems(() => parse('service:\n  baseUrl: "unterminated\npairs: []\n')).problems).toEqual([
      'line 4, column 1: YAML syntax error: Missing closing "quote',
    ]);
    expect(problems(() => parse('pairs:\n\t- name: x\n')).problems).toEqual(['line 2, column 1: YAML syntax error: Tabs are not allowed as indentation']);
    expect(problems(() => parse('a: 1\nb: [1, 2\nc: 3\n')).problems[0]).toMatch(/^line 3, column 1: YAML syntax error: Flow sequence/);
  });

  it('a duplicate key is a syntax error at its line', () => {
    const p = problems(() => parse(`${MINIMAL}pairs: []\n`)).problems;
    expect(p).toEqual([expect.stringMatching(/^line 12, column 1: YAML syntax error: Map keys must be unique/)]);
  });
});

describe('localOnly (what `status` reads)', () => {
  const ENV_ONLY = `
service:
  baseUrl: \${BINDER_SYNC_BASE_URL}
  authUrl: \${BINDER_SYNC_AUTH_URL}
  tenantId: \${BINDER_SYNC_TENANT_ID}
  clientId: \${BINDER_SYNC_CLIENT_ID}
  clientSecretFile: ./no-such-secret
stateDir: ./state
pairs:
  - name: main
    localPath: ./local
    binderId: AbCdEfGhI
`;
  it('does not need the service section to resolve: unset variables and an unreadable secret file are not errors', () => {
    const full = problems(() => parse(ENV_ONLY, {}));
    expect(full.problems.some((p) => p.includes('BINDER_SYNC_BASE_URL is not set'))).toBe(true);
    expect(problems(() => parse(ENV_ONLY, { BINDER_SYNC_BASE_URL: 'http://a/', BINDER_SYNC_AUTH_URL: 'http://a/', BINDER_SYNC_TENANT_ID: 't', BINDER_SYNC_CLIENT_ID: 'c' })).problems.some((p) => p.includes('no-such-secret'))).toBe(true);
    const { config } = parseConfigText(ENV_ONLY, { baseDir: dir, env: {}, sourceName: 'test.yaml', localOnly: true });
    expect(config.stateDir).toBe(path.join(dir, 'state'));
    expect(config.pairs.map((p) => [p.name, p.localPath, p.binderId])).toEqual([['main', path.join(dir, 'local'), 'AbCdEfGhI']]);
  });
  it('still reports what is wrong with the rest of the file', () => {
    const bad = ENV_ONLY.replace('localPath: ./local', 'localPth: ./local');
    const r = problems(() => parseConfigText(bad, { baseDir: dir, env: {}, sourceName: 'test.yaml', localOnly: true }));
    expect(r.problems.some((p) => p.includes('localPth'))).toBe(true);
    expect(r.problems.some((p) => p.includes('BINDER_SYNC'))).toBe(false);
  });
});

describe('peekStateDir (status after a rejected reload: black-box round 31b, F3)', () => {
  it('reads the stateDir of a file that does not pass validation, resolved as loadConfig would', () => {
    const invalid = write('peek/invalid.yaml', `${MINIMAL}    pollInterval: 2s\nstateDir: \${STATE_ROOT}/state\n`);
    expect(() => loadConfig(invalid, { SECRET: 's', STATE_ROOT: '/var/lib/x' })).toThrow(ConfigError);
    expect(peekStateDir(invalid, { STATE_ROOT: '/var/lib/x' })).toBe('/var/lib/x/state');
    expect(peekStateDir(write('peek/default.yaml', `${MINIMAL}    pollInterval: 2s\n`), {})).toBe(path.join(dir, 'peek', 'state'));
  });

  it('is null for what names no stateDir: not YAML, an unset variable in it, not a string, no file', () => {
    expect(peekStateDir(write('peek/broken.yaml', 'stateDir: [\n'), {})).toBeNull();
    expect(peekStateDir(write('peek/unset.yaml', `${MINIMAL}stateDir: \${NOPE}/state\n`), {})).toBeNull();
    expect(peekStateDir(write('peek/number.yaml', `${MINIMAL}stateDir: 5\n`), {})).toBeNull();
    expect(peekStateDir(path.join(dir, 'peek/absent.yaml'), {})).toBeNull();
  });
});
