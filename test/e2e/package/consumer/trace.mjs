// Preloaded with --import: appends the URL of every module the program resolves after it to
// the file named by PODROUTE_TRACE, so a consumer can show what an import cost.
import { register } from 'node:module';

register('./trace-hooks.mjs', { parentURL: import.meta.url, data: { file: process.env.PODROUTE_TRACE } });
