// nft in a test namespace: load a script (a refusal fails the test with nft's message and the
// numbered script), list the table back as chains, rule comments, set sizes and map elements, and read rule
// counters by the id kept in their comment.
import assert from 'node:assert/strict';
import type { Netns } from '../../support/netns.js';

export interface Listed {
  chains: Map<string, { comments: (string | undefined)[]; hook?: string; type?: string }>;
  sets: Map<string, { type: string; elements: number; interval: boolean }>;
  /** Each map's `key : verdict` elements as nft lists them (`calia : jump to-calia`), sorted. */
  maps: Map<string, { type: string; elements: string[] }>;
}

interface NftJsonObject {
  chain?: { name: string; hook?: string; type?: string };
  rule?: { chain: string; comment?: string };
  set?: { name: string; type: string | string[]; elem?: unknown[]; flags?: string[] };
  map?: { name: string; type: string; map: string; elem?: [string, Record<string, { target?: string } | null>][] };
}

export async function loadScript(ns: Netns, script: string): Promise<void> {
  const r = await ns.exec(['nft', '-f', '-'], { input: script, timeoutMs: 60_000 });
  if (r.code !== 0) {
    const numbered = script
      .split('\n')
      .map((l, i) => `${String(i + 1).padStart(4)} ${l}`)
      .join('\n');
    assert.fail(`nft -f refused the script (exit ${r.code}):\n${r.stderr}\n${numbered.slice(0, 20_000)}`);
  }
}

export async function listTable(ns: Netns): Promise<Listed> {
  const out = await ns.run(['nft', '-j', 'list', 'table', 'inet', 'podroute'], { timeoutMs: 60_000 });
  const objects = (JSON.parse(out) as { nftables: NftJsonObject[] }).nftables;
  const listed: Listed = { chains: new Map(), sets: new Map(), maps: new Map() };
  for (const o of objects) {
    if (o.chain) listed.chains.set(o.chain.name, { comments: [], hook: o.chain.hook, type: o.chain.type });
    if (o.rule) listed.chains.get(o.rule.chain)?.comments.push(o.rule.comment);
    if (o.set) {
      const type = Array.isArray(o.set.type) ? o.set.type.join(' . ') : o.set.type;
      listed.sets.set(o.set.name, { type, elements: o.set.elem?.length ?? 0, interval: o.set.flags?.includes('interval') ?? false });
    }
    if (o.map) {
      const elements = (o.map.elem ?? []).map(([key, verdict]) => {
        const [kind, arg] = Object.entries(verdict)[0]!;
        return `${key} : ${arg?.target ? `${kind} ${arg.target}` : kind}`;
      });
      listed.maps.set(o.map.name, { type: `${o.map.type} : ${o.map.map}`, elements: elements.sort() });
    }
  }
  return listed;
}

/** Packets counted by every rule whose comment is `id` (a rule for both families is two rules). */
export async function counterPackets(ns: Netns, id: string): Promise<number> {
  const out = await ns.run(['nft', '-j', 'list', 'table', 'inet', 'podroute']);
  const objects = (JSON.parse(out) as { nftables: { rule?: { comment?: string; expr: Record<string, { packets?: number }>[] } }[] })
    .nftables;
  let found = false;
  let packets = 0;
  for (const o of objects) {
    if (o.rule?.comment !== id) continue;
    found = true;
    for (const e of o.rule.expr) packets += e.counter?.packets ?? 0;
  }
  assert.ok(found, `no rule with id ${id}`);
  return packets;
}
