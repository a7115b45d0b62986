// What the IPIP scenario (scenario.ts, in the kernel VM) hands the suite in result.json.

export interface PingResult {
  code: number;
  output: string;
}

export interface ModeSwitch {
  mode: 'Always' | 'CrossSubnet' | 'Never';
  /** n1's route to n2's block once re-programmed. */
  route: string;
  /** From the pool's write until both nodes' routes had moved. */
  reprogrammedMs: number;
  /** `ping -i 0.1` from a (n1) to b (n2), running across the switch, with its summary. */
  ping: string;
  /** `ip monitor route` on n1 across the switch. */
  routeEvents: string[];
}

/** One SCTP association attempt from pod a (socat): its exit code, what came back, what it said. */
export interface SctpProbe {
  code: number;
  reply: string;
  error: string;
}

export interface IpipScenarioResult {
  /** ms from the scenario's start to the end of each step. */
  timings: Record<string, number>;
  /** Each node's first IPv4 block. */
  blocks: Record<string, string>;
  nodes: Record<string, { tunnelAddressAnnotation: string; tunl0: { mtu: number; up: boolean; addresses: string[] }; routes: string[] }>;
  pods: Record<string, { node: string; ip: string; mtu: number; hostIf: string; hostIfMtu: number }>;
  pings: { crossSubnet: PingResult; sameSubnet: PingResult; sameSubnetAlways?: PingResult };
  mtu: { df1400: PingResult; tooBigInPod: PingResult; tooBigForwarded: PingResult };
  switches: ModeSwitch[];
  /** To pod b, which serves SCTP 80 and 81: before the policy, under it, and through the Service. */
  sctp: { open80: SctpProbe; open81: SctpProbe; denied81: SctpProbe; allowed80: SctpProbe; service: SctpProbe };
  /** Why the SCTP phase stopped, when it did. */
  sctpError?: string;
}
