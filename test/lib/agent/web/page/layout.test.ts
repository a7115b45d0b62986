// Where the cluster picture puts things: peers on top, reflectors under them, nodes below in
// rows of eight, each row centred; a line per session between box centres, coloured by state.
import assert from 'node:assert/strict';
import type { ClusterPicture } from '../../../../../lib/agent/web/api.js';
import { BOX_H, BOX_W, layout } from '../../../../../lib/agent/web/page/layout.js';

describe('web page: the cluster picture’s layout', () => {
  const picture: ClusterPicture = {
    self: 'n1',
    nodes: [
      { name: 'n1', ipv4: '10.0.0.1/24', asn: 64512, labels: {} },
      { name: 'n2', ipv4: '10.0.0.2/24', asn: 64512, labels: {} },
      { name: 'rr1', ipv4: '10.0.0.10/24', asn: 64512, reflector: '244.0.0.1', labels: {} },
    ],
    peers: [{ id: 'BGPPeer/tor', name: 'tor', address: '10.0.0.250', asn: 65010, role: 'tor' }],
    sessions: [
      { a: 'n1', b: 'rr1', address: '10.0.0.10', type: 'rr', state: 'Established' },
      { a: 'n1', b: 'BGPPeer/tor', address: '10.0.0.250', type: 'node', state: 'Active' },
      { a: 'n1', b: 'n2', address: '10.0.0.2', type: 'mesh', state: 'Idle' },
      { a: 'n2', b: 'rr1', address: '10.0.0.10', type: 'rr' },
      { a: 'n2', b: 'gone', address: '10.0.0.99', type: 'mesh' },
    ],
  };

  it('puts the ToR above the reflector above the nodes, rows centred', () => {
    const l = layout(picture);
    const at = new Map(l.boxes.map((b) => [b.id, b]));
    const tor = at.get('BGPPeer/tor')!;
    const rr = at.get('rr1')!;
    const n1 = at.get('n1')!;
    const n2 = at.get('n2')!;
    assert.ok(tor.y < rr.y && rr.y < n1.y, `rows top to bottom: tor ${tor.y}, reflector ${rr.y}, nodes ${n1.y}`);
    assert.equal(n1.y, n2.y, 'the nodes share a row');
    assert.equal(tor.x + BOX_W / 2, l.width / 2, 'a single box is centred');
    assert.equal((n1.x + n2.x + BOX_W) / 2, l.width / 2, 'a row of two is centred');
    assert.ok(n1.self && !n2.self, 'this node is marked');
    assert.deepEqual(
      l.boxes.map((b) => [b.id, b.kind, b.subtitle]),
      [
        ['BGPPeer/tor', 'tor', 'ToR 10.0.0.250 AS 65010'],
        ['rr1', 'reflector', 'reflector 10.0.0.10/24'],
        ['n1', 'node', '10.0.0.1/24'],
        ['n2', 'node', '10.0.0.2/24'],
      ],
    );
    assert.ok(l.height >= n1.y + BOX_H, 'the picture holds its lowest row');
  });

  it('draws each session between box centres in its state’s class, and none to a box it lacks', () => {
    const l = layout(picture);
    assert.deepEqual(
      l.lines.map((x) => x.cls),
      ['state-established', 'state-opening', 'state-down', 'state-unknown'],
    );
    const rr = l.boxes.find((b) => b.id === 'rr1')!;
    const first = l.lines[0]!;
    assert.deepEqual([first.x2, first.y2], [rr.x + BOX_W / 2, rr.y + BOX_H / 2]);
    assert.match(l.lines[3]!.title, /state known to their agents only/);
  });

  it('bends a line that would cross another box around it, and leaves the others straight', () => {
    const l = layout({
      self: 'n1',
      nodes: [
        { name: 'n1', asn: 64512, labels: {} },
        { name: 'rr1', asn: 64512, reflector: '244.0.0.1', labels: {} },
      ],
      peers: [{ id: 'BGPPeer/tor', name: 'tor', address: '10.0.0.250', role: 'tor' }],
      sessions: [
        { a: 'n1', b: 'rr1', address: '10.0.0.10', type: 'rr', state: 'Established' },
        { a: 'n1', b: 'BGPPeer/tor', address: '10.0.0.250', type: 'node', state: 'Idle' },
      ],
    });
    const [toReflector, toTor] = l.lines;
    assert.equal(toReflector!.bend, undefined, 'neighbouring rows: straight');
    const rr = l.boxes.find((b) => b.id === 'rr1')!;
    const bend = toTor!.bend;
    assert.ok(bend, 'the ToR line passes the reflector: bent');
    // The curve's middle (t = 1/2) is beside the reflector's box, not in it, and inside the picture.
    const midX = (toTor!.x1 + 2 * bend.x + toTor!.x2) / 4;
    assert.ok(midX < rr.x || midX > rr.x + BOX_W, `the curve clears the reflector: x ${midX}, box ${rr.x}..${rr.x + BOX_W}`);
    assert.ok(midX > 0 && midX < l.width, `the curve stays in the picture: x ${midX} of ${l.width}`);
  });

  it('wraps nine nodes into two rows', () => {
    const nodes = Array.from({ length: 9 }, (_, i) => ({ name: `w${i}`, asn: 64512, labels: {} }));
    const l = layout({ self: 'w0', nodes, peers: [], sessions: [] });
    assert.equal(new Set(l.boxes.map((b) => b.y)).size, 2);
  });
});
