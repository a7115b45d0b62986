// A small desired table the dataplane tests share: one selector set, the forward chain and one
// endpoint chain.
import type { NftChain, NftSet, NftTable } from '../../../felix/policy/nft-model.js';

export const web: NftSet = { name: 's4-web', type: 'ipv4_addr', interval: true, elements: ['10.65.0.2', '10.65.0.3'] };
export const fwd: NftChain = {
  name: 'forward',
  base: { type: 'filter', hook: 'forward', priority: 0, policy: 'accept' },
  rules: [
    { id: 'conntrack', expr: 'ct state established,related accept' },
    { id: 'to-cali1', expr: 'oifname "cali1" jump to-cali1' },
  ],
};
export const toCali1: NftChain = {
  name: 'to-cali1',
  rules: [
    { id: 'knp.default.web/in/0', expr: 'ip saddr @s4-web tcp dport 80 counter accept' },
    { id: 'cali1/in/tier0', expr: 'counter drop' },
  ],
};
export const table = (sets: NftSet[], chains: NftChain[]): NftTable => ({ family: 'inet', name: 'podroute', sets, chains });
export const base = table([web], [fwd, toCali1]);
