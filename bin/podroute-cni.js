#!/usr/bin/env node
// The podroute CNI plugin (CNI 1.0): a container runtime runs it with CNI_* in the
// environment and the network configuration on stdin.
import { register } from 'tsx/esm/api';
register();
const { main } = await import('../lib/cni/main.ts');
await main();
