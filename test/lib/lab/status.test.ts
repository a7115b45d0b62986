// `podroute lab status`: besides nodes and sessions, where the lab's datastore is and how to
// point podroute at it, and each pod's Kubernetes and network namespace, in the table and in
// the JSON.
import assert from 'node:assert/strict';
import { formatLabStatus, labStatus, type LabState } from '../../../lib/lab/index.js';

const STATE: LabState = {
  name: 'tor',
  topology: 'containerlab/tor.clab.yml',
  prefix: 'tor-',
  dir: '/run/l/tor',
  redisSocket: '/run/l/tor/redis.sock',
  namespaces: [],
  processes: [],
  pods: [
    { name: 'web', node: 'n1', namespace: 'shop.web', containerId: 'c1', ip: '10.244.0.1', k8sNamespace: 'shop' },
    { name: 'web-0', node: 'n2', namespace: 'tor-pod-web-0', containerId: 'c2', ip: '10.244.1.1' },
  ],
};

describe('lab status: the datastore and the pods', () => {
  it('-o json carries the datastore (with its exports) and every pod with its namespaces', async () => {
    const s = await labStatus(STATE);
    assert.deepEqual(s.datastore, {
      type: 'redis',
      address: '/run/l/tor/redis.sock',
      flag: '/run/l/tor/redis.sock',
      env: { PODROUTE_DATASTORE: 'redis', PODROUTE_REDIS_URL: '/run/l/tor/redis.sock' },
    });
    assert.deepEqual(s.pods, [
      { name: 'shop/web', namespace: 'shop', netns: 'shop.web', node: 'n1', ip: '10.244.0.1', ip6: undefined },
      { name: 'web-0', namespace: 'default', netns: 'tor-pod-web-0', node: 'n2', ip: '10.244.1.1', ip6: undefined },
    ]);
  });

  it("the table says where the datastore is and how to reach it, and each pod's network namespace", async () => {
    const text = formatLabStatus(await labStatus(STATE));
    assert.equal(
      text.split('\n')[1],
      'datastore: redis /run/l/tor/redis.sock (for podroute on this host: --lab tor, or eval "$(podroute lab env tor)")',
    );
    assert.match(
      text,
      /\nPOD {2}NODE {2}IP {2}NETNS\nshop\/web {2}n1 {2}10\.244\.0\.1 {2}shop\.web\nweb-0 {2}n2 {2}10\.244\.1\.1 {2}tor-pod-web-0\n$/,
    );
  });
});
