// The built-in ignore rules are documented where users look (README, sync.config.example.yaml), every one of
// them: a rule added to src/local/ignore.ts without documenting it fails here.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BUILTIN_IGNORES } from '../../src/local/ignore.js';

const read = (rel: string) => fs.readFileSync(new URL(`../../${rel}`, import.meta.url), 'utf8');

describe('built-in ignore rules are documented', () => {
  it.each(['README.md', 'sync.config.example.yaml'])('in %s', (file) => {
    const text = read(file);
    const missing = BUILTIN_IGNORES.filter((rule) => !text.includes(rule));
    expect(missing).toEqual([]);
  });
});
