// Flow logs on a real kernel: pods on one node behind the compiled table with its flow log
// rules, real connections, and the node's FlowLog reading conntrack and the log group. Each
// record must name the pods, the Service and its chosen endpoint, and the rule that decided,
// within a second; a flood of refused packets must neither grow the agent's memory nor stall it.
import assert from 'node:assert/strict';
import { compilePolicy } from '../../../felix/policy/compile.js';
import type { PolicyInput } from '../../../felix/policy/input.js';
import { renderNftScript } from '../../../felix/policy/render.js';
import { mergeTable } from '../../../felix/policy/table-parts.js';
import { compileServices } from '../../../felix/services/compile.js';
import type { ServiceInput } from '../../../felix/services/input.js';
import { FlowLog, type FlowLogSettings } from '../../../lib/agent/flow-log.js';
import type { FlowRecord } from '../../../lib/agent/flow-records.js';
import type { WorkloadEndpoint } from '../../../lib/resources/index.js';
import { PolicyNode, type PodSpec } from '../../felix/policy/compile-lab.js';
import { loadScript } from '../../felix/policy/compile-nft.js';
import { Lab } from '../../support/netns.js';
import { waitFor } from '../../support/wait.js';

const PODS: PodSpec[] = [
  { name: 'a', address: '10.65.0.2', address6: 'fd00:65::2' },
  { name: 'b', address: '10.65.0.3', address6: 'fd00:65::3' },
  { name: 'c', address: '10.65.0.4', address6: 'fd00:65::4' },
];
const CLUSTER_IP = '10.96.0.10';
/** A Service whose one endpoint (c) refuses a. */
const BLOCKED_IP = '10.96.0.11';

const workload = (p: PodSpec): WorkloadEndpoint => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'WorkloadEndpoint',
  metadata: { name: `n1-k8s-${p.name}-eth0`, namespace: 'shop', labels: { app: `app-${p.name}`, 'projectcalico.org/namespace': 'shop' } },
  spec: { node: 'n1', pod: `${p.name}-7d4f9-x2x8k`, interfaceName: `cali${p.name}`, ipNetworks: [`${p.address}/32`] },
});

// b: a Kubernetes policy allows a on 80; c: a Calico policy in tier "security" denies a on 80.
const policy: PolicyInput = {
  sets: [{ id: 'sel-a', members: [PODS[0]!.address], hosts: true }],
  namedPortSets: [],
  policies: [
    {
      id: 'knp.default.allow-a',
      ingress: [{ action: 'Allow', match: { protocol: 'tcp', srcSets: ['sel-a'], dstPorts: [{ first: 80, last: 80 }] } }],
    },
    {
      id: 'security.deny-a',
      ingress: [
        { action: 'Deny', match: { protocol: 'udp', srcSets: ['sel-a'] } },
        { action: 'Deny', match: { protocol: 'tcp', srcSets: ['sel-a'], dstPorts: [{ first: 80, last: 80 }] } },
      ],
    },
  ],
  endpoints: [
    { iface: 'calia', addresses: [PODS[0]!.address], ingress: [], egress: [] },
    { iface: 'calib', addresses: [PODS[1]!.address], ingress: [{ name: 'default', policies: ['knp.default.allow-a'] }], egress: [] },
    { iface: 'calic', addresses: [PODS[2]!.address], ingress: [{ name: 'security', policies: ['security.deny-a'] }], egress: [] },
  ],
  pools: [{ cidr: '10.65.0.0/16', natOutgoing: false }],
};
const services: ServiceInput = {
  services: [
    {
      id: 'shop/web/http/tcp',
      protocol: 'tcp',
      port: 80,
      clusterIPs: [CLUSTER_IP],
      externalIPs: [],
      loadBalancerIPs: [],
      endpoints: [{ address: PODS[1]!.address, port: 80, local: true }],
    },
    {
      id: 'shop/blocked/http/tcp',
      protocol: 'tcp',
      port: 8080,
      clusterIPs: [BLOCKED_IP],
      externalIPs: [],
      loadBalancerIPs: [],
      endpoints: [{ address: PODS[2]!.address, port: 80, local: true }],
    },
  ],
  nodeAddresses: [],
  clusterCidrs: ['10.65.0.0/16'],
};

