// `podroute lab env`: the exports that point podroute on the host at a lab's datastore, for a
// Redis lab and an etcd lab, and read back by the datastore's own environment parser.
import assert from 'node:assert/strict';
import { datastoreConfigFromEnv } from '../../../lib/datastore/index.js';
import { formatLabEnv, labDatastore, type LabState } from '../../../lib/lab/index.js';

const base: LabState = { name: 'tor', topology: 't.clab.yml', prefix: 'tor-', dir: '/run/l/tor', namespaces: [], processes: [], pods: [] };

/** The variables of `export K=V` lines, as a shell would set them (values here need no unquoting but a plain '...'). */
function exported(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const l of text.split('\n')) {
    const m = /^export (\w+)=(.*)$/.exec(l);
    if (m) env[m[1]!] = m[2]!.replace(/^'(.*)'$/, '$1');
  }
  return env;
}

describe('lab env: exports for the lab datastore', () => {
  it('a Redis lab: PODROUTE_DATASTORE=redis and its socket, opened as Redis on that socket', () => {
    const state = { ...base, redisSocket: '/run/l/tor/redis.sock' };
    const text = formatLabEnv(state);
    assert.equal(
      text,
      `# lab tor's datastore (redis /run/l/tor/redis.sock) for podroute apply, get, delete, ipam and policy: eval "$(podroute lab env tor)"\n` +
        'export PODROUTE_DATASTORE=redis\nexport PODROUTE_REDIS_URL=/run/l/tor/redis.sock\n',
    );
    // A file datastore named in the environment does not win over it.
    assert.deepEqual(datastoreConfigFromEnv({ PODROUTE_DATASTORE_FILE: '/tmp/x.json', ...exported(text) }), {
      type: 'redis',
      url: '/run/l/tor/redis.sock',
    });
  });

  it('an etcd lab: its members; a lab without a datastore is an error naming it', () => {
    const state = { ...base, etcdEndpoints: ['unix:///run/l/tor/etcd/m0.sock', 'unix:///run/l/tor/etcd/m1.sock'] };
    assert.deepEqual(labDatastore(state)?.env, {
      PODROUTE_DATASTORE: 'etcd',
      PODROUTE_ETCD_ENDPOINTS: 'unix:///run/l/tor/etcd/m0.sock,unix:///run/l/tor/etcd/m1.sock',
    });
    const cfg = datastoreConfigFromEnv(exported(formatLabEnv(state)));
    assert.equal(cfg.type, 'etcd');
    assert.throws(() => formatLabEnv(base), /lab tor runs no datastore/);
  });
});
