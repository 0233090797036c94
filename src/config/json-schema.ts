// JSON Schema of the config file, generated from the zod schema (input side: what a user may write), for
// editor completion via yaml-language-server. Committed as config/sync.config.schema.json.
import { z } from 'zod';
import { configFileSchema } from './schema.js';

export const JSON_SCHEMA_RELATIVE_PATH = 'config/sync.config.schema.json';

/** The schema document as committed: stable key order, two-space indent, trailing newline. */
export function configJsonSchemaText(): string {
  // draft-07 is the draft editors' YAML tooling supports best.
  const schema = z.toJSONSchema(configFileSchema, { io: 'input', target: 'draft-07', unrepresentable: 'any' });
  return `${JSON.stringify(schema, null, 2)}\n`;
}
