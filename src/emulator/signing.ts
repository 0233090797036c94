// HMAC signatures for presigned storage URLs and for bearer tokens. The key lives in the state, so with a
// dataDir URLs and tokens stay valid across a restart, as they would on a real service.
import { createHmac, timingSafeEqual } from 'node:crypto';

export class Signer {
  constructor(private readonly key: Buffer) {}

  sign(text: string): string {
    return createHmac('sha256', this.key).update(text).digest('base64url');
  }

  verify(text: string, signature: string): boolean {
    const expected = Buffer.from(this.sign(text));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  /** A presigned URL: `exp` (epoch ms) and `sig` over method, path and exp in the query string. */
  presign(method: 'GET' | 'PUT', origin: string, path: string, expiresAtMs: number): string {
    const sig = this.sign(`${method}\n${path}\n${expiresAtMs}`);
    return `${origin}${path}?exp=${expiresAtMs}&sig=${sig}`;
  }

  /** 'ok', or why the URL is refused: a missing/bad signature and an expired URL both answer 403. */
  checkPresigned(method: 'GET' | 'PUT', path: string, query: URLSearchParams, nowMs: number): 'ok' | 'bad-signature' | 'expired' {
    const exp = query.get('exp');
    const sig = query.get('sig');
    if (!exp || !sig || !/^\d+$/.test(exp) || !this.verify(`${method}\n${path}\n${exp}`, sig)) return 'bad-signature';
    return Number(exp) < nowMs ? 'expired' : 'ok';
  }
}
