import assert from 'node:assert/strict';
import {
  aggregateEnds,
  type FlowRecord,
  FlowStore,
  matches,
  parseFlowFilter,
  podPrefix,
  recordKey,
} from '../../../lib/agent/flow-records.js';

const src = { ip: '10.65.0.2', port: 40001, namespace: 'shop', pod: 'web-7d4f9-x2x8k', labels: { app: 'web' } };
const dst = { ip: '10.65.0.3', port: 80, namespace: 'shop', pod: 'db-5c6b7-abcde' };
const record = (over: Partial<FlowRecord> = {}): FlowRecord => ({
  time: '2026-01-01T00:00:10.000Z',
  node: 'n1',
  proto: 'tcp',
  src,
  dst,
  verdict: 'allow',
  policy: null,
  staged: null,
  bytes: 0,
  packets: 0,
  count: 0,
  start: '2026-01-01T00:00:10.000Z',
  end: null,
  ...over,
});
const once = { count: 1, bytes: 0, packets: 0, opened: 1, closed: 0, at: '2026-01-01T00:00:11.000Z' };

describe('lib/agent flow records', () => {
  it("aggregation kinds as Calico's: 0 all, 1 without source port, 2 source pods by replica set, 3 destination pods too", () => {
    assert.equal(podPrefix('web-7d4f9-x2x8k'), 'web-7d4f9-*');
    assert.equal(podPrefix('single'), 'single');
    assert.deepEqual(aggregateEnds(src, dst, 0), { src, dst });
    assert.equal(aggregateEnds(src, dst, 1).src.port, undefined);
    assert.equal(aggregateEnds(src, dst, 1).src.ip, src.ip);
    const two = aggregateEnds(src, dst, 2);
    assert.deepEqual([two.src.pod, two.src.ip, two.dst.pod], ['web-7d4f9-*', undefined, dst.pod]);
    const three = aggregateEnds(src, dst, 3);
    assert.deepEqual([three.dst.pod, three.dst.ip, three.dst.port], ['db-5c6b7-*', undefined, 80]);
    const other = { ...src, port: 40002, pod: 'web-7d4f9-zzzzz', ip: '10.65.0.9' };
    assert.equal(
      recordKey(record(aggregateEnds(src, dst, 2))),
      recordKey(record(aggregateEnds(other, dst, 2))),
      'one replica set, one record',
    );
    assert.notEqual(recordKey(record(aggregateEnds(src, dst, 1))), recordKey(record(aggregateEnds(other, dst, 1))));
  });

  it('a window adds up its flows; the ring keeps the newest records; a full window counts what it drops', () => {
    const store = new FlowStore(3, 2);
    store.add('a', () => record(), once);
    store.add('a', () => record(), { ...once, count: 0, opened: 0, closed: 1, bytes: 500, packets: 7 });
    const [a] = store.records();
    assert.deepEqual([a?.count, a?.bytes, a?.packets, a?.end], [1, 500, 7, once.at]);
    store.add('b', () => record(), once);
    assert.equal(
      store.add('c', () => record(), once),
      undefined,
      'the window is full',
    );
    assert.equal(store.dropped, 1);
    for (let i = 0; i < 3; i++) {
      store.flush();
      store.add(`w${i}`, () => record({ node: `w${i}` }), once);
    }
    store.flush();
    assert.deepEqual(
      store.records().map((r) => r.node),
      ['w0', 'w1', 'w2'],
      'the oldest records left the ring first',
    );
  });

  it('filters by namespace, pod (a replica set prefix matches its pods), verdict and time; bad values name the parameter', () => {
    const r = record(aggregateEnds(src, dst, 2));
    assert.ok(matches(r, parseFlowFilter(new URLSearchParams('namespace=shop&pod=web-7d4f9-x2x8k&verdict=allow'))), 'matches');
    assert.ok(!matches(r, parseFlowFilter(new URLSearchParams('verdict=deny'))), 'verdict');
    assert.ok(!matches(r, parseFlowFilter(new URLSearchParams('namespace=other'))), 'namespace');
    assert.ok(!matches(r, parseFlowFilter(new URLSearchParams('since=30s'), Date.parse('2026-01-01T00:01:00Z'))), 'since');
    assert.throws(() => parseFlowFilter(new URLSearchParams('verdict=maybe')), /^Error: verdict:/);
    assert.throws(() => parseFlowFilter(new URLSearchParams('since=yesterday')), /^Error: since:/);
  });
});
