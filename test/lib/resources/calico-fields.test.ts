// Calico's documented samples of the kinds podroute takes as written (test/data/calico, each
// document with its source and an "expect" line): each applies cleanly or is refused naming
// its field with a reason; a misspelt field is an error that names the field it meant.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseResources, ValidationError, validateResource, parsePeerIP, closestName } from '../../../lib/resources/index.js';

const DIR = join(import.meta.dirname, '../../data/calico');

interface Sample {
  file: string;
  text: string;
  expect: { ok: true } | { ok: false; field: string };
}

function samples(): Sample[] {
  const out: Sample[] = [];
  for (const file of readdirSync(DIR).filter((f) => f.endsWith('.yaml'))) {
    for (const text of readFileSync(join(DIR, file), 'utf8').split(/^---$/m)) {
      const m = /^# expect: (ok|refused (\S+))/m.exec(text);
      assert.ok(m, `${file}: a document without an "# expect:" line`);
      out.push({ file, text, expect: m[1] === 'ok' ? { ok: true } : { ok: false, field: m[2]! } });
    }
  }
  return out;
}

const refusal = (fn: () => unknown): ValidationError => {
  try {
    fn();
  } catch (e) {
    if (e instanceof ValidationError) return e;
    throw e;
  }
  assert.fail('expected a ValidationError');
};

