// Every rule of the policy kinds, the Namespace and WorkloadEndpoint ports: a bad value is
// refused with an error naming its field (table-driven, one case or more per rule), and the
// defaults Kubernetes and Calico fill in are filled in.
import assert from 'node:assert/strict';
import { parseResources, type Resource, ValidationError, validateResource } from '../../../lib/resources/index.js';

type Doc = Record<string, unknown>;

const knp = (spec: Doc, metadata: Doc = { name: 'p', namespace: 'x' }): Doc => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata,
  spec,
});
const cnp = (spec: Doc, kind = 'NetworkPolicy', metadata: Doc = { name: 'p' }): Doc => ({
  apiVersion: 'projectcalico.org/v3',
  kind,
  metadata,
  spec,
});
const gnp = (spec: Doc, metadata: Doc = { name: 'p' }): Doc => cnp(spec, 'GlobalNetworkPolicy', metadata);
const rule = (r: Doc): Doc => cnp({ ingress: [{ action: 'Allow', ...r }] });
const peer = (p: Doc): Doc => knp({ ingress: [{ from: [p] }] });
const port = (p: Doc): Doc => knp({ ingress: [{ ports: [p] }] });
const sel = (s: Doc): Doc => knp({ podSelector: s });
const ns = (metadata: Doc, extra: Doc = {}): Doc => ({ apiVersion: 'v1', kind: 'Namespace', metadata, ...extra });
const wep = (spec: Doc, labels?: Doc): Doc => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'WorkloadEndpoint',
  metadata: { name: 'n1-k8s-a-eth0', namespace: 'x', ...(labels ? { labels } : {}) },
  spec: { node: 'n1', pod: 'a', interfaceName: 'cali0123456789a', ipNetworks: ['10.0.0.1/32'], ...spec },
});

