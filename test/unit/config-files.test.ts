// The committed config artifacts cannot drift: config/sync.config.schema.json equals the schema generated
// from zod, and sync.config.example.yaml is valid, shows every option, and shows the real defaults.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { JSON_SCHEMA_RELATIVE_PATH, configJsonSchemaText } from '../../src/config/json-schema.js';
import { loadConfig, parseConfigText } from '../../src/config/load.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const examplePath = path.join(root, 'sync.config.example.yaml');
const env = {
  BINDER_SYNC_BASE_URL: 'http://127.0.0.1:8080/api',
  BINDER_SYNC_AUTH_URL: 'http://127.0.0.1:8080',
  BINDER_SYNC_TENANT_ID: 'tenant',
  BINDER_SYNC_CLIENT_ID: 'client',
  BINDER_SYNC_CLIENT_SECRET: 'secret',
};

describe('config/sync.config.schema.json', () => {
  it('equals the schema generated from the zod schema (run the write-json-schema script after changing it)', () => {
    expect(readFileSync(path.join(root, JSON_SCHEMA_RELATIVE_PATH), 'utf8')).toBe(configJsonSchemaText());
  });

  it('is strict and knows the enums and defaults', () => {
    const schema = JSON.parse(configJsonSchemaText());
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toEqual(['service', 'pairs']);
    const pair = schema.properties.pairs.items;
    expect(pair.additionalProperties).toBe(false);
    expect(pair.required).toEqual(['name', 'localPath', 'binderId']);
    expect(pair.properties.direction.enum).toEqual(['both', 'download', 'upload']);
    expect(pair.properties.pollInterval.default).toBe('60s');
    expect(pair.properties.pageSize).toMatchObject({ default: 1000, minimum: 1, maximum: 1000 });
  });
});

describe('sync.config.example.yaml', () => {
  const text = readFileSync(examplePath, 'utf8');

  it('points editors at the JSON Schema on its first line', () => {
    expect(text.split('\n')[0]).toBe('# yaml-language-server: $schema=./config/sync.config.schema.json');
  });

  it('is valid once its environment variables are set', () => {
    const { config, warnings } = loadConfig(examplePath, env);
    expect(config.service.baseUrl).toBe('http://127.0.0.1:8080/api');
    expect(config.pairs[0]?.binderId).toBe('AbCdEfGhI');
    expect(config.pairs[0]?.localPath).toBe(path.join(root, 'local'));
    expect(warnings).toEqual([]);
  });

  it('shows the defaults: it resolves to the same config as a minimal file', () => {
    const minimal = `service: { baseUrl: "${env.BINDER_SYNC_BASE_URL}", authUrl: "${env.BINDER_SYNC_AUTH_URL}", tenantId: tenant, clientId: client, clientSecret: "\${BINDER_SYNC_CLIENT_SECRET}" }
pairs: [{ name: main, localPath: ./local, binderId: AbCdEfGhI }]
`;
    // The secret as the example gives it (from the environment), which the config records for its hints.
    const fromMinimal = parseConfigText(minimal, { baseDir: root, env: { BINDER_SYNC_CLIENT_SECRET: env.BINDER_SYNC_CLIENT_SECRET } }).config;
    expect(loadConfig(examplePath, env).config).toEqual(fromMinimal);
  });

  it('mentions every option of the schema', () => {
    const names = new Set<string>();
    const collect = (node: unknown): void => {
      if (node === null || typeof node !== 'object') return;
      const n = node as { properties?: Record<string, unknown>; items?: unknown; additionalProperties?: unknown };
      for (const [k, v] of Object.entries(n.properties ?? {})) {
        names.add(k);
        collect(v);
      }
      collect(n.items);
    };
    collect(JSON.parse(configJsonSchemaText()));
    expect(names.size).toBeGreaterThan(30);
    const missing = [...names].filter((k) => !new RegExp(`^[\\s#-]*${k}:`, 'm').test(text));
    expect(missing).toEqual([]);
  });
});
