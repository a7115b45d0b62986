// The services compiler without a kernel: the table's shape for each kind of frontend and
// traffic policy, determinism, field-naming refusals, and through the policy programmer on the
// in-memory dataplane, that one endpoint change is a small transaction.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import { MemoryNftDataplane } from '../../../felix/policy/memory-nft.js';
import type { NftChain, NftTable } from '../../../felix/policy/nft-model.js';
import { PolicyProgrammer } from '../../../felix/policy/programmer.js';
import { renderNftScript } from '../../../felix/policy/render.js';
import { mergeTable } from '../../../felix/policy/table-parts.js';
import { canonicalKey, canonicalVerdict } from '../../../felix/policy/element-text.js';
import { checkText, NftTableError, tableState } from '../../../felix/policy/table-state.js';
import { compileServices, ServiceCompiler, type ServiceTable } from '../../../felix/services/compile.js';
import { ServiceCompileError } from '../../../felix/services/compile-error.js';
import type { ServiceInput, ServicePort } from '../../../felix/services/input.js';
import { recordServiceInputChange } from '../../../felix/services/input-change.js';
import { clusterChain, endpointChain, externalChain, localChain, nodePortChain } from '../../../felix/services/names.js';
import { SERVICES_PART } from '../../../felix/services/program.js';

const ID = 'default/web/http/tcp';
const EMPTY_TABLE: NftTable = { family: 'inet', name: 'podroute', sets: [], chains: [] };
function port(over: Partial<ServicePort> = {}): ServicePort {
  return {
    id: ID,
    protocol: 'tcp',
    port: 80,
    clusterIPs: ['10.96.0.10'],
    externalIPs: [],
    loadBalancerIPs: [],
    endpoints: [
      { address: '10.65.0.2', port: 8080, local: true },
      { address: '10.65.0.3', port: 8080, local: false },
    ],
    ...over,
  };
}
const input = (services: ServicePort[], over: Partial<ServiceInput> = {}): ServiceInput => ({
  services,
  nodeAddresses: [],
  clusterCidrs: ['10.65.0.0/16'],
  ...over,
});
const chain = (t: ServiceTable, name: string): NftChain => {
  const c = t.chains.find((x) => x.name === name);
  assert.ok(c, `no chain ${name} among ${t.chains.map((x) => x.name).join(' ')}`);
  return c;
};
// An endpoint map is one of several shards (`svc-eps-tcp-v4-<n>`): named here without its number.
const unsharded = (text: string) => text.replace(/(svc-(?:np-)?(?:local-)?eps-[a-z]+-v[46])-\d+/g, '$1');
const rules = (t: ServiceTable, name: string) => chain(t, name).rules.map((r) => unsharded(r.expr));
const elements = (t: ServiceTable, map: string) =>
  t.maps.filter((m) => unsharded(m.name) === map).flatMap((m) => m.elements.map((e) => `${e.key} : ${e.verdict}`));
const hasChain = (t: ServiceTable, name: string) => t.chains.some((c) => c.name === name);

