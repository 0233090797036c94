// The second thread of digestLocalTree (tree-digest.ts): takes sub-trees from the shared counter until none is
// left, walks each and sends its chunks' digests back. Any error ends it; the main thread then walks what is missing.
import fs from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { createIgnoreMatcher } from './ignore.js';
import { walkSegment, type WorkerInput, type WorkerMessage, type WorkerTask } from './tree-digest.js';

const input = workerData as WorkerInput;
const opts = { root: input.root, caseInsensitive: input.caseInsensitive, ignore: createIgnoreMatcher(input.ignoreGlobs) };
const claims = new Int32Array(input.next);
const post = (m: WorkerMessage) => parentPort?.postMessage(m);
// Started before the main thread has split the tree: the sub-trees come in one message.
const { rels } = await new Promise<WorkerTask>((resolve) => parentPort?.once('message', resolve));
for (;;) {
  const index = Atomics.add(claims, 0, 1);
  if (index >= rels.length) break;
  const rel = rels[index] as string;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(path.join(input.root, rel), { withFileTypes: true });
  } catch {
    post({ index, digests: new Uint8Array(0), clean: false }); // changed or unreadable since the main thread listed it
    continue;
  }
  post({ index, ...(await walkSegment(opts, { rel, entries })) });
}
post({ done: true });
