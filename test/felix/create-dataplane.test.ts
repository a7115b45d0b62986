// `podroute node run` on a host where the netlink addon did not build: it says once that it
// uses the ip -batch fallback, and the routes still reach the kernel. The host without the
// addon is real: a copy of this checkout with no felix/native/build, run in network
// namespaces against a real Redis, as the agent e2e test runs the checkout itself.
import assert from 'node:assert/strict';
import { cpSync, readFileSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLinuxDataplane, LinuxDataplane } from '../../felix/index.js';
import type { BackendDatastore } from '../../lib/datastore/index.js';
import { Ipam } from '../../lib/ipam/index.js';
import type { Segment } from '../support/netns.js';
import { AgentCluster, ipPool } from '../support/node-agents.js';
import { waitFor } from '../support/wait.js';

const ROOT = join(fileURLToPath(import.meta.url), '../../..');
/** What a host without a built addon lacks, and what node run does not need (dist/ is kept: the suite's agents run it). */
const LEFT_OUT = new Set(['.git', 'node_modules', 'test', 'bench', join('felix', 'native', 'build')]);

describe('node run without the netlink addon: the ip -batch fallback', function () {
  this.timeout(120_000);
  const cluster = new AgentCluster('fb');
  const lab = cluster.lab;
  let ds: BackendDatastore;
  let segment: Segment;
  let checkout: string;
  const agents = cluster.agents;

  before(async () => {
    checkout = join(lab.dir, 'podroute');
    cpSync(ROOT, checkout, { recursive: true, filter: (src) => !LEFT_OUT.has(relative(ROOT, src)) });
    symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'));
    await cluster.open();
    ({ ds } = cluster);
    await ds.create(ipPool('pods', '10.94.0.0/16'));
    segment = await lab.segment();
  });
  after(() => cluster.close());

  async function startAgent(name: string, index: number): Promise<void> {
    const ns = await lab.namespace(name);
    await segment.attach(ns, { ifname: 'eth0', v4: `10.95.0.${index}/24` });
    await cluster.startAgent(ns, { name, ip: `10.95.0.${index}/24`, root: checkout });
  }

  const kernelRoutes = async (name: string) =>
    (await agents.get(name)!.ns.ip('-4', 'route', 'show', 'proto', '81'))
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);

  it('with the addon built (this checkout) the dataplane is rtnetlink', () => {
    assert.ok(createLinuxDataplane() instanceof LinuxDataplane, 'createLinuxDataplane() did not give the rtnetlink LinuxDataplane');
  });

  it('says once on stderr that it uses ip -batch, and programs the learned and own routes through it', async () => {
    await Promise.all([startAgent('n1', 1), startAgent('n2', 2)]);
    for (const name of ['n1', 'n2']) {
      const lines = readFileSync(agents.get(name)!.proc.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"dataplane-fallback"'));
      assert.equal(lines.length, 1, `${name}: one fallback notice, not ${lines.length}`);
      const notice = JSON.parse(lines[0]!) as { dataplane: string };
      assert.match(notice.dataplane, /^ip -batch FALLBACK dataplane \(felix netlink addon not available at .*npm run build:native/);
    }
    const a = await new Ipam(ds).autoAssign({ handle: 'pod-a', node: 'n1' });
    const [block] = await new Ipam(ds).blocksForNode('n1');
    await waitFor(() => kernelRoutes('n2'), {
      what: `n2 routes ${block!.cidr} via n1`,
      until: (r) => r.includes(`${block!.cidr} via 10.95.0.1 dev eth0`),
      timeoutMs: 30_000,
    });
    await waitFor(() => kernelRoutes('n1'), {
      what: `n1 blackholes its block ${block!.cidr}`,
      until: (r) => r.includes(`blackhole ${block!.cidr}`),
      timeoutMs: 30_000,
    });
    // The pod's address goes away: the block's routes go with it, still through ip -batch.
    await new Ipam(ds).releaseByHandle('pod-a');
    await waitFor(() => kernelRoutes('n2'), {
      what: `n2 drops ${block!.cidr} (${a.ip} released)`,
      until: (r) => r.length === 0,
      timeoutMs: 30_000,
    });
    await waitFor(() => kernelRoutes('n1'), { what: 'n1 drops its blackhole', until: (r) => r.length === 0, timeoutMs: 30_000 });
  });
});
