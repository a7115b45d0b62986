// Flow logs benchmark: new connections through one node at a steady rate (default 10,000 a
// second) with flow logs on and off, in the same run: the flow log's CPU (this process runs
// nothing else while the load runs in a child), the records it keeps a second, the kernel's
// drops (ENOBUFS) if any, and a connection's latency (TCP connect to a pod, sampled during the
// load) with and without the log rules. The load is UDP datagrams from one client pod to a
// rotating destination port of another, each a new conntrack flow that policy allows (so each
// meets an Allow's log rule); conntrack forgets them after 1 s, so NEW and DESTROY both run at
// the rate. Root only; namespaces are its own and deleted on the way out.
//
//   npx tsx bench/flows.ts [--rate 10000] [--seconds 10] [--log-rate 20000] [--ct-mark 0x00ff0000] [--foreign 1 [--pools-only]]
//
// --log-rate: the kernel's limit on each log rule (packets a second); at or above --rate every
// connection is attributed to its rule, the worst case for the agent. --ct-mark: the Allow rule
// writes its number into these conntrack mark bits instead of logging (FlowLogSettings.ctMark).
// --foreign R: the node's own flows besides, R for each pod flow (UDP to its loopback): in
// conntrack, but of no pod. --pools-only: the kernel drops their events
// (FlowLogSettings.poolsOnly). The reader's aggregates a second are what JavaScript handles.
import { compilePolicy } from '../felix/policy/compile.js';
import type { PolicyInput } from '../felix/policy/input.js';
import { renderNftScript } from '../felix/policy/render.js';
import { FlowLog } from '../lib/agent/flow-log.js';
import type { WorkloadEndpoint } from '../lib/resources/index.js';
import { PolicyNode, type PodSpec } from '../test/felix/policy/compile-lab.js';
import { loadScript } from '../test/felix/policy/compile-nft.js';
import { Lab } from '../test/support/netns.js';
import { numberArg } from './args.js';

const arg = (name: string, d: number): number => numberArg(name, d);
const RATE = arg('--rate', 10_000);
const SECONDS = arg('--seconds', 10);
const LOG_RATE = arg('--log-rate', 20_000);
const CT_MARK = process.argv.includes('--ct-mark') ? arg('--ct-mark', 0) : undefined;
const FOREIGN = arg('--foreign', 0);
const POOLS_ONLY = process.argv.includes('--pools-only');

const PODS: PodSpec[] = [
  { name: 'a', address: '10.65.0.2', address6: 'fd00:65::2' },
  { name: 'b', address: '10.65.0.3', address6: 'fd00:65::3' },
];
const input: PolicyInput = {
  sets: [{ id: 'sel-a', members: ['10.65.0.2'], hosts: true }],
  namedPortSets: [],
  policies: [{ id: 'knp.default.allow-a', ingress: [{ action: 'Allow', match: { srcSets: ['sel-a'] } }] }],
  endpoints: [
    { iface: 'calia', addresses: ['10.65.0.2'], ingress: [], egress: [] },
    { iface: 'calib', addresses: ['10.65.0.3'], ingress: [{ name: 'default', policies: ['knp.default.allow-a'] }], egress: [] },
  ],
  pools: [{ cidr: '10.65.0.0/16', natOutgoing: false }],
};
const workloads = new Map<string, WorkloadEndpoint>(
  PODS.map((p) => [
    p.name,
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'WorkloadEndpoint',
      metadata: { name: `n1-k8s-${p.name}-eth0`, namespace: 'bench', labels: { app: p.name } },
      spec: { node: 'n1', pod: `${p.name}-0`, interfaceName: `cali${p.name}`, ipNetworks: [`${p.address}/32`] },
    },
  ]),
);

// Sends `rate` datagrams a second for `seconds` from 1,000 client ports to 60 server ports, each
// (client port, server port) pair once every 6 s, so every datagram is a new flow (conntrack
// forgot the last one); as many clients calling a few services: what aggregation folds together.
// In slices of 10 ms; prints how many it sent.
const LOAD = `const d=require('node:dgram');const ss=Array.from({length:1000},()=>d.createSocket('udp4'));const [host,rate,secs]=process.argv.slice(1);
const per=Math.round(Number(rate)/100);let n=0;const end=Date.now()+Number(secs)*1000;const buf=Buffer.from('x');
const t=setInterval(()=>{for(let i=0;i<per;i++,n++)ss[n%1000].send(buf,8000+(Math.floor(n/1000)%60),host);if(Date.now()>=end){clearInterval(t);setTimeout(()=>{console.log(n);process.exit(0)},100)}},10);`;

// Connects to host:80 `n` times, one after another, and prints each connect's time in microseconds.
const PROBE = `const net=require('node:net');const [host,n]=process.argv.slice(1);const out=[];
const one=()=>{const t=process.hrtime.bigint();const s=net.connect(80,host,()=>{out.push(Number(process.hrtime.bigint()-t)/1000);s.destroy();if(out.length<Number(n))setTimeout(one,20);else console.log(JSON.stringify(out))});s.on('error',()=>{s.destroy();setTimeout(one,20)})};one();`;

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};