describe('Calico files as written', () => {
  const all = samples();

  it('has samples of every kind', () => {
    const kinds = new Set(all.flatMap((s) => /^kind: (\w+)/m.exec(s.text)?.[1] ?? []));
    for (const k of ['IPPool', 'BGPPeer', 'BGPConfiguration', 'Node', 'IPAMConfiguration', 'FelixConfiguration'])
      assert.ok(kinds.has(k), k);
  });

  for (const s of all) {
    const name = /name: (\S+)/.exec(s.text)?.[1];
    if (s.expect.ok) {
      it(`${s.file} ${name}: applies`, () => {
        const [r] = parseResources(s.text);
        assert.ok(r, `${s.file} ${name}: parsed no resource`);
      });
    } else {
      const field = s.expect.field;
      it(`${s.file} ${name}: refused naming ${field}`, () => {
        const e = refusal(() => parseResources(s.text));
        assert.equal(e.field, field, e.message);
        assert.ok(e.reason.length > 10, e.message);
      });
    }
  }

  it('a misspelt field names the one it meant', () => {
    const e = refusal(() => parseResources(readFileSync(join(DIR, 'misspelt.yaml'), 'utf8')));
    assert.equal(e.field, 'spec.ipipmode');
    assert.match(e.message, /unknown field; did you mean ipipMode\?/);
  });

  const doc = (kind: string, spec: Record<string, unknown>, name = 'default') => ({
    apiVersion: 'projectcalico.org/v3',
    kind,
    metadata: { name },
    spec,
  });
  const fieldOf = (kind: string, spec: Record<string, unknown>, name?: string) => refusal(() => validateResource(doc(kind, spec, name)));

  it('suggests across every Calico kind, by case and by edit distance', () => {
    const cases: [string, Record<string, unknown>, string, string][] = [
      ['BGPPeer', { peerIp: '10.0.0.1', asNumber: 1 }, 'spec.peerIp', 'peerIP'],
      ['BGPPeer', { peerIP: '10.0.0.1', asnumber: 1 }, 'spec.asnumber', 'asNumber'],
      ['BGPPeer', { peerSelecter: 'all()' }, 'spec.peerSelecter', 'peerSelector'],
      ['BGPConfiguration', { nodeToNodeMeshEnable: false }, 'spec.nodeToNodeMeshEnable', 'nodeToNodeMeshEnabled'],
      ['BGPConfiguration', { serviceExternalIps: [] }, 'spec.serviceExternalIps', 'serviceExternalIPs'],
      ['IPAMConfiguration', { strictAfinity: true }, 'spec.strictAfinity', 'strictAffinity'],
      ['Node', { bgp: { ipv4address: '10.0.0.1/24' } }, 'spec.bgp.ipv4address', 'ipv4Address'],
      ['FelixConfiguration', { vxlanMtu: 1400 }, 'spec.vxlanMtu', 'vxlanMTU'],
      ['IPPool', { cidr: '10.0.0.0/16', natOutGoing: true }, 'spec.natOutGoing', 'natOutgoing'],
    ];
    for (const [kind, spec, field, meant] of cases) {
      const e = fieldOf(kind, spec);
      assert.equal(e.field, field, e.message);
      assert.ok(e.reason.includes(`did you mean ${meant}?`), e.message);
    }
    // Nothing close: no guess.
    const far = fieldOf('IPPool', { cidr: '10.0.0.0/16', colour: 'red' });
    assert.equal(far.field, 'spec.colour');
    assert.doesNotMatch(far.message, /did you mean/);
  });

  it('closestName: case first, then within a third of the length', () => {
    assert.equal(closestName('IPIPMODE', ['ipipMode', 'vxlanMode']), 'ipipMode');
    assert.equal(closestName('vxlnMode', ['ipipMode', 'vxlanMode']), 'vxlanMode');
    assert.equal(closestName('xy', ['ipipMode']), undefined);
  });

  it('BGPPeer: peerIP or peerSelector, one of them; peerIP takes a port', () => {
    assert.equal(fieldOf('BGPPeer', { asNumber: 64512 }).field, 'spec.peerIP');
    assert.equal(fieldOf('BGPPeer', { peerIP: '10.0.0.1', asNumber: 1, peerSelector: 'all()' }).field, 'spec.peerIP');
    assert.equal(fieldOf('BGPPeer', { peerSelector: 'all()', asNumber: 1 }).field, 'spec.asNumber');
    assert.equal(fieldOf('BGPPeer', { peerIP: '10.0.0.1' }).field, 'spec.asNumber');
    for (const bad of ['10.0.0.1:0', '10.0.0.1:70000', 'fd00::1:179x', '[10.0.0.1]:179', 'peer.example:179'])
      assert.equal(fieldOf('BGPPeer', { peerIP: bad, asNumber: 1 }).field, 'spec.peerIP', bad);
    assert.deepEqual(parsePeerIP('10.0.0.1:1790'), { address: '10.0.0.1', port: 1790 });
    assert.deepEqual(parsePeerIP('[fd00::1]:1790'), { address: 'fd00::1', port: 1790 });
    assert.deepEqual(parsePeerIP('fd00::1'), { address: 'fd00::1' });
    const rr = validateResource(doc('BGPPeer', { nodeSelector: 'all()', peerSelector: "route-reflector == 'true'" }, 'rr'));
    assert.deepEqual(rr.spec, { nodeSelector: 'all()', peerSelector: "route-reflector == 'true'" });
  });

  it('BGPPeer restartMode: LongLivedGracefulRestart is kept with its maxRestartTime, which must fit the 24-bit stale time', () => {
    const llgr = validateResource(
      doc('BGPPeer', { peerIP: '10.0.0.1', asNumber: 1, restartMode: 'LongLivedGracefulRestart', maxRestartTime: '2h' }, 'tor'),
    );
    assert.deepEqual(llgr.spec, { peerIP: '10.0.0.1', asNumber: 1, restartMode: 'LongLivedGracefulRestart', maxRestartTime: '2h' });
    const gr = validateResource(doc('BGPPeer', { peerIP: '10.0.0.1', asNumber: 1, restartMode: 'GracefulRestart' }, 'tor'));
    assert.deepEqual(gr.spec, { peerIP: '10.0.0.1', asNumber: 1, restartMode: 'GracefulRestart' });
    const long = fieldOf('BGPPeer', { peerIP: '10.0.0.1', asNumber: 1, restartMode: 'LongLivedGracefulRestart', maxRestartTime: '4700h' });
    assert.equal(long.field, 'spec.maxRestartTime', long.message);
    assert.match(long.reason, /16777215s/);
    assert.equal(fieldOf('BGPPeer', { peerIP: '10.0.0.1', asNumber: 1, restartMode: 'Forever' }).field, 'spec.restartMode');
  });

  it('refusals say why, by name', () => {
    const cases: [string, Record<string, unknown>, string, RegExp][] = [
      ['BGPPeer', { peerIP: '10.0.0.1', asNumber: 1, numAllowedLocalASNumbers: 2 }, 'spec.numAllowedLocalASNumbers', /allowas-in/],
      ['BGPPeer', { peerIP: '10.0.0.1', asNumber: 1, failureDetectionMode: 'BFD' }, 'spec.failureDetectionMode', /BFDIfDirectlyConnected/],
      ['BGPPeer', { peerIP: '10.0.0.1', asNumber: 1, sourceAddress: 'Node' }, 'spec.sourceAddress', /UseNodeIP, None/],
      ['BGPConfiguration', { bindMode: 'None' }, 'spec.bindMode', /node's address/],
      [
        'BGPConfiguration',
        { prefixAdvertisements: [{ cidr: '10.0.0.0/8', communities: ['nosuch'] }] },
        'spec.prefixAdvertisements[0].communities[0]',
        /neither a name/,
      ],
      ['FelixConfiguration', { bpfEnabled: true }, 'spec.bpfEnabled', /not supported by podroute/],
      ['FelixConfiguration', { logSeverityScreen: 'Debug' }, 'spec.logSeverityScreen', /no levels/],
      ['BGPConfiguration', { logSeverityScreen: 'Warning' }, 'spec.logSeverityScreen', /no levels/],
      ['FelixConfiguration', { vxlanEnabled: true }, 'spec.vxlanEnabled', /vxlanMode/],
      ['IPPool', { cidr: '10.0.0.0/16', assignmentMode: 'Manual' }, 'spec.assignmentMode', /Automatic/],
      ['FelixConfiguration', { wireguardHostEncryptionEnabled: true }, 'spec.wireguardHostEncryptionEnabled', /pod traffic only/],
      ['FelixConfiguration', { wireguardMTU: 500 }, 'spec.wireguardMTU', /0 means the default/],
      ['FelixConfiguration', { wireguardMTUV6: 1200 }, 'spec.wireguardMTUV6', /below 1280/],
      ['FelixConfiguration', { wireguardMTU: 70000 }, 'spec.wireguardMTU', /65535/],
      ['FelixConfiguration', { wireguardMTUV6: '1400' }, 'spec.wireguardMTUV6', /integer/],
      ['FelixConfiguration', { wireguardInterfaceName: 'a/b' }, 'spec.wireguardInterfaceName', /device name/],
      ['FelixConfiguration', { wireguardInterfaceName: 'wg.calico.node01' }, 'spec.wireguardInterfaceName', /15/],
      ['FelixConfiguration', { wireguardInterfaceNameV6: 'wireguard.cali' }, 'spec.wireguardInterfaceNameV6', /IPv4 device/],
      ['FelixConfiguration', { wireguardRoutingRulePriority: 32766 }, 'spec.wireguardRoutingRulePriority', /32765/],
      ['FelixConfiguration', { wireguardListeningPort: 0 }, 'spec.wireguardListeningPort', /65535/],
      ['FelixConfiguration', { wireguardKeepAlive: 25 }, 'spec.wireguardKeepAlive', /duration/],
      ['FelixConfiguration', { wireguardKeepAlive: '24h' }, 'spec.wireguardKeepAlive', /65535s/],
      ['FelixConfiguration', { wireguardEnabled: 'yes' }, 'spec.wireguardEnabled', /true or false/],
      ['Node', { wireguard: { interfaceIPv4Address: 'fd00::1' } }, 'spec.wireguard.interfaceIPv4Address', /not an IPv4/],
      ['Node', { status: { wireguardPublicKey: 'abc' } }, 'status.wireguardPublicKey', /base64 of 32 bytes/],
    ];
    for (const [kind, spec, field, why] of cases) {
      const e = fieldOf(kind, spec);
      assert.equal(e.field, field, e.message);
      assert.match(e.reason, why);
    }
    assert.equal(fieldOf('FelixConfiguration', {}, 'worker-1').field, 'metadata.name');
    assert.equal(fieldOf('BGPConfiguration', { nodeMeshPassword: 'x' }, 'node.a').field, 'spec.nodeMeshPassword');
  });

  it('keeps what it honours', () => {
    const cfg = validateResource(
      doc('BGPConfiguration', {
        nodeMeshMaxRestartTime: '30s',
        serviceLoadBalancerIPs: [{ cidr: '192.168.100.0/24' }],
        communities: [{ name: 'big', value: '63400:300:100' }],
        prefixAdvertisements: [{ cidr: '172.218.4.0/26', communities: ['big', '63400:120'] }],
      }),
    );
    assert.deepEqual(cfg.spec, {
      nodeMeshMaxRestartTime: '30s',
      serviceLoadBalancerIPs: [{ cidr: '192.168.100.0/24' }],
      communities: [{ name: 'big', value: '63400:300:100' }],
      prefixAdvertisements: [{ cidr: '172.218.4.0/26', communities: ['big', '63400:120'] }],
    });
    const felix = validateResource(doc('FelixConfiguration', { routeRefreshInterval: '30s', vxlanVNI: 7, ipipMTU: 1400 }));
    assert.deepEqual(felix.spec, { routeRefreshInterval: '30s', vxlanVNI: 7, ipipMTU: 1400 });
    const wg = {
      wireguardEnabled: true,
      wireguardEnabledV6: true,
      wireguardListeningPort: 51830,
      wireguardListeningPortV6: 51831,
      wireguardInterfaceName: 'wg0',
      wireguardInterfaceNameV6: 'wg1',
      wireguardMTU: 0,
      wireguardMTUV6: 1400,
      wireguardRoutingRulePriority: 100,
      wireguardKeepAlive: '25s',
    };
    assert.deepEqual(validateResource(doc('FelixConfiguration', wg)).spec, wg);
    const key = 'm9TXUUo74FvTEOHtg4w7fYrcBl4SwOweSFuDGkJeIn8=';
    const node = validateResource({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Node',
      metadata: { name: 'n1' },
      spec: { bgp: { ipv4Address: '10.0.0.1/24' }, wireguard: { interfaceIPv4Address: '10.65.0.1', interfaceIPv6Address: 'fd65::1' } },
      status: { wireguardPublicKey: key, wireguardPublicKeyV6: key },
    });
    assert.deepEqual(node.spec, {
      bgp: { ipv4Address: '10.0.0.1/24' },
      wireguard: { interfaceIPv4Address: '10.65.0.1', interfaceIPv6Address: 'fd65::1' },
      status: { wireguardPublicKey: key, wireguardPublicKeyV6: key },
    });
    const peer = validateResource(
      doc('BGPPeer', { peerIP: '[fd00::1]:1790', asNumber: 65000, sourceAddress: 'None', keepOriginalNextHop: true }, 'p'),
    );
    assert.deepEqual(peer.spec, { peerIP: '[fd00::1]:1790', asNumber: 65000, sourceAddress: 'None', keepOriginalNextHop: true });
  });
});
