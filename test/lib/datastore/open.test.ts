// Where a datastore is named (the --datastore flag, the environment, the CNI network
// configuration), an etcd one is read the same way, and a bad one is refused naming the field.
import assert from 'node:assert/strict';
import { parseNetConf } from '../../../lib/cni/config.js';
import { identityRecordPath } from '../../../lib/cni/store-record.js';
import { datastoreConfigFromEnv, datastoreFromFlag, etcdDatastore } from '../../../lib/datastore/index.js';
import { nodeRunConfig } from '../../../lib/cli/node-config.js';

const netconf = (datastore: unknown): string => JSON.stringify({ cniVersion: '1.0.0', name: 'podroute', type: 'podroute', datastore });

describe('datastore: naming an etcd datastore', () => {
  it('--datastore etcd://host:port,host:port gives every member', () => {
    assert.deepEqual(datastoreFromFlag('etcd://10.0.0.1:2379,10.0.0.2:2379,[fd00::3]:2379'), {
      type: 'etcd',
      endpoints: ['http://10.0.0.1:2379', 'http://10.0.0.2:2379', 'http://[fd00::3]:2379'],
    });
    assert.deepEqual(datastoreFromFlag('redis://127.0.0.1:6379'), { type: 'redis', url: 'redis://127.0.0.1:6379' });
    assert.throws(() => datastoreFromFlag('etcd://10.0.0.1'), /^Error: --datastore: "10\.0\.0\.1" is not host:port/);
    assert.deepEqual(nodeRunConfig(['--datastore', 'etcd://a:2379,b:2379'], {}).datastore, {
      type: 'etcd',
      endpoints: ['http://a:2379', 'http://b:2379'],
    });
  });

  it('PODROUTE_DATASTORE=etcd with PODROUTE_ETCD_ENDPOINTS, and an error naming the variable without them', () => {
    assert.deepEqual(datastoreConfigFromEnv({ PODROUTE_ETCD_ENDPOINTS: 'a:2379,b:2379', PODROUTE_ETCD_PREFIX: '/podroute/lab' }), {
      type: 'etcd',
      endpoints: ['http://a:2379', 'http://b:2379'],
      prefix: '/podroute/lab',
    });
    assert.throws(() => datastoreConfigFromEnv({ PODROUTE_DATASTORE: 'etcd' }), /^Error: PODROUTE_ETCD_ENDPOINTS: /);
    assert.throws(
      () => datastoreConfigFromEnv({ PODROUTE_DATASTORE: 'etcd', PODROUTE_ETCD_ENDPOINTS: 'a:b' }),
      /PODROUTE_ETCD_ENDPOINTS: "a:b"/,
    );
    assert.equal(nodeRunConfig([], { PODROUTE_ETCD_ENDPOINTS: 'a:2379' }).datastore?.type, 'etcd');
  });

  it('the CNI network configuration takes an etcd datastore and refuses bad fields by name', () => {
    const conf = parseNetConf(netconf({ type: 'etcd', endpoints: ['http://10.0.0.1:2379', '10.0.0.2:2379'], prefix: '/podroute/x' }));
    assert.deepEqual(conf.datastore, { type: 'etcd', endpoints: ['http://10.0.0.1:2379', 'http://10.0.0.2:2379'], prefix: '/podroute/x' });
    assert.throws(() => parseNetConf(netconf({ type: 'etcd', endpoints: [] })), /datastore\.endpoints: /);
    assert.throws(() => parseNetConf(netconf({ type: 'etcd', endpoints: ['h:1'], url: 'x' })), /datastore\.url: unknown field/);
    assert.throws(() => parseNetConf(netconf({ type: 'etcd', endpoints: ['h:1'], prefix: 'rel' })), /datastore\.prefix: /);
    // Two etcd clusters (or prefixes) get two identity records on a node.
    const a = identityRecordPath({ type: 'etcd', endpoints: ['http://a:2379'] }, 'n1', {});
    const b = identityRecordPath({ type: 'etcd', endpoints: ['http://b:2379'] }, 'n1', {});
    assert.notEqual(a, b);
  });

  it('opening refuses bad options before connecting, naming the field', async () => {
    await assert.rejects(etcdDatastore({ endpoints: [] }), /datastore\.endpoints: at least one/);
    await assert.rejects(etcdDatastore({ endpoints: ['http://h:2379/x'] }), /datastore\.endpoints\[0\]: /);
    await assert.rejects(etcdDatastore({ endpoints: ['http://127.0.0.1:2379'], prefix: 'x' }), /datastore\.prefix: /);
    await assert.rejects(etcdDatastore({ endpoints: ['http://127.0.0.1:2379'], logLength: 0 }), /datastore\.logLength: /);
  });
});
