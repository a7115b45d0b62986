// The reference's own process in the policy benchmark, shaped as Calico's felix runs: its own
// calculation graph fed the same resources as podroute's, and the ipset/iptables state of
// bench/policy-iptables.ts, which starts `ipset` and `iptables-restore` from here. Started by
// bench/policy-reference.ts over an IPC channel; answers each change with the reference's own
// timings (render and restores, measured here: the graph and the channel are not in them).
import type { PolicyInput } from '../felix/index.js';
import { PolicyCalculator } from '../lib/policy/index.js';
import { IptablesReference } from './policy-iptables.js';
import type { ReferenceReply, ReferenceRequest } from './policy-reference.js';
import { serveReference } from './reference-channel.js';

const [netns, nodeName] = process.argv.slice(2);
if (!netns || !nodeName) throw new Error('bench/policy-reference-process.ts is started by bench/policy-reference.ts');

const calculator = new PolicyCalculator(nodeName);
const reference = new IptablesReference(netns);
/** The input's sizes: what the main process compares with podroute's, so the two graphs are known to agree. */
const shapeOf = (i: PolicyInput) => ({
  sets: i.sets.length,
  namedPortSets: i.namedPortSets.length,
  policies: i.policies.length,
  endpoints: i.endpoints.length,
});

async function answer(m: ReferenceRequest): Promise<ReferenceReply> {
  switch (m.type) {
    case 'change': {
      for (const r of m.put ?? []) calculator.put(r);
      for (const [kind, key] of m.delete ?? []) calculator.delete(kind, key);
      const input = calculator.input();
      return { type: 'change', change: await reference.apply(input), input: shapeOf(input) };
    }
    case 'counts':
      return { type: 'counts', kernel: await reference.kernelCounts(), expected: reference.expectedElements() };
  }
}

serveReference('bench/policy-reference-process.ts', answer);
