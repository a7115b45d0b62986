#!/usr/bin/env -S node --single-threaded-gc
// The podroute CLI (see entry.js for which code runs: the sources in a checkout, dist/ installed).
//
// The Node.js option on the line above is for the daemons this starts (`node run`, and bgpd and
// the reflector with it), which share a node of perhaps two cores with its pods for months:
// --single-threaded-gc has V8 collect on the main thread alone, with no helper threads to start,
// wait for and share the cores with (Node's pool has four whatever the cores). Measured
// alternating with and without it on 2 cores (BENCHMARKS.md, Policy and Services): policy
// changes at load 6-13, 1,000 of each kind, had a lower p50 and p99 for every kind; a Service's
// endpoint change at load 6-9, 250 each, p50 2.30 against 3.02 ms and p99 20.1 against 35.8.
// The benchmarks that time felix in their own process run it with this line's options
// (bench/agent-node.ts).
import { load } from './entry.js';

await load('../lib/cli/main.ts', '../dist/lib/cli/main.js');
