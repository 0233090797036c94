// Script: writes config/sync.config.schema.json from the zod schema. Usage (after build):
//   node dist/config/write-json-schema.js [output-file]     (default: <repo>/config/sync.config.schema.json)
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { JSON_SCHEMA_RELATIVE_PATH, configJsonSchemaText } from './json-schema.js';

/** The package root: the nearest directory above this file that holds package.json. */
function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('package.json not found above write-json-schema');
    dir = parent;
  }
  return dir;
}

const out = path.resolve(process.argv[2] ?? path.join(packageRoot(), JSON_SCHEMA_RELATIVE_PATH));
writeFileSync(out, configJsonSchemaText());
process.stdout.write(`wrote ${out}\n`);
