// The nftables state felix wants in the one table it owns, as plain data: what the policy
// compiler produces and what an nftables dataplane makes the kernel hold. Rules, set elements,
// map keys and verdicts are nft text (the syntax `nft -f` reads), so the compiler's output can
// be read by a person and fed to nft as it is.

export const POLICY_TABLE = 'podroute';

export type NftHook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';

export interface NftBaseChain {
  readonly type: 'filter' | 'nat';
  readonly hook: NftHook;
  readonly priority: number;
  readonly policy: 'accept' | 'drop';
}

export interface NftRule {
  /** The rule's statements, e.g. `ip saddr @s4-web tcp dport 80 counter accept`. */
  readonly expr: string;
  /** A stable id, kept in the rule's comment, by which counters are read back (e.g. "knp.default.web/in/0"). */
  readonly id?: string;
}

export interface NftChain {
  readonly name: string;
  /** Set on base chains only. */
  readonly base?: NftBaseChain;
  readonly rules: readonly NftRule[];
}

export interface NftSet {
  readonly name: string;
  /** nft type: `ipv4_addr`, `ipv6_addr`, `ipv4_addr . inet_proto . inet_service`, ... */
  readonly type: string;
  /** `flags interval`: members may be networks. */
  readonly interval: boolean;
  /** Elements in nft syntax (`10.0.0.0/24`, `10.0.0.5 . tcp . 80`). */
  readonly elements: readonly string[];
  /**
   * Seconds: a set the packet path fills (`flags dynamic,timeout`, rules `update @set { … }`),
   * each element expiring that long after its last update (a service's session affinity).
   * Its elements are the kernel's: they are neither written nor compared.
   */
  readonly timeout?: number;
}

/** One entry of a map: the packets whose key matches get the verdict (or, in a data map, the value). */
export interface NftMapElement {
  /** In nft syntax for the map's type: an interface name is quoted (`"cali1a2b3c4d5e6"`). */
  readonly key: string;
  /**
   * `jump <chain>`, `goto <chain>`, `accept`, `drop`, `return` or `continue`; in a map with
   * `data`, the value in nft syntax for that type (`10.64.0.7 . 8080`).
   */
  readonly verdict: string;
}

/**
 * A named verdict map (`map NAME { type ifname : verdict; }`), which a rule consults with
 * `iifname vmap @NAME`. Its elements are added and deleted one by one while the rule that
 * uses it stays as it is, so dispatching one more interface is one element, not a new rule.
 * Maps and sets share one namespace in a table: no map may have a set's name.
 */
export interface NftMap {
  readonly name: string;
  /**
   * nft type of the key: `ifname`, `ipv4_addr`, ...; `integer` for numgen's number, which nft
   * declares with `typeof` (map-typeof.ts lists the keys with such a declaration).
   */
  readonly type: string;
  /**
   * The data type of a data map (`ipv4_addr . inet_service`, what `dnat … map @NAME` reads);
   * absent for a verdict map. Its elements are values, not verdicts: adding one never makes the
   * kernel revalidate the table's chains, as an element that jumps does.
   */
  readonly data?: string;
  /**
   * The declaration after `typeof` (key, then data), for a key nft has no type name for
   * (numgen's number): one map-typeof.ts lists, which must agree with `type` and `data`.
   */
  readonly typeof?: string;
  readonly elements: readonly NftMapElement[];
}

export interface NftTable {
  readonly family: 'inet';
  readonly name: string;
  readonly sets: readonly NftSet[];
  /** Verdict maps; a table without any may leave this out. */
  readonly maps?: readonly NftMap[];
  readonly chains: readonly NftChain[];
}
