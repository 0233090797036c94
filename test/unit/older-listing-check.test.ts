// checkOlderListings: which documents listed older than synced are asked about, how often, and what a failed
// or "lagging" answer leaves. The service and the state DB are fakes here; pass-search-lag.test.ts runs it for real.
import { describe, expect, it } from 'vitest';
import type { RawDoc } from '../../src/remote/listing.js';
import { OLDER_LISTING_DOUBT_MS, OLDER_LISTING_RECHECK_MS, checkOlderListings } from '../../src/sync/older-listing-check.js';

const T0 = Date.UTC(2026, 10, 28, 12, 0, 0);
const raw = (ids: string[]) => new Map<string, RawDoc>(ids.map((id) => [id, { documentId: id, fileName: `${id}.txt`, folderId: 'f', versionId: `${id}-old` }]));

function fakeRt(latest: Record<string, string | Error>, supersededAt: number) {
  const superseded = new Set(Object.keys(latest).map((id) => `${id}-old`));
  const asked: string[] = [];
  const rt = {
    olderListingChecks: new Map<string, number>(),
    log: { debug() {}, warn() {} },
    client: {
      async getDocument(id: string) {
        asked.push(id);
        const l = latest[id];
        if (l instanceof Error) throw l;
        return { documentId: id, latestVersionId: l };
      },
    },
    store: {
      supersededSince: (_id: string, v: string) => (superseded.has(v) ? supersededAt : undefined),
      forgetSupersededVersion: (_id: string, v: string) => superseded.delete(v),
      getBase: (id: string) => ({ relPath: `${id}.txt` }),
    },
  };
  return { rt: rt as unknown as Parameters<typeof checkOlderListings>[0], asked, superseded };
}

describe('checkOlderListings', () => {
  it('asks nothing within the doubt time, and says to look again', async () => {
    const { rt, asked } = fakeRt({ a: 'a-old' }, T0);
    const r = await checkOlderListings(rt, ['a'], raw(['a']), T0 + OLDER_LISTING_DOUBT_MS - 1);
    expect(r).toEqual({ confirmed: [], lookAgain: true });
    expect(asked).toEqual([]);
  });

  it('asks nothing of a read lagging a few minutes: a service whose GET /documents/{id} lags too would confirm the lag (black-box round 42b, F4)', async () => {
    const { rt, asked } = fakeRt({ a: 'a-old' }, T0);
    expect(await checkOlderListings(rt, ['a'], raw(['a']), T0 + 5 * 60_000)).toEqual({ confirmed: [], lookAgain: true });
    expect(asked).toEqual([]);
  });

  it('confirms the documents the service names at the listed version, keeps the lagging ones, retries failed ones', async () => {
    const { rt, asked, superseded } = fakeRt({ a: 'a-old', b: 'b-new', c: new Error('503') }, T0);
    const at = T0 + OLDER_LISTING_DOUBT_MS;
    const r = await checkOlderListings(rt, ['a', 'b', 'c'], raw(['a', 'b', 'c']), at);
    expect(r).toEqual({ confirmed: ['a'], lookAgain: true });
    expect(asked).toEqual(['a', 'b', 'c']);
    expect([...superseded].sort()).toEqual(['b-old', 'c-old']);
    // The next pass: b (lagging) is not asked again before the recheck time; c (failed) is.
    asked.length = 0;
    await checkOlderListings(rt, ['b', 'c'], raw(['b', 'c']), at + 1000);
    expect(asked).toEqual(['c']);
    asked.length = 0;
    await checkOlderListings(rt, ['b'], raw(['b']), at + OLDER_LISTING_RECHECK_MS);
    expect(asked).toEqual(['b']);
  });

  it('asks about 20 documents in one pass at most', async () => {
    const ids = Array.from({ length: 25 }, (_, i) => `d${i}`);
    const { rt, asked } = fakeRt(Object.fromEntries(ids.map((id) => [id, `${id}-new`])), T0);
    const r = await checkOlderListings(rt, ids, raw(ids), T0 + OLDER_LISTING_DOUBT_MS);
    expect(asked).toHaveLength(20);
    expect(r.lookAgain).toBe(true);
    asked.length = 0;
    await checkOlderListings(rt, ids, raw(ids), T0 + OLDER_LISTING_DOUBT_MS + 1);
    expect(asked).toEqual(ids.slice(20));
  });

  it('a version not recorded as older (settled by another rule) is left alone', async () => {
    const { rt, asked } = fakeRt({}, T0);
    const r = await checkOlderListings(rt, ['x'], raw(['x']), T0 + OLDER_LISTING_DOUBT_MS);
    expect(r).toEqual({ confirmed: [], lookAgain: false });
    expect(asked).toEqual([]);
  });
});
