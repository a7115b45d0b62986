// The reference side of the services benchmark: the same ServiceInput written the way
// kube-proxy's iptables mode writes it in the nat table. `KUBE-SERVICES` holds one rule per
// frontend (`-d <cluster IP> -p tcp --dport <port> -j KUBE-SVC-…`, a linear list the first
// packet of every connection walks), and ends in `-m addrtype --dst-type LOCAL -j KUBE-NODEPORTS`;
// a service chain marks off-cluster clients for masquerade, then picks an endpoint with one
// `-m statistic --mode random --probability 1/(n-i)` jump per endpoint; an endpoint chain marks
// hairpin traffic and DNATs; `KUBE-EXT-…` marks and goes to the service chain for a NodePort;
// `KUBE-POSTROUTING` masquerades marked packets. Every rule carries the service's name as a
// comment, as kube-proxy's do. IPv4 only (kube-proxy runs ip6tables beside it).
//
// The whole set is loaded with one `iptables-restore`; a change is applied as kube-proxy's
// partial sync applies it: one `iptables-restore --noflush` re-declaring (flushing) and refilling
// the chains of the services that changed, and deleting endpoint chains no longer used.
import { createHash } from 'node:crypto';
import type { ServiceInput, ServicePort } from '../felix/index.js';
import { runIn } from './policy-exec.js';

const MASQ_MARK = '0x4000';
const hash = (text: string): string =>
  createHash('sha256').update(text).digest('base64url').replace(/[-_]/g, 'X').slice(0, 16).toUpperCase();
const svcChain = (p: ServicePort) => `KUBE-SVC-${hash(p.id)}`;
const extChain = (p: ServicePort) => `KUBE-EXT-${hash(p.id)}`;
const sepChain = (p: ServicePort, address: string, port: number) => `KUBE-SEP-${hash(`${p.id}/${address}:${port}`)}`;

/** The chains and rules of one service port (IPv4), by chain, and its KUBE-SERVICES / KUBE-NODEPORTS rules. */
function servicePortLines(p: ServicePort, clusterCidr: string): { chains: Map<string, string[]>; services: string[]; nodePorts: string[] } {
  const chains = new Map<string, string[]>();
  const cip = p.clusterIPs.find((a) => !a.includes(':'));
  const eps = p.endpoints.filter((e) => !e.address.includes(':'));
  if (!cip || eps.length === 0) return { chains, services: [], nodePorts: [] };
  const comment = `-m comment --comment "${p.id}"`;
  const svc = svcChain(p);
  const match = `-d ${cip}/32 -p ${p.protocol} -m ${p.protocol} --dport ${p.port}`;
  const svcRules = [`-A ${svc} ${comment} ! -s ${clusterCidr} ${match} -j KUBE-MARK-MASQ`];
  eps.forEach((e, i) => {
    const sep = sepChain(p, e.address, e.port);
    const left = eps.length - i;
    const pick = left > 1 ? `-m statistic --mode random --probability ${(1 / left).toFixed(11)} ` : '';
    svcRules.push(`-A ${svc} ${comment} ${pick}-j ${sep}`);
    chains.set(sep, [
      `-A ${sep} ${comment} -s ${e.address}/32 -j KUBE-MARK-MASQ`,
      `-A ${sep} ${comment} -p ${p.protocol} -m ${p.protocol} -j DNAT --to-destination ${e.address}:${e.port}`,
    ]);
  });
  chains.set(svc, svcRules);
  const services = [`-A KUBE-SERVICES ${comment} ${match} -j ${svc}`];
  const nodePorts: string[] = [];
  if (p.nodePort !== undefined) {
    const ext = extChain(p);
    chains.set(ext, [`-A ${ext} ${comment} -j KUBE-MARK-MASQ`, `-A ${ext} -j ${svc}`]);
    nodePorts.push(`-A KUBE-NODEPORTS ${comment} -p ${p.protocol} -m ${p.protocol} --dport ${p.nodePort} -j ${ext}`);
  }
  return { chains, services, nodePorts };
}

