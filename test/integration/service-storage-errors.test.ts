// Storage's refusals of a presigned URL (black-box round 32b, F1): S3-like storage answers SignatureDoesNotMatch
// with a body that repeats the signature it got, outside any URL. The error (message, problem, hint) must not
// carry it, raw or decoded, and its hint is about the link, not the API client's tenant or access.
import { Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { presignedUrlSecrets } from '../../src/service/errors.js';
import { ServiceError } from '../../src/service/index.js';
import { stub, stubClient } from './stub-server.js';

const SIG = 'Zm9vYmFy+c2lnbmF0dXJl/secret==';
const CREDENTIAL = 'AKIAZQ3DSTUVWXEXAMPL/20261127/us-east-1/s3/aws4_request'; // an access key id is 20 characters

function refusal(): string {
  // The signature as S3 echoes it: decoded, inside XML elements, and the credential beside it.
  return `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided.</Message><AWSAccessKeyId>${CREDENTIAL}</AWSAccessKeyId><SignatureProvided>${SIG}</SignatureProvided><StringToSign>${encodeURIComponent(SIG)}</StringToSign></Error>`;
}

function expectNoSecret(err: ServiceError): void {
  const all = JSON.stringify({ message: err.message, hint: err.hint, problem: err.problem, context: err.context });
  for (const s of [SIG, encodeURIComponent(SIG), CREDENTIAL, encodeURIComponent(CREDENTIAL)]) expect(all).not.toContain(s);
  expect(err.message).toContain('SignatureDoesNotMatch');
  expect(err.hint).toMatch(/storage refused the presigned URL/);
  expect(err.hint).not.toMatch(/tenantId/);
}

describe('a storage refusal that echoes the presigned signature', () => {
  it('is scrubbed of it on upload (PUT) and on download (GET)', async () => {
    const s = await stub((r) => {
      if (r.path === '/store') return { status: 403, headers: { 'content-type': 'application/xml' }, body: refusal() };
      if (r.path.endsWith('/raw')) return { status: 200, body: { url: `${s.origin}/store?X-Amz-Credential=${encodeURIComponent(CREDENTIAL)}&X-Amz-Signature=${encodeURIComponent(SIG)}&v=1`, expiresAt: new Date(Date.now() + 60_000).toISOString() } };
      return undefined;
    });
    const c = stubClient(s.origin);
    const url = `${s.origin}/store?X-Amz-Credential=${encodeURIComponent(CREDENTIAL)}&sig=${encodeURIComponent(SIG)}&v=1`;
    const put = (await c.putContent(url, () => Readable.from([Buffer.from('abc')]), 3).catch((e: unknown) => e)) as ServiceError;
    expect(put).toBeInstanceOf(ServiceError);
    expect(put.status).toBe(403);
    expectNoSecret(put);

    const sink = new Writable({ write: (_c, _e, done) => done() });
    const get = (await c.downloadVersionTo('doc-1', 'ver-1', sink).catch((e: unknown) => e)) as ServiceError;
    expect(get).toBeInstanceOf(ServiceError);
    expect(get.status).toBe(403);
    expectNoSecret(get);
  });

  // Black-box round 33a, F1: the forms the first scrubbing missed. An XML error keeps only its Code and Message;
  // any other body is scrubbed of every form of the URL's query values.
  const KEY_ID = CREDENTIAL.split('/')[0]!;
  const hexSpaced = (v: string) => Buffer.from(v).toString('hex').replace(/(..)/g, '$1 ').trim();
  const lowerEncoded = encodeURIComponent(SIG).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase());
  const BARE_SIG = SIG.replace(/=+$/, '');
  const URL_SAFE_SIG = BARE_SIG.replace(/\+/g, '-').replace(/\//g, '_');
  const numericEntities = (v: string) => v.replace(/[+/=]/g, (ch) => `&#${ch.charCodeAt(0)};`);
  it.each([
    ['S3\'s own shape (access key id alone, the canonical request as hex bytes)', 'application/xml', `<Error><Code>SignatureDoesNotMatch</Code><Message>Check your key and signing method.</Message><AWSAccessKeyId>${KEY_ID}</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256 ${KEY_ID}</StringToSign><SignatureProvided>${SIG}</SignatureProvided><CanonicalRequestBytes>${hexSpaced(`PUT /store sig=${encodeURIComponent(SIG)}`)}</CanonicalRequestBytes></Error>`],
    ['JSON, the signature wrapped across lines', 'application/json', JSON.stringify({ error: { code: 'SignatureDoesNotMatch', message: `we got ${SIG.slice(0, 14)}\n${SIG.slice(14)} and ${KEY_ID}` } })],
    ['text, the signature in base64', 'text/plain', `SignatureDoesNotMatch: signature check failed for ${Buffer.from(SIG).toString('base64')}`],
    ['text, the signature as spaced hex bytes', 'text/plain', `SignatureDoesNotMatch: bytes ${hexSpaced(SIG)}`],
    ['text, the signature with XML numeric character references', 'text/plain', `SignatureDoesNotMatch: got ${numericEntities(SIG)}`],
    // Round 34a, F2.
    ['text, the signature percent-encoded in lower case', 'text/plain', `SignatureDoesNotMatch: got ${lowerEncoded}`],
    ['text, the signature without its base64 padding', 'text/plain', `SignatureDoesNotMatch: got ${BARE_SIG}`],
    ['text, the signature in the URL-safe base64 alphabet', 'text/plain', `SignatureDoesNotMatch: got ${URL_SAFE_SIG}`],
  ])('%s', async (_what, type, body) => {
    const s = await stub((r) => (r.path === '/store' ? { status: 403, headers: { 'content-type': type }, body } : undefined));
    const c = stubClient(s.origin);
    const url = `${s.origin}/store?X-Amz-Credential=${encodeURIComponent(CREDENTIAL)}&X-Amz-Signature=${encodeURIComponent(SIG)}`;
    const err = (await c.putContent(url, () => Readable.from([Buffer.from('abc')]), 3).catch((e: unknown) => e)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    const all = JSON.stringify({ message: err.message, hint: err.hint, problem: err.problem, context: err.context });
    // As a reader would take it: character references read, line breaks and spaces closed up.
    const squeezed = all.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n))).replace(/\s+/g, '');
    for (const form of [SIG, BARE_SIG, URL_SAFE_SIG, encodeURIComponent(SIG), lowerEncoded, 'c2lnbmF0dXJl', KEY_ID, Buffer.from(SIG).toString('base64').replace(/=+$/, ''), Buffer.from(SIG).toString('hex'), Buffer.from(encodeURIComponent(SIG)).toString('hex')]) {
      expect(squeezed, all).not.toContain(form);
    }
    expect(err.message).toContain('SignatureDoesNotMatch');
  });
});

describe('presignedUrlSecrets', () => {
  it('gives long query values raw and decoded, not short ones', () => {
    const got = presignedUrlSecrets(`https://st.example/b/c?sv=2020-01-01&sp=r&sig=${encodeURIComponent(SIG)}`);
    expect(got).toContain(SIG);
    expect(got).toContain(encodeURIComponent(SIG));
    expect(got).toContain('2020-01-01');
    expect(got).not.toContain('r');
    expect(presignedUrlSecrets('not a url')).toEqual([]);
  });
});
