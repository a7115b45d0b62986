// Topology files: the four shipped labs parse, and what the runner cannot build is refused
// with the key that names it (no root, no namespaces).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostExecLine, loadTopology, parseTopology, TopologyError } from '../../../lib/lab/topology.js';

const LABS = join(fileURLToPath(import.meta.url), '../../../../containerlab');

describe('lab topologies: parsing and validation', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'lbtopo-'));
    writeFileSync(join(dir, 'n1.yaml'), 'nodeName: n1\n');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const base = () => ({
    name: 't',
    topology: {
      nodes: {
        redis: { kind: 'linux', image: 'redis:7' },
        sw: { kind: 'bridge' },
        n1: { kind: 'linux', image: 'podroute/node:latest', binds: ['n1.yaml:/etc/podroute/node.yaml:ro'], exec: ['ip link set eth1 up'] },
        x: { kind: 'linux', image: 'alpine:3' },
      },
      links: [{ endpoints: ['n1:eth1', 'sw:sw-n1'] }, { endpoints: ['x:eth1', 'sw:sw-x'] }],
    },
  });
  const parse = (doc: unknown) => parseTopology(doc, join(dir, 't.clab.yml'));
  function refused(mutate: (d: ReturnType<typeof base>) => void, key: string, text: RegExp): void {
    const d = base();
    mutate(d);
    assert.throws(
      () => parse(d),
      (e: unknown) => {
        assert.ok(e instanceof TopologyError, String(e));
        assert.equal(e.key, key);
        assert.match(e.message, text);
        return true;
      },
    );
  }

  it('reads the four shipped labs with the roles the runner builds', () => {
    const roles = (f: string) => Object.fromEntries(loadTopology(join(LABS, f)).nodes.map((n) => [n.name, n.role]));
    assert.deepEqual(roles('mesh.clab.yml'), { redis: 'redis', sw: 'bridge', n1: 'podroute', n2: 'podroute', n3: 'podroute' });
    assert.deepEqual(roles('rr.clab.yml'), {
      redis: 'redis',
      sw: 'bridge',
      rr1: 'podroute',
      rr2: 'podroute',
      n1: 'podroute',
      n2: 'podroute',
      n3: 'podroute',
      n4: 'podroute',
    });
    assert.deepEqual(roles('tor.clab.yml'), {
      redis: 'redis',
      rack1: 'bridge',
      rack2: 'bridge',
      tor1: 'frr',
      tor2: 'frr',
      n1: 'podroute',
      n2: 'podroute',
      n3: 'podroute',
      n4: 'podroute',
    });
    const cs = loadTopology(join(LABS, 'crosssubnet.clab.yml'));
    assert.equal(cs.nodes.find((n) => n.name === 'router')!.role, 'frr');
    assert.equal(cs.links.length, 6);
    const tor = loadTopology(join(LABS, 'tor.clab.yml'));
    assert.deepEqual(tor.links[2]!.endpoints, [
      { node: 'tor1', iface: 'eth2' },
      { node: 'tor2', iface: 'eth2' },
    ]);
    assert.equal(tor.nodes.find((n) => n.name === 'tor1')!.binds[0]!.source, join(LABS, 'tor/tor1.conf'));
  });

  it('reads the dual-ToR lab: two racks, two planes, every node on both of its rack, one ToR BIRD', () => {
    const dual = loadTopology(join(LABS, 'dual-tor.clab.yml'));
    assert.deepEqual(Object.fromEntries(dual.nodes.map((n) => [n.name, n.role])), {
      redis: 'redis',
      'r1-a': 'bridge',
      'r1-b': 'bridge',
      'r2-a': 'bridge',
      'r2-b': 'bridge',
      tor1a: 'frr',
      tor1b: 'frr',
      tor2a: 'frr',
      tor2b: 'bird',
      n1: 'podroute',
      n2: 'podroute',
      n3: 'podroute',
      n4: 'podroute',
    });
    for (const [n, rack] of [
      ['n1', 'r1'],
      ['n2', 'r1'],
      ['n3', 'r2'],
      ['n4', 'r2'],
    ])
      assert.deepEqual(
        dual.links.filter((l) => l.endpoints[0].node === n).map((l) => l.endpoints[1].node),
        [`${rack}-a`, `${rack}-b`],
        `${n}: one link on each plane of rack ${rack}`,
      );
    assert.equal(
      dual.nodes.find((n) => n.name === 'tor2b')!.binds[0]!.source,
      join(LABS, 'dual-tor/tor2b.bird.conf'),
      'the BIRD ToR binds its config where BIRD reads it',
    );
  });

  it('a node whose image is BIRD (bird, bird2, any registry) runs BIRD; a name that only holds "bird" does not', () => {
    for (const [image, role] of [
      ['podroute/bird:latest', 'bird'],
      ['bird2', 'bird'],
      ['registry.example/net/bird:2.0', 'bird'],
      ['example/birdwatch:1', 'linux'],
    ] as const) {
      const t = parse({ name: 'b', topology: { nodes: { r: { kind: 'linux', image } } } });
      assert.equal(t.nodes[0]!.role, role, image);
    }
  });

  it('a plain linux node, a bridge and binds relative to the file', () => {
    const t = parse(base());
    assert.equal(t.nodes.find((n) => n.name === 'x')!.role, 'linux');
    assert.equal(t.nodes.find((n) => n.name === 'n1')!.binds[0]!.source, join(dir, 'n1.yaml'));
    assert.equal(t.nodes.find((n) => n.name === 'n1')!.binds[0]!.readOnly, true);
  });

  it('exec lines see bound files at their host paths', () => {
    const n1 = parse(base()).nodes.find((n) => n.name === 'n1')!;
    assert.equal(hostExecLine(n1, 'cat /etc/podroute/node.yaml'), `cat ${join(dir, 'n1.yaml')}`);
  });

  it('a link to an undefined node names the endpoint', () => {
    refused(
      (d) => {
        d.topology.links.push({ endpoints: ['n1:eth2', 'ghost:eth1'] });
      },
      'topology.links[2].endpoints[1]',
      /node "ghost" is not defined/,
    );
  });

  it('refuses what it cannot build, naming the key', () => {
    refused(
      (d) => {
        (d as { name: unknown }).name = 'Bad Name';
      },
      'name',
      /lowercase/,
    );
    refused(
      (d) => {
        (d.topology.nodes.x as { kind: string }).kind = 'nokia_srlinux';
      },
      'topology.nodes.x.kind',
      /cannot be built/,
    );
    refused(
      (d) => {
        delete (d.topology.nodes.x as { image?: string }).image;
      },
      'topology.nodes.x.image',
      /required/,
    );
    refused(
      (d) => {
        (d.topology.nodes.n1 as { binds: string[] }).binds = ['missing.conf:/etc/frr/frr.conf'];
      },
      'topology.nodes.n1.binds[0]',
      /missing.conf does not exist/,
    );
    refused(
      (d) => {
        (d.topology.nodes.n1 as { binds: string[] }).binds = ['n1.yaml:relative'];
      },
      'topology.nodes.n1.binds[0]',
      /absolute/,
    );
    refused(
      (d) => {
        (d.topology.nodes.n1 as Record<string, unknown>).ports = ['80:80'];
      },
      'topology.nodes.n1.ports',
      /not a key/,
    );
    refused(
      (d) => {
        (d.topology.nodes.n1 as Record<string, unknown>).exec = 'ip a';
      },
      'topology.nodes.n1.exec',
      /list of strings/,
    );
    refused(
      (d) => {
        d.topology.links.push({ endpoints: ['n1:eth1', 'x:eth2'] });
      },
      'topology.links[2].endpoints[0]',
      /n1:eth1 is already used by topology.links\[0\]/,
    );
    refused(
      (d) => {
        d.topology.links.push({ endpoints: ['n1:eth0', 'x:eth2'] });
      },
      'topology.links[2].endpoints[0]',
      /management/,
    );
    refused(
      (d) => {
        d.topology.links.push({ endpoints: ['n1:averyveryverylongname', 'x:eth2'] });
      },
      'topology.links[2].endpoints[0]',
      /interface name/,
    );
    refused(
      (d) => {
        d.topology.links.push({ endpoints: ['n1:eth2'] } as never);
      },
      'topology.links[2].endpoints',
      /two/,
    );
    refused(
      (d) => {
        d.topology.links.push({ endpoints: ['x:eth3', 'x:eth2'] });
      },
      'topology.links[2].endpoints',
      /both ends/,
    );
    refused(
      (d) => {
        delete (d.topology.nodes as Record<string, unknown>).redis;
      },
      'topology.nodes',
      /datastore node/,
    );
    refused(
      (d) => {
        (d.topology as Record<string, unknown>).kinds = {};
      },
      'topology.kinds',
      /not a key/,
    );
  });

  it('a file that is not YAML or not there', () => {
    writeFileSync(join(dir, 'bad.clab.yml'), 'name: [\n');
    assert.throws(() => loadTopology(join(dir, 'bad.clab.yml')), /is not YAML/);
    assert.throws(() => loadTopology(join(dir, 'none.clab.yml')), /no such topology file/);
  });
});