// what, document, the field the error must name, and (optionally) a word the reason must hold.
const BAD: [string, Doc, string, RegExp?][] = [
  // ---- Kubernetes NetworkPolicy: metadata and apiVersion ----
  ['policy namespace not a DNS label', knp({}, { name: 'p', namespace: 'X.y' }), 'metadata.namespace'],
  ['policy name', knp({}, { name: 'P_1' }), 'metadata.name'],
  ['policy labels', knp({}, { name: 'p', labels: { app: 'a b' } }), 'metadata.labels.app'],
  ['unknown spec field', knp({ podselector: {} }), 'spec.podselector', /unknown field/],
  // LabelSelector
  ['matchLabels value', sel({ matchLabels: { app: 'no spaces' } }), 'spec.podSelector.matchLabels.app'],
  ['matchLabels value too long', sel({ matchLabels: { app: 'a'.repeat(64) } }), 'spec.podSelector.matchLabels.app'],
  ['matchLabels key', sel({ matchLabels: { 'bad key': 'v' } }), 'spec.podSelector.matchLabels'],
  ['matchLabels key prefix', sel({ matchLabels: { 'Example.com/app': 'v' } }), 'spec.podSelector.matchLabels', /prefix/],
  ['selector unknown field', sel({ matchLabel: {} }), 'spec.podSelector.matchLabel'],
  ['operator missing', sel({ matchExpressions: [{ key: 'k', values: ['a'] }] }), 'spec.podSelector.matchExpressions[0].operator'],
  [
    'operator unknown',
    sel({ matchExpressions: [{ key: 'k', operator: 'in', values: ['a'] }] }),
    'spec.podSelector.matchExpressions[0].operator',
  ],
  ['In without values', sel({ matchExpressions: [{ key: 'k', operator: 'In' }] }), 'spec.podSelector.matchExpressions[0].values'],
  [
    'NotIn with empty values',
    sel({ matchExpressions: [{ key: 'k', operator: 'NotIn', values: [] }] }),
    'spec.podSelector.matchExpressions[0].values',
  ],
  [
    'Exists with values',
    sel({ matchExpressions: [{ key: 'k', operator: 'Exists', values: ['a'] }] }),
    'spec.podSelector.matchExpressions[0].values',
  ],
  ['expression key', sel({ matchExpressions: [{ key: '-k', operator: 'Exists' }] }), 'spec.podSelector.matchExpressions[0].key'],
  [
    'expression value',
    sel({ matchExpressions: [{ key: 'k', operator: 'In', values: ['ok', 'not ok'] }] }),
    'spec.podSelector.matchExpressions[0].values[1]',
  ],
  // policyTypes
  ['policyTypes value', knp({ policyTypes: ['ingress'] }), 'spec.policyTypes[0]'],
  ['policyTypes twice', knp({ policyTypes: ['Egress', 'Egress'] }), 'spec.policyTypes[1]'],
  ['policyTypes three', knp({ policyTypes: ['Ingress', 'Egress', 'Ingress'] }), 'spec.policyTypes'],
  ['policyTypes not a list', knp({ policyTypes: 'Ingress' }), 'spec.policyTypes'],
  // rules and peers
  ['ingress not a list', knp({ ingress: { from: [] } }), 'spec.ingress'],
  ['to in an ingress rule', knp({ ingress: [{ to: [] }] }), 'spec.ingress[0].to'],
  ['from in an egress rule', knp({ egress: [{ from: [] }] }), 'spec.egress[0].from'],
  ['empty peer', peer({}), 'spec.ingress[0].from[0]', /must specify a peer/],
  ['ipBlock with podSelector', peer({ podSelector: {}, ipBlock: { cidr: '10.0.0.0/8' } }), 'spec.ingress[0].from[0].ipBlock'],
  [
    'ipBlock with namespaceSelector',
    knp({ egress: [{ to: [{ namespaceSelector: {}, ipBlock: { cidr: '10.0.0.0/8' } }] }] }),
    'spec.egress[0].to[0].ipBlock',
  ],
  ['peer unknown field', peer({ podselector: {} }), 'spec.ingress[0].from[0].podselector'],
  [
    'peer namespaceSelector',
    peer({ namespaceSelector: { matchLabels: { a: '#' } } }),
    'spec.ingress[0].from[0].namespaceSelector.matchLabels.a',
  ],
  ['ipBlock cidr missing', peer({ ipBlock: {} }), 'spec.ingress[0].from[0].ipBlock.cidr', /required/],
  ['ipBlock cidr', peer({ ipBlock: { cidr: '10.0.0.0/33' } }), 'spec.ingress[0].from[0].ipBlock.cidr'],
  ['ipBlock cidr without length', peer({ ipBlock: { cidr: '10.0.0.1' } }), 'spec.ingress[0].from[0].ipBlock.cidr'],
  ['ipBlock unknown field', peer({ ipBlock: { cidr: '10.0.0.0/8', exclude: [] } }), 'spec.ingress[0].from[0].ipBlock.exclude'],
  [
    'except outside cidr',
    peer({ ipBlock: { cidr: '10.0.0.0/16', except: ['10.1.0.0/24'] } }),
    'spec.ingress[0].from[0].ipBlock.except[0]',
    /strict subset/,
  ],
  [
    'except equal to cidr',
    peer({ ipBlock: { cidr: '10.0.0.0/16', except: ['10.0.0.0/24', '10.0.0.0/16'] } }),
    'spec.ingress[0].from[0].ipBlock.except[1]',
  ],
  [
    'except wider than cidr',
    peer({ ipBlock: { cidr: '10.0.0.0/16', except: ['10.0.0.0/8'] } }),
    'spec.ingress[0].from[0].ipBlock.except[0]',
  ],
  [
    'except of the other family',
    peer({ ipBlock: { cidr: '10.0.0.0/16', except: ['fd00::/64'] } }),
    'spec.ingress[0].from[0].ipBlock.except[0]',
  ],
  ['except not a CIDR', peer({ ipBlock: { cidr: '10.0.0.0/16', except: ['ten'] } }), 'spec.ingress[0].from[0].ipBlock.except[0]'],
  // ports
  ['port protocol', port({ protocol: 'ICMP', port: 80 }), 'spec.ingress[0].ports[0].protocol'],
  ['port protocol lower case', port({ protocol: 'tcp' }), 'spec.ingress[0].ports[0].protocol'],
  ['port 0', port({ port: 0 }), 'spec.ingress[0].ports[0].port'],
  ['port 65536', port({ port: 65536 }), 'spec.ingress[0].ports[0].port'],
  ['port name upper case', port({ port: 'Http' }), 'spec.ingress[0].ports[0].port'],
  ['port name all digits', port({ port: '80' }), 'spec.ingress[0].ports[0].port', /one letter/],
  ['port name with --', port({ port: 'a--b' }), 'spec.ingress[0].ports[0].port'],
  ['port name too long', port({ port: 'abcdefghijklmnop' }), 'spec.ingress[0].ports[0].port', /15/],
  ['endPort without port', port({ endPort: 90 }), 'spec.ingress[0].ports[0].endPort'],
  ['endPort with a named port', port({ port: 'http', endPort: 90 }), 'spec.ingress[0].ports[0].endPort', /named port/],
  ['endPort below port', port({ port: 90, endPort: 80 }), 'spec.ingress[0].ports[0].endPort', /greater than or equal/],
  ['endPort above 65535', port({ port: 90, endPort: 65536 }), 'spec.ingress[0].ports[0].endPort'],
  ['port unknown field', port({ port: 80, end: 90 }), 'spec.ingress[0].ports[0].end'],
  ['egress port', knp({ egress: [{ ports: [{ port: -1 }] }] }), 'spec.egress[0].ports[0].port'],
  // ---- apiVersion and kind ----
  ['GlobalNetworkPolicy under networking.k8s.io', { ...gnp({}), apiVersion: 'networking.k8s.io/v1' }, 'apiVersion'],
  [
    'NetworkPolicy under another group',
    { ...knp({}), apiVersion: 'networking.k8s.io/v2' },
    'apiVersion',
    /networking\.k8s\.io\/v1 for a Kubernetes NetworkPolicy/,
  ],
  ['Namespace under projectcalico', { ...ns({ name: 'x' }), apiVersion: 'projectcalico.org/v3' }, 'apiVersion'],
  // ---- Calico NetworkPolicy / GlobalNetworkPolicy ----
  ['order not a number', cnp({ order: '10' }), 'spec.order'],
  ['policy selector', cnp({ selector: "app = 'x'" }), 'spec.selector', /position 4/],
  ['policy selector global()', cnp({ selector: 'global()' }), 'spec.selector'],
  ['types value', cnp({ types: ['ingress'] }), 'spec.types[0]'],
  ['types twice', cnp({ types: ['Ingress', 'Ingress'] }), 'spec.types[1]'],
  ['namespaceSelector on a namespaced policy', cnp({ namespaceSelector: 'all()' }), 'spec.namespaceSelector', /unknown field/],
  ['GlobalNetworkPolicy namespaceSelector', gnp({ namespaceSelector: 'has(' }), 'spec.namespaceSelector'],
  ['GlobalNetworkPolicy namespace', cnp({}, 'GlobalNetworkPolicy', { name: 'g', namespace: 'x' }), 'metadata.namespace'],
  ['serviceAccountSelector', cnp({ serviceAccountSelector: 'all()' }), 'spec.serviceAccountSelector', /not supported/],
  ['tier name with a dot', cnp({ tier: 'a.b' }, 'NetworkPolicy', { name: 'a.b.p' }), 'spec.tier', /no '\.'/],
  ['doNotTrack', gnp({ doNotTrack: true }), 'spec.doNotTrack', /not supported/],
  ['unknown spec field', cnp({ egres: [] }), 'spec.egres', /unknown field/],
  ['rules not a list', cnp({ egress: { action: 'Allow' } }), 'spec.egress'],
  ['action missing', cnp({ ingress: [{}] }), 'spec.ingress[0].action', /required/],
  ['action', rule({ action: 'allow' }), 'spec.ingress[0].action'],
  ['egress action', cnp({ egress: [{ action: 'Reject' }] }), 'spec.egress[0].action'],
  ['protocol name', rule({ protocol: 'HTTP' }), 'spec.ingress[0].protocol'],
  ['protocol 0', rule({ protocol: 0 }), 'spec.ingress[0].protocol'],
  ['protocol 256', rule({ protocol: 256 }), 'spec.ingress[0].protocol'],
  ['notProtocol', rule({ notProtocol: 'IGMP' }), 'spec.ingress[0].notProtocol'],
  ['ipVersion', rule({ ipVersion: 5 }), 'spec.ingress[0].ipVersion'],
  ['icmp without protocol', rule({ icmp: { type: 8 } }), 'spec.ingress[0].icmp', /ICMP/],
  ['notICMP with TCP', rule({ protocol: 'TCP', notICMP: { type: 8 } }), 'spec.ingress[0].notICMP'],
  ['icmp type 255', rule({ protocol: 'ICMP', icmp: { type: 255 } }), 'spec.ingress[0].icmp.type'],
  ['icmp code 256', rule({ protocol: 'ICMP', icmp: { type: 3, code: 256 } }), 'spec.ingress[0].icmp.code'],
  ['icmp code without type', rule({ protocol: 'ICMP', icmp: { code: 0 } }), 'spec.ingress[0].icmp.code', /without type/],
  ['icmp unknown field', rule({ protocol: 'ICMP', icmp: { typ: 8 } }), 'spec.ingress[0].icmp.typ'],
  ['ICMPv6 with ipVersion 4', rule({ ipVersion: 4, protocol: 'ICMPv6' }), 'spec.ingress[0].ipVersion'],
  ['ICMP with ipVersion 6', rule({ ipVersion: 6, protocol: 'ICMP' }), 'spec.ingress[0].ipVersion'],
  ['nets', rule({ source: { nets: ['10.0.0.0/40'] } }), 'spec.ingress[0].source.nets[0]'],
  ['nets host bits', rule({ source: { nets: ['10.0.0.1/24'] } }), 'spec.ingress[0].source.nets[0]', /host bits/],
  ['nets not a list', rule({ source: { nets: '10.0.0.0/8' } }), 'spec.ingress[0].source.nets'],
  ['notNets matching everything', rule({ destination: { notNets: ['0.0.0.0/0'] } }), 'spec.ingress[0].destination.notNets[0]'],
  [
    'nets of two families',
    rule({ source: { nets: ['10.0.0.0/8'] }, destination: { nets: ['fd00::/8'] } }),
    'spec.ingress[0].destination.nets',
    /mix/,
  ],
  ['nets against ipVersion', rule({ ipVersion: 6, source: { nets: ['10.0.0.0/8'] } }), 'spec.ingress[0].source', /IPv6/],
  ['source selector', rule({ source: { selector: 'a ==' } }), 'spec.ingress[0].source.selector'],
  ['notSelector', rule({ source: { notSelector: '(a)' } }), 'spec.ingress[0].source.notSelector'],
  ['selector global()', rule({ source: { selector: 'global()' } }), 'spec.ingress[0].source.selector', /namespaceSelector/],
  [
    'namespaceSelector global() combined',
    rule({ source: { namespaceSelector: "global() || a == 'b'" } }),
    'spec.ingress[0].source.namespaceSelector',
    /combined/,
  ],
  ['port numbers without protocol', rule({ destination: { ports: [80] } }), 'spec.ingress[0].destination.ports', /protocol/],
  ['ports with ICMP', rule({ protocol: 'ICMP', destination: { ports: ['http'] } }), 'spec.ingress[0].destination.ports'],
  ['notPorts with UDPLite', rule({ protocol: 'UDPLite', destination: { notPorts: [80] } }), 'spec.ingress[0].destination.notPorts'],
  ['port range reversed', rule({ protocol: 'TCP', destination: { ports: ['90:80'] } }), 'spec.ingress[0].destination.ports[0]'],
  ['port 65536', rule({ protocol: 'TCP', destination: { ports: [65536] } }), 'spec.ingress[0].destination.ports[0]'],
  ['port name', rule({ protocol: 'TCP', destination: { ports: ['HTTP'] } }), 'spec.ingress[0].destination.ports[0]'],
  ['port of another type', rule({ protocol: 'TCP', destination: { ports: [true] } }), 'spec.ingress[0].destination.ports[0]'],
  [
    'named port in source',
    rule({ protocol: 'TCP', source: { ports: ['http'] } }),
    'spec.ingress[0].source.ports',
    /only in destination\.ports/,
  ],
  ['named port in notPorts', rule({ protocol: 'TCP', destination: { notPorts: ['http'] } }), 'spec.ingress[0].destination.notPorts'],
  ['serviceAccounts', rule({ source: { serviceAccounts: { names: ['sa'] } } }), 'spec.ingress[0].source.serviceAccounts', /not supported/],
  [
    'services',
    cnp({ egress: [{ action: 'Allow', destination: { services: { name: 's' } } }] }),
    'spec.egress[0].destination.services',
    /not supported/,
  ],
  ['http', rule({ http: { methods: ['GET'] } }), 'spec.ingress[0].http', /not supported/],
  ['unknown rule field', rule({ sources: {} }), 'spec.ingress[0].sources', /unknown field/],
  ['unknown entity field', rule({ destination: { net: [] } }), 'spec.ingress[0].destination.net', /unknown field/],
  ['rule metadata', rule({ metadata: { labels: {} } }), 'spec.ingress[0].metadata.labels'],
  // ---- Namespace ----
  ['namespace name with a dot', ns({ name: 'a.b' }), 'metadata.name'],
  ['namespace name too long', ns({ name: 'a'.repeat(64) }), 'metadata.name'],
  ['namespace label', ns({ name: 'x', labels: { team: 'a/b' } }), 'metadata.labels.team'],
  ['namespace in a namespace', ns({ name: 'x', namespace: 'y' }), 'metadata.namespace'],
  ['namespace finalizers', ns({ name: 'x' }, { spec: { finalizers: ['kubernetes'] } }), 'spec.finalizers', /not supported/],
  // ---- WorkloadEndpoint: labels and named ports ----
  ['endpoint label', wep({}, { app: 'a b' }), 'metadata.labels.app'],
  ['endpoint ports not a list', wep({ ports: { name: 'http' } }), 'spec.ports'],
  ['endpoint port name', wep({ ports: [{ name: 'HTTP', protocol: 'TCP', port: 80 }] }), 'spec.ports[0].name'],
  ['endpoint port name missing', wep({ ports: [{ protocol: 'TCP', port: 80 }] }), 'spec.ports[0].name'],
  [
    'endpoint port named twice',
    wep({
      ports: [
        { name: 'http', port: 80 },
        { name: 'http', port: 81 },
      ],
    }),
    'spec.ports[1].name',
  ],
  ['endpoint port protocol', wep({ ports: [{ name: 'http', protocol: 'ICMP', port: 80 }] }), 'spec.ports[0].protocol'],
  ['endpoint port missing', wep({ ports: [{ name: 'http' }] }), 'spec.ports[0].port'],
  ['endpoint port 0', wep({ ports: [{ name: 'http', port: 0 }] }), 'spec.ports[0].port'],
  ['endpoint port unknown field', wep({ ports: [{ name: 'http', port: 80, hostPort: 8080 }] }), 'spec.ports[0].hostPort'],
];