describe('felix services compiler', () => {
  it('a ClusterIP: one map element to its chain, which picks an endpoint uniformly from the endpoint map and DNATs to it', () => {
    const t = compileServices(
      input([port({ endpoints: [2, 3, 4].map((i) => ({ address: `10.65.0.${i}`, port: 8080, local: i === 2 })) })]),
    );
    assert.deepEqual(elements(t, 'svc-ips-v4'), [`10.96.0.10 . tcp . 80 : goto ${clusterChain(ID, 4)}`]);
    assert.deepEqual(rules(t, clusterChain(ID, 4)), [
      'ip daddr 10.96.0.10 ip saddr != @svc-cluster-v4 jump svc-mark-masq',
      'meta l4proto tcp dnat ip to ip daddr . meta l4proto . th dport . numgen random mod 3 map @svc-eps-tcp-v4',
    ]);
    // The endpoints are elements, `frontend . i`, in the map of their protocol, declared with typeof.
    assert.deepEqual(elements(t, 'svc-eps-tcp-v4'), [
      '10.96.0.10 . tcp . 80 . 0 : 10.65.0.2 . 8080',
      '10.96.0.10 . tcp . 80 . 1 : 10.65.0.3 . 8080',
      '10.96.0.10 . tcp . 80 . 2 : 10.65.0.4 . 8080',
    ]);
    const map = t.maps.find((m) => unsharded(m.name) === 'svc-eps-tcp-v4');
    assert.equal(
      map?.typeof,
      'ip daddr . meta l4proto . th dport . numgen random mod 1 : ip daddr . tcp dport',
      'declared as nft reads it',
    );
    assert.equal(map?.data, 'ipv4_addr . inet_service', 'a data map');
    assert.equal(hasChain(t, endpointChain(ID, '10.65.0.2', 8080, 4)), false, 'no chain per endpoint without affinity');
    assert.equal(
      t.maps.some((m) => ['svc-eps-udp-v4', 'svc-local-eps-tcp-v4'].includes(unsharded(m.name))),
      false,
      'an endpoint map without elements is not declared',
    );
    // endpointMapOver is still read, and changes nothing.
    assert.deepEqual(compileServices(input([port()]), { endpointMapOver: 1 }), compileServices(input([port()])));
    assert.equal(hasChain(t, externalChain(ID, 4)), false, 'no external frontend, no external chain');
    // Hairpin: the endpoint on this node, masqueraded when DNATed back to itself.
    assert.deepEqual(t.sets.find((s) => s.name === 'svc-hairpin-v4')?.elements, ['10.65.0.2 . 10.65.0.2']);
    assert.ok(
      rules(t, 'svc-nat-postrouting').includes('ct status dnat ip saddr . ip daddr @svc-hairpin-v4 counter masquerade fully-random'),
      `no hairpin masquerade rule: ${rules(t, 'svc-nat-postrouting').join('; ')}`,
    );
    // The dispatch: one lookup per family in a map, whatever the number of services.
    assert.deepEqual(rules(t, 'svc-dispatch'), [
      'ip daddr . meta l4proto . th dport vmap @svc-ips-v4',
      'fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @svc-nodeports-v4',
      'ip6 daddr . meta l4proto . th dport vmap @svc-ips-v6',
      'fib daddr type local ip6 daddr != ::1 meta l4proto . th dport vmap @svc-nodeports-v6',
    ]);
    assert.deepEqual(
      t.chains.filter((c) => c.base).map((c) => `${c.name} ${c.base!.type} ${c.base!.hook} ${c.base!.priority}`),
      [
        'svc-nat-prerouting nat prerouting -100',
        'svc-nat-output nat output -100',
        'svc-nat-postrouting nat postrouting 100',
        'svc-filter-input filter input -110',
        'svc-filter-forward filter forward -110',
        'svc-filter-output filter output -110',
      ],
    );
  });

  it('NodePort, external and load-balancer IPs go through the external and nodeport chains, which masquerade (Cluster policy)', () => {
    const t = compileServices(input([port({ nodePort: 30080, externalIPs: ['192.0.2.10'], loadBalancerIPs: ['192.0.2.11', 'fd00::11'] })]));
    const ext = externalChain(ID, 4);
    const np = nodePortChain(ID, 4);
    assert.deepEqual(elements(t, 'svc-ips-v4').sort(), [
      `10.96.0.10 . tcp . 80 : goto ${clusterChain(ID, 4)}`,
      `192.0.2.10 . tcp . 80 : goto ${ext}`,
      `192.0.2.11 . tcp . 80 : goto ${ext}`,
    ]);
    assert.deepEqual(elements(t, 'svc-nodeports-v4'), [`tcp . 30080 : goto ${np}`]);
    // An IPv6 frontend of a service with no IPv6 cluster IP is not served (kube-proxy's per-family proxiers).
    assert.deepEqual(elements(t, 'svc-ips-v6'), []);
    assert.deepEqual(rules(t, ext), [
      'jump svc-mark-masq',
      'meta l4proto tcp dnat ip to ip daddr . meta l4proto . th dport . numgen random mod 2 map @svc-eps-tcp-v4',
    ]);
    assert.deepEqual(rules(t, np), [
      'jump svc-mark-masq',
      'meta l4proto tcp dnat ip to meta l4proto . th dport . numgen random mod 2 map @svc-np-eps-tcp-v4',
    ]);
    // Each frontend has the endpoints under its own key; a NodePort's key is its protocol and port.
    assert.deepEqual(
      elements(t, 'svc-eps-tcp-v4').filter((e) => e.startsWith('192.0.2.11 ')),
      ['192.0.2.11 . tcp . 80 . 0 : 10.65.0.2 . 8080', '192.0.2.11 . tcp . 80 . 1 : 10.65.0.3 . 8080'],
    );
    assert.deepEqual(elements(t, 'svc-np-eps-tcp-v4'), ['tcp . 30080 . 0 : 10.65.0.2 . 8080', 'tcp . 30080 . 1 : 10.65.0.3 . 8080']);
  });

  it('externalTrafficPolicy Local: pods and the node short-circuit to every endpoint, the rest to the local ones with their address', () => {
    const t = compileServices(input([port({ nodePort: 30080, externalLocal: true })]));
    const any = 'meta l4proto tcp dnat ip to meta l4proto . th dport . numgen random mod 2 map @svc-np-eps-tcp-v4';
    assert.deepEqual(rules(t, nodePortChain(ID, 4)), [
      `ip saddr @svc-cluster-v4 ${any}`,
      'fib saddr type local jump svc-mark-masq',
      `fib saddr type local ${any}`,
      'meta l4proto tcp dnat ip to meta l4proto . th dport . numgen random mod 1 map @svc-np-local-eps-tcp-v4',
    ]);
    assert.deepEqual(elements(t, 'svc-np-local-eps-tcp-v4'), ['tcp . 30080 . 0 : 10.65.0.2 . 8080']);
    // No local endpoint: external traffic is dropped (checked in the filter chains), the cluster IP still balances.
    const none = compileServices(
      input([port({ nodePort: 30080, externalLocal: true, endpoints: [{ address: '10.65.0.3', port: 8080, local: false }] })]),
    );
    assert.deepEqual(elements(none, 'svc-noep-nodeports-v4'), ['tcp . 30080 : drop']);
    assert.deepEqual(elements(none, 'svc-nodeports-v4'), [`tcp . 30080 : goto ${nodePortChain(ID, 4)}`]);
    assert.equal(
      rules(none, nodePortChain(ID, 4)).some((r) => r.includes('local-eps')),
      false,
      'no pick among local endpoints when there is none',
    );
  });

  it('internalTrafficPolicy Local: the cluster IP goes to the local chain; with no local endpoint it is dropped, not rejected', () => {
    const t = compileServices(input([port({ internalLocal: true })]));
    assert.deepEqual(elements(t, 'svc-ips-v4'), [`10.96.0.10 . tcp . 80 : goto ${localChain(ID, 4)}`]);
    assert.equal(hasChain(t, clusterChain(ID, 4)), false);
    const none = compileServices(input([port({ internalLocal: true, endpoints: [{ address: '10.65.0.3', port: 8080, local: false }] })]));
    assert.deepEqual(elements(none, 'svc-ips-v4'), []);
    assert.deepEqual(elements(none, 'svc-noep-ips-v4'), ['10.96.0.10 . tcp . 80 : drop']);
  });

  it('no endpoint at all: every frontend is rejected by the filter chains, and no chain is left for the service', () => {
    const t = compileServices(input([port({ endpoints: [], nodePort: 30080, externalIPs: ['192.0.2.10'] })]));
    assert.deepEqual(elements(t, 'svc-noep-ips-v4').sort(), [
      '10.96.0.10 . tcp . 80 : goto svc-reject',
      '192.0.2.10 . tcp . 80 : goto svc-reject',
    ]);
    assert.deepEqual(elements(t, 'svc-noep-nodeports-v4'), ['tcp . 30080 : goto svc-reject']);
    assert.deepEqual(elements(t, 'svc-ips-v4'), []);
    assert.ok(
      t.chains.every((c) => c.name.startsWith('svc-')),
      t.chains.map((c) => c.name).join(' '),
    );
    assert.deepEqual(rules(t, 'svc-filter-forward'), ['ct state new jump svc-check']);
    assert.deepEqual(rules(t, 'svc-reject'), ['counter reject']);
  });

  it('session affinity: a dynamic set per endpoint with the timeout, consulted before a numgen verdict map, updated on DNAT', () => {
    const t = compileServices(input([port({ affinityTimeoutSeconds: 600 })]));
    const aff = t.sets.filter((s) => s.timeout !== undefined);
    assert.deepEqual(
      aff.map((s) => [s.type, s.timeout, s.elements.length]),
      [
        ['ipv4_addr', 600, 0],
        ['ipv4_addr', 600, 0],
      ],
    );
    const r = rules(t, clusterChain(ID, 4));
    assert.equal(r[1], `ip saddr @${aff[0]!.name} goto ${endpointChain(ID, '10.65.0.2', 8080, 4)}`);
    assert.match(r[3]!, /^numgen random mod 2 vmap/);
    assert.deepEqual(rules(t, endpointChain(ID, '10.65.0.2', 8080, 4)), [
      `update @${aff[0]!.name} { ip saddr }`,
      'meta l4proto tcp dnat ip to 10.65.0.2:8080',
    ]);
    assert.equal(
      r[3],
      `numgen random mod 2 vmap { 0 : goto ${endpointChain(ID, '10.65.0.2', 8080, 4)}, 1 : goto ${endpointChain(ID, '10.65.0.3', 8080, 4)} }`,
    );
  });

  it('dual stack: each cluster IP goes to the endpoints of its family', () => {
    const t = compileServices(
      input([
        port({
          clusterIPs: ['10.96.0.10', 'fd00:96::10'],
          endpoints: [
            { address: '10.65.0.2', port: 8080, local: true },
            { address: 'fd00:65::2', port: 8080, local: true },
          ],
        }),
      ]),
    );
    assert.deepEqual(elements(t, 'svc-ips-v6'), [`fd00:96::10 . tcp . 80 : goto ${clusterChain(ID, 6)}`]);
    assert.deepEqual(rules(t, clusterChain(ID, 6)), [
      'meta l4proto tcp dnat ip6 to ip6 daddr . meta l4proto . th dport . numgen random mod 1 map @svc-eps-tcp-v6',
    ]);
    assert.deepEqual(elements(t, 'svc-eps-tcp-v6'), ['fd00:96::10 . tcp . 80 . 0 : fd00:65::2 . 8080']);
    assert.deepEqual(elements(t, 'svc-eps-tcp-v4'), ['10.96.0.10 . tcp . 80 . 0 : 10.65.0.2 . 8080']);
  });

  it('NodePorts on the addresses given instead of every local address', () => {
    const t = compileServices(input([port({ nodePort: 30080 })], { nodeAddresses: ['192.168.1.5', 'fd00:1::5'] }));
    assert.ok(
      rules(t, 'svc-dispatch').includes('ip daddr @svc-nodeport-ips-v4 meta l4proto . th dport vmap @svc-nodeports-v4'),
      `no NodePort dispatch on the given addresses: ${rules(t, 'svc-dispatch').join('; ')}`,
    );
    assert.deepEqual(t.sets.find((s) => s.name === 'svc-nodeport-ips-v4')?.elements, ['192.168.1.5']);
  });

  it('writes its maps in canonical text, as it tells the table state: the state equals that of the same maps read element by element', () => {
    const table = compileServices(
      input(
        [
          port({ nodePort: 30080, externalIPs: ['192.0.2.7'], loadBalancerIPs: ['198.51.100.1'] }),
          port({
            id: 'ns/v6/dns/udp',
            protocol: 'udp',
            port: 53,
            clusterIPs: ['10.96.0.53', 'FD00:96::0035'],
            endpoints: [
              { address: 'FD00:65:0::2', port: 5353, local: true },
              { address: '10.65.0.9', port: 5353, local: false },
            ],
            externalLocal: true,
            nodePort: 30053,
          }),
          port({ id: 'ns/s/x/sctp', protocol: 'sctp', port: 9, clusterIPs: ['10.96.0.9'], internalLocal: true }),
          port({ id: 'ns/none/x/tcp', clusterIPs: ['10.96.0.11'], endpoints: [] }),
        ],
        { nodeAddresses: ['192.0.2.1'] },
      ),
    );
    const maps = table.maps ?? [];
    assert.ok(
      maps.some((m) => m.elements.length > 0 && m.data !== undefined),
      'an endpoint map has elements',
    );
    for (const m of maps)
      m.elements.forEach((e, i) => {
        const where = `${m.name}.elements[${i}]`;
        checkText(e.key, where, ',{}');
        checkText(e.verdict, where, ',{}');
        assert.equal(canonicalKey(m.type, e.key), e.key, `${where}: key ${e.key} is not canonical`);
        const verdict = m.data === undefined ? canonicalVerdict(e.verdict) : canonicalKey(m.data, e.verdict);
        assert.equal(verdict, e.verdict, `${where}: ${e.verdict} is not canonical`);
      });
    const whole: NftTable = { ...EMPTY_TABLE, sets: table.sets, chains: table.chains };
    const marked = tableState({ ...whole, maps });
    const read = tableState({ ...whole, maps: maps.map((m) => ({ ...m, elements: [...m.elements] })) });
    assert.deepEqual(marked.maps, read.maps);
  });

  it('is deterministic: services and endpoints in any order give the same table', () => {
    const many = Array.from({ length: 20 }, (_, i) =>
      port({
        id: `ns/s${i}/p/tcp`,
        clusterIPs: [`10.96.1.${i}`],
        nodePort: 30000 + i,
        affinityTimeoutSeconds: i % 2 ? 60 : undefined,
        endpoints: [3, 1, 2].map((j) => ({ address: `10.65.${i}.${j}`, port: 80, local: j === 1 })),
      }),
    );
    const shuffled = [...many].reverse().map((p) => ({ ...p, endpoints: [...p.endpoints].reverse() }));
    const table = (t: ServiceTable): NftTable => ({ family: 'inet', name: 'podroute', sets: t.sets, maps: t.maps, chains: t.chains });
    assert.equal(renderNftScript(table(compileServices(input(shuffled)))), renderNftScript(table(compileServices(input(many)))));
  });

  it('a frontend two services claim stays with the first by id, and the conflict is named', () => {
    const t = compileServices(
      input([
        port({ id: 'b/svc/p/tcp', clusterIPs: ['10.96.0.2'], externalIPs: ['192.0.2.1'] }),
        port({ id: 'a/svc/p/tcp', clusterIPs: ['10.96.0.1'], externalIPs: ['192.0.2.1'] }),
      ]),
    );
    assert.deepEqual(
      elements(t, 'svc-ips-v4').filter((e) => e.startsWith('192.0.2.1 ')),
      [`192.0.2.1 . tcp . 80 : goto ${externalChain('a/svc/p/tcp', 4)}`],
    );
    assert.equal(t.conflicts.length, 1);
    assert.match(t.conflicts[0]!, /"a\/svc\/p\/tcp" keeps it, "b\/svc\/p\/tcp" is left out/);
    // One with endpoints, one without: the frontend is not also in the no-endpoint check.
    const mixed = compileServices(
      input([
        port({ id: 'a/svc/p/tcp', clusterIPs: ['10.96.0.1'], externalIPs: ['192.0.2.1'] }),
        port({ id: 'b/svc/p/tcp', clusterIPs: ['10.96.0.2'], externalIPs: ['192.0.2.1'], endpoints: [] }),
      ]),
    );
    assert.deepEqual(elements(mixed, 'svc-noep-ips-v4'), ['10.96.0.2 . tcp . 80 : goto svc-reject']);
    // An external IP that is the port's own cluster IP: the cluster IP's element stays, nothing is refused.
    const self = compileServices(input([port({ externalIPs: ['10.96.0.10'], nodePort: 30080 })]));
    assert.deepEqual(elements(self, 'svc-ips-v4'), [`10.96.0.10 . tcp . 80 : goto ${clusterChain(ID, 4)}`]);
    assert.deepEqual(self.conflicts, []);
  });

  it('refuses bad input naming the field', () => {
    const refused = (i: ServiceInput, field: string) =>
      assert.throws(
        () => compileServices(i),
        (e: unknown) => e instanceof ServiceCompileError && e.field === field,
      );
    refused(input([port({ protocol: 'icmp' as 'tcp' })]), 'services[0].protocol');
    refused(input([port({ port: 0 })]), 'services[0].port');
    refused(
      input([
        port({
          endpoints: [
            { address: '10.65.0.2', port: 80, local: false },
            { address: '10.65.0.300', port: 80, local: false },
          ],
        }),
      ]),
      'services[0].endpoints[1].address',
    );
    refused(input([port(), port()]), 'services[1].id');
    refused(input([port({ clusterIPs: ['10.96.0.1', '10.96.0.2'] })]), 'services[0].clusterIPs');
    refused(input([port({ affinityTimeoutSeconds: 0 })]), 'services[0].affinityTimeoutSeconds');
    refused(input([port()], { clusterCidrs: ['10.65.0.0/33'] }), 'clusterCidrs[0]');
  });

  it('beside the policy table: a part naming what the table declares is refused, and nothing changes', async () => {
    const policy = compilePolicy({
      sets: [],
      namedPortSets: [],
      policies: [],
      endpoints: [],
      pools: [{ cidr: '10.65.0.0/16', natOutgoing: true }],
    });
    const services = compileServices(input([port()]));
    const merged = mergeTable(policy, new Map([[SERVICES_PART, services]]));
    assert.equal(merged.chains.length, policy.chains.length + services.chains.length);
    const programmer = new PolicyProgrammer(new MemoryNftDataplane(), { resyncIntervalMs: 0 });
    await programmer.update(policy);
    assert.throws(
      () => programmer.updatePart(SERVICES_PART, { ...services, chains: [...services.chains, { name: 'forward', rules: [] }] }),
      NftTableError,
    );
    assert.equal(programmer.desired, policy);
  });

  it('through the programmer: 1,000 services × 10 endpoints in one transaction; an endpoint replaced is elements alone, one out refills the rules holding the count', async () => {
    const make = (skip?: number, moved?: number) =>
      Array.from({ length: 1000 }, (_, i) =>
        port({
          id: `ns/s${i}/p/tcp`,
          clusterIPs: [`10.96.${i >> 8}.${i & 255}`],
          nodePort: 30000 + i,
          endpoints: Array.from({ length: 10 }, (_, j) => ({
            address: `10.65.${i >> 8}.${(i & 255) >> 0}`,
            port: j === moved ? 2000 + j : 1000 + j,
            local: j < 3,
          })).filter((_, j) => !(i === 7 && j === skip)),
        }),
      );
    const dataplane = new MemoryNftDataplane();
    const programmer = new PolicyProgrammer(dataplane, { resyncIntervalMs: 0 });
    const compiler = new ServiceCompiler();
    const all = make();
    const first = await programmer.updatePart(SERVICES_PART, compiler.compile(input(all)));
    assert.ok(first.ok, first.error);
    assert.equal(dataplane.applied.length, 1);
    // Only service 7 is a new object: the others are the same input objects, as a feed keeps them.
    const next = [...all];
    next[7] = make(4)[7]!;
    const second = await programmer.updatePart(SERVICES_PART, compiler.compile(input(next)));
    assert.ok(second.ok, second.error);
    // The number of endpoints is in the DNAT rules of the cluster and nodeport chains: both are
    // refilled, and the endpoints after the one that left move down a slot (elements).
    assert.deepEqual(second.opCounts, { 'delete map element': 2, 'flush chain': 2, 'add map element': 2, 'add rule': 4 }, second.script);
    // An endpoint replaced by another (a pod rescheduled): its elements, under the cluster IP and
    // the NodePort, and no rule.
    next[7] = make(4, 9)[7]!;
    const third = await programmer.updatePart(SERVICES_PART, compiler.compile(input(next)));
    assert.ok(third.ok, third.error);
    assert.deepEqual(third.opCounts, { 'delete map element': 2, 'add map element': 2 }, third.script);
    assert.equal(third.elementsAdded, 0, 'map elements are not counted as set elements');
    const resync = await programmer.resync();
    assert.equal(resync.ops, 0, resync.script);
    // The maps and hairpin sets are built anew; the table state keys them by content, so the plan
    // finds the very state it had (and skips them without comparing elements).
    const state = (t: ServiceTable) => tableState(mergeTable(EMPTY_TABLE, new Map([[SERVICES_PART, t]])));
    const again = [compiler.compile(input(next)), compiler.compile(input(next))].map(state);
    for (const [name, m] of again[0]!.maps) assert.equal(again[1]!.maps.get(name), m, name);
    for (const [name, s] of again[0]!.sets) assert.equal(again[1]!.sets.get(name), s, name);
  });

  it('two compilers in one process each give what a fresh compile gives, and keep their own ports across what the other compiles', () => {
    const ports = (n: number, base: number) =>
      Array.from({ length: n }, (_, i) =>
        port({
          id: `ns/s${i}/p/tcp`,
          clusterIPs: [`10.96.${base}.${i}`],
          nodePort: 30000 + base + i,
          endpoints: [
            { address: `10.65.${base}.${i}`, port: 8080, local: true },
            { address: `10.66.${base}.${i}`, port: 8080, local: false },
          ],
        }),
      );
    // Two agents of one process (a lab): their own services, one seeing the pools and one not.
    const a = new ServiceCompiler();
    const b = new ServiceCompiler({ endpointMapOver: 1 });
    const aPorts = ports(20, 1);
    const bPorts = ports(20, 2);
    const aIn = (ps: ServicePort[]) => input(ps);
    const bIn = (ps: ServicePort[]) => input(ps, { clusterCidrs: [], nodeAddresses: ['192.168.1.6'] });
    const a1 = a.compile(aIn(aPorts));
    const b1 = b.compile(bIn(bPorts));
    // The same port objects in both: each compiler compiles them its own way.
    const shared = b.compile(bIn(aPorts));
    assert.deepEqual(shared, compileServices(bIn(aPorts), { endpointMapOver: 1 }));
    assert.deepEqual(a1, compileServices(aIn(aPorts)));
    assert.deepEqual(b1, compileServices(bIn(bPorts), { endpointMapOver: 1 }));
    const aNext = [...aPorts];
    aNext[3] = port({ ...aPorts[3]!, endpoints: aPorts[3]!.endpoints.slice(1) });
    const a2 = a.compile(aIn(aNext));
    const bNext = [...bPorts];
    bNext[5] = port({ ...bPorts[5]!, endpoints: [] });
    const b2 = b.compile(bIn(bNext));
    assert.deepEqual(a2, compileServices(aIn(aNext)));
    assert.deepEqual(b2, compileServices(bIn(bNext), { endpointMapOver: 1 }));
    // What did not change is the very object it was, whatever the other compiler did meanwhile.
    const cluster = (t: ServiceTable, i: number) => chain(t, clusterChain(`ns/s${i}/p/tcp`, 4));
    assert.equal(cluster(a2, 4), cluster(a1, 4));
    assert.equal(cluster(b2, 4), cluster(b1, 4));
    assert.notEqual(cluster(a2, 3), cluster(a1, 3));
    assert.notEqual(cluster(a2, 4), cluster(shared, 4));
  });

  it('a port is remembered by its object: a changed port, a new object with the same id, is compiled again', () => {
    const compiler = new ServiceCompiler();
    const p = port({ nodePort: 30080 });
    const first = compiler.compile(input([p]));
    // What ServiceInputBuilder hands over when a port's content changes: a new object.
    const changed: ServicePort = { ...p, port: 81, endpoints: [...p.endpoints, { address: '10.65.0.4', port: 8080, local: false }] };
    const again = compiler.compile(input([changed]));
    assert.notDeepEqual(again, first);
    assert.deepEqual(again, compileServices(input([changed])));
    // The same object again is taken from memory: its chain is the very object compiled first.
    assert.equal(chain(compiler.compile(input([p])), clusterChain(ID, 4)), chain(first, clusterChain(ID, 4)));
  });

  it("a change recorded by the input's maker is believed for the input compiled last, each named port checked in its place; any other record is not", () => {
    const api = port({ id: 'default/api/http/tcp', clusterIPs: ['10.96.0.11'] });
    const web = port();
    const moved = port({ endpoints: [{ address: '10.65.0.9', port: 8080, local: true }] });
    const a = input([api, web]);
    const compiler = new ServiceCompiler();
    const first = compiler.compile(a);
    // Believed: a record that names no port, though web was replaced, makes no change at all.
    const lying = input([api, moved]);
    recordServiceInputChange(lying, { from: a, ports: [] });
    assert.deepEqual(compiler.lastChange().ports, undefined, 'the first compile: every port');
    assert.equal(compiler.compile(lying), first, 'the same table: the record was taken as it said');
    assert.deepEqual([...(compiler.lastChange().ports ?? new Map()).keys()], [], 'and nothing changed');
    // A true record from the input compiled last: the named port, and only it, is compiled.
    const honest = new ServiceCompiler();
    honest.compile(a);
    const b = input([api, moved]);
    recordServiceInputChange(b, { from: a, ports: [{ index: 1, port: moved }] });
    assert.deepEqual(honest.compile(b), compileServices(b));
    assert.deepEqual([...(honest.lastChange().ports ?? new Map()).keys()], [ID]);
    // Not believed: from another input than the one compiled last, or naming a port not where it is.
    for (const record of [
      { from: input([api, web]), ports: [] },
      { from: b, ports: [{ index: 0, port: web }] },
    ]) {
      const c = new ServiceCompiler();
      c.compile(b);
      const back = input([api, web]);
      recordServiceInputChange(back, record);
      assert.deepEqual(c.compile(back), compileServices(back), "every port compared: the table is the input's");
    }
  });
});
