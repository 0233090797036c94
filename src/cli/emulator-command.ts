// `binder-sync emulator`: runs the bundled emulator of the service until SIGINT/SIGTERM, printing its URLs
// and credentials (also as one JSON line with --json, for scripts and e2e tests that spawn it).
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { Writable } from 'node:stream';
import { startEmulator, type EmulatorOptions, type RequestRecord } from '../emulator/index.js';
import { parsePort } from './common.js';
import { ExitCode } from './exit-codes.js';

export interface EmulatorCommandOptions extends EmulatorOptions {
  json?: boolean;
  logRequests?: boolean;
}

const int = (name: string, min: number) => (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be a whole number >= ${min}`);
  return n;
};

export function registerEmulatorCommand(program: Command, setExit: (code: number) => void): void {
  program
    .command('emulator')
    .description('Run the bundled emulator of the Document and Binder Service (API, token endpoint, storage, control)')
    .addOption(new Option('--port <n>', 'port on 127.0.0.1 (0 = any free port)').default(8470).argParser(parsePort))
    .option('--data <dir>', 'keep state and blobs in this directory across restarts (default: in memory)')
    .addOption(new Option('--seed <name>', 'seed data into an empty state').choices(['demo', 'none']).default('none'))
    .addOption(new Option('--token-lifetime <s>', 'access token lifetime in seconds').default(3600).argParser(int('--token-lifetime', 1)))
    .addOption(new Option('--download-url-lifetime <s>', 'presigned download URL lifetime in seconds').default(300).argParser(int('--download-url-lifetime', 1)))
    .addOption(new Option('--upload-url-lifetime <s>', 'presigned upload URL lifetime in seconds').default(3600).argParser(int('--upload-url-lifetime', 1)))
    .addOption(new Option('--binders-shape <shape>', 'GET /binders answers a bare array or {items}').choices(['array', 'items']).default('array'))
    .addOption(
      new Option('--download-link-paths <list>', 'comma-separated download-link suffixes that exist').default('raw,downloadlink').argParser((raw: string) => {
        const list = raw.split(',').map((s) => s.trim());
        if (list.length === 0 || list.some((s) => s !== 'raw' && s !== 'downloadlink')) throw new InvalidArgumentError('--download-link-paths takes raw and/or downloadlink');
        return list;
      }),
    )
    .addOption(new Option('--commit-spelling <which>', 'commit body spelling accepted').choices(['reference', 'walkthrough', 'both']).default('both'))
    .option('--ignore-unknown-commit-keys', 'with --commit-spelling reference or walkthrough: ignore the other spelling\'s keys instead of answering 400 (a lenient server)')
    .addOption(new Option('--repeat-commit-answer <how>', 'answer to a second commit of the same uploadId').choices(['version', 'no-content', 'conflict', 'latest', 'unknown']).default('version'))
    .addOption(new Option('--max-page-size <n>', 'clamp search pageSize').argParser(int('--max-page-size', 1)))
    .addOption(new Option('--default-page-size <n>', 'search pageSize when none is given').default(50).argParser(int('--default-page-size', 1)))
    .addOption(new Option('--top-level-parent-id <how>', 'parentId of a top-level folder').choices(['null', 'absent', 'binderId']).default('null'))
    .option('--compress-json', 'gzip JSON answers whenever the request allows it (as a proxy in front of a server may)')
    .addOption(new Option('--missing-document-status <n>', 'status of GET /documents/{id} for a document that does not exist').choices(['404', '400', '403']).default('404'))
    .addOption(new Option('--fault-seed <n>', 'seed of the fault-probability PRNG').default(1).argParser(int('--fault-seed', 0)))
    .option('--json', 'print the URLs and credentials as one JSON line')
    .option('--log-requests', 'print one line per API/storage request')
    .action(async (raw: Record<string, unknown>) => {
      const opts: EmulatorCommandOptions = {
        port: raw.port as number,
        seed: raw.seed as 'demo' | 'none',
        tokenLifetimeSeconds: raw.tokenLifetime as number,
        downloadUrlLifetimeSeconds: raw.downloadUrlLifetime as number,
        uploadUrlLifetimeSeconds: raw.uploadUrlLifetime as number,
        bindersShape: raw.bindersShape as 'array' | 'items',
        downloadLinkPaths: (typeof raw.downloadLinkPaths === 'string' ? raw.downloadLinkPaths.split(',') : raw.downloadLinkPaths) as Array<'raw' | 'downloadlink'>,
        commitSpelling: raw.commitSpelling as 'reference' | 'walkthrough' | 'both',
        ignoreUnknownCommitKeys: raw.ignoreUnknownCommitKeys === true,
        repeatCommitAnswer: raw.repeatCommitAnswer as 'version' | 'no-content' | 'conflict' | 'latest' | 'unknown',
        defaultPageSize: raw.defaultPageSize as number,
        topLevelParentId: raw.topLevelParentId as 'null' | 'absent' | 'binderId',
        compressJson: raw.compressJson === true,
        missingDocumentStatus: Number(raw.missingDocumentStatus) as 404 | 400 | 403,
        faultSeed: raw.faultSeed as number,
        json: raw.json === true,
        logRequests: raw.logRequests === true,
      };
      if (typeof raw.data === 'string') opts.dataDir = raw.data;
      if (typeof raw.maxPageSize === 'number') opts.maxPageSize = raw.maxPageSize;
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        setExit(await runEmulatorCommand(opts, { out: process.stdout, signal: stop.signal }));
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}

/** Starts the emulator, prints how to reach it, and closes it when `signal` aborts. */
export async function runEmulatorCommand(opts: EmulatorCommandOptions, io: { out: Writable; signal: AbortSignal }): Promise<number> {
  const { json, logRequests, ...emulatorOptions } = opts;
  const hooks = logRequests
    ? { onRequest: (r: RequestRecord) => io.out.write(`${r.at} ${r.method} ${r.path} -> ${r.status} (${r.route ?? 'no route'})\n`) }
    : {};
  const t0 = Date.now();
  const emu = await startEmulator(emulatorOptions, hooks);
  const info = {
    baseUrl: emu.baseUrl,
    authUrl: emu.authUrl,
    tokenUrl: `${emu.authUrl}/connect/token`,
    storageUrl: emu.storageUrl,
    controlUrl: emu.controlUrl,
    ...emu.credentials,
    demoBinderId: emu.demoBinderId ?? null,
  };
  if (json) {
    io.out.write(`${JSON.stringify(info)}\n`);
  } else {
    const lines = [
      `binder-sync emulator listening (ready in ${Date.now() - t0} ms)${opts.dataDir ? `, data in ${opts.dataDir}` : ', in memory'}`,
      `  base URL     ${info.baseUrl}`,
      `  auth URL     ${info.authUrl}   (token: POST ${info.tokenUrl})`,
      `  storage URL  ${info.storageUrl}`,
      `  control URL  ${info.controlUrl}`,
      `  tenant id              ${info.tenantId}`,
      `  client id / secret     ${info.clientId} / ${info.clientSecret}`,
      `  read-only id / secret  ${info.readOnlyClientId} / ${info.readOnlyClientSecret}`,
    ];
    if (info.demoBinderId) lines.push(`  demo binder  ${info.demoBinderId} (Project Atlas)`);
    lines.push('Press Ctrl-C to stop.');
    io.out.write(`${lines.join('\n')}\n`);
  }
  await new Promise<void>((resolve) => {
    if (io.signal.aborted) resolve();
    else io.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await emu.close();
  if (!json) io.out.write('binder-sync emulator stopped\n');
  return ExitCode.ok;
}
