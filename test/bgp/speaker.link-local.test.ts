// A peer that connects from a link-local address to a speaker with dynamic neighbours: the
// kernel hands the socket over with the zone in its remote address (fe80::…%eth0). A range
// holds prefixes, which have no zone, so such a peer is in none: the socket is closed and the
// daemon carries on (it used to die of the address it could not read).
import assert from 'node:assert/strict';
import { Lab } from '../support/netns.js';
import { Podroute } from '../support/podroute.js';

// Connects from fe80::2 on eth0 to [fe80::1]:179 and prints what the speaker did with the socket.
const CLIENT = `
import socket
s = socket.socket(socket.AF_INET6)
s.settimeout(10)
s.bind(('fe80::2', 0, 0, socket.if_nametoindex('eth0')))
s.connect(('fe80::1', 179, 0, socket.if_nametoindex('eth0')))
print('closed' if s.recv(100) == b'' else 'data')
`;

describe('bgpd: a link-local peer connecting to a dynamic range', function () {
  this.timeout(60_000);
  let lab: Lab;

  before(() => {
    lab = new Lab({ tag: 'll' });
  });
  after(() => lab.destroy());

  it('is refused, and the daemon keeps serving', async () => {
    const a = await lab.namespace('a');
    const b = await lab.namespace('b');
    await lab.link(a, { ifname: 'eth0', v6: 'fe80::1/64' }, b, { ifname: 'eth0', v6: 'fe80::2/64' });
    const speaker = await Podroute.start(
      a,
      { asn: 65000, routerId: '10.0.0.1', peers: [] },
      { dynamicNeighbors: [{ range: '::/0', asn: 65001 }] },
    );
    assert.equal((await b.run(['python3', '-c', CLIENT])).trim(), 'closed');
    const status = await speaker.status();
    assert.deepEqual(status.peers, [], 'no neighbour was made of it');
    assert.ok(speaker.process.running, speaker.process.tail());
    await speaker.stop();
  });
});
