#!/usr/bin/env node
// The podroute CLI. The sources are TypeScript run directly through tsx, so a checkout
// needs no build step and never runs stale output.
import { register } from 'tsx/esm/api';
register();
await import('../lib/cli/main.ts');
