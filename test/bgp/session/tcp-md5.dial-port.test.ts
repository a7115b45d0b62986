// A speaker that dials its peers from a given local address takes its source port per peer
// (IP_BIND_ADDRESS_NO_PORT, through the bgp/native addon), not per address as node:net's
// bind-then-connect does. Shown in a namespace whose ephemeral port range is one port: through
// the addon, sessions to two peers both come up on that port; through node:net, the second
// finds no free port on the address. At scale the second case is what a restarted agent meets
// when its earlier connections to thousands of peers are still in TIME_WAIT. A socket the addon
// cannot make fails as node:net's would, with the same error code.
import assert from 'node:assert/strict';
import { loadTcpMd5, setTcpMd5AddonPath } from '../../../bgp/index.js';
import { connectSession } from '../../../bgp/session/tcp-md5.js';
import { Lab, type Netns } from '../../support/netns.js';

// Three speakers in one process: A dials B and C, which only listen.
const CHILD = `
import { BgpSpeaker } from './bgp/index.ts';
const timers = { holdTime: 9, connectRetryTime: 1, idleHoldTime: 0.2 };
const a = new BgpSpeaker({ asn: 65001, routerId: '127.0.0.1', listen: { host: '127.0.0.1', port: 1790 } });
const others = ['127.0.0.2', '127.0.0.3'].map((ip, i) => {
  const s = new BgpSpeaker({ asn: 65002 + i, routerId: ip, listen: { host: ip, port: 179 } });
  s.addPeer({ address: '127.0.0.1', asn: 65001, port: 1790, passive: true, ...timers });
  return s;
});
for (const s of others) await s.start();
await a.start();
for (const [i, ip] of ['127.0.0.2', '127.0.0.3'].entries())
  a.addPeer({ address: ip, asn: 65002 + i, port: 179, localAddress: '127.0.0.1', ...timers });
// Up to 8 s for both: a session that finds no port has had several connect retries by then.
const states = () => a.peerStatus().map((p) => p.state);
const end = Date.now() + 8000;
while (Date.now() < end && !states().every((s) => s === 'Established')) await new Promise((r) => setTimeout(r, 50));
console.log(JSON.stringify(states()));
await Promise.all([a, ...others].map((s) => s.stop()));
`;

async function dial(ns: Netns, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  const r = await ns.exec([process.execPath, '--import', 'tsx', '--input-type=module', '-e', CHILD], {
    timeoutMs: 30_000,
    env: { ...process.env, ...env },
  });
  assert.equal(r.code, 0, `the speakers' process exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as string[];
}

/** A namespace of its own (no TIME_WAIT left by another case) whose ephemeral range is one port. */
async function onePortNamespace(lab: Lab, name: string): Promise<Netns> {
  const ns = await lab.namespace(name);
  await ns.run(['sysctl', '-q', '-w', 'net.ipv4.ip_local_port_range=40000 40000']);
  return ns;
}

describe('dialling peers from a local address: a source port per peer', function () {
  this.timeout(90_000);
  let lab: Lab;

  before(() => {
    if (!loadTcpMd5()?.dialSocket) throw new Error('the bgp/native addon is not built or predates dialSocket: npm run build:native');
    lab = new Lab({ tag: 'dp' });
  });
  after(() => lab?.destroy());

  it('through the addon, both sessions come up on the one port of the range', async () => {
    assert.deepEqual(await dial(await onePortNamespace(lab, 'addon')), ['Established', 'Established']);
  });

  it('through node:net (the addon absent), the second session finds no port', async () => {
    const ns = await onePortNamespace(lab, 'net');
    const states = await dial(ns, { PODROUTE_TCP_MD5_ADDON: '/nonexistent/tcp_md5.node' });
    assert.equal(states.filter((s) => s === 'Established').length, 1, `one session up, the other without a port: ${states}`);
  });

  it("a local address the host lacks: an 'error' event with node:net's code, addon or not", async () => {
    const failure = () =>
      new Promise<NodeJS.ErrnoException>((resolve, reject) => {
        // 192.0.2.1 (TEST-NET-1) is on no interface here; nothing listens on port 9.
        const s = connectSession({ host: '127.0.0.1', port: 9, localAddress: '192.0.2.1' });
        s.once('error', resolve);
        s.once('connect', () => reject(new Error('connected from an address the host does not have')));
      });
    const viaAddon = await failure();
    setTcpMd5AddonPath('/nonexistent/tcp_md5.node');
    try {
      const viaNet = await failure();
      assert.equal(viaNet.code, 'EADDRNOTAVAIL', viaNet.message);
      assert.equal(viaAddon.code, viaNet.code, `through the addon: ${viaAddon.message}`);
    } finally {
      setTcpMd5AddonPath(undefined);
    }
  });
});
