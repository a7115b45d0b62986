// The reflector daemon's configuration: the bgpd fields plus clients, clientRanges and
// nonClients, with errors that name the field as written in the reflector's file.
import assert from 'node:assert/strict';
import { parseReflectorConfig } from '../../../lib/bgpd/reflector-config.js';

const base = 'asn: 64512\nrouterId: 10.0.0.100\n';

describe('reflector config', () => {
  it('clients, ranges and non-clients become peers with their role; clients may leave out the AS', () => {
    const c = parseReflectorConfig(
      base +
        'clusterId: 10.0.0.1\nclients:\n  - address: 10.0.0.1\n  - { address: 10.0.0.2, asn: 64512, holdTime: 9 }\n' +
        'clientRanges:\n  - range: 10.1.0.0/16\nnonClients:\n  - { address: 10.0.0.200, asn: 64512 }\n  - { address: 10.0.0.254, asn: 65000 }\n',
    );
    assert.equal(c.clusterId, '10.0.0.1');
    assert.equal(c.speaker.rib?.clusterId, '10.0.0.1');
    assert.equal(typeof c.speaker.rib?.reflection?.mayReflect, 'function');
    assert.deepEqual(
      c.peers.map((p) => [p.address, p.asn, p.routeReflectorClient]),
      [
        ['10.0.0.1', 64512, true],
        ['10.0.0.2', 64512, true],
        ['10.0.0.200', 64512, false],
        ['10.0.0.254', 65000, false],
      ],
    );
    assert.equal(c.peers[1].holdTime, 9);
    assert.deepEqual(
      c.dynamicNeighbors.map((d) => [d.range, d.asn, d.routeReflectorClient]),
      [['10.1.0.0/16', 64512, true]],
    );
    assert.deepEqual(c.clients, ['10.0.0.1', '10.0.0.2']);
  });

  it('the cluster ID defaults to the router ID', () => {
    assert.equal(parseReflectorConfig(base).clusterId, '10.0.0.100');
  });

  it('a number in quotes is refused as the string it is, naming the field', () => {
    assert.throws(() => parseReflectorConfig(`${base}clients:\n  - { address: 10.0.0.1, port: "1179", idleHoldTime: "5" }\n`), {
      message:
        '2 mistakes:\n  clients[0].port: "1179" is a string, not a number in 1..65535\n  clients[0].idleHoldTime: "5" is a string, not a number in 0.1..65535',
    });
  });

  it('mistakes are named as written in the file', () => {
    const bad: [string, RegExp][] = [
      ['clients:\n  - address: nowhere\n', /^clients\[0\]\.address: "nowhere" is not an IP address/],
      ['clients:\n  - address: 10.0.0.1\nnonClients:\n  - { address: 10.0.0.2, asn: -1 }\n', /^nonClients\[0\]\.asn/],
      ['clients:\n  - { address: 10.0.0.1, asn: 65000 }\n', /^clients\[0\]\.asn: 65000 is not ours \(64512\)/],
      ['clientRanges:\n  - { range: 10.0.0.0/8, asn: 65000 }\n', /^clientRanges\[0\]\.asn: 65000 is not ours/],
      ['clientRanges:\n  - { range: 10.0.0.0/8, colour: red }\n', /^clientRanges\[0\]\.colour: unknown field/],
      ['clients:\n  - { address: 10.0.0.1, routeReflectorClient: false }\n', /^clients\[0\]\.routeReflectorClient: unknown field/],
      ['peers: []\n', /^peers: unknown field/],
      ['clusterId: rack1\n', /^clusterId: "rack1" is not a dotted-quad identifier/],
      ['clients: 10.0.0.1\n', /^clients: a list/],
    ];
    for (const [text, re] of bad) assert.throws(() => parseReflectorConfig(base + text), { message: re }, text);
  });

  it('every mistake at once, in the words of the reflector file', () => {
    assert.throws(() => parseReflectorConfig(`${base}peers: []\nclients:\n  - { address: 10.0.0.1, asn: 65000 }\n  - 7\n`), {
      message: [
        '3 mistakes:',
        '  peers: unknown field (a reflector has clients, clientRanges and nonClients)',
        '  clients[1]: a peer is a mapping',
        '  clients[0].asn: 65000 is not ours (64512); clients are iBGP peers',
      ].join('\n'),
    });
    // While our AS is refused, whether a client's is ours is not asked, and a client that leaves
    // its AS out is not refused for it; its other mistakes still are.
    assert.throws(
      () =>
        parseReflectorConfig('asn: x\nrouterId: 10.0.0.100\nclients:\n  - { address: 10.0.0.1, asn: 65000 }\n  - { address: nowhere }\n'),
      { message: '2 mistakes:\n  asn: "x" is not a number in 1..4294967295\n  clients[1].address: "nowhere" is not an IP address' },
    );
  });
});
