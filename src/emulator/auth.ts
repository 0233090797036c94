// Tokens and access checks. A token is `base64url(payload).hmac`: stateless, so it survives a restart
// with a dataDir; expireTokens() bumps a generation number that every older token fails against.
import type { IncomingMessage } from 'node:http';
import { HttpProblem } from './http-util.js';
import type { Signer } from './signing.js';
import type { Store } from './store.js';
import type { ClientRecord } from './types.js';

export const SCOPE = 'service_public';
export const TENANT_HEADER = 'x-service-tenantid';

interface TokenPayload {
  cid: string;
  tid: string;
  acc: ClientRecord['access'];
  exp: number;
  gen: number;
}

export interface Caller {
  clientId: string;
  tenantId: string;
  access: ClientRecord['access'];
}

export function issueToken(signer: Signer, store: Store, client: ClientRecord, lifetimeSeconds: number): string {
  const payload: TokenPayload = {
    cid: client.clientId,
    tid: client.tenantId,
    acc: client.access,
    exp: Date.now() + lifetimeSeconds * 1000,
    gen: store.tokenGeneration,
  };
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${signer.sign(body)}`;
}

function unauthorized(detail: string, error = 'invalid_token'): HttpProblem {
  return new HttpProblem(401, detail, { headers: { 'www-authenticate': `Bearer error="${error}"` } });
}

/** The caller behind a bearer token, or a 401. */
export function verifyBearer(req: IncomingMessage, signer: Signer, store: Store): Caller {
  const header = req.headers.authorization;
  if (!header) throw unauthorized('the Authorization header is missing', 'invalid_request');
  const m = /^Bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(header);
  if (!m || !signer.verify(m[1]!, m[2]!)) throw unauthorized('the bearer token is not valid');
  let payload: TokenPayload;
  try {
    payload = JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8')) as TokenPayload;
  } catch {
    throw unauthorized('the bearer token is not valid');
  }
  if (payload.exp <= Date.now()) throw unauthorized('the bearer token has expired');
  if (payload.gen !== store.tokenGeneration) throw unauthorized('the bearer token was revoked');
  const client = store.clients.get(payload.cid);
  if (!client) throw unauthorized('the client of this token no longer exists');
  return { clientId: client.clientId, tenantId: client.tenantId, access: client.access };
}

export interface AccessRule {
  /** 'optional' only for presignedupload (spec 4.7: the tenant header is not listed there). */
  tenantHeader: 'required' | 'optional';
  write: boolean;
}

/**
 * Checks in this order: bearer token (401), tenant header present (400) and matching the token's tenant
 * (403), write access (403). The missing header is a 400 because the token itself is fine.
 */
export function authorize(req: IncomingMessage, signer: Signer, store: Store, rule: AccessRule): Caller {
  const caller = verifyBearer(req, signer, store);
  const raw = req.headers[TENANT_HEADER];
  const tenant = Array.isArray(raw) ? raw[0] : raw;
  if (tenant === undefined || tenant === '') {
    if (rule.tenantHeader === 'required') {
      throw new HttpProblem(400, `the ${TENANT_HEADER} header is required`, { errors: { [TENANT_HEADER]: ['The header is required.'] } });
    }
  } else if (tenant.toLowerCase() !== caller.tenantId.toLowerCase()) {
    throw new HttpProblem(403, 'the token does not grant access to this tenant');
  }
  if (rule.write && caller.access !== 'readwrite') throw new HttpProblem(403, 'this client has read-only access');
  return caller;
}
