// The stateDir's record of what the server speaks (src/service/capabilities-file.ts): hints only, so anything
// doubtful about the file reads as "no hints", never as a wrong spelling.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CAPABILITIES_FILE, readCapabilities, writeCapabilities } from '../../src/service/capabilities-file.js';

const SERVICE = 'https://api.example.com/v1 (tenant t-1)';
let dir: string;
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
const fresh = () => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caps-')));

describe('service capabilities file', () => {
  it('reads back what was written, for the same service only, owner-only and without a temp file left', () => {
    fresh();
    writeCapabilities(dir, SERVICE, { downloadLinkSuffix: 'downloadlink', commitSpelling: 'walkthrough' });
    expect(readCapabilities(dir, SERVICE)).toEqual({ downloadLinkSuffix: 'downloadlink', commitSpelling: 'walkthrough' });
    expect(readCapabilities(dir, 'https://api.example.com/v1 (tenant t-2)')).toEqual({});
    expect(fs.statSync(path.join(dir, CAPABILITIES_FILE)).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir)).toEqual([CAPABILITIES_FILE]);
  });

  it('leaves out what is not known yet', () => {
    fresh();
    writeCapabilities(dir, SERVICE, { downloadLinkSuffix: null, commitSpelling: 'reference' });
    expect(readCapabilities(dir, SERVICE)).toEqual({ commitSpelling: 'reference' });
  });

  it.each([
    ['missing', null],
    ['empty', ''],
    ['cut short', '{"service":"https://api.example.com/v1 (tenant t-1)","downloadLinkSu'],
    ['an unknown spelling', JSON.stringify({ service: SERVICE, downloadLinkSuffix: 'blob', commitSpelling: null })],
    ['not an object', '[1,2]'],
  ])('a file %s gives no hints', (_what, content) => {
    fresh();
    if (content !== null) fs.writeFileSync(path.join(dir, CAPABILITIES_FILE), content);
    expect(readCapabilities(dir, SERVICE)).toEqual({});
  });

  it('throws when the stateDir cannot be written, and leaves no temp file', () => {
    fresh();
    const gone = path.join(dir, 'missing-dir');
    expect(() => writeCapabilities(gone, SERVICE, { downloadLinkSuffix: 'raw', commitSpelling: null })).toThrow(/ENOENT/);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
