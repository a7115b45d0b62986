// More than one compiler writes into the one table podroute owns: policy (compile.ts) gives the
// table, and others (felix/services) give parts of it. The programmer holds the latest of each
// and applies their union, so each compiler recompiles on its own input alone, and every change,
// whoever made it, is still one transaction planned against the whole table.
import type { NftChain, NftMap, NftSet, NftTable } from './nft-model.js';
import { NftTableError } from './table-state.js';

/** Sets, maps and chains a compiler adds to the table; their names must not be another part's. */
export interface NftTablePart {
  readonly sets: readonly NftSet[];
  readonly maps: readonly NftMap[];
  readonly chains: readonly NftChain[];
}

/** The table with the parts added (in the order given); a name two of them declare is refused, naming both. */
export function mergeTable(table: NftTable, parts: ReadonlyMap<string, NftTablePart>): NftTable {
  if (parts.size === 0) return table;
  const owners = new Map<string, string>();
  const claim = (name: string, owner: string) => {
    const had = owners.get(name);
    if (had !== undefined) throw new NftTableError(owner, `${name} is declared by ${had} too`);
    owners.set(name, owner);
  };
  // Sets and maps share one namespace; chains have their own.
  for (const s of table.sets) owners.set(s.name, 'the table');
  for (const m of table.maps ?? []) owners.set(m.name, 'the table');
  const chainOwners = new Map<string, string>();
  for (const c of table.chains) chainOwners.set(c.name, 'the table');
  const sets: NftSet[] = [...table.sets];
  const maps: NftMap[] = [...(table.maps ?? [])];
  const chains: NftChain[] = [...table.chains];
  for (const [key, part] of parts) {
    for (const s of part.sets) claim(s.name, `part ${key} set ${s.name}`);
    for (const m of part.maps) claim(m.name, `part ${key} map ${m.name}`);
    for (const c of part.chains) {
      const had = chainOwners.get(c.name);
      if (had !== undefined) throw new NftTableError(`part ${key} chain ${c.name}`, `declared by ${had} too`);
      chainOwners.set(c.name, `part ${key}`);
    }
    for (const s of part.sets) sets.push(s);
    for (const m of part.maps) maps.push(m);
    for (const c of part.chains) chains.push(c);
  }
  return { family: table.family, name: table.name, sets, maps, chains };
}
