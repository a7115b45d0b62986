// Calico's rules for announcing service addresses, as pure functions and on a real speaker:
// the configured ranges from every node, a Local service's host routes only from the nodes
// with a ready endpoint of it (withdrawn when the last one goes), single external and LB
// addresses of Cluster services from every node, both families.
import assert from 'node:assert/strict';
import { BgpSpeaker } from '../../../bgp/index.js';
import { Advertiser } from '../../../lib/agent/advertiser.js';
import { advertisements } from '../../../lib/agent/advertise.js';
import { neighborConfig } from '../../../lib/agent/sessions.js';
import {
  EXCLUDE_FROM_LOAD_BALANCERS_LABEL,
  serviceExportPolicy,
  serviceRoutes,
  type EndpointSliceObject,
  type ServiceObject,
} from '../../../lib/agent/service-advertise.js';
import { type BGPConfiguration, SERVICE_NAME_LABEL, type EndpointSliceEndpoint, type ServiceSpec } from '../../../lib/resources/index.js';

const config = (spec: BGPConfiguration['spec']): BGPConfiguration => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'BGPConfiguration',
  metadata: { name: 'default' },
  spec,
});
const cidrs = (...c: string[]) => c.map((cidr) => ({ cidr }));

const ALL = config({
  serviceClusterIPs: cidrs('10.96.0.0/12', 'fd00:96::/112'),
  serviceExternalIPs: cidrs('192.0.2.0/24', '198.51.100.7/32', '2001:db8:e::/64'),
  serviceLoadBalancerIPs: cidrs('203.0.113.0/24', '203.0.114.9/32', '2001:db8:1b::/64'),
});

const service = (name: string, spec: ServiceSpec & { status?: ServiceObject['spec']['status'] }, namespace = 'default'): ServiceObject => ({
  metadata: { name, namespace },
  spec,
});
const endpoint = (ip: string, nodeName: string, ready?: boolean): EndpointSliceEndpoint => ({
  addresses: [ip],
  nodeName,
  ...(ready === undefined ? {} : { conditions: { ready } }),
});
const slice = (
  name: string,
  svc: string,
  endpoints: EndpointSliceEndpoint[],
  addressType: 'IPv4' | 'IPv6' = 'IPv4',
  namespace = 'default',
) =>
  ({
    metadata: { name, namespace, labels: { [SERVICE_NAME_LABEL]: svc } },
    spec: { addressType, endpoints },
  }) satisfies EndpointSliceObject;

/** The host routes each of n1..n3 announces. */
function byNode(cfg: BGPConfiguration, services: ServiceObject[], slices: EndpointSliceObject[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const n of ['n1', 'n2', 'n3']) out[n] = serviceRoutes(n, cfg, { services, slices }).addresses;
  return out;
}

