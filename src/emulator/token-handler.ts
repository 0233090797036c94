// POST {auth_url}/connect/token (spec 5.2): OAuth 2.0 client credentials, form-encoded or JSON body.
// Errors use the OAuth shape {error, error_description}: invalid_request, unsupported_grant_type,
// invalid_client (401), invalid_scope.
import { timingSafeEqual } from 'node:crypto';
import { issueToken, SCOPE } from './auth.js';
import { HttpProblem, json, mediaType, readBody, type Reply } from './http-util.js';
import { tokenRequestSchema } from './schemas.js';
import type { Signer } from './signing.js';
import type { Store } from './store.js';
import type { Handler } from './api-handlers.js';

function oauthError(status: number, error: string, description: string): HttpProblem {
  const headers: Record<string, string> = { 'cache-control': 'no-store' };
  if (status === 401) headers['www-authenticate'] = 'Basic realm="token"';
  return new HttpProblem(status, description, { body: { error, error_description: description }, headers });
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function createTokenHandler(store: Store, signer: Signer, lifetimeSeconds: number): Handler {
  return async (req): Promise<Reply> => {
    const type = mediaType(req);
    const raw = (await readBody(req)).toString('utf8');
    let fields: unknown;
    if (type === 'application/x-www-form-urlencoded') {
      fields = Object.fromEntries(new URLSearchParams(raw));
    } else if (type === 'application/json') {
      try {
        fields = JSON.parse(raw);
      } catch {
        throw oauthError(400, 'invalid_request', 'the body is not valid JSON');
      }
    } else {
      throw oauthError(400, 'invalid_request', 'the body must be form-encoded or JSON');
    }
    const parsed = tokenRequestSchema.safeParse(fields);
    if (!parsed.success) throw oauthError(400, 'invalid_request', 'the token request fields must be strings');
    const { grant_type, client_id, client_secret, scope } = parsed.data;
    if (!grant_type) throw oauthError(400, 'invalid_request', 'grant_type is required');
    if (grant_type !== 'client_credentials') throw oauthError(400, 'unsupported_grant_type', 'only client_credentials is supported');
    const client = client_id ? store.clients.get(client_id) : undefined;
    if (!client || !client_secret || !sameSecret(client.clientSecret, client_secret)) {
      throw oauthError(401, 'invalid_client', 'client authentication failed');
    }
    // `service_public` is the only scope (spec 5.2); it must be asked for.
    const scopes = (scope ?? '').split(' ').filter(Boolean);
    if (scopes.length === 0 || scopes.some((s) => s !== SCOPE)) throw oauthError(400, 'invalid_scope', `the scope must be ${SCOPE}`);
    const access_token = issueToken(signer, store, client, lifetimeSeconds);
    return json(200, { access_token, expires_in: lifetimeSeconds, token_type: 'Bearer', scope: SCOPE }, { 'cache-control': 'no-store' });
  };
}
