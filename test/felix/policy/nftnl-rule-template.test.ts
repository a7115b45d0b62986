// A rule written from its shape's template is the bytes its own compile gives, and a shape whose
// bytes depend on its addresses otherwise than as four address bytes gets no template.
import assert from 'node:assert/strict';
import { NFPROTO_INET } from '../../../felix/netlink/nf-constants.js';
import { MessageWriter } from '../../../felix/netlink/writer.js';
import { writeRule } from '../../../felix/policy/nftnl-rule.js';
import { ruleExpressionsOf, templatedExpressions } from '../../../felix/policy/nftnl-rule-template.js';

/** The rule's expressions compiled from its text, as writeRule writes them. */
function compiled(expr: string): Buffer | undefined {
  const w = new MessageWriter(1);
  writeRule(w, NFPROTO_INET, 'podroute', 'c', expr, '', () => 1);
  return ruleExpressionsOf(w);
}

describe('felix/policy nftnl rule templates', () => {
  it('gives each rule of a shape the bytes its own compile gives', () => {
    const shapes = [
      (a: string, _b: string) => `ip daddr ${a} ip saddr != @svc-cluster-v4 jump svc-mark-masq`,
      (a: string, b: string) => `ip saddr ${a} ip daddr ${b} tcp dport 80 counter accept`,
      (a: string, b: string) => `ip daddr ${a} meta l4proto tcp dnat ip to ${b}:8080`,
      (a: string, b: string) => `ip saddr 10.0.0.0/8 ip daddr ${a} ip saddr != ${b} drop`,
    ];
    const addresses = ['10.96.0.1', '10.96.36.12', '0.0.0.0', '255.255.255.255', '198.51.100.1', '203.0.113.2', '1.2.3.4'];
    let templated = 0;
    for (const shape of shapes)
      for (const a of addresses)
        for (const b of addresses) {
          const expr = shape(a, b);
          const got = templatedExpressions(NFPROTO_INET, expr, compiled);
          const want = compiled(expr);
          if (got === undefined) continue;
          templated++;
          assert.ok(want && got.equals(want), `${expr}:\n${got.toString('hex')}\n${want?.toString('hex')}`);
        }
    // But for the seven DNATs to 198.51.100.1:8080 (not an address place, as a port follows): that
    // shape holds a stand-in address itself, so its stand-ins cannot be told apart, and it is compiled.
    assert.equal(templated, shapes.length * addresses.length ** 2 - addresses.length, 'every other rule of these shapes from its template');
  });

  it('leaves to the compile a rule whose address is text, not an address, has anonymous sets, or is no address', () => {
    for (const expr of [
      'ip daddr 10.0.0.1 log prefix "to 10.0.0.1 " accept',
      'ip daddr { 10.0.0.1, 10.0.0.2 } accept',
      'ip daddr 10.0.0.256 accept',
      'ip daddr 010.0.0.1 accept',
      'tcp dport 80 accept',
    ])
      assert.equal(templatedExpressions(NFPROTO_INET, expr, compiled), undefined, `${expr} is compiled from its text`);
  });
});
