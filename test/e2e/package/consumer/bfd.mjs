// A BFD consumer of the installed package: two endpoints with their sessions on threads of
// their own (the default), on loopback, reach Up. The thread loads the compiled dist/ (there
// is no tsx here to load sources).
import dgram from 'node:dgram';
import { BfdWorker, createBfdEndpoint } from 'podroute/bfd';

async function freePort() {
  const s = dgram.createSocket('udp4');
  await new Promise((resolve) => s.bind(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

const [pa, pb] = [await freePort(), await freePort()];
const a = createBfdEndpoint({ port: pa, remotePort: pb });
const b = createBfdEndpoint({ port: pb, remotePort: pa });
if (!(a instanceof BfdWorker)) throw new Error('createBfdEndpoint() did not give a BfdWorker');
const timers = { minTxInterval: 100, minRxInterval: 100, multiplier: 3 };
const sa = a.add({ peer: '127.0.0.2', localAddress: '127.0.0.1', ...timers });
const sb = b.add({ peer: '127.0.0.1', localAddress: '127.0.0.2', ...timers });
const deadline = Date.now() + 20_000;
while (!(sa.isUp && sb.isUp)) {
  if (Date.now() > deadline) throw new Error(`not Up after 20 s: ${sa.state} / ${sb.state}`);
  await new Promise((r) => setTimeout(r, 20));
}
const thread = a.worker?.threadId;
await Promise.all([a.close(), b.close()]);
process.stdout.write(`bfd ok (Up on thread ${thread})\n`);
