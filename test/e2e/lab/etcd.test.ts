// mesh.clab.yml on a three-member etcd cluster (`podroute lab up --datastore etcd`), through
// the CLI: the agents and the CNI plugin use etcd, pods ping each other, the etcd leader is
// SIGKILLed and pods are still added, the next `up` brings the member back, and `down` leaves
// no namespace or process behind.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { openDatastore } from '../../../lib/datastore/index.js';
import { labDatastoreConfig } from '../../../lib/lab/etcd.js';
import { readState } from '../../../lib/lab/state.js';
import { execCommand, isOurs } from '../../../lib/lab/system.js';
import { LabUnderTest, LABS, ROOT } from './harness.js';

/** The member every live member names as leader, by its client socket. */
async function leaderEndpoint(endpoints: readonly string[]): Promise<string> {
  const ids = new Map<string, string>();
  const named = new Set<string>();
  for (const ep of endpoints) {
    const c = new Etcd3({ hosts: [ep], dialTimeout: 1000, defaultCallOptions: () => ({ deadline: Date.now() + 2000 }) });
    try {
      const s = await c.maintenance.status();
      ids.set(s.header.member_id, ep);
      named.add(s.leader);
    } catch {
      /* a member that is down names nobody */
    } finally {
      c.close();
    }
  }
  const ep = named.size === 1 ? ids.get([...named][0]!) : undefined;
  if (!ep) throw new Error(`no single leader among ${endpoints.join(', ')}`);
  return ep;
}

describe('lab mesh.clab.yml on a three-member etcd cluster (CLI, --datastore etcd)', function () {
  this.timeout(180_000);
  const lab = new LabUnderTest('mesh.clab.yml');
  const file = join(LABS, 'mesh.clab.yml');
  const cli = (...args: string[]) =>
    execCommand([process.execPath, join(ROOT, 'bin/podroute.js'), 'lab', ...args, '--state-dir', lab.stateRoot], { timeoutMs: 90_000 });

  after(async () => {
    await lab.downAndCheck();
  });

  it('lab up --datastore etcd starts three members and the agents on them', async () => {
    const r = await cli('up', file, '--prefix', lab.prefix, '--datastore', 'etcd');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /etcd redis: 3 members, unix:\/\//);
    assert.match(r.stdout, /lab mesh is up .*: 5 namespaces, 6 processes/);
    lab.state = readState(lab.stateRoot, 'mesh')!;
    assert.equal(lab.state.redisSocket, undefined, 'no Redis in an etcd lab');
    assert.equal(lab.state.processes.filter((p) => p.what.startsWith('etcd-') && isOurs(p)).length, 3);
    await lab.waitSessions(['n1', 'n2', 'n3'], 2);
    const again = await cli('up', file, '--datastore', 'redis');
    assert.notEqual(again.code, 0, 'a lab up on etcd is not switched to Redis under its agents');
    assert.match(again.stdout + again.stderr, /already up with etcd/);
  });

  it('pods get their addresses from etcd and reach each other', async () => {
    for (const n of ['n1', 'n2', 'n3']) {
      const r = await cli('pod', 'add', n, `${n}-a`);
      assert.equal(r.code, 0, r.stdout + r.stderr);
    }
    lab.state = readState(lab.stateRoot, 'mesh')!;
    const ds = await openDatastore(labDatastoreConfig(lab.state)!);
    try {
      assert.equal(ds.backend, 'etcd');
      const weps = (await ds.list('WorkloadEndpoint')).items;
      assert.deepEqual(weps.map((w) => w.spec.ipNetworks[0]).sort(), lab.state.pods.map((p) => `${p.ip}/32`).sort());
    } finally {
      await ds.close();
    }
    await lab.waitAllPing();
  });

  it('with its leader SIGKILLed the cluster still gives pods addresses; the next up brings the member back', async () => {
    const endpoints = lab.state.etcdEndpoints!;
    const leader = await leaderEndpoint(endpoints);
    const member = `etcd-m${endpoints.indexOf(leader)}`;
    const p = lab.state.processes.find((x) => x.what === member)!;
    process.kill(p.pid, 'SIGKILL');
    const t0 = Date.now();
    const r = await cli('pod', 'add', 'n2', 'n2-b');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    process.stdout.write(`      ${member} (leader) killed; a pod added ${Date.now() - t0} ms later\n`);
    assert.ok(!isOurs(p), 'the leader is gone');
    lab.state = readState(lab.stateRoot, 'mesh')!;
    await lab.waitAllPing();
    const up = await cli('up', file);
    assert.equal(up.code, 0, up.stdout + up.stderr);
    lab.state = readState(lab.stateRoot, 'mesh')!;
    assert.equal(lab.state.processes.filter((x) => x.what.startsWith('etcd-') && isOurs(x)).length, 3, 'the member is back');
  });

  it('lab down stops the agents and the members by PID and deletes the namespaces', async () => {
    const r = await cli('down', 'mesh');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /lab mesh is down: 6 processes stopped, 9 namespaces deleted/);
    await lab.downAndCheck();
  });
});
