// `podroute ipam show`: pools, then (with blocks) each block with its affinity and usage,
// in the spirit of `calicoctl ipam show --show-blocks`.
import type { PoolUsage } from './ipam.js';

export function formatIpamShow(pools: readonly PoolUsage[], showBlocks = true): string {
  const rows: string[][] = [['GROUPING', 'CIDR', 'AFFINITY', 'IPS TOTAL', 'IPS IN USE', 'IPS FREE']];
  const pct = (used: bigint | number, total: bigint): string => {
    const t = Number(total);
    return t === 0 ? '0%' : `${Math.round((Number(used) / t) * 100)}%`;
  };
  for (const p of pools) {
    const used = BigInt(p.used);
    rows.push([
      'IP Pool',
      p.cidr + (p.disabled ? ' (disabled)' : ''),
      '',
      p.size.toString(),
      `${used} (${pct(used, p.size)})`,
      `${p.size - used} (${pct(p.size - used, p.size)})`,
    ]);
    if (!showBlocks) continue;
    for (const b of [...p.blocks].sort((x, y) => (x.cidr < y.cidr ? -1 : 1))) {
      const size = BigInt(b.size);
      rows.push([
        'Block',
        b.cidr,
        b.affinity ?? '(none)',
        String(b.size),
        `${b.used} (${pct(b.used, size)})`,
        `${b.free} (${pct(b.free, size)})`,
      ]);
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]): string => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const sep = `+-${widths.map((w) => '-'.repeat(w)).join('-+-')}-+`;
  return [sep, line(rows[0]!), sep, ...rows.slice(1).map(line), sep].join('\n') + '\n';
}
