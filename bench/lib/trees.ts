// File sets of the benchmarks (deterministic names and content) and how to put them into the emulator's
// binder (control API) or onto disk.
import fs from 'node:fs';
import path from 'node:path';
import type { Emulator } from '../../src/emulator/index.js';
import { contentFor } from './content.js';

export interface FileSpec {
  /** Folder path from the binder root ("a" or "a/b"); documents always live in a folder. */
  folder: string;
  name: string;
  size: number;
  /** Content set name + index: contentFor(set, index, size). */
  set: string;
  index: number;
}

/** `count` files of `size` bytes, 100 per folder (one folder when count <= 100). */
export function flatSet(set: string, count: number, size: number): FileSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    folder: `${set}-${String(Math.floor(i / 100)).padStart(4, '0')}`,
    name: `doc-${String(i).padStart(6, '0')}.bin`,
    size,
    set,
    index: i,
  }));
}

/** The no-op tree: 10 top folders, ~91 files per leaf folder (100,000 files -> 1,099 leaves + 10 tops). */
export function deepSet(set: string, count: number, size: number): FileSpec[] {
  return Array.from({ length: count }, (_, i) => {
    const leaf = Math.floor(i / 91);
    return { folder: `top-${leaf % 10}/leaf-${String(leaf).padStart(5, '0')}`, name: `f-${String(i).padStart(6, '0')}.txt`, size, set, index: i };
  });
}

export function folderCount(files: readonly FileSpec[]): number {
  const all = new Set<string>();
  for (const f of files) {
    const parts = f.folder.split('/');
    for (let i = 1; i <= parts.length; i++) all.add(parts.slice(0, i).join('/'));
  }
  return all.size;
}

/** Creates every folder of `files` in the binder (no documents); returns folder path -> id. */
export function seedFolders(emu: Emulator, binderId: string, files: readonly FileSpec[]): Map<string, string> {
  const ids = new Map<string, string>();
  const ensure = (p: string): string => {
    const known = ids.get(p);
    if (known) return known;
    const slash = p.lastIndexOf('/');
    const parentId = slash < 0 ? null : ensure(p.slice(0, slash));
    const id = emu.control.createFolder(binderId, { name: slash < 0 ? p : p.slice(slash + 1), parentId }).id;
    ids.set(p, id);
    return id;
  };
  for (const f of files) ensure(f.folder);
  return ids;
}

/** Folders and one document per file, with deterministic content. */
export function seedRemote(emu: Emulator, binderId: string, files: readonly FileSpec[]): void {
  const ids = seedFolders(emu, binderId, files);
  for (const f of files) emu.control.addDocument(binderId, ids.get(f.folder) as string, f.name, contentFor(f.set, f.index, f.size));
}

export function writeTree(dir: string, files: readonly FileSpec[]): void {
  const made = new Set<string>();
  for (const f of files) {
    const d = path.join(dir, f.folder);
    if (!made.has(d)) {
      fs.mkdirSync(d, { recursive: true });
      made.add(d);
    }
    fs.writeFileSync(path.join(d, f.name), contentFor(f.set, f.index, f.size));
  }
}
