// Random PolicyInputs for the compiler's kernel tests, from a seed so a failure replays: sets
// of both families with nested and adjacent members, sets of single addresses, named ports,
// every action and every kind of match, tiers, local endpoints and pools. Only inputs the contract allows (ports with
// a protocol that has them); the point is what the kernel accepts, not error paths.
import type {
  AddressSet,
  NamedPortSet,
  Policy,
  PolicyEndpoint,
  PolicyInput,
  PolicyRule,
  PortRange,
  Protocol,
  RuleMatch,
  RuleAction,
} from '../../../felix/policy/input.js';
import { prng } from '../../support/prng.js';

export function generateInput(seed: number): PolicyInput {
  const rnd = prng(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const maybe = (p: number) => rnd() < p;
  const some = <T>(max: number, f: (i: number) => T): T[] => Array.from({ length: int(max + 1) }, (_, i) => f(i));

  const member = (): string => {
    switch (int(6)) {
      case 0:
        return `10.65.${int(4)}.${int(256)}`;
      case 1:
        return `10.65.${int(4)}.${int(4) * 64}/26`;
      case 2:
        return `10.${int(256)}.0.0/16`;
      case 3:
        return `fd00:65::${int(0xffff).toString(16)}`;
      case 4:
        return `fd00:${int(0xffff).toString(16)}::/48`;
      default:
        return pick(['0.0.0.0/0', '::/0', '192.168.1.0/24', '192.168.0.0/23']);
    }
  };
  const host = (): string => (maybe(0.7) ? `10.65.${int(4)}.${int(256)}` : `fd00:65::${int(0xffff).toString(16)}`);
  // A selector's set holds endpoint addresses only (a plain set); a rule's nets may be networks.
  const sets: AddressSet[] = some(6, (i) =>
    maybe(0.5) ? { id: `sel-${seed}-${i}`, members: some(8, host), hosts: true } : { id: `net-${seed}-${i}`, members: some(8, member) },
  );
  const namedPortSets: NamedPortSet[] = some(2, (i) => ({
    id: `port-${seed}-${i}`,
    members: some(4, () => ({
      address: maybe(0.7) ? `10.65.${int(4)}.${int(256)}` : `fd00:65::${int(0xffff).toString(16)}`,
      protocol: pick(['tcp', 'udp', 'sctp'] as const),
      port: 1 + int(65535),
    })),
  }));
  const setIds = (max: number) => (sets.length === 0 ? [] : some(max, () => pick(sets).id));
  const ports = (): PortRange[] =>
    Array.from({ length: 1 + int(3) }, () => {
      const first = int(65536);
      return { first, last: maybe(0.5) ? first : Math.min(65535, first + int(5000)) };
    });

  const match = (): RuleMatch => {
    const m: { -readonly [K in keyof RuleMatch]: RuleMatch[K] } = {};
    const protocol: Protocol | undefined = maybe(0.7)
      ? pick<Protocol>(['tcp', 'udp', 'sctp', 'icmp', 'icmpv6', 6, 17, 136, 47])
      : undefined;
    if (protocol !== undefined) m.protocol = protocol;
    if (maybe(0.1)) m.notProtocol = pick<Protocol>(['tcp', 'udp', 1]);
    if (maybe(0.2)) m.ipVersion = pick([4, 6] as const);
    if (maybe(0.5)) m.srcSets = setIds(2);
    if (maybe(0.2)) m.notSrcSets = setIds(2);
    if (maybe(0.3)) m.dstSets = setIds(2);
    if (maybe(0.2)) m.notDstSets = setIds(1);
    const ported = protocol !== undefined && ['tcp', 'udp', 'sctp', 6, 17, 136].includes(protocol);
    if (ported) {
      if (maybe(0.5)) m.dstPorts = ports();
      if (maybe(0.2)) m.notDstPorts = ports();
      if (maybe(0.2)) m.srcPorts = ports();
      if (maybe(0.1)) m.notSrcPorts = ports();
      if (namedPortSets.length > 0 && maybe(0.2)) m.dstNamedPorts = pick(namedPortSets).id;
    }
    if (protocol === 'icmp' || protocol === 'icmpv6') {
      if (maybe(0.5)) m.icmp = maybe(0.5) ? { type: int(256) } : { type: int(256), code: int(256) };
      else if (maybe(0.3)) m.notIcmp = maybe(0.5) ? { type: int(256) } : { type: int(256), code: int(256) };
    }
    return m;
  };
  const rules = (): PolicyRule[] =>
    some(5, () => ({ action: pick<RuleAction>(['Allow', 'Allow', 'Deny', 'Pass', 'Log']), match: match() }));
  const policies: Policy[] = some(8, (i) => {
    const p: { id: string; ingress?: PolicyRule[]; egress?: PolicyRule[] } = { id: `${pick(['knp.default', 'np', 'gnp'])}.p${seed}-${i}` };
    if (maybe(0.7)) p.ingress = rules();
    if (maybe(0.5)) p.egress = rules();
    return p;
  });
  const tiers = (): string[][] =>
    policies.length === 0 ? [] : some(3, () => some(3, () => pick(policies).id).filter((id, i, all) => all.indexOf(id) === i));
  const endpoints: PolicyEndpoint[] = some(5, (i) => ({
    iface: `cali${seed.toString(16)}${i}`.slice(0, 15),
    addresses: [`10.65.9.${i + 2}`],
    ingress: tiers(),
    egress: tiers(),
  }));
  const pools = some(3, (i) => ({ cidr: maybe(0.7) ? `10.${65 + i}.0.0/16` : `fd00:${65 + i}::/64`, natOutgoing: maybe(0.6) }));
  return { sets, namedPortSets, policies, endpoints, pools };
}
