// `podroute bgpd` and `podroute reflector` as a user runs them: a reflector and a bgpd client
// over loopback in a namespace of their own, asked through the CLI. Pins what the commands
// print and their exit codes (the SINCE column is masked: it is the clock's).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { callControl } from '../../../lib/bgpd/control.js';
import { execCommand, Lab, type Netns } from '../../support/netns.js';
import { waitFor } from '../../support/wait.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

const RR_CONFIG = `asn: 64512
routerId: 10.0.0.100
clusterId: 10.0.0.1
listen: { host: 127.0.0.1, port: 179 }
clients:
  - { address: 127.0.0.2, idleHoldTime: 1, connectRetryTime: 1 }
clientRanges:
  - { range: 127.1.0.0/16 }
nonClients:
  - { address: 127.0.0.3, asn: 65000, passive: true }
networks:
  - { prefix: 10.8.0.0/24, med: 5 }
`;

const BGPD_CONFIG = `asn: 64512
routerId: 10.0.0.2
listen: { host: 127.0.0.2, port: 179 }
peers:
  - { address: 127.0.0.1, asn: 64512, localAddress: 127.0.0.2, idleHoldTime: 1, connectRetryTime: 1 }
  - { address: 127.0.0.9, asn: 65009, passive: true, description: far }
networks:
  - { prefix: 10.9.0.0/24, communities: ["64512:7"] }
  - 2001:db8:9::/48
`;

const BGPD_USAGE = 'bgpd: --config <file> is required\n(podroute bgpd --help shows its usage)\n';
const REFLECTOR_USAGE = 'reflector: --config <file> is required\n(podroute reflector --help shows its usage)\n';
const CONTROL_USAGE = (command: string) =>
  `--control <socket> is required (or PODROUTE_BGPD_CONTROL)\n(podroute ${command} --help shows its usage)\n`;

async function podroute(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const r = await execCommand(['node', join(ROOT, 'bin/podroute.js'), ...args], { timeoutMs: 30_000 });
  return { code: r.code, stdout: r.stdout.replace(/ \d+m\d+s /g, ' SINCE '), stderr: r.stderr };
}