describe('services: which service addresses a node announces (Calico’s rules)', () => {
  it('every node announces the cluster ranges, and the external and LB ranges wider than one address; single addresses are not ranges', () => {
    for (const n of ['n1', 'n2']) {
      assert.deepEqual(serviceRoutes(n, ALL, { services: [], slices: [] }), {
        ranges: ['10.96.0.0/12', 'fd00:96::/112', '192.0.2.0/24', '2001:db8:e::/64', '203.0.113.0/24', '2001:db8:1b::/64'],
        addresses: [],
      });
    }
    // A cluster range is a range even when it is one address.
    assert.deepEqual(serviceRoutes('n1', config({ serviceClusterIPs: cidrs('10.96.0.1/32') })).ranges, ['10.96.0.1/32']);
    assert.deepEqual(serviceRoutes('n1', undefined), { ranges: [], addresses: [] });
  });

  it('Local: the cluster IP /32 only from the nodes with a ready endpoint; not-ready ones and other nodes do not count', () => {
    const web = service('web', { clusterIP: '10.96.0.10', externalTrafficPolicy: 'Local', type: 'NodePort' });
    const slices = [
      slice('web-a', 'web', [endpoint('10.94.0.1', 'n1'), endpoint('10.94.0.2', 'n2', false)]),
      slice('web-b', 'web', [endpoint('10.94.0.3', 'n3', true)]),
    ];
    assert.deepEqual(byNode(ALL, [web], slices), { n1: ['10.96.0.10/32'], n2: [], n3: ['10.96.0.10/32'] });
    // n3's endpoint leaves its slice (the last one there): n3 withdraws; n2's becomes ready: n2 announces.
    slices[1] = slice('web-b', 'web', []);
    slices[0] = slice('web-a', 'web', [endpoint('10.94.0.1', 'n1'), endpoint('10.94.0.2', 'n2', true)]);
    assert.deepEqual(byNode(ALL, [web], slices), { n1: ['10.96.0.10/32'], n2: ['10.96.0.10/32'], n3: [] });
    // A terminating endpoint is not ready: the service is withdrawn from n1 too once it is the last there.
    slices[0] = slice('web-a', 'web', [{ ...endpoint('10.94.0.1', 'n1'), conditions: { ready: false, serving: true, terminating: true } }]);
    assert.deepEqual(byNode(ALL, [web], slices), { n1: [], n2: [], n3: [] });
    // The ranges stay on every node meanwhile.
    assert.ok(
      serviceRoutes('n2', ALL, { services: [web], slices }).ranges.includes('10.96.0.0/12'),
      'n2 lost the service range 10.96.0.0/12',
    );
  });

  it('Local: external and LB IPs as /32 when inside the configured ranges of their kind, never outside them', () => {
    const lb = service('lb', {
      type: 'LoadBalancer',
      clusterIP: '10.96.0.20',
      externalTrafficPolicy: 'Local',
      externalIPs: ['192.0.2.5', '100.64.0.5'],
      status: { loadBalancer: { ingress: [{ ip: '203.0.113.7' }, { ip: '100.64.1.1' }, { hostname: 'lb.example' }] } },
    });
    const slices = [slice('lb-1', 'lb', [endpoint('10.94.0.9', 'n2')])];
    assert.deepEqual(byNode(ALL, [lb], slices), {
      n1: [],
      n2: ['10.96.0.20/32', '192.0.2.5/32', '203.0.113.7/32'],
      n3: [],
    });
    // An external IP inside only the LB ranges (and an LB IP inside only the external ones) is not announced.
    const crossed = service('crossed', {
      type: 'LoadBalancer',
      clusterIP: '10.96.0.21',
      externalTrafficPolicy: 'Local',
      externalIPs: ['203.0.113.8'],
      status: { loadBalancer: { ingress: [{ ip: '192.0.2.8' }] } },
    });
    assert.deepEqual(
      serviceRoutes('n2', ALL, { services: [crossed], slices: [slice('c', 'crossed', [endpoint('10.94.0.9', 'n2')])] }).addresses,
      ['10.96.0.21/32'],
    );
  });

  it('Local without serviceClusterIPs: the cluster IP is not announced, an external IP inside serviceExternalIPs is', () => {
    const cfg = config({ serviceExternalIPs: cidrs('192.0.2.0/24') });
    const svc = service('x', { clusterIP: '10.96.0.30', externalIPs: ['192.0.2.30'], externalTrafficPolicy: 'Local' });
    const slices = [slice('x1', 'x', [endpoint('10.94.0.1', 'n1')])];
    // The same objects under another configuration are decided again.
    assert.deepEqual(serviceRoutes('n1', ALL, { services: [svc], slices }).addresses, ['10.96.0.30/32', '192.0.2.30/32']);
    assert.deepEqual(serviceRoutes('n1', cfg, { services: [svc], slices }), {
      ranges: ['192.0.2.0/24'],
      addresses: ['192.0.2.30/32'],
    });
  });

  it('IPv6 and dual stack: /128 in canonical form; a slice counts only for a family the service has', () => {
    const v6 = service('v6', {
      clusterIPs: ['FD00:96:0::a'],
      ipFamilies: ['IPv6'],
      externalTrafficPolicy: 'Local',
      externalIPs: ['2001:db8:e::0:5'],
    });
    const v6Slices = [
      slice('v6-1', 'v6', [endpoint('fd00:94::1', 'n3')], 'IPv6'),
      slice('v6-2', 'v6', [endpoint('10.94.0.1', 'n1')], 'IPv4'),
    ];
    // n1's endpoint sits in an IPv4 slice of an IPv6-only service: it does not count.
    assert.deepEqual(byNode(ALL, [v6], v6Slices), { n1: [], n2: [], n3: ['2001:db8:e::5/128', 'fd00:96::a/128'] });

    const dual = service('dual', {
      clusterIPs: ['10.96.0.40', 'fd00:96::40'],
      ipFamilies: ['IPv4', 'IPv6'],
      externalTrafficPolicy: 'Local',
    });
    const dualSlices = [slice('d4', 'dual', [endpoint('10.94.0.2', 'n2')]), slice('d6', 'dual', [endpoint('fd00:94::2', 'n2')], 'IPv6')];
    assert.deepEqual(byNode(ALL, [dual], dualSlices), { n1: [], n2: ['10.96.0.40/32', 'fd00:96::40/128'], n3: [] });
    // No ipFamilies written: the families of the cluster IPs.
    const bare = service('bare', { clusterIPs: ['fd00:96::41'], externalTrafficPolicy: 'Local' });
    assert.deepEqual(
      serviceRoutes('n1', ALL, { services: [bare], slices: [slice('b', 'bare', [endpoint('fd00:94::3', 'n1')], 'IPv6')] }).addresses,
      ['fd00:96::41/128'],
    );
  });

  it('Cluster: no host routes from the nodes with endpoints; the range covers the service from every node', () => {
    const svc = service('c', { clusterIP: '10.96.0.50', externalIPs: ['192.0.2.50'], type: 'NodePort' });
    const slices = [slice('c1', 'c', [endpoint('10.94.0.1', 'n1')])];
    assert.deepEqual(byNode(ALL, [svc], slices), { n1: [], n2: [], n3: [] });
    assert.deepEqual(byNode(ALL, [{ ...svc, spec: { ...svc.spec, externalTrafficPolicy: 'Cluster' } }], slices), {
      n1: [],
      n2: [],
      n3: [],
    });
  });

  it('Cluster with a single-address external or LB entry: that service’s addresses from every node, endpoints or not', () => {
    const ext = service('ext', { clusterIP: '10.96.0.60', externalIPs: ['198.51.100.7'], externalTrafficPolicy: 'Cluster' });
    const all = ['10.96.0.60/32', '198.51.100.7/32'];
    assert.deepEqual(byNode(ALL, [ext], []), { n1: all, n2: all, n3: all });
    const lb = service('lb1', {
      type: 'LoadBalancer',
      clusterIP: '10.96.0.61',
      status: { loadBalancer: { ingress: [{ ip: '203.0.114.9' }] } },
    });
    const lbAll = ['10.96.0.61/32', '203.0.114.9/32'];
    assert.deepEqual(byNode(ALL, [lb], []), { n1: lbAll, n2: lbAll, n3: lbAll });
    // The same address on a service that is not a LoadBalancer is not an LB IP.
    const notLb = service('nlb', { type: 'NodePort', clusterIP: '10.96.0.62', status: lb.spec.status });
    assert.deepEqual(byNode(ALL, [notLb], []), { n1: [], n2: [], n3: [] });
    // Not listed as a single address: nothing beyond the range.
    const ranged = service('r', { clusterIP: '10.96.0.63', externalIPs: ['198.51.100.8'] });
    assert.deepEqual(byNode(ALL, [ranged], []), { n1: [], n2: [], n3: [] });
  });

  it('headless services, slices of another namespace or without the service label, and unreadable addresses give nothing', () => {
    const headless = service('h', { clusterIP: 'None', externalTrafficPolicy: 'Local', externalIPs: ['192.0.2.70'] });
    const elsewhere = service('web', { clusterIP: '10.96.0.71', externalTrafficPolicy: 'Local' }, 'prod');
    const unlabelled: EndpointSliceObject = {
      metadata: { name: 'u', namespace: 'prod' },
      spec: { addressType: 'IPv4', endpoints: [endpoint('10.94.0.1', 'n1')] },
    };
    const bad = service('bad', { clusterIP: '10.96.0.72', externalTrafficPolicy: 'Local', externalIPs: ['not-an-ip', '192.0.2.72'] });
    const slices = [
      slice('h1', 'h', [endpoint('10.94.0.1', 'n1')]),
      slice('w1', 'web', [endpoint('10.94.0.1', 'n1')]),
      unlabelled,
      slice('b1', 'bad', [endpoint('10.94.0.1', 'n1')]),
    ];
    assert.deepEqual(serviceRoutes('n1', ALL, { services: [headless, elsewhere, bad], slices }).addresses, [
      '10.96.0.72/32',
      '192.0.2.72/32',
    ]);
  });

  it('a node labelled exclude-from-external-load-balancers announces no service route at all', () => {
    const svc = service('web', { clusterIP: '10.96.0.10', externalTrafficPolicy: 'Local' });
    const slices = [slice('w', 'web', [endpoint('10.94.0.1', 'n1')])];
    assert.deepEqual(serviceRoutes('n1', ALL, { services: [svc], slices, nodeLabels: { [EXCLUDE_FROM_LOAD_BALANCERS_LABEL]: 'true' } }), {
      ranges: [],
      addresses: [],
    });
    assert.deepEqual(
      serviceRoutes('n1', ALL, { services: [svc], slices, nodeLabels: { [EXCLUDE_FROM_LOAD_BALANCERS_LABEL]: 'false' } }).addresses,
      ['10.96.0.10/32'],
    );
  });

  it('towards a peer in another AS: a service route learned from another node is not passed on; our own ones and other routes are', () => {
    const source: { config: BGPConfiguration | undefined } = { config: ALL };
    const policy = serviceExportPolicy(source);
    assert.equal(serviceExportPolicy(source), policy, 'one function per source: one update group');
    const route = (prefix: string, learned: boolean) => ({
      family: prefix.includes(':') ? ('ipv6-unicast' as const) : ('ipv4-unicast' as const),
      prefix,
      nextHop: '10.0.0.1',
      attributes: {},
      neighbor: learned ? { address: '10.0.0.2', asn: 64512, type: 'ibgp' as const } : undefined,
    });
    for (const p of ['10.96.0.10/32', 'fd00:96::10/128', '192.0.2.5/32', '198.51.100.7/32', '203.0.113.7/32', '10.96.0.0/12'])
      assert.equal(policy(route(p, true)), false, `${p} learned`);
    for (const p of ['10.96.0.10/32', 'fd00:96::10/128', '10.96.0.0/12']) assert.equal(policy(route(p, false)), true, `${p} our own`);
    assert.equal(policy(route('10.94.0.0/26', true)), true, 'a pod block is not a service route');
    // The configuration is read as routes go out: without service ranges, nothing is held back.
    source.config = undefined;
    assert.equal(policy(route('10.96.0.10/32', true)), true);
    // Sessions get it only towards another AS.
    const settings = { port: 179, localAs: 64512, ebgpExportPolicy: policy };
    const peer = (asn: number) => ({
      address: '10.0.0.9',
      asn,
      type: 'global' as const,
      source: 'BGPPeer/tor',
      routeReflectorClient: false,
    });
    assert.equal(neighborConfig(peer(65000), settings).exportPolicy, policy);
    assert.equal(neighborConfig(peer(64512), settings).exportPolicy, undefined);
  });

  it('on a real speaker: a Local service’s /32 is originated while a local endpoint is ready and withdrawn with the last one', async () => {
    const speaker = new BgpSpeaker({ asn: 64512, routerId: '127.0.0.1', listen: false });
    try {
      const advertiser = new Advertiser(speaker);
      const svc = service('web', { clusterIP: '10.96.0.10', externalTrafficPolicy: 'Local' });
      const cfg = config({ serviceClusterIPs: cidrs('10.96.0.0/12') });
      const originated = () =>
        speaker
          .routes()
          .map((r) => r.prefix)
          .sort();
      const a = advertiser.reconcile('n1', [], cfg, { services: [svc], slices: [slice('w', 'web', [endpoint('10.94.0.1', 'n1')])] });
      assert.deepEqual(a, { blocks: [], borrowed: [], services: ['10.96.0.0/12'], serviceAddresses: ['10.96.0.10/32'] });
      assert.deepEqual(originated(), ['10.96.0.0/12', '10.96.0.10/32']);
      advertiser.reconcile('n1', [], cfg, { services: [svc], slices: [slice('w', 'web', [endpoint('10.94.0.1', 'n2')])] });
      assert.deepEqual(originated(), ['10.96.0.0/12']);
      // Without the service input (an agent that follows no services) only the ranges.
      assert.deepEqual(advertisements('n1', [], cfg).serviceAddresses, []);
    } finally {
      await speaker.stop();
    }
  });
});
