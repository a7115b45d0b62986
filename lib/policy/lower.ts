// Parsed policy → felix's Policy: every selector, net list and named port becomes a reference to
// a set by id, and a rule whose ports mix numbers and names becomes two rules (a RuleMatch is a
// conjunction, a port list a disjunction of numbers only). Depends on no endpoint: members are
// filled in later, so this runs once per policy change, never per pod.
import type { Policy, PolicyRule, PortRange, RuleMatch } from '../../felix/policy/input.js';
import {
  type EndpointSelection,
  type ParsedPolicy,
  type ParsedRule,
  type NamedPort,
  type ParsedRuleSide,
  PolicyConversionError,
  type PortMatch,
} from './model.js';
import { portProtocol, protocolNumber } from './protocol.js';

const PORT_PROTOCOLS = ['tcp', 'udp', 'sctp'] as const;
import { type SetSpec, setId } from './set-spec.js';

export interface LoweredPolicy {
  readonly policy: Policy;
  /** Every set the policy's rules name, by id. */
  readonly sets: ReadonlyMap<string, SetSpec>;
  /** For each felix rule, the index of the parsed rule it comes from. */
  readonly origins: { readonly ingress: readonly number[]; readonly egress: readonly number[] };
}

const isNamed = (p: PortMatch): p is NamedPort => 'name' in p;

export function lowerPolicy(p: ParsedPolicy): LoweredPolicy {
  const sets = new Map<string, SetSpec>();
  const use = (spec: SetSpec): string => {
    const id = setId(spec);
    sets.set(id, spec);
    return id;
  };
  const origins = { ingress: [] as number[], egress: [] as number[] };
  const lowerRules = (rules: readonly ParsedRule[], direction: 'ingress' | 'egress'): PolicyRule[] =>
    rules.flatMap((r, i) => {
      const out = lowerRule(r, `${p.id} ${r.origin}`, direction === 'ingress' ? p.selection : undefined, use);
      for (const _ of out) origins[direction].push(i);
      return out;
    });
  return {
    policy: {
      id: p.id,
      ...(p.staged ? { staged: true as const } : {}),
      ...(p.ingress ? { ingress: lowerRules(p.ingress, 'ingress') } : {}),
      ...(p.egress ? { egress: lowerRules(p.egress, 'egress') } : {}),
    },
    sets,
    origins,
  };
}

function sideSets(side: ParsedRuleSide, use: (s: SetSpec) => string): { sets: string[]; notSets: string[] } {
  const sets: string[] = [];
  const notSets: string[] = [];
  if (side.nets?.length) sets.push(use({ kind: 'nets', nets: side.nets }));
  if (side.selection) sets.push(use({ kind: 'selection', selection: side.selection }));
  if (side.notNets?.length) notSets.push(use({ kind: 'nets', nets: side.notNets }));
  if (side.notSelection) notSets.push(use({ kind: 'selection', selection: side.notSelection }));
  return { sets, notSets };
}

function numericPorts(ports: readonly PortMatch[] | undefined, where: string, what: string): PortRange[] {
  const out: PortRange[] = [];
  for (const port of ports ?? []) {
    if (isNamed(port))
      throw new PolicyConversionError(
        where,
        `a named port ('${port.name}') in ${what} cannot be matched (only destination ports may be named)`,
      );
    out.push({ first: port.first, last: port.last });
  }
  return out;
}

/**
 * One parsed rule as felix rules. `selected` is the policy's own selection for an ingress rule:
 * the destination of an ingress packet is always one of those endpoints, so a named port is
 * looked up on them only.
 */
function lowerRule(r: ParsedRule, where: string, selected: EndpointSelection | undefined, use: (s: SetSpec) => string): PolicyRule[] {
  const src = sideSets(r.source, use);
  const dst = sideSets(r.destination, use);
  const srcPorts = numericPorts(r.source.ports, where, 'source.ports');
  const notSrcPorts = numericPorts(r.source.notPorts, where, 'source.notPorts');
  const notDstPorts = numericPorts(r.destination.notPorts, where, 'destination.notPorts');
  const dstNumbers = (r.destination.ports ?? []).filter((x) => !isNamed(x)) as PortRange[];
  const dstNames = (r.destination.ports ?? []).filter(isNamed).map((x) => x.name);
  if ([srcPorts, notSrcPorts, notDstPorts, dstNumbers].some((l) => l.length > 0) && !portProtocol(r.protocol)) {
    throw new PolicyConversionError(where, 'port numbers need protocol TCP, UDP or SCTP');
  }
  const base: RuleMatch = {
    ...(r.ipVersion !== undefined ? { ipVersion: r.ipVersion } : {}),
    ...(r.protocol !== undefined ? { protocol: r.protocol } : {}),
    ...(r.notProtocol !== undefined ? { notProtocol: r.notProtocol } : {}),
    ...(src.sets.length ? { srcSets: src.sets } : {}),
    ...(src.notSets.length ? { notSrcSets: src.notSets } : {}),
    ...(srcPorts.length ? { srcPorts } : {}),
    ...(notSrcPorts.length ? { notSrcPorts } : {}),
    ...(dst.sets.length ? { dstSets: dst.sets } : {}),
    ...(dst.notSets.length ? { notDstSets: dst.notSets } : {}),
    ...(notDstPorts.length ? { notDstPorts } : {}),
    ...(r.icmp ? { icmp: { ...r.icmp } } : {}),
    ...(r.notIcmp ? { notIcmp: { ...r.notIcmp } } : {}),
  };
  if (dstNames.length === 0) {
    return [
      {
        action: r.action,
        match: dstNumbers.length ? { ...base, dstPorts: dstNumbers.map((x) => ({ first: x.first, last: x.last })) } : base,
      },
    ];
  }
  const within = [selected, r.destination.selection].filter((s): s is EndpointSelection => s !== undefined);
  const namedRule = (protocol: 'tcp' | 'udp' | 'sctp'): PolicyRule => ({
    action: r.action,
    match: { ...base, protocol, dstNamedPorts: use({ kind: 'namedPorts', within, protocol, names: dstNames }) },
  });
  if (r.protocol === undefined) {
    // Calico: named ports alone need no protocol, each endpoint's port names its own. Felix
    // matches (address, protocol, port) under one protocol per rule, so one rule per protocol.
    const not = r.notProtocol === undefined ? undefined : protocolNumber(r.notProtocol);
    return PORT_PROTOCOLS.filter((p) => protocolNumber(p) !== not).map(namedRule);
  }
  const protocol = portProtocol(r.protocol);
  if (!protocol) throw new PolicyConversionError(where, `named ports (${dstNames.join(', ')}) need protocol TCP, UDP or SCTP`);
  const named = namedRule(protocol);
  if (dstNumbers.length === 0) return [named];
  return [{ action: r.action, match: { ...base, dstPorts: dstNumbers.map((x) => ({ first: x.first, last: x.last })) } }, named];
}
