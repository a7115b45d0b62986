// felix/policy: the packet half of felix. A resolved PolicyInput (input.ts) is compiled to
// the one nftables table podroute owns (compile.ts → nft-model.ts), and the programmer keeps
// the kernel equal to it with one atomic transaction per change (plan.ts, programmer.ts) over
// a dataplane: nft in the kernel, or memory. See README.md.
export {
  EMPTY_POLICY_INPUT,
  type Protocol,
  type PortRange,
  type AddressSet,
  type NamedPortSet,
  type RuleMatch,
  type RuleAction,
  type PolicyRule,
  // bgp/ has a Policy (route policy) too: at the package root this one is FelixPolicy.
  type Policy as FelixPolicy,
  type TierPolicies,
  type PolicyTier,
  policyTier,
  type PolicyEndpoint,
  type NatPool,
  type PolicyInput,
} from './input.js';
export * from './nft-model.js';
// bgp/ has a compilePolicy (route policy) too.
export { compilePolicy as compileNftables, DEFAULT_PASS_MARK, type CompileOptions, type FlowLogRules } from './compile.js';
export { PolicyCompileError } from './compile-error.js';
export { renderNftScript, type RenderOptions } from './render.js';
export { type DumpMark, dumpTable, type TableDump } from './table-dump.js';
export type {
  NftDataplane,
  NftOp,
  NftOpKind,
  NftApplyResult,
  InstalledTable,
  InstalledSet,
  InstalledChain,
  InstalledRule,
  InstalledBase,
  RuleCounter,
  RuleCounterRow,
} from './dataplane.js';
export { NftablesDataplane, type NftablesDataplaneOptions } from './nft-dataplane.js';
export { NetlinkNftDataplane, type NetlinkNftDataplaneOptions } from './nftnl-dataplane.js';
export { createNftDataplane } from './create-nft-dataplane.js';
export { MemoryNftDataplane, type MemoryNftOptions } from './memory-nft.js';
export { planTable } from './plan.js';
export { PolicyProgrammer, type PolicyProgrammerOptions, type PolicyApplyReport, type PolicyProgrammerEvents } from './programmer.js';
export { NftTableError, ruleComment, ruleIdOfComment, tableState } from './table-state.js';
export { mergeTable, type NftTablePart } from './table-parts.js';
export { renderTransaction } from './nft-script.js';
export { canonicalElements } from './element-text.js';
