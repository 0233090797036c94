// The config `binder-sync demo` writes: valid, secret in a private file, and polling every 10 s as the guide
// promises (pollCpuBudget 0: the in-process emulator's CPU must not space the polls out).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { demoPaths, writeDemoConfig } from '../../src/cli/demo-command.js';
import { loadConfig } from '../../src/config/load.js';
import type { Emulator } from '../../src/emulator/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('writeDemoConfig', () => {
  it('writes a valid config that polls every 10 s with no poll CPU budget', () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'binder-demo-config-'));
    dirs.push(cwd);
    const paths = demoPaths(cwd);
    fs.mkdirSync(paths.dir);
    const emu = {
      baseUrl: 'http://127.0.0.1:8470/api/v1',
      authUrl: 'http://127.0.0.1:8470/auth',
      credentials: { tenantId: '00000000-0000-0000-0000-000000000000', clientId: 'rw-client', clientSecret: 'demo-secret-123456' },
    } as unknown as Emulator;
    writeDemoConfig(paths, emu, 'Binder123');
    const { config } = loadConfig(paths.config, {});
    const pair = config.pairs[0]!;
    expect(pair.pollInterval).toBe(10_000);
    expect(pair.pollCpuBudget).toBe(0);
    expect(config.service.clientSecret).toBe('demo-secret-123456');
    expect(fs.readFileSync(paths.config, 'utf8')).not.toContain('demo-secret-123456');
  });
});
