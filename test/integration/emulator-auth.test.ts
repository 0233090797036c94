// Emulator: token endpoint, bearer checks, tenant header, read-only clients, token expiry and tenant isolation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';

async function requestToken(emu: Emulator, fields: Record<string, string>, as: 'form' | 'json' = 'form') {
  const res = await fetch(`${emu.authUrl}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': as === 'form' ? 'application/x-www-form-urlencoded' : 'application/json' },
    body: as === 'form' ? new URLSearchParams(fields).toString() : JSON.stringify(fields),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

async function token(emu: Emulator, clientId: string, clientSecret: string): Promise<string> {
  const r = await requestToken(emu, { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope: 'service_public' });
  expect(r.status).toBe(200);
  return r.body.access_token as string;
}

async function call(emu: Emulator, path: string, headers: Record<string, string>, init: { method?: string; body?: unknown } = {}) {
  const res = await fetch(`${emu.baseUrl}${path}`, {
    method: init.method ?? 'GET',
    headers: init.body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: init.body === undefined ? null : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as any) : undefined };
}

describe('emulator auth', () => {
  let emu: Emulator;
  let binderId: string;
  let folderId: string;
  let documentId: string;

  beforeAll(async () => {
    emu = await startEmulator({ tokenLifetimeSeconds: 3600 });
    binderId = emu.control.createBinder({ name: 'Alpha' }).id;
    folderId = emu.control.createFolder(binderId, { name: 'Tab' }).id;
    documentId = emu.control.addDocument(binderId, folderId, 'a.txt', 'hello').document.id;
  });
  afterAll(() => emu.close());

  it('issues a token for form-encoded and JSON requests', async () => {
    const c = emu.credentials;
    for (const as of ['form', 'json'] as const) {
      const r = await requestToken(emu, { grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope: 'service_public' }, as);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
      expect(typeof r.body.access_token).toBe('string');
      expect(r.headers.get('cache-control')).toBe('no-store');
    }
  });

  it('refuses bad credentials, grant types and scopes with OAuth errors', async () => {
    const c = emu.credentials;
    const base = { grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope: 'service_public' };
    expect(await requestToken(emu, { ...base, client_secret: 'wrong' })).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(await requestToken(emu, { ...base, client_id: 'nobody' })).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(await requestToken(emu, { ...base, grant_type: 'password' })).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
    expect(await requestToken(emu, { ...base, scope: 'admin' })).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
    const { scope: _omit, ...noScope } = base;
    expect(await requestToken(emu, noScope)).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
    const plain = await fetch(`${emu.authUrl}/connect/token`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    expect(plain.status).toBe(400);
  });

  it('checks the bearer token: missing or forged -> 401 problem with WWW-Authenticate', async () => {
    const tenant = { 'x-service-tenantid': emu.credentials.tenantId };
    const missing = await call(emu, '/binders', tenant);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(missing.body).toMatchObject({ status: 401, title: 'Unauthorized' });
    expect(typeof missing.body.traceId).toBe('string');
    const t = await token(emu, emu.credentials.clientId, emu.credentials.clientSecret);
    const forged = `${t.split('.')[0]}.AAAA`;
    expect((await call(emu, '/binders', { ...tenant, authorization: `Bearer ${forged}` })).status).toBe(401);
    expect((await call(emu, '/binders', { ...tenant, authorization: `Basic ${t}` })).status).toBe(401);
  });

  it('requires the tenant header (400) and the token tenant (403)', async () => {
    const t = await token(emu, emu.credentials.clientId, emu.credentials.clientSecret);
    const noHeader = await call(emu, '/binders', { authorization: `Bearer ${t}` });
    expect(noHeader.status).toBe(400);
    expect(noHeader.body.errors).toHaveProperty('x-service-tenantid');
    const other = emu.control.createTenant();
    const wrong = await call(emu, '/binders', { authorization: `Bearer ${t}`, 'x-service-tenantid': other.tenantId });
    expect(wrong.status).toBe(403);
    const ok = await call(emu, '/binders', { authorization: `Bearer ${t}`, 'x-service-tenantid': emu.credentials.tenantId });
    expect(ok.status).toBe(200);
    expect(ok.body.map((b: { id: string }) => b.id)).toEqual([binderId]);
  });

  it('presignedupload works without the tenant header but refuses a wrong one', async () => {
    const t = await token(emu, emu.credentials.clientId, emu.credentials.clientSecret);
    const path = '/documents/uploads/personalstorage/presignedupload';
    const bare = await call(emu, path, { authorization: `Bearer ${t}` });
    expect(bare.status).toBe(200);
    expect(bare.body).toEqual({ presignedUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/storage\/uploads\//), uploadId: expect.any(String) });
    const other = emu.control.createTenant();
    expect((await call(emu, path, { authorization: `Bearer ${t}`, 'x-service-tenantid': other.tenantId })).status).toBe(403);
  });

  it('gives a read-only client reads but 403 on presignedupload and commit', async () => {
    const c = emu.credentials;
    const t = await token(emu, c.readOnlyClientId, c.readOnlyClientSecret);
    const h = { authorization: `Bearer ${t}`, 'x-service-tenantid': c.tenantId };
    expect((await call(emu, `/documents/${documentId}`, h)).status).toBe(200);
    expect((await call(emu, '/documents/uploads/personalstorage/presignedupload', h)).status).toBe(403);
    const commit = await call(emu, `/documents/drives/binders/${binderId}/${folderId}/upload`, h, {
      method: 'POST',
      body: { fileName: 'b.txt', version: '1', uploadId: 'x', additionalMetadata: [] },
    });
    expect(commit.status).toBe(403);
    expect(commit.body.detail).toMatch(/read-only/);
  });

  it('expires tokens after their lifetime and on expireTokens()', async () => {
    const short = await startEmulator({ tokenLifetimeSeconds: 1 });
    try {
      const c = short.credentials;
      const t = await token(short, c.clientId, c.clientSecret);
      const h = { authorization: `Bearer ${t}`, 'x-service-tenantid': c.tenantId };
      expect((await call(short, '/binders', h)).status).toBe(200);
      await sleep(1100);
      const expired = await call(short, '/binders', h);
      expect(expired.status).toBe(401);
      expect(expired.body.detail).toMatch(/expired/);
      const fresh = await token(short, c.clientId, c.clientSecret);
      const h2 = { authorization: `Bearer ${fresh}`, 'x-service-tenantid': c.tenantId };
      expect((await call(short, '/binders', h2)).status).toBe(200);
      short.control.expireTokens();
      expect((await call(short, '/binders', h2)).status).toBe(401);
      const after = await token(short, c.clientId, c.clientSecret);
      expect((await call(short, '/binders', { ...h2, authorization: `Bearer ${after}` })).status).toBe(200);
    } finally {
      await short.close();
    }
  });

  it('isolates tenants: what another tenant owns is 404 and never listed', async () => {
    const other = emu.control.createTenant();
    const ob = emu.control.createBinder({ tenantId: other.tenantId, name: 'Other' });
    const of = emu.control.createFolder(ob.id, { name: 'T' });
    const od = emu.control.addDocument(ob.id, of.id, 'secret.txt', 'x').document;
    const t = await token(emu, emu.credentials.clientId, emu.credentials.clientSecret);
    const h = { authorization: `Bearer ${t}`, 'x-service-tenantid': emu.credentials.tenantId };
    expect((await call(emu, `/binders/${ob.id}/metadataelements`, h)).status).toBe(404);
    expect((await call(emu, `/documents/drives/binders/${ob.id}`, h)).status).toBe(404);
    expect((await call(emu, `/documents/drives/binders/${ob.id}/${of.id}/documents`, h)).status).toBe(404);
    expect((await call(emu, `/documents/${od.id}`, h)).status).toBe(404);
    expect((await call(emu, `/documents/${od.id}/versions`, h)).status).toBe(404);
    expect((await call(emu, `/documents/${od.id}/versions/${od.latestVersionId}/raw`, h)).status).toBe(404);
    const all = await call(emu, '/documents', h, { method: 'POST', body: {} });
    expect(all.body.items.map((d: { id: string }) => d.id)).not.toContain(od.id);
    // The other tenant sees its own binder only.
    const ot = await token(emu, other.clientId, other.clientSecret);
    const mine = await call(emu, '/binders', { authorization: `Bearer ${ot}`, 'x-service-tenantid': other.tenantId });
    expect(mine.body.map((b: { id: string }) => b.id)).toEqual([ob.id]);
  });
});
