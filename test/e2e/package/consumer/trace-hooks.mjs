// The module hooks behind trace.mjs. They run on their own thread; the main thread waits for
// each resolve, so a line is in the file before the module it names is evaluated.
import { appendFileSync } from 'node:fs';

let file;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