describe('resources: policy kinds, Namespace and endpoint ports refuse bad input naming the field', () => {
  it(`${BAD.length} cases, each refused with its field`, () => {
    const wrong: string[] = [];
    for (const [what, doc, field, reason] of BAD) {
      try {
        validateResource(doc);
        wrong.push(`${what}: accepted`);
      } catch (e) {
        if (!(e instanceof ValidationError)) throw e;
        if (e.field !== field) wrong.push(`${what}: named ${e.field}, not ${field} (${e.message})`);
        else if (reason && !reason.test(e.reason)) wrong.push(`${what}: reason ${JSON.stringify(e.reason)} lacks ${reason}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('names the document and the kind as the user wrote it', () => {
    assert.throws(
      () => parseResources('apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: web}\nspec: {policyTypes: [Both]}\n'),
      (e: unknown) =>
        e instanceof ValidationError &&
        e.message === 'document 1 (NetworkPolicy/web): spec.policyTypes[0]: must be Ingress or Egress, not "Both"',
    );
  });
});

describe('resources: what the policy kinds fill in', () => {
  const spec = <T>(doc: Doc): T => (validateResource(doc) as Resource).spec as T;

  it("Kubernetes' policyTypes default: Ingress, plus Egress when there are egress rules", () => {
    type S = { policyTypes: string[] };
    assert.deepEqual(spec<S>(knp({})).policyTypes, ['Ingress']);
    assert.deepEqual(spec<S>(knp({ ingress: [{}] })).policyTypes, ['Ingress']);
    assert.deepEqual(spec<S>(knp({ egress: [] })).policyTypes, ['Ingress']);
    assert.deepEqual(spec<S>(knp({ egress: [{}] })).policyTypes, ['Ingress', 'Egress']);
    assert.deepEqual(spec<S>(knp({ policyTypes: ['Egress'] })).policyTypes, ['Egress']);
    assert.deepEqual(spec<S>(knp({ policyTypes: [], egress: [{}] })).policyTypes, [], 'given, even empty, is kept');
  });

  it("Calico's types default: Ingress, Egress alone for egress-only rules, both for both", () => {
    type S = { types: string[] };
    assert.deepEqual(spec<S>(cnp({})).types, ['Ingress']);
    assert.deepEqual(spec<S>(cnp({ ingress: [{ action: 'Deny' }] })).types, ['Ingress']);
    assert.deepEqual(spec<S>(cnp({ egress: [{ action: 'Deny' }] })).types, ['Egress']);
    assert.deepEqual(spec<S>(gnp({ ingress: [{ action: 'Deny' }], egress: [{ action: 'Deny' }] })).types, ['Ingress', 'Egress']);
    assert.deepEqual(spec<S>(cnp({ types: ['Egress'], ingress: [{ action: 'Deny' }] })).types, ['Egress']);
  });

  it('a Kubernetes port is TCP unless it says; podSelector defaults to all pods; a policy to the default namespace', () => {
    const r = validateResource(knp({ ingress: [{ ports: [{ port: 80 }, { protocol: 'SCTP' }] }] }, { name: 'p' }));
    assert.equal(r.kind, 'KubernetesNetworkPolicy');
    assert.equal(r.apiVersion, 'networking.k8s.io/v1');
    assert.equal(r.metadata.namespace, 'default');
    assert.deepEqual(r.spec, {
      podSelector: {},
      policyTypes: ['Ingress'],
      ingress: [{ ports: [{ protocol: 'TCP', port: 80 }, { protocol: 'SCTP' }] }],
    });
    assert.equal(validateResource(cnp({})).metadata.namespace, 'default');
    assert.equal(validateResource(gnp({})).metadata.namespace, undefined);
  });

  it('Calico protocols by name in any case, as a number, or as a numeric string; host addresses as nets', () => {
    const r = spec<{ ingress: { protocol: unknown; notProtocol?: unknown; source?: unknown }[] }>(
      cnp({
        ingress: [
          { action: 'Allow', protocol: 'tcp', source: { nets: ['10.0.0.1', '10.0.0.0/8'] } },
          { action: 'Allow', protocol: 'icmpv6' },
          { action: 'Allow', protocol: 132, notProtocol: '17' },
        ],
      }),
    );
    assert.deepEqual(
      r.ingress.map((x) => x.protocol),
      ['TCP', 'ICMPv6', 132],
    );
    assert.equal(r.ingress[2]!.notProtocol, 17);
    assert.deepEqual(r.ingress[0]!.source, { nets: ['10.0.0.1', '10.0.0.0/8'] });
  });

  it('a Namespace carries kubernetes.io/metadata.name, whatever the manifest said', () => {
    assert.deepEqual(validateResource(ns({ name: 'x', labels: { team: 'a' } })).metadata.labels, {
      team: 'a',
      'kubernetes.io/metadata.name': 'x',
    });
    assert.deepEqual(validateResource(ns({ name: 'x', labels: { 'kubernetes.io/metadata.name': 'y' } })).metadata.labels, {
      'kubernetes.io/metadata.name': 'x',
    });
    assert.equal(validateResource({ kind: 'Namespace', metadata: { name: 'z' } }).apiVersion, 'v1');
  });

  it('a WorkloadEndpoint keeps its named ports, TCP unless it says', () => {
    const r = validateResource(
      wep(
        {
          ports: [
            { name: 'http', port: 80 },
            { name: 'dns', protocol: 'UDP', port: 53 },
          ],
        },
        { app: 'a' },
      ),
    );
    assert.deepEqual((r.spec as { ports: unknown }).ports, [
      { name: 'http', protocol: 'TCP', port: 80 },
      { name: 'dns', protocol: 'UDP', port: 53 },
    ]);
  });
});
