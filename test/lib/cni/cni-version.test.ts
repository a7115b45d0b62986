// The CNI versions the plugin speaks, at the unit level (no root, no datastore): what each
// version's result looks like, which commands each version has, and that Calico's stock
// conflist (cniVersion 0.3.1) is taken.
import assert from 'node:assert/strict';
import { atLeast, compareVersions, resultFor, SUPPORTED_VERSIONS } from '../../../lib/cni/cni-version.js';
import { parseEnv, parseNetConf, type CniResult } from '../../../lib/cni/config.js';
import { runCni } from '../../../lib/cni/main.js';

const conf = (cniVersion: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    cniVersion,
    name: 'k8s-pod-network',
    type: 'podroute-cni',
    nodename: 'n1',
    datastore: { type: 'redis', url: '/nonexistent/redis.sock' },
    ...extra,
  });

const result: CniResult = {
  cniVersion: '1.0.0',
  interfaces: [
    { name: 'cali0123456789a', mac: 'ee:ee:ee:ee:ee:ee' },
    { name: 'eth0', mac: '02:00:00:00:00:01', sandbox: '/var/run/netns/p' },
  ],
  ips: [
    { address: '10.0.0.5/32', gateway: '169.254.1.1', interface: 1 },
    { address: 'fd00::5/128', interface: 1 },
  ],
  routes: [{ dst: '0.0.0.0/0', gw: '169.254.1.1' }],
  dns: {},
};

describe('CNI versions', () => {
  it('compares versions by their numbers', () => {
    assert.equal(compareVersions('0.3.1', '0.4.0'), -1);
    assert.equal(compareVersions('1.1.0', '1.0.0'), 1);
    assert.equal(compareVersions('0.10.0', '0.4.0'), 1);
    assert.equal(atLeast('0.4.0', '0.4.0'), true);
  });

  it('results: ips[].version before 1.0.0, none from 1.0.0; the interface index kept', () => {
    for (const v of SUPPORTED_VERSIONS) {
      const r = resultFor(v, result);
      assert.equal(r.cniVersion, v);
      if (atLeast(v, '1.0.0'))
        assert.deepEqual(r.ips, [
          { address: '10.0.0.5/32', gateway: '169.254.1.1', interface: 1 },
          { address: 'fd00::5/128', interface: 1 },
        ]);
      else
        assert.deepEqual(r.ips, [
          { address: '10.0.0.5/32', gateway: '169.254.1.1', interface: 1, version: '4' },
          { address: 'fd00::5/128', interface: 1, version: '6' },
        ]);
      assert.deepEqual(r.interfaces, result.interfaces);
    }
  });

  it("takes Calico's stock conflist version (0.3.1) and every supported one; refuses others with code 1", () => {
    for (const v of SUPPORTED_VERSIONS) assert.equal(parseNetConf(conf(v)).cniVersion, v);
    assert.throws(
      () => parseNetConf(conf('0.2.0')),
      (e: { code?: number }) => e.code === 1,
    );
  });

  it('VERSION lists every version, echoing the one asked in', async () => {
    const r = await runCni({ CNI_COMMAND: 'VERSION' }, '{"cniVersion":"0.3.1"}');
    assert.deepEqual(JSON.parse(r.output), { cniVersion: '0.3.1', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] });
  });

  it('CHECK before 0.4.0, STATUS and GC before 1.1.0: the incompatible-version error, in the asked version', async () => {
    const env = { CNI_CONTAINERID: 'c1', CNI_NETNS: '/var/run/netns/none', CNI_IFNAME: 'eth0' };
    const cases: [string, string, Record<string, string>][] = [
      ['CHECK', '0.3.1', env],
      ['CHECK', '0.3.0', env],
      ['STATUS', '1.0.0', {}],
      ['GC', '0.4.0', {}],
    ];
    for (const [command, version, e] of cases) {
      const r = await runCni({ ...e, CNI_COMMAND: command }, conf(version, { 'cni.dev/valid-attachments': [] }));
      assert.equal(r.code, 1, `${command} ${version}`);
      const out = JSON.parse(r.output) as { code: number; cniVersion: string; msg: string };
      assert.equal(out.code, 1, `${command} ${version}: ${r.output}`);
      assert.equal(out.cniVersion, version);
      assert.match(out.msg, new RegExp(`${command} is not part of CNI ${version.replace(/\./g, '\\.')}`));
    }
  });

  it('STATUS and GC need no container; GC reads cni.dev/valid-attachments', () => {
    assert.equal(parseEnv({ CNI_COMMAND: 'STATUS' }).command, 'STATUS');
    assert.equal(parseEnv({ CNI_COMMAND: 'GC' }).command, 'GC');
    assert.deepEqual(
      parseNetConf(conf('1.1.0', { 'cni.dev/valid-attachments': [{ containerID: 'a', ifname: 'eth0' }] })).validAttachments,
      [{ containerID: 'a', ifname: 'eth0' }],
    );
    assert.throws(() => parseNetConf(conf('1.1.0', { 'cni.dev/valid-attachments': 'all' })), /valid-attachments/);
  });
});
