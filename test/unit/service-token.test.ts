// TokenProvider: cache for the lifetime minus the safety margin, single-flight refresh, targeted invalidation.
import { describe, expect, it } from 'vitest';
import { DEFAULT_TOKEN_LIFETIME_S, TokenProvider, safetyMarginMs } from '../../src/service/token.js';

function fakeIdp(lifetime: number) {
  let n = 0;
  const calls: number[] = [];
  let release: (() => void) | undefined;
  let gate: Promise<void> | undefined;
  return {
    calls,
    hold() {
      gate = new Promise((r) => (release = r));
    },
    release: () => release?.(),
    fetch: async () => {
      calls.push(++n);
      if (gate) await gate;
      return { access_token: `tok-${n}`, expires_in: lifetime };
    },
  };
}

describe('safetyMarginMs', () => {
  it('is min(60 s, 10% of the lifetime)', () => {
    expect(safetyMarginMs(3600)).toBe(60_000);
    expect(safetyMarginMs(100)).toBe(10_000);
    expect(safetyMarginMs(1)).toBe(100);
  });
});

describe('TokenProvider', () => {
  it('takes a token whose answer gives no expires_in to live DEFAULT_TOKEN_LIFETIME_S (less the margin)', async () => {
    let now = 5_000_000;
    let n = 0;
    const tp = new TokenProvider(async () => ({ access_token: `tok-${++n}` }), () => now);
    expect(await tp.get()).toBe('tok-1');
    const keptMs = DEFAULT_TOKEN_LIFETIME_S * 1000 - safetyMarginMs(DEFAULT_TOKEN_LIFETIME_S);
    now += keptMs - 1;
    expect(await tp.get()).toBe('tok-1');
    now += 1;
    expect(await tp.get()).toBe('tok-2');
  });

  it('takes expires_in 0 as not stated: one token for DEFAULT_TOKEN_LIFETIME_S, not one per call', async () => {
    let now = 7_000_000;
    const idp = fakeIdp(0);
    const tp = new TokenProvider(idp.fetch, () => now);
    expect(await tp.get()).toBe('tok-1');
    now += 1000;
    expect(await tp.get()).toBe('tok-1');
    now += DEFAULT_TOKEN_LIFETIME_S * 1000 - safetyMarginMs(DEFAULT_TOKEN_LIFETIME_S) - 1000;
    expect(await tp.get()).toBe('tok-2');
    expect(idp.calls).toHaveLength(2);
  });

  it('caches the token until lifetime minus margin', async () => {
    let now = 1_000_000;
    const idp = fakeIdp(100);
    const tp = new TokenProvider(idp.fetch, () => now);
    expect(await tp.get()).toBe('tok-1');
    now += 89_999;
    expect(await tp.get()).toBe('tok-1');
    now += 1;
    expect(await tp.get()).toBe('tok-2');
    expect(idp.calls).toHaveLength(2);
  });

  it('shares one token request between concurrent callers', async () => {
    const idp = fakeIdp(3600);
    idp.hold();
    const tp = new TokenProvider(idp.fetch);
    const all = Promise.all(Array.from({ length: 20 }, () => tp.get()));
    await new Promise((r) => setTimeout(r, 5));
    idp.release();
    expect(new Set(await all)).toEqual(new Set(['tok-1']));
    expect(idp.calls).toHaveLength(1);
  });

  it("a caller's signal ends its own wait, not the token request other callers share", async () => {
    const idp = fakeIdp(3600);
    idp.hold();
    const tp = new TokenProvider(idp.fetch);
    const stop = new AbortController();
    const cancelled = tp.get(stop.signal);
    const other = tp.get();
    await new Promise((r) => setTimeout(r, 5));
    stop.abort(new Error('stopping'));
    await expect(cancelled).rejects.toThrow('stopping');
    idp.release();
    expect(await other).toBe('tok-1');
    expect(idp.calls).toHaveLength(1);
    await expect(tp.get(stop.signal)).resolves.toBe('tok-1'); // cached: an aborted signal does not matter then
  });

  it('a token request that fails after every waiter stopped waiting is no unhandled rejection (round 37b, F2)', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const fails: Array<(err: Error) => void> = [];
      const tp = new TokenProvider(() => new Promise((_resolve, reject) => void fails.push(reject)));
      const stop = new AbortController();
      const waiting = tp.get(stop.signal);
      stop.abort(new Error('pair stopped'));
      await expect(waiting).rejects.toThrow('pair stopped');
      for (const fail of fails.splice(0)) fail(new Error('POST /connect/token was cancelled'));
      await new Promise((r) => setTimeout(r, 5));
      // A caller whose signal is already aborted is told so at once, and starts no token request (one started for
      // it had no one to take its failure).
      await expect(tp.get(stop.signal)).rejects.toThrow('pair stopped');
      for (const fail of fails.splice(0)) fail(new Error('POST /connect/token was cancelled'));
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
      expect(fails).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('invalidate drops only the refused token', async () => {
    const idp = fakeIdp(3600);
    const tp = new TokenProvider(idp.fetch);
    const t1 = await tp.get();
    tp.invalidate(t1);
    const t2 = await tp.get();
    expect(t2).toBe('tok-2');
    tp.invalidate(t1); // a late 401 for the old token must not throw away the new one
    expect(await tp.get()).toBe('tok-2');
    expect(tp.knownTokens()).toEqual(['tok-1', 'tok-2']);
  });

  it('a failed refresh is not cached: the next caller tries again', async () => {
    let fail = true;
    const tp = new TokenProvider(async () => {
      if (fail) throw new Error('idp down');
      return { access_token: 'ok', expires_in: 60 };
    });
    await expect(tp.get()).rejects.toThrow('idp down');
    fail = false;
    expect(await tp.get()).toBe('ok');
  });
});
