#!/usr/bin/env node
// The podroute CNI plugin: a container runtime runs it with CNI_* in the environment and the
// network configuration on stdin, once per pod. Installed, it runs dist/cni.js, the plugin
// bundled into one file by `npm run build`, so that a call costs little beyond starting Node.
import { load } from './entry.js';

const { main } = await load('../lib/cni/main.ts', '../dist/cni.js');
await main();