describe('podroute bgpd and podroute reflector: the commands', function () {
  this.timeout(90_000);
  let lab: Lab;
  let ns: Netns;
  let rr: string;
  let bgpd: string;

  before(async () => {
    lab = new Lab({ tag: 'cli' });
    ns = await lab.namespace('bgpd');
    rr = join(lab.dir, 'rr.sock');
    bgpd = join(lab.dir, 'bgpd.sock');
    writeFileSync(join(lab.dir, 'rr.yaml'), RR_CONFIG);
    writeFileSync(join(lab.dir, 'bgpd.yaml'), BGPD_CONFIG);
    const bin = join(ROOT, 'bin/podroute.js');
    const procs = [
      ns.spawn(['node', bin, 'reflector', '--config', join(lab.dir, 'rr.yaml'), '--control', rr], { name: 'reflector', cwd: ROOT }),
      ns.spawn(['node', bin, 'bgpd', '--config', join(lab.dir, 'bgpd.yaml'), '--control', bgpd], { name: 'bgpd', cwd: ROOT }),
    ];
    // Up, and each side has the other's route: from then on the tables hold still.
    for (const socket of [rr, bgpd]) {
      await waitFor(
        async () => {
          for (const p of procs) if (!p.running) throw new Error(`${p.name} exited: ${p.tail()}`);
          const s = await callControl<{ peers: { state: string; prefixesReceived: number; prefixesSent: number }[] }>(
            socket,
            'GET',
            '/status',
          );
          return s.peers.some((p) => p.state === 'Established' && p.prefixesReceived === 1 && p.prefixesSent === 1);
        },
        { what: `${socket}: the session up and a route each way`, timeoutMs: 30_000, intervalMs: 200 },
      );
    }
  });

  after(async () => {
    await lab?.destroy();
  });

  it('reflector status: cluster, clients up, update groups, and each peer with its role', async () => {
    assert.deepEqual(await podroute('reflector', 'status', '--control', rr), {
      code: 0,
      stderr: '',
      stdout:
        'Route reflector AS 64512, router ID 10.0.0.100, cluster ID 10.0.0.1\n' +
        'clients 1/1 up, 2 IPv4 and 0 IPv6 prefixes, loops dropped 0\n' +
        'update groups: ibgp clients: 1 peers\n\n' +
        'PEER ADDRESS  AS     TYPE  STATE        SINCE  RECEIVED  SENT  INFO\n' +
        '127.0.0.2     64512  ibgp  Established  SINCE   1         1     client\n' +
        '127.0.0.3     65000  ebgp  Active       SINCE   0         0     ebgp\n',
    });
  });

  it('bgpd status: the speaker and its peers, on a bgpd and on a reflector alike', async () => {
    const [own, reflector] = await Promise.all([
      podroute('bgpd', 'status', '--control', bgpd),
      podroute('bgpd', 'status', '--control', rr),
    ]);
    assert.deepEqual(own, {
      code: 0,
      stderr: '',
      stdout:
        'BGP speaker AS 64512, router ID 10.0.0.2\n\n' +
        'PEER ADDRESS  AS     TYPE  STATE        SINCE  RECEIVED  SENT  INFO\n' +
        '127.0.0.1     64512  ibgp  Established  SINCE   1         1\n' +
        '127.0.0.9     65009  ebgp  Active       SINCE   0         0\n',
    });
    assert.equal(reflector.code, 0);
    assert.match(reflector.stdout, /^BGP speaker AS 64512, router ID 10\.0\.0\.100\n\nPEER ADDRESS/);
  });

  it('routes of either, by family', async () => {
    const [rrRoutes, bgpdRoutes, bgpdV6, viaReflectorVerb] = await Promise.all([
      podroute('bgpd', 'routes', '--control', rr),
      podroute('bgpd', 'routes', '--control', bgpd),
      podroute('bgpd', 'routes', '--control', bgpd, '--family', 'ipv6-unicast'),
      podroute('reflector', 'routes', '--control', rr),
    ]);
    // A header row names the columns, as the wide table and `gobgp global rib` do.
    const table =
      '    PREFIX       NEXT HOP   FROM       AS PATH  ORIGIN\n' +
      '*>  10.8.0.0/24  0.0.0.0    local               igp\n' +
      '*>  10.9.0.0/24  127.0.0.2  127.0.0.2           igp\n';
    assert.deepEqual(rrRoutes, { code: 0, stderr: '', stdout: table });
    assert.deepEqual(viaReflectorVerb, rrRoutes);
    assert.deepEqual(bgpdRoutes, {
      code: 0,
      stderr: '',
      stdout:
        '    PREFIX       NEXT HOP   FROM       AS PATH  ORIGIN\n' +
        '*>  10.9.0.0/24  0.0.0.0    local               igp\n' +
        '*>  10.8.0.0/24  127.0.0.1  127.0.0.1           igp\n',
    });
    assert.deepEqual(bgpdV6, {
      code: 0,
      stderr: '',
      stdout: '    PREFIX           NEXT HOP  FROM   AS PATH  ORIGIN\n*>  2001:db8:9::/48  ::        local           igp\n',
    });
  });

  it('usage and exit code 2 without --config or --control; exit 1 with the reason otherwise', async () => {
    const dir = lab.dir;
    writeFileSync(join(dir, 'bad.yaml'), 'asn: 1\nrouterId: 10.0.0.1\nclients:\n  - address: 10.0.0.2\n  - address: nowhere\n');
    const [bgpdBare, bgpdStatus, rrBare, rrRoutes, rrBad, rrOnBgpd, noSocket] = await Promise.all([
      podroute('bgpd'),
      podroute('bgpd', 'status'),
      podroute('reflector'),
      podroute('reflector', 'routes'),
      podroute('reflector', '--config', join(dir, 'bad.yaml')),
      podroute('reflector', 'status', '--control', bgpd),
      podroute('bgpd', 'status', '--control', join(dir, 'none.sock')),
    ]);
    assert.deepEqual(bgpdBare, { code: 2, stdout: '', stderr: BGPD_USAGE });
    assert.deepEqual(bgpdStatus, { code: 2, stdout: '', stderr: CONTROL_USAGE('bgpd status') });
    assert.deepEqual(rrBare, { code: 2, stdout: '', stderr: REFLECTOR_USAGE });
    assert.deepEqual(rrRoutes, { code: 2, stdout: '', stderr: CONTROL_USAGE('reflector routes') });
    assert.deepEqual(rrBad, { code: 1, stdout: '', stderr: 'podroute: clients[1].address: "nowhere" is not an IP address\n' });
    assert.deepEqual(rrOnBgpd, {
      code: 1,
      stdout: '',
      stderr: `podroute: ${bgpd}: not a route reflector (podroute bgpd status shows its peers)\n`,
    });
    assert.deepEqual(noSocket, {
      code: 1,
      stdout: '',
      stderr: `podroute: control socket ${join(dir, 'none.sock')}: connect ENOENT ${join(dir, 'none.sock')}\n`,
    });
  });
});
