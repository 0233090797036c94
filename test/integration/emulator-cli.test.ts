// Emulator CLI: `binder-sync emulator` prints URLs and credentials that work, applies its options, stops
// cleanly on abort, and refuses bad options with the usage exit code.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { request as undiciRequest } from 'undici';
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli.js';
import { runEmulatorCommand } from '../../src/cli/emulator-command.js';
import { ExitCode } from '../../src/cli/exit-codes.js';

function capture() {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString()));
  return { out, text: () => text };
}

async function waitFor(pred: () => boolean) {
  for (let i = 0; i < 1000 && !pred(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(pred()).toBe(true);
}

describe('binder-sync emulator command', () => {
  it('prints one JSON line whose URLs and credentials work, with --binders-shape applied, and stops on abort', async () => {
    const io = capture();
    const stop = new AbortController();
    const running = runEmulatorCommand({ port: 0, seed: 'demo', bindersShape: 'items', json: true }, { out: io.out, signal: stop.signal });
    await waitFor(() => io.text().includes('\n'));
    const info = JSON.parse(io.text().trim()) as Record<string, string>;
    expect(info.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
    const tok = await fetch(info.tokenUrl!, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: info.clientId!, client_secret: info.clientSecret!, scope: 'service_public' }).toString(),
    });
    const { access_token } = (await tok.json()) as { access_token: string };
    const binders = (await (await fetch(`${info.baseUrl}/binders`, { headers: { authorization: `Bearer ${access_token}`, 'x-service-tenantid': info.tenantId! } })).json()) as {
      items: Array<{ id: string; name: string }>;
    };
    expect(binders.items).toContainEqual(expect.objectContaining({ id: info.demoBinderId, name: 'Project Atlas' }));
    stop.abort();
    expect(await running).toBe(ExitCode.ok);
    await expect(fetch(`${info.baseUrl}/binders`)).rejects.toThrow();
  });

  it('prints a human banner and request lines with --log-requests', async () => {
    const io = capture();
    const stop = new AbortController();
    const running = runEmulatorCommand({ port: 0, logRequests: true }, { out: io.out, signal: stop.signal });
    await waitFor(() => io.text().includes('Press Ctrl-C'));
    const base = /base URL\s+(\S+)/.exec(io.text())![1]!;
    expect(io.text()).toMatch(/client id \/ secret\s+\S+ \/ \S+/);
    await (await fetch(`${base}/binders`)).arrayBuffer();
    await waitFor(() => io.text().includes('GET /api/v1/binders -> 401 (binders)'));
    stop.abort();
    await running;
    expect(io.text()).toContain('binder-sync emulator stopped');
  });

  it('refuses bad options with the usage exit code', async () => {
    const stderr = process.stderr.write;
    process.stderr.write = (() => true) as typeof process.stderr.write;
    try {
      expect(await main(['node', 'binder-sync', 'emulator', '--binders-shape', 'nope'])).toBe(ExitCode.usage);
      expect(await main(['node', 'binder-sync', 'emulator', '--port', 'abc'])).toBe(ExitCode.usage);
      expect(await main(['node', 'binder-sync', 'emulator', '--download-link-paths', 'raw,zip'])).toBe(ExitCode.usage);
      expect(await main(['node', 'binder-sync', 'emulator', '--repeat-commit-answer', 'maybe'])).toBe(ExitCode.usage);
      expect(await main(['node', 'binder-sync', 'emulator', '--missing-document-status', '500'])).toBe(ExitCode.usage);
    } finally {
      process.stderr.write = stderr;
    }
  });

  it('--compress-json and --missing-document-status, as the CLI parses them (a child process)', async () => {
    const child = spawn(process.execPath, [path.resolve('bin/binder-sync.js'), 'emulator', '--port', '0', '--json', '--compress-json', '--missing-document-status', '400'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let text = '';
      child.stdout.on('data', (c: Buffer) => (text += c.toString()));
      await waitFor(() => text.includes('\n'));
      const info = JSON.parse(text.trim()) as Record<string, string>;
      const tok = await fetch(info.tokenUrl!, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: info.clientId!, client_secret: info.clientSecret!, scope: 'service_public' }).toString(),
      });
      const { access_token } = (await tok.json()) as { access_token: string };
      const headers = { authorization: `Bearer ${access_token}`, 'x-service-tenantid': info.tenantId!, 'accept-encoding': 'gzip' };
      const binders = await undiciRequest(`${info.baseUrl}/binders`, { headers });
      expect(binders.headers['content-encoding']).toBe('gzip');
      expect(JSON.parse(gunzipSync(Buffer.from(await binders.body.arrayBuffer())).toString())).toEqual([]);
      const missing = await undiciRequest(`${info.baseUrl}/documents/00000000-0000-4000-8000-000000000000`, { headers });
      await missing.body.dump();
      expect(missing.statusCode).toBe(400);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });
});
