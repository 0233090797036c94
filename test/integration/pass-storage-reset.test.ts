// Storage resetting the connection while a large file's body goes out: the socket's error reaches the file's
// stream through the pipeline, and was said as "reading the local file for upload failed: read ECONNRESET"
// (UPLOAD_SOURCE_FAILED: not retried, a one-shot sync exited 1; black-box round 41c, F3). It is the network's:
// the upload takes a new slot and goes through in the same pass. Real passes, real files, the emulator on loopback
// dropping the first PUT as it arrives.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runPass } from '../../src/sync/pass.js';
import { openTestPair } from './pass-fixture.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});
afterAll(async () => {
  await emu?.close();
});

it('a connection reset in the middle of a large PUT is retried with a new slot in the same pass, not blamed on the file', async () => {
  const p = await openTestPair(emu, 'put-reset', '', { retry: { maxAttempts: 4, baseDelayMs: 5, maxDelayMs: 20 } });
  try {
    const c = emu.control;
    c.createFolder(p.binderId, { name: 'Docs' });
    await runPass(p.rt);
    const content = Buffer.alloc(20_000_000, 3);
    fs.writeFileSync(path.join(p.local, 'Docs', 'big.bin'), content);
    c.injectFault({ route: 'storage-put', drop: true, times: 1 });
    const r = await runPass(p.rt);
    expect(r.execution?.failures.map((f) => f.message)).toEqual([]);
    expect(r.execution?.done).toEqual({ upload: 1 });
    const doc = c.listDocuments(p.binderId).find((d) => d.fileName === 'big.bin')!;
    expect(c.readContent(doc.id).equals(content)).toBe(true);
    expect(c.counters()['storage-put']).toBe(2); // the dropped one, then the whole file once
  } finally {
    await p.close();
  }
}, 30_000);
