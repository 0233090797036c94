// Identifier generation: GUIDs for folders, documents, versions and uploads; 9-character NanoId-like binder ids.
import { randomBytes, randomUUID } from 'node:crypto';

const NANO_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
export const BINDER_ID_PATTERN = /^[A-Za-z0-9_-]{9}$/;

export function guid(): string {
  return randomUUID();
}

export function binderId(): string {
  const bytes = randomBytes(9);
  let out = '';
  // 64 symbols: the low 6 bits of each byte index the alphabet without bias.
  for (const b of bytes) out += NANO_ALPHABET[b & 63];
  return out;
}

export function traceId(): string {
  return randomBytes(16).toString('hex');
}

/** Small deterministic PRNG (mulberry32) for fault probabilities and demo content. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
