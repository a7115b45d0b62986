#!/usr/bin/env node
// The podroute CLI (see entry.js for which code runs: the sources in a checkout, dist/ installed).
import { load } from './entry.js';

await load('../lib/cli/main.ts', '../dist/lib/cli/main.js');
