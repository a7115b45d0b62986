// The reference side of the services benchmark as the benchmark's process sees it: kube-proxy's
// iptables shape (bench/services-iptables.ts) in a process of its own
// (bench/services-reference-process.ts), as kube-proxy is on a node, so that its iptables-restore
// is not forked from the process that holds felix (bench/reference-channel.ts says why).
import type { ServiceInput, ServicePort } from '../felix/index.js';
import { ReferenceChannel } from './reference-channel.js';
import type { ReferenceApply } from './services-iptables.js';

export type ServicesRequest =
  | { readonly type: 'load'; readonly input: ServiceInput }
  | { readonly type: 'update'; readonly changed: readonly ServicePort[] }
  | { readonly type: 'counts' };
export type ServicesReply =
  | { readonly type: 'applied'; readonly apply: ReferenceApply }
  | { readonly type: 'counts'; readonly chains: number; readonly rules: number };

export class KubeProxyProcess {
  private readonly channel: ReferenceChannel<ServicesRequest, ServicesReply>;

  constructor(
    readonly netns: string,
    clusterCidr: string,
  ) {
    this.channel = new ReferenceChannel(new URL('./services-reference-process.ts', import.meta.url), [netns, clusterCidr]);
  }

  private async applied(m: ServicesRequest): Promise<ReferenceApply> {
    const r = await this.channel.ask(m);
    if (r.type !== 'applied') throw new Error(`the reference's process answered ${m.type} with ${r.type}`);
    return r.apply;
  }

  /** Everything in one iptables-restore; the timings are the reference's own, the channel not in them. */
  load(input: ServiceInput): Promise<ReferenceApply> {
    return this.applied({ type: 'load', input });
  }

  /** The services that changed, as kube-proxy's partial sync writes them. */
  update(changed: readonly ServicePort[]): Promise<ReferenceApply> {
    return this.applied({ type: 'update', changed });
  }

  /** Chains and rules in the kernel's nat table, from iptables-save. */
  async kernelCounts(): Promise<{ chains: number; rules: number }> {
    const r = await this.channel.ask({ type: 'counts' });
    if (r.type !== 'counts') throw new Error(`the reference's process answered counts with ${r.type}`);
    return r;
  }

  close(): void {
    this.channel.close();
  }
}
