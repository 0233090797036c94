// Helpers shared by the e2e scenario and crash tests: run the CLI with --json and parse its report, read both
// sides (trash, versions, documents by name), and check the invariants every scenario ends with.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { DocumentView } from '../../src/emulator/index.js';
import { RECORDS_DIR } from '../../src/local/trash-entries.js';
import { localTree, remoteTree, sha256, sync, type CliResult, type Workspace } from './harness.js';

/** The shape `binder-sync sync --json` prints per pair (see jsonReport in src/cli/sync-command.ts). */
export interface JsonReport {
  pair: string;
  converged: boolean;
  blocked: { code: string; message: string } | null;
  actions: string[];
  done: Record<string, number>;
  failures: Array<{ kind: string; relPath: string; code: string; retryable: boolean; message: string }>;
  conflicts: Array<{ relPath: string; conflictPath: string | null; outcome: string }>;
  /** Planned conflicts that held the same content on both sides (counted in done.conflict). */
  identical: number;
  issues: Array<{ relPath: string; documentId?: string; code: string; detail: string }>;
  hashed: number;
  remoteRequests: number;
  /** When the folder tree the pass went by was walked, if the pass did not walk it. */
  folderTreeFrom: string | null;
  bytesDownloaded: number;
  bytesUploaded: number;
}

export interface SyncRun extends CliResult {
  /** The first pair's report; undefined when the command ended before a pass (config/metadata error, crash). */
  report: JsonReport | undefined;
}

/** `binder-sync sync --json [args]`; the report is parsed when stdout holds one. */
export async function syncJson(ws: Workspace, args: string[] = [], opts: { readOnly?: boolean; env?: NodeJS.ProcessEnv } = {}): Promise<SyncRun> {
  const r = await sync(ws, ['--json', ...args], opts);
  let report: JsonReport | undefined;
  const out = r.stdout.trim();
  if (out.startsWith('[')) report = (JSON.parse(out) as JsonReport[])[0];
  return { ...r, report };
}

/** Describes a run for assertion messages (exit code, report issues/failures, stderr tail). */
export function explain(r: CliResult & { report?: JsonReport | undefined }): string {
  const rep = r.report ? JSON.stringify({ issues: r.report.issues, failures: r.report.failures, blocked: r.report.blocked }) : r.stdout.slice(-1500);
  return `exit=${r.code} signal=${r.signal}\nreport=${rep}\nstderr=${r.stderr.slice(-1500)}`;
}

/** Runs a pass and asserts it converged with exit 0. */
export async function expectConvergedPass(ws: Workspace, args: string[] = []): Promise<SyncRun> {
  const r = await syncJson(ws, args);
  expect(r.code, explain(r)).toBe(0);
  expect(r.report?.converged, explain(r)).toBe(true);
  return r;
}

/** Runs a pass and asserts that it planned nothing and converged (exit 0). */
export async function expectQuietPass(ws: Workspace): Promise<SyncRun> {
  const r = await expectConvergedPass(ws);
  expect(r.report?.actions, explain(r)).toEqual([]);
  return r;
}

/** Issue codes of a report, as "code relPath" strings (sorted) for readable assertions. */
export function issueCodes(r: SyncRun): string[] {
  return (r.report?.issues ?? []).map((i) => `${i.code} ${i.relPath}`).sort();
}

export function trashDir(ws: Workspace): string {
  return path.join(ws.stateDir, 'main', 'trash');
}

/** sha256 of every file the pair's trash keeps (its records of where they came from are no kept content). */
export function trashHashes(ws: Workspace): string[] {
  return [...localTree(trashDir(ws))].filter(([rel]) => rel.split('/')[1] !== RECORDS_DIR).map(([, hash]) => hash);
}

/** Local and remote hold exactly the same paths with the same content. */
export function expectSidesEqual(ws: Workspace): void {
  expect(localTree(ws.local)).toEqual(remoteTree(ws));
}

/** The binder's documents keyed by file name (throws when a name is used twice: use listDocuments then). */
export function docsByName(ws: Workspace): Map<string, DocumentView> {
  const out = new Map<string, DocumentView>();
  for (const d of ws.emulator.control.listDocuments(ws.binderId)) {
    if (out.has(d.fileName)) throw new Error(`two documents are named ${d.fileName}`);
    out.set(d.fileName, d);
  }
  return out;
}

export function docNamed(ws: Workspace, fileName: string): DocumentView {
  const d = docsByName(ws).get(fileName);
  if (!d) throw new Error(`no document named ${fileName}; have ${[...docsByName(ws).keys()].join(', ')}`);
  return d;
}

/** Contents (utf8) of all versions of a document, oldest first. */
export function versionContents(ws: Workspace, documentId: string): string[] {
  const c = ws.emulator.control;
  return c.listVersions(documentId).map((v) => c.readContent(documentId, v.id).toString('utf8'));
}

/** Latest remote content of a document as utf8. */
export function remoteText(ws: Workspace, documentId: string): string {
  return ws.emulator.control.readContent(documentId).toString('utf8');
}

export function inodeOf(ws: Workspace, rel: string): number {
  return fs.statSync(path.join(ws.local, rel)).ino;
}

/** Every relative path (files and dirs) under dir whose name starts with '.binder-sync-tmp-'. */
export function tempFilesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (abs: string, rel: string) => {
    if (!fs.existsSync(abs)) return;
    for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.name.startsWith('.binder-sync-tmp-')) out.push(r);
      if (e.isDirectory()) walk(path.join(abs, e.name), r);
    }
  };
  walk(dir, '');
  return out;
}

/** Local files as relPath -> "sha256 inode mtimeMs": equal snapshots mean nothing local was touched. */
export function localSnapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [rel, hash] of localTree(dir)) {
    const st = fs.statSync(path.join(dir, rel));
    out.set(rel, `${hash} ${st.ino} ${st.mtimeMs}`);
  }
  return out;
}

/** Names directly in dir, sorted (to check that nothing appeared beside the sync root). */
export function listDir(dir: string): string[] {
  return fs.readdirSync(dir).sort();
}

/** All sha256 values found anywhere: local tree, trash, and every version of every remote document. */
export function everyContentHash(ws: Workspace): Set<string> {
  const c = ws.emulator.control;
  const all = new Set<string>([...localTree(ws.local).values(), ...trashHashes(ws)]);
  for (const d of c.listDocuments(ws.binderId)) for (const v of c.listVersions(d.id)) all.add(sha256(c.readContent(d.id, v.id)));
  return all;
}

/** Every remote document's version count, by document id. */
export function versionCounts(ws: Workspace): Map<string, number> {
  const c = ws.emulator.control;
  return new Map(c.listDocuments(ws.binderId).map((d) => [d.id, c.listVersions(d.id).length]));
}
