// Deterministic pseudo-random file content (AES-256-CTR keystream over zeros): the same (set, index) always
// yields the same bytes, fast enough for GiB-sized sets, and incompressible like real documents.
import { createCipheriv, createHash } from 'node:crypto';

const KEY = createHash('sha256').update('binder-sync bench').digest();
const ZEROS = Buffer.alloc(1024 * 1024);

export function contentFor(set: string, index: number, size: number): Buffer {
  const iv = createHash('sha256').update(`${set}/${index}`).digest().subarray(0, 16);
  const cipher = createCipheriv('aes-256-ctr', KEY, iv);
  const parts: Buffer[] = [];
  let left = size;
  while (left > 0) {
    const n = Math.min(left, ZEROS.length);
    parts.push(cipher.update(ZEROS.subarray(0, n)));
    left -= n;
  }
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size);
}
