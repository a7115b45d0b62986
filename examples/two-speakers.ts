// Two BgpSpeakers over loopback exchange routes: the library in twenty lines.
// node --import tsx examples/two-speakers.ts
import { BgpSpeaker, parseCommunity } from '../index.js';

const a = new BgpSpeaker({ asn: 65001, routerId: '127.0.0.1', listen: { host: '127.0.0.1', port: 1790 } });
const b = new BgpSpeaker({ asn: 65002, routerId: '127.0.0.2', listen: { host: '127.0.0.2', port: 1790 } });
await a.start();
await b.start();
a.addPeer({ address: '127.0.0.2', asn: 65002, port: 1790, localAddress: '127.0.0.1', connectRetryTime: 1 });
b.addPeer({ address: '127.0.0.1', asn: 65001, port: 1790, localAddress: '127.0.0.2', connectRetryTime: 1, passive: true });

a.originate('10.1.0.0/16', { attributes: { communities: [parseCommunity('65001:7')] } });
b.on('bestPaths', (changes) => {
  for (const c of changes)
    console.log(`b: ${c.kind} ${c.prefix} via ${c.best?.nextHop} as-path ${JSON.stringify(c.best?.attributes.asPath)}`);
});

await new Promise((resolve) => b.once('endOfRib', resolve));
console.log(b.peerStatus().map((p) => `${p.address} AS${p.asn} ${p.state}, ${p.prefixesReceived} received`));
await a.stop('demo over');
await b.stop();