export interface ReferenceApply {
  readonly renderMs: number;
  readonly restoreMs: number;
  /** Lines in the iptables-restore input. */
  readonly lines: number;
}

export class KubeProxyIptables {
  /** The chains each service port owns, as last written. */
  private owned = new Map<string, ReturnType<typeof servicePortLines>>();

  constructor(
    readonly netns: string,
    private readonly clusterCidr: string,
  ) {}

  /** Everything in one iptables-restore (the nat table replaced). */
  async load(input: ServiceInput): Promise<ReferenceApply> {
    const t0 = performance.now();
    const owned = new Map<string, ReturnType<typeof servicePortLines>>();
    for (const p of input.services) owned.set(p.id, servicePortLines(p, this.clusterCidr));
    const decl: string[] = ['*nat', ':PREROUTING ACCEPT [0:0]', ':INPUT ACCEPT [0:0]', ':OUTPUT ACCEPT [0:0]', ':POSTROUTING ACCEPT [0:0]'];
    const rules: string[] = [];
    for (const c of ['KUBE-SERVICES', 'KUBE-NODEPORTS', 'KUBE-POSTROUTING', 'KUBE-MARK-MASQ']) decl.push(`:${c} - [0:0]`);
    rules.push(
      '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
      `-A KUBE-MARK-MASQ -j MARK --or-mark ${MASQ_MARK}`,
      `-A KUBE-POSTROUTING -m mark ! --mark ${MASQ_MARK}/${MASQ_MARK} -j RETURN`,
      `-A KUBE-POSTROUTING -j MARK --xor-mark ${MASQ_MARK}`,
      '-A KUBE-POSTROUTING -j MASQUERADE --random-fully',
    );
    const nodePorts: string[] = [];
    for (const o of owned.values()) {
      rules.push(...o.services);
      nodePorts.push(...o.nodePorts);
      for (const [name, lines] of o.chains) {
        decl.push(`:${name} - [0:0]`);
        rules.push(...lines);
      }
    }
    rules.push(
      ...nodePorts,
      '-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS',
    );
    const text = `${[...decl, ...rules, 'COMMIT'].join('\n')}\n`;
    const renderMs = performance.now() - t0;
    const r = await runIn(this.netns, 'iptables-restore', [], text, 600_000);
    this.owned = owned;
    return { renderMs, restoreMs: r.ms, lines: decl.length + rules.length + 2 };
  }

  /** The services that changed, as kube-proxy's partial sync writes them (same frontends: KUBE-SERVICES stays). */
  async update(changed: readonly ServicePort[]): Promise<ReferenceApply> {
    const t0 = performance.now();
    const decl: string[] = ['*nat'];
    const rules: string[] = [];
    const gone: string[] = [];
    for (const p of changed) {
      const now = servicePortLines(p, this.clusterCidr);
      const before = this.owned.get(p.id);
      for (const [name, lines] of now.chains) {
        decl.push(`:${name} - [0:0]`);
        rules.push(...lines);
      }
      for (const name of before?.chains.keys() ?? []) {
        if (now.chains.has(name)) continue;
        decl.push(`:${name} - [0:0]`);
        gone.push(`-X ${name}`);
      }
      this.owned.set(p.id, now);
    }
    const text = `${[...decl, ...rules, ...gone, 'COMMIT'].join('\n')}\n`;
    const renderMs = performance.now() - t0;
    const r = await runIn(this.netns, 'iptables-restore', ['--noflush'], text, 600_000);
    return { renderMs, restoreMs: r.ms, lines: decl.length + rules.length + gone.length + 2 };
  }

  /** Chains and rules in the kernel's nat table, from iptables-save. */
  async kernelCounts(): Promise<{ chains: number; rules: number }> {
    const out = (await runIn(this.netns, 'iptables-save', ['-t', 'nat'], '', 600_000)).stdout.split('\n');
    return { chains: out.filter((l) => l.startsWith(':')).length, rules: out.filter((l) => l.startsWith('-A ')).length };
  }
}