async function run(node: PolicyNode, on: boolean) {
  const flows = new FlowLog(
    {
      netns: `/var/run/netns/${node.node.name}`,
      group: 31,
      ratePerSecond: LOG_RATE,
      burst: LOG_RATE,
      aggregationAllowed: 2,
      flushIntervalMs: 5_000,
      ...(CT_MARK !== undefined ? { ctMark: CT_MARK } : {}),
      ...(POOLS_ONLY ? { poolsOnly: true } : {}),
    },
    { nodeName: 'n1', workloads: () => workloads, services: () => undefined, log: () => undefined },
  );
  const table = compilePolicy(input, on ? { flowLogs: flows.rules } : {});
  await loadScript(node.node, renderNftScript(table, { replace: true }));
  await node.node.run(['conntrack', '-F']).catch(() => undefined);
  if (on) {
    flows.policyInput(input);
    await flows.start();
  }
  const statusBefore = flows.status() as {
    kept: number;
    foreign: number;
    reader: { conntrackEvents: number; loggedPackets: number; lost: number; truncated: number; aggregates: number; folded: number } | null;
  };
  const t0 = process.hrtime.bigint();
  const load = node
    .pod('a')
    .ns.run(['node', '-e', LOAD, PODS[1]!.address, String(RATE), String(SECONDS)], { timeoutMs: (SECONDS + 30) * 1000 });
  // The node's own flows, to its loopback: no pod's, each a conntrack flow all the same.
  const foreign =
    FOREIGN > 0
      ? node.node.run(['node', '-e', LOAD, '127.0.0.1', String(RATE * FOREIGN), String(SECONDS)], { timeoutMs: (SECONDS + 30) * 1000 })
      : Promise.resolve('0');
  // Sampled once the load is under way.
  await new Promise((r) => setTimeout(r, 1_000));
  const probe = node
    .pod('a')
    .ns.run(['node', '-e', PROBE, PODS[1]!.address, String(Math.max(20, SECONDS * 20))], { timeoutMs: (SECONDS + 30) * 1000 });
  // The flow log's CPU: this process over the steady part of the load, after the children were
  // spawned (a spawn costs this process too) and before the load ends.
  await new Promise((r) => setTimeout(r, 500));
  const steady = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const mid = flows.status() as typeof statusBefore;
  await new Promise((r) => setTimeout(r, (SECONDS - 2.5) * 1000));
  const used = process.cpuUsage(cpu);
  const window = Number(process.hrtime.bigint() - steady) / 1e9;
  const late = flows.status() as typeof statusBefore;
  const [sentText, probeText] = await Promise.all([load, probe, foreign]);
  // Flows sent in the window, at the load's own average rate (conntrack's DESTROYs come when its
  // collector reaps the entries, in bursts: counting events would not say how many flows ran).
  const flowsInWindow = (Number(sentText) / SECONDS) * window;
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const after = flows.status() as typeof statusBefore;
  flows.stop();
  const latencies = JSON.parse(probeText) as number[];
  const reader = after.reader;
  return {
    sent: Number(sentText),
    wall,
    cpuPercent: ((used.user + used.system) / 1e6 / window) * 100,
    cpuPerFlowUs: flowsInWindow > 0 ? (used.user + used.system) / flowsInWindow : 0,
    systemShare: used.system / Math.max(1, used.user + used.system),
    keptPerSecond: (late.kept - mid.kept) / window,
    kept: after.kept - statusBefore.kept,
    conntrackEvents: reader?.conntrackEvents ?? 0,
    loggedPackets: reader?.loggedPackets ?? 0,
    lost: reader?.lost ?? 0,
    truncated: reader?.truncated ?? 0,
    aggregates: reader?.aggregates ?? 0,
    folded: reader?.folded ?? 0,
    p50: pct(latencies, 50),
    p99: pct(latencies, 99),
  };
}

async function main() {
  const lab = new Lab({ tag: 'bfl' });
  try {
    const node = await PolicyNode.create(lab, PODS);
    // Each datagram's flow is forgotten a second later: NEW and DESTROY both at the rate.
    await node.node.run(['sysctl', '-qw', 'net.netfilter.nf_conntrack_udp_timeout=1']);
    await node.node.run(['sysctl', '-qw', 'net.netfilter.nf_conntrack_max=262144']);
    console.log(
      `flows: ${RATE} new connections/s for ${SECONDS} s through one node; log rules limited to ${LOG_RATE}/s${CT_MARK !== undefined ? `; Allows write ct mark bits 0x${CT_MARK.toString(16)}` : ''}`,
    );
    const off = await run(node, false);
    const on = await run(node, true);
    const row = (name: string, r: typeof on) =>
      `${name.padEnd(5)} sent ${(r.sent / SECONDS).toFixed(0).padStart(6)}/s  agent CPU ${r.cpuPercent.toFixed(1).padStart(5)} % of a core (${r.cpuPerFlowUs.toFixed(1)} µs a flow, ${(r.systemShare * 100).toFixed(0)} % in the kernel)  records kept ${r.keptPerSecond.toFixed(0).padStart(6)}/s  conntrack events ${(r.conntrackEvents / r.wall).toFixed(0).padStart(6)}/s  logged packets ${(r.loggedPackets / r.wall).toFixed(0).padStart(6)}/s  lost ${r.lost} truncated ${r.truncated}  aggregates ${(r.aggregates / r.wall).toFixed(0)}/s of ${(r.folded / r.wall).toFixed(0)} flows/s  connect p50 ${r.p50.toFixed(0)} µs p99 ${r.p99.toFixed(0)} µs`;
    console.log(row('off', off));
    console.log(row('on', on));
    console.log(`added connect latency: p50 ${(on.p50 - off.p50).toFixed(0)} µs, p99 ${(on.p99 - off.p99).toFixed(0)} µs`);
  } finally {
    await lab.destroy();
  }
}

await main();
