// The logger's `err` field: an Error, a BinderSyncError, a thrown string or a plain object each become
// { type, message, ... } with a useful type and message (never { type: 'Object', stack: '' }), URLs scrubbed.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BinderSyncError } from '../../src/errors.js';
import { createLogger, prettyLine } from '../../src/log.js';

function capture() {
  const records: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) records.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  return { log: createLogger({ level: 'info', destination: sink, pretty: false }), records };
}

describe('createLogger: err', () => {
  it('an Error keeps its type, message and errno code; a bug keeps its stack', () => {
    const { log, records } = capture();
    const fsErr = Object.assign(new Error("EACCES: permission denied, open '/x/y'"), { code: 'EACCES' });
    log.error({ err: fsErr }, 'a');
    log.error({ err: new TypeError('x is undefined') }, 'b');
    expect(records[0]?.err).toEqual({ type: 'Error', message: "EACCES: permission denied, open '/x/y'", code: 'EACCES' });
    const bug = records[1]?.err as Record<string, unknown>;
    expect(bug).toMatchObject({ type: 'TypeError', message: 'x is undefined' });
    expect(String(bug.stack)).toContain('log.test.ts');
  });

  it('a BinderSyncError carries its code and hint, and the message of its cause', () => {
    const { log, records } = capture();
    const cause = new Error('connect ECONNREFUSED 127.0.0.1:9');
    log.warn({ err: new BinderSyncError('the local root /r cannot be read', { code: 'LOCAL_ROOT', retryable: true, hint: 'is the disk mounted?', cause }) }, 'c');
    expect(records[0]?.err).toEqual({ type: 'BinderSyncError', message: 'the local root /r cannot be read', code: 'LOCAL_ROOT', hint: 'is the disk mounted?', cause: 'connect ECONNREFUSED 127.0.0.1:9' });
  });

  it('a thrown string, a plain object, null: a type and a readable message', () => {
    const { log, records } = capture();
    log.error({ err: 'it broke' }, 'd');
    log.error({ err: { status: 500, reason: 'bad gateway' } }, 'e');
    log.error({ err: { message: 'has a message', code: 'X1' } }, 'f');
    log.error({ err: null }, 'g');
    expect(records[0]?.err).toEqual({ type: 'string', message: 'it broke' });
    expect(records[1]?.err).toEqual({ type: 'Object', message: '{"status":500,"reason":"bad gateway"}', status: 500, reason: 'bad gateway' });
    expect(records[2]?.err).toEqual({ type: 'Object', message: 'has a message', code: 'X1' });
    expect(records[3]?.err).toEqual({ type: 'null', message: 'null' });
    for (const r of records) expect(JSON.stringify(r.err)).not.toContain('"stack":""');
  });

  it('scrubs signatures from error messages', () => {
    const { log, records } = capture();
    log.error({ err: new Error('GET https://storage.example.com/blob/1?sig=SECRETSIG&se=1 failed') }, 'h');
    expect(JSON.stringify(records[0])).not.toContain('SECRETSIG');
  });
});

describe('prettyLine (the terminal format)', () => {
  it('shows an error as "message [CODE] (hint: ...)", other fields as key=value, and passes non-JSON through', () => {
    const { log, records } = capture();
    const err = new BinderSyncError('writing the downloaded content failed: ENOSPC', { code: 'LOCAL_IO', retryable: true, hint: 'free some space' });
    log.warn({ pair: 'main', action: 'download', relPath: 'Big/a.bin', err }, 'action failed');
    const line = prettyLine(JSON.stringify(records[0]));
    expect(line).toMatch(/^\d\d:\d\d:\d\d WARN  \[main\] action failed {2}action=download relPath=Big\/a\.bin err=writing the downloaded content failed: ENOSPC \[LOCAL_IO\] \(hint: free some space\)\n$/);
    expect(prettyLine('not json\n')).toBe('not json\n');
    // An object that is not an error stays JSON.
    log.info({ done: { upload: 2 } }, 'pass');
    expect(prettyLine(JSON.stringify(records[1]))).toContain('done={"upload":2}');
  });
});
