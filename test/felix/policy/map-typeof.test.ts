// Data maps keyed by numgen's number: the typeof declarations felix knows, and the table state
// refusing a map nft could not declare, naming the field, and reading data values canonically.
import assert from 'node:assert/strict';
import { mapDeclaration, mapTypeof } from '../../../felix/policy/map-typeof.js';
import type { NftMap, NftTable } from '../../../felix/policy/nft-model.js';
import { NftTableError, tableState } from '../../../felix/policy/table-state.js';

const TYPEOF = 'ip daddr . meta l4proto . th dport . numgen random mod 1 : ip daddr . tcp dport';
const table = (map: NftMap): NftTable => ({ family: 'inet', name: 'podroute', sets: [], maps: [map], chains: [] });
const endpoints = (over: Partial<NftMap> = {}): NftMap => ({
  name: 'svc-eps-tcp-v4-0',
  type: 'ipv4_addr . inet_proto . inet_service . integer',
  data: 'ipv4_addr . inet_service',
  typeof: TYPEOF,
  elements: [{ key: '10.96.0.10 . TCP . 80 . 0', verdict: '10.65.0.2 . 8080' }],
  ...over,
});

describe('felix/policy map typeof declarations', () => {
  it('knows the endpoint maps’ declarations, with their types and nft’s userdata', () => {
    const t = mapTypeof(`  ${TYPEOF.replace(/ /g, '  ')} `);
    assert.ok(t, 'found whatever the spacing');
    assert.equal(t.type, 'ipv4_addr . inet_proto . inet_service . integer');
    assert.equal(t.data, 'ipv4_addr . inet_service');
    assert.ok(t.udata.length > 100, `userdata of ${t.udata.length} bytes`);
    assert.equal(mapTypeof('ip daddr . numgen random mod 1 : ip daddr . tcp dport'), undefined);
    assert.equal(mapDeclaration('ifname', undefined, undefined), 'type ifname : verdict');
    assert.equal(mapDeclaration('x', 'y', TYPEOF), `typeof ${TYPEOF}`);
  });

  it('the table state reads data values canonically and keeps the declaration', () => {
    const m = tableState(table(endpoints())).maps.get('svc-eps-tcp-v4-0');
    assert.ok(m, 'the map is in the state');
    assert.equal(m.data, 'ipv4_addr . inet_service');
    assert.equal(m.typeof, TYPEOF);
    assert.deepEqual([...m.elements], [['10.96.0.10 . tcp . 80 . 0', '10.65.0.2 . 8080']]);
  });

  it('refuses a map nft could not declare, naming the field', () => {
    const refused = (map: NftMap, field: string) =>
      assert.throws(
        () => tableState(table(map)),
        (e: unknown) => e instanceof NftTableError && e.field === field,
      );
    refused(endpoints({ typeof: undefined }), 'maps[0].type');
    refused(endpoints({ typeof: 'meta l4proto . th dport . numgen random mod 1 : ip daddr . tcp dport' }), 'maps[0].typeof');
    refused(endpoints({ data: 'ipv6_addr . inet_service' }), 'maps[0].typeof');
    refused(endpoints({ elements: [{ key: '10.96.0.10 . tcp . 80 . 0', verdict: '10.65.0.2 . 8080, 1' }] }), 'maps[0].elements[0].verdict');
  });
});
