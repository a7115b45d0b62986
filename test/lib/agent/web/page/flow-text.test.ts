// Flow records as the page writes them, the stream's lines, and the filter's query string.
import assert from 'node:assert/strict';
import type { FlowRecord } from '../../../../../lib/agent/web/api.js';
import { endpointText, flowKey, flowParams, policyText, splitLines, stagedText } from '../../../../../lib/agent/web/page/flow-text.js';

const record = (over: Partial<FlowRecord> = {}): FlowRecord => ({
  time: '2026-01-02T03:04:05.000Z',
  node: 'n1',
  proto: 'tcp',
  src: { ip: '10.65.0.5', port: 40000, namespace: 'shop', pod: 'web-0', labels: { app: 'web' } },
  dst: { ip: '10.96.0.10', port: 80, namespace: 'shop', pod: 'api-1', service: 'shop/api', servicePort: 8080 },
  verdict: 'allow',
  policy: { tier: 'default', name: 'knp.default.api', rule: 'ingress/0' },
  staged: null,
  bytes: 100,
  packets: 2,
  count: 1,
  start: '2026-01-02T03:04:05.000Z',
  end: null,
  ...over,
});

describe('web page: flow text', () => {
  it('names pods by namespace/name and port, addresses by address, the Service after via', () => {
    const r = record();
    assert.equal(endpointText(r.src), 'shop/web-0:40000');
    assert.equal(endpointText(r.dst), 'shop/api-1:80 via shop/api:8080');
    assert.equal(endpointText({ ip: '192.0.2.1' }), '192.0.2.1');
    assert.equal(endpointText(undefined), '');
  });

  it('names the deciding rule; a deny with no policy says none allowed it; staged verdicts listed', () => {
    assert.equal(policyText(record()), 'default/knp.default.api ingress/0');
    assert.equal(policyText(record({ verdict: 'deny', policy: null })), 'no policy allowed it');
    assert.equal(policyText(record({ policy: null })), '');
    const staged = record({
      staged: [
        { tier: 'default', name: 'staged.x', rule: 'ingress/1', action: 'deny' },
        { tier: 'security', name: 'staged.y', rule: 'egress/0', action: 'pass' },
      ],
    });
    assert.equal(stagedText(staged), 'default/staged.x ingress/1 deny; security/staged.y egress/0 pass');
    assert.equal(stagedText(record()), '');
  });

  it('splits a stream on newlines, keeping a partial line for the next chunk', () => {
    assert.deepEqual(splitLines('{"a":1}\n{"b":2}\n{"c"'), { lines: ['{"a":1}', '{"b":2}'], rest: '{"c"' });
    assert.deepEqual(splitLines('\n\n'), { lines: [], rest: '' });
  });

  it('puts only the filters given into the query, trimmed; the same record has the same key', () => {
    assert.equal(flowParams({ namespace: ' shop ', pod: '', verdict: 'deny' }, true), 'namespace=shop&verdict=deny&follow=1');
    assert.equal(flowParams({ namespace: '', pod: 'a&b', verdict: '' }, false), 'pod=a%26b');
    assert.equal(flowKey(record()), flowKey(record()));
    assert.notEqual(flowKey(record()), flowKey(record({ end: '2026-01-02T03:04:06.000Z' })));
  });
});