describe('lib/agent flow log on a real kernel', function () {
  this.timeout(90_000);
  const lab = new Lab({ tag: 'flw' });
  let node: PolicyNode;
  before(async () => {
    node = await PolicyNode.create(lab, PODS);
  });
  after(async () => {
    await lab.destroy();
  });

  /** A flow log on the node with these settings, the policy and services loaded with its rules, started. */
  const startFlowLog = async (settings: Omit<FlowLogSettings, 'netns' | 'ratePerSecond' | 'burst' | 'flushIntervalMs'>) => {
    const flows = new FlowLog(
      { netns: `/var/run/netns/${node.node.name}`, ratePerSecond: 500, burst: 100, flushIntervalMs: 60_000, ...settings },
      {
        nodeName: 'n1',
        workloads: () => new Map(PODS.map((p) => [p.name, workload(p)])),
        services: () => services,
        log: () => undefined,
      },
    );
    const table = mergeTable(compilePolicy(policy, { flowLogs: flows.rules }), new Map([['services', compileServices(services)]]));
    await loadScript(node.node, renderNftScript(table, { replace: true }));
    // An earlier run's connections end unseen: no record here is of a connection made before.
    await node.node.run(['conntrack', '-F']).catch(() => undefined);
    flows.policyInput(policy);
    await flows.start();
    return flows;
  };

  // Twice on one node: with every Allow logging its connection's first packet, and with the Allow
  // rules writing their number into conntrack mark bits (flowLogs.ctMark), read from the
  // connection's own events.
  for (const ctMark of [undefined, 0x00ff0000])
    describe(ctMark ? 'Allows numbered in the conntrack mark' : 'every Allow logs', () => {
      let flows: FlowLog;

      before(async () => {
        flows = await startFlowLog({
          group: ctMark ? 22 : 21,
          ...(ctMark ? { ctMark } : {}),
          aggregationAllowed: 0,
          aggregationDenied: 0,
        });
      });
      after(() => flows?.stop());

      /** The first record `pick` accepts, waited for no longer than a second after `since`. */
      const recordWithin = async (since: number, what: string, pick: (r: FlowRecord) => boolean): Promise<FlowRecord> => {
        let found: FlowRecord | undefined;
        await waitFor(() => (found = flows.records({}).find(pick)) !== undefined, { what, timeoutMs: 1_000, intervalMs: 20 });
        assert.ok(Date.now() - since < 1_500, `${what}: seen ${Date.now() - since} ms after the connection`);
        return found!;
      };

      it('a connection a Kubernetes policy allowed names the pods, the policy and its rule', async () => {
        const [r] = await node.probe('a', [{ protocol: 'tcp', host: PODS[1]!.address, port: 80 }]);
        assert.equal(r?.ok, true, `a reaches b: ${r?.error}`);
        const t = Date.now();
        const rec = await recordWithin(
          t,
          'the allowed connection',
          (x) => x.verdict === 'allow' && x.dst.pod === 'b-7d4f9-x2x8k' && x.dst.port === 80,
        );
        assert.equal(rec.node, 'n1');
        assert.equal(rec.proto, 'tcp');
        assert.deepEqual(rec.src.labels, { app: 'app-a' }, "the source pod with its labels, without Calico's own");
        assert.equal(rec.src.namespace, 'shop');
        assert.equal(rec.src.pod, 'a-7d4f9-x2x8k');
        assert.deepEqual(rec.policy, { tier: 'default', name: 'knp.default.allow-a', rule: 'ingress/0' });
        if (ctMark)
          assert.equal(
            (flows.status() as { reader: { loggedPackets: number } }).reader.loggedPackets,
            0,
            'named from the mark: nothing logged',
          );
        // Its end comes with conntrack's counts: the echo server answered, so both ways carried bytes.
        // conntrack reaps a closed connection in its own time (seconds): forgetting it now is the same DESTROY, sooner.
        await node.node.run(['conntrack', '-D', '-p', 'tcp', '-s', PODS[0]!.address, '-d', PODS[1]!.address]);
        await waitFor(() => flows.records({}).some((x) => x.dst.pod === 'b-7d4f9-x2x8k' && x.end !== null && x.bytes > 0), {
          what: 'the closed connection with its bytes',
          timeoutMs: 2_000,
        });
      });

      // Refused packets log with or without ct mark bits: once is enough.
      if (!ctMark)
        it('a connection a Calico Deny rule refused names its tier, policy and rule', async () => {
          const [r] = await node.probe('a', [{ protocol: 'tcp', host: PODS[2]!.address, port: 80 }], 300);
          assert.equal(r?.ok, false, 'a cannot reach c');
          const rec = await recordWithin(
            Date.now() - 700,
            'the refused connection',
            (x) => x.verdict === 'deny' && x.dst.pod === 'c-7d4f9-x2x8k' && x.proto === 'tcp',
          );
          assert.deepEqual(rec.policy, { tier: 'security', name: 'security.deny-a', rule: 'ingress/1' });
          assert.equal(rec.src.pod, 'a-7d4f9-x2x8k');
          assert.equal(rec.node, 'n1');
          assert.equal(rec.end, null, 'a refused packet opens no connection');
          assert.equal(rec.dst.service, undefined, 'sent to the pod itself, not through a Service');
        });

      // Refused packets log with or without ct mark bits: once is enough.
      if (!ctMark)
        it('a connection to a Service refused at its endpoint names the Service, the endpoint and the Deny rule', async () => {
          const [r] = await node.probe('a', [{ protocol: 'tcp', host: BLOCKED_IP, port: 8080 }], 300);
          assert.equal(r?.ok, false, 'a cannot reach c through the Service');
          const rec = await recordWithin(
            Date.now() - 700,
            'the refused Service connection',
            (x) => x.verdict === 'deny' && x.dst.service === 'shop/blocked',
          );
          assert.equal(rec.dst.servicePort, 8080, 'the Service port the client used');
          assert.equal(rec.dst.ip, PODS[2]!.address, 'the endpoint it was refused at');
          assert.equal(rec.dst.port, 80);
          assert.equal(rec.dst.pod, 'c-7d4f9-x2x8k');
          assert.deepEqual(rec.policy, { tier: 'security', name: 'security.deny-a', rule: 'ingress/1' });
        });

      it('a connection to a Service names the Service and the endpoint it was sent to', async () => {
        const [r] = await node.probe('a', [{ protocol: 'tcp', host: CLUSTER_IP, port: 80 }]);
        assert.equal(r?.ok, true, `a reaches the Service: ${r?.error}`);
        const rec = await recordWithin(Date.now(), 'the Service connection', (x) => x.dst.service === 'shop/web');
        assert.equal(rec.dst.servicePort, 80);
        assert.equal(rec.dst.ip, PODS[1]!.address, 'the chosen endpoint');
        assert.equal(rec.dst.pod, 'b-7d4f9-x2x8k');
        assert.deepEqual(rec.policy, { tier: 'default', name: 'knp.default.allow-a', rule: 'ingress/0' });
      });

      // Refused packets log with or without ct mark bits: once is enough.
      if (!ctMark)
        it('a flood of refused packets is limited in the kernel: memory stays flat and the event loop keeps its pace', async () => {
          // 40,000 UDP datagrams from 200 ports (200 flows), every one refused by rule ingress/0.
          const flood = `const d=require('node:dgram');const ss=Array.from({length:200},()=>d.createSocket('udp4'));let n=0;const go=()=>{for(let i=0;i<2000;i++,n++)ss[n%200].send('x',5000,'${PODS[2]!.address}');if(n<40000)setImmediate(go);else setTimeout(()=>process.exit(0),200)};go()`;
          const before = flows.status() as { reader: { loggedPackets: number } };
          global.gc?.();
          const heap = process.memoryUsage().heapUsed;
          let worstLag = 0;
          let last = Date.now();
          const tick = setInterval(() => {
            const now = Date.now();
            worstLag = Math.max(worstLag, now - last - 10);
            last = now;
          }, 10);
          const started = Date.now();
          try {
            await node.pod('a').ns.run(['node', '-e', flood], { timeoutMs: 60_000 });
            await new Promise((r) => setTimeout(r, 300));
          } finally {
            clearInterval(tick);
          }
          const seconds = (Date.now() - started) / 1000;
          const after = flows.status() as { reader: { loggedPackets: number } };
          const logged = after.reader.loggedPackets - before.reader.loggedPackets;
          // 500 a second with a burst of 100, on the one rule the flood meets.
          assert.ok(logged <= 500 * seconds + 100 + 50, `${logged} packets logged in ${seconds.toFixed(1)} s: the kernel limited them`);
          assert.ok(logged > 0, 'the flood was logged at all');
          // Each wake-up reads a bounded amount; the slack is for a machine shared with the flood itself.
          assert.ok(worstLag < 500, `the event loop was held at most ${worstLag} ms`);
          const grown = process.memoryUsage().heapUsed - heap;
          assert.ok(grown < 32 << 20, `the heap grew ${(grown / 1e6).toFixed(1)} MB`);
          assert.ok(flows.store.size.window <= 10_000, 'the window holds no more than its limit');
        });
    });

  // Records per pair of pods (Calico's level 2): connections that differ only in their client's
  // port are added up in the addon, each Allow's logged packet joined to its NEW there.
  describe('connections folded in the addon', () => {
    let flows: FlowLog;
    before(async () => {
      flows = await startFlowLog({ group: 23, poolsOnly: true });
    });
    after(() => flows?.stop());

    it('twenty connections from one pod to another are one record of twenty, named by the Allow, from fewer aggregates than flows', async () => {
      const results = await node.probe(
        'a',
        Array.from({ length: 20 }, () => ({ protocol: 'tcp' as const, host: PODS[1]!.address, port: 80 })),
      );
      assert.ok(
        results.every((r) => r.ok),
        `a reaches b 20 times: ${results.map((r) => r.error).filter(Boolean)}`,
      );
      const t = Date.now();
      let rec: FlowRecord | undefined;
      await waitFor(() => (rec = flows.records({}).find((x) => x.dst.pod === 'b-7d4f9-x2x8k' && x.count >= 20)) !== undefined, {
        what: 'one record of the 20 connections',
        timeoutMs: 1_000,
        intervalMs: 20,
      });
      assert.ok(Date.now() - t < 1_500, `seen ${Date.now() - t} ms after the connections`);
      assert.equal(rec!.count, 20);
      assert.deepEqual(
        rec!.policy,
        { tier: 'default', name: 'knp.default.allow-a', rule: 'ingress/0' },
        'the logged Allow joined in the addon',
      );
      const reader = (
        flows.status() as { reader: { aggregates: number; folded: number; loggedPackets: number; lost: number; truncated: number } }
      ).reader;
      assert.equal(reader.truncated, 0, "every datagram of logged packets fit its slot (the kernel's buffer as allocated)");
      assert.equal(reader.lost, 0, 'the kernel dropped nothing');
      assert.ok(reader.loggedPackets >= 20, `each connection's Allow logged (${reader.loggedPackets})`);
      assert.ok(reader.folded >= 20, `the starts went through the fold (${reader.folded} flows)`);
      assert.ok(reader.aggregates < reader.folded, `${reader.aggregates} aggregates for ${reader.folded} flows`);
    });

    it("with poolsOnly the kernel drops the events of the node's own flows (no pool address) and keeps the pods'", async () => {
      const events = () => (flows.status() as { reader: { conntrackEvents: number } }).reader.conntrackEvents;
      const before = events();
      // Ten UDP flows of the node's own, to its loopback: in conntrack, of no pod.
      await node.node.run(['bash', '-c', 'for p in $(seq 9000 9009); do echo x > /dev/udp/127.0.0.1/$p; done; true']);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(events(), before, 'no event of the loopback flows was queued');
      const [r] = await node.probe('a', [{ protocol: 'tcp', host: PODS[1]!.address, port: 80 }]);
      assert.equal(r?.ok, true, `a reaches b: ${r?.error}`);
      await waitFor(() => events() > before, { what: "the pod connection's NEW", timeoutMs: 1_000, intervalMs: 20 });
    });
  });
});
