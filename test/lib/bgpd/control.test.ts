// The control socket refuses a bad call the way the configuration file refuses a bad field:
// HTTP 400, the field named, and the speaker left exactly as it was. A real speaker (no
// listener, passive peers, so nothing changes behind the test's back) answers on a real Unix
// socket in a temporary directory.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BgpSpeaker } from '../../../bgp/index.js';
import { parseBgpdConfig } from '../../../lib/bgpd/config.js';
import { allPaths, serveControl } from '../../../lib/bgpd/control.js';

interface Answer {
  status: number;
  body: { error?: string } | null;
}

function call(socketPath: string, method: string, path: string, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Everything a call could change: peers, every path of both families, the RIB's counts. */
function snapshot(speaker: BgpSpeaker): string {
  return JSON.stringify({
    peers: speaker.peerStatus().map(({ since: _since, ...p }) => p),
    ipv4: allPaths(speaker, 'ipv4-unicast'),
    ipv6: allPaths(speaker, 'ipv6-unicast'),
    rib: speaker.rib.stats(),
  });
}

describe('bgpd control socket: every call checked like the config file', () => {
  let dir: string;
  let socket: string;
  let speaker: BgpSpeaker;
  let server: http.Server;
  const stops: (string | undefined)[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-control-'));
    socket = join(dir, 'bgpd.sock');
    speaker = new BgpSpeaker({ asn: 64512, routerId: '10.0.0.1', listen: false });
    speaker.addPeer({ address: '10.0.0.2', asn: 64512, passive: true });
    speaker.originate('10.9.0.0/24', { attributes: { med: 5 } });
    stops.length = 0;
    server = await serveControl(speaker, socket, (message) => stops.push(message));
  });

  afterEach(async () => {
    await new Promise((resolve) => server.close(resolve));
    await speaker.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const refused: [string, string, unknown, string][] = [
    ['/peers', 'an AS that is not a number', { address: '10.0.0.3', asn: 'x' }, 'asn: "x" is not a number in 1..4294967295'],
    ['/peers', 'no AS', { address: '10.0.0.3' }, 'asn: undefined is not a number in 1..4294967295'],
    ['/peers', 'an address that is not one', { address: 'nowhere', asn: 65000 }, 'address: "nowhere" is not an IP address'],
    ['/peers', 'an unknown field', { address: '10.0.0.3', asn: 65000, colour: 'red' }, 'colour: unknown field'],
    [
      '/peers',
      'a range (dynamic neighbours come from the file)',
      { address: '10.0.0.3', asn: 65000, range: '10.0.0.0/8' },
      'range: unknown field',
    ],
    ['/peers', 'a hold time of 2 s', { address: '10.0.0.3', asn: 65000, holdTime: 2 }, 'holdTime: 2 (0, or 3..65535 seconds)'],
    [
      '/peers',
      'an unknown family',
      { address: '10.0.0.3', asn: 65000, families: ['ipv4', 'ipv5'] },
      'families[1]: unknown family "ipv5" (ipv4-unicast or ipv6-unicast)',
    ],
    ['/peers', 'passive as a word', { address: '10.0.0.3', asn: 65000, passive: 'yes' }, 'passive: "yes" is not true or false'],
    [
      '/peers',
      'an ADD-PATH mode that does not exist',
      { address: '10.0.0.3', asn: 65000, addPath: { 'ipv4-unicast': 'all' } },
      'addPath.ipv4-unicast: "all" (receive, send or both)',
    ],
    ['/peers', 'a peer already configured', { address: '10.0.0.2', asn: 64512 }, 'peer 10.0.0.2: already configured'],
    ['/originate', 'a prefix length past 32', { prefix: '10.1.0.0/33' }, 'prefix: a prefix like 10.0.0.0/24'],
    ['/originate', 'no prefix', { med: 1 }, 'prefix: a prefix like 10.0.0.0/24'],
    ['/originate', 'a MED that is not a number', { prefix: '10.1.0.0/24', med: 'x' }, 'med: "x" is not a number in 0..4294967295'],
    [
      '/originate',
      'a community past 65535',
      { prefix: '10.1.0.0/24', communities: ['65000:70000'] },
      'communities[0]: "65000:70000" is not asn:value',
    ],
    [
      '/originate',
      'a large community of two parts',
      { prefix: '10.1.0.0/24', largeCommunities: ['1:2'] },
      'largeCommunities[0]: "1:2" is not g:l1:l2',
    ],
    ['/originate', 'an unknown field', { prefix: '10.1.0.0/24', nextHop: '10.0.0.9' }, 'nextHop: unknown field'],
    [
      '/originate',
      'one bad prefix among many (none is originated)',
      { prefixes: ['10.1.0.0/24', '10.2.0.0/24', 'nope'] },
      'prefixes[2]: a prefix like 10.0.0.0/24',
    ],
    ['/originate', 'prefixes that are not a list', { prefixes: '10.1.0.0/24' }, 'prefixes: a list'],
    ['/originate', 'both prefix and prefixes', { prefixes: ['10.1.0.0/24'], prefix: '10.2.0.0/24' }, 'prefix: unknown field'],
    ['/withdraw', 'a prefix that is not one', { prefix: '10.9.0.0' }, 'prefix: a prefix like 10.0.0.0/24'],
    ['/withdraw', 'an unknown field', { prefix: '10.9.0.0/24', med: 5 }, 'med: unknown field'],
    ['/refresh', 'an address that is not one', { address: 'nowhere' }, 'address: "nowhere" is not an IP address'],
    [
      '/refresh',
      'an unknown family',
      { address: '10.0.0.2', family: 'ipv5' },
      'family: unknown family "ipv5" (ipv4-unicast or ipv6-unicast)',
    ],
    ['/peers/remove', 'no address', {}, 'address: undefined is not an IP address'],
    ['/peers/remove', 'an unknown field', { address: '10.0.0.2', asn: 64512 }, 'asn: unknown field'],
    ['/peers/remove', 'a peer that is not configured', { address: '10.0.0.7' }, 'peer 10.0.0.7: not configured'],
    ['/stop', 'a message that is not text', { message: 5 }, 'message: 5 is not a string'],
    ['/stop', 'an unknown field', { reason: 'bye' }, 'reason: unknown field'],
    ['/drain', 'a settle time that is not a number', { settleMs: 'soon' }, 'settleMs: "soon" is not a number in 0..3600000'],
    ['/drain', 'a negative timeout', { timeoutMs: -1 }, 'timeoutMs: -1 is not a number in 0..3600000'],
    ['/drain', 'an unknown field', { wait: 5 }, 'wait: unknown field'],
    [
      '/peers',
      'a body that is a list',
      [{ address: '10.0.0.3', asn: 65000 }],
      'the body is a JSON object, not [{"address":"10.0.0.3","asn":65000}]',
    ],
  ];

  for (const [path, what, body, message] of refused) {
    it(`POST ${path}: ${what} gets 400 "${message}", and nothing changes`, async () => {
      const before = snapshot(speaker);
      const answer = await call(socket, 'POST', path, JSON.stringify(body));
      assert.deepEqual(answer, { status: 400, body: { error: message } });
      assert.equal(snapshot(speaker), before);
      assert.deepEqual(stops, []);
    });
  }

  it('a body that is not JSON gets 400, and nothing changes', async () => {
    const before = snapshot(speaker);
    const answer = await call(socket, 'POST', '/originate', '{"prefix": "10.1.0.0/24"');
    assert.equal(answer.status, 400);
    assert.match(answer.body?.error ?? '', /JSON/);
    assert.equal(snapshot(speaker), before);
  });

  it('GET /routes with an unknown family gets 400 naming it', async () => {
    assert.deepEqual(await call(socket, 'GET', '/routes?family=ipv5'), {
      status: 400,
      body: { error: 'family: unknown family "ipv5" (ipv4-unicast or ipv6-unicast)' },
    });
  });

  it('a peer or a network refused by the socket is refused by the file in the same words, at its path', () => {
    const file = (peer: string) => `asn: 64512\nrouterId: 10.0.0.1\npeers:\n  - ${peer}\n`;
    assert.throws(() => parseBgpdConfig(file('{ address: 10.0.0.3, asn: x }')), {
      message: 'peers[0].asn: "x" is not a number in 1..4294967295',
    });
    assert.throws(() => parseBgpdConfig(file('{ address: 10.0.0.3, asn: 1, colour: red }')), { message: 'peers[0].colour: unknown field' });
    const networks =
      'asn: 64512\nrouterId: 10.0.0.1\nnetworks:\n  - 10.8.0.0/24\n  - { prefix: 10.1.0.0/24, communities: ["65000:70000"] }\n';
    assert.throws(() => parseBgpdConfig(networks), { message: 'networks[1].communities[0]: "65000:70000" is not asn:value' });
  });

  it('good calls still do what they say: add and remove a peer, originate and withdraw, refresh, stop', async () => {
    const ok = async (path: string, body: unknown) => {
      const answer = await call(socket, 'POST', path, JSON.stringify(body));
      assert.equal(answer.status, 200, `${path}: ${JSON.stringify(answer.body)}`);
      return answer.body;
    };
    await ok('/peers', {
      address: '2001:db8::3',
      asn: 65003,
      passive: true,
      families: ['ipv6'],
      addPath: { ipv6: 'both' },
      holdTime: 9,
      description: 'three',
    });
    const added = speaker.peerStatus().find((p) => p.address === '2001:db8::3');
    assert.equal(added?.asn, 65003);
    assert.equal(added?.description, 'three');
    assert.deepEqual(
      await ok('/originate', {
        prefixes: ['10.1.0.0/24', '2001:db8:1::/48'],
        communities: ['65000:1', 'no-export'],
        largeCommunities: ['1:2:3'],
      }),
      { originated: 2 },
    );
    assert.deepEqual(await ok('/originate', { prefix: '10.2.0.0/24', localPref: 200 }), { originated: 1 });
    const one = allPaths(speaker, 'ipv4-unicast').find((r) => r.prefix === '10.1.0.0/24');
    // As they were written: the text forms, the well-known one as asn:value (as mrt and -o wide print it).
    assert.deepEqual(one?.attributes.communities, ['65000:1', '65535:65281']);
    assert.deepEqual(one?.attributes.largeCommunities, ['1:2:3']);
    assert.equal(allPaths(speaker, 'ipv4-unicast').find((r) => r.prefix === '10.2.0.0/24')?.attributes.localPref, 200);
    assert.equal(allPaths(speaker, 'ipv6-unicast').length, 1);
    await ok('/withdraw', { prefix: '10.1.0.0/24' });
    assert.deepEqual(
      allPaths(speaker, 'ipv4-unicast')
        .map((r) => r.prefix)
        .sort(),
      ['10.2.0.0/24', '10.9.0.0/24'],
    );
    await ok('/refresh', { address: '10.0.0.2', family: 'ipv4-unicast' });
    await ok('/peers/remove', { address: '2001:db8::3' });
    assert.deepEqual(
      speaker.peerStatus().map((p) => p.address),
      ['10.0.0.2'],
    );
    await ok('/stop', { message: 'bye' });
    await ok('/stop', {});
    assert.deepEqual(stops, ['bye', undefined]);
  });
});
