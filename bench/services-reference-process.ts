// The reference's own process in the services benchmark: kube-proxy's iptables shape
// (bench/services-iptables.ts), which starts iptables-restore from here. Started by
// bench/services-reference.ts over an IPC channel; each answer carries the reference's own
// timings (render and restore, measured here).
import { serveReference } from './reference-channel.js';
import { KubeProxyIptables } from './services-iptables.js';
import type { ServicesReply, ServicesRequest } from './services-reference.js';

const [netns, clusterCidr] = process.argv.slice(2);
if (!netns || !clusterCidr) throw new Error('bench/services-reference-process.ts is started by bench/services-reference.ts');
const reference = new KubeProxyIptables(netns, clusterCidr);

async function answer(m: ServicesRequest): Promise<ServicesReply> {
  switch (m.type) {
    case 'load':
      return { type: 'applied', apply: await reference.load(m.input) };
    case 'update':
      return { type: 'applied', apply: await reference.update(m.changed) };
    case 'counts':
      return { type: 'counts', ...(await reference.kernelCounts()) };
  }
}

serveReference('bench/services-reference-process.ts', answer);
