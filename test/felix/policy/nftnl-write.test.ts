// The netlink writer's shortcuts give the bytes the plain path gives: a rule whose statements
// were already encoded in the batch or an earlier one is copied, a batch is sized from its operations, and the
// elements of the sets and maps a batch creates follow its rules.
import assert from 'node:assert/strict';
import type { NftOp } from '../../../felix/index.js';
import { MessageWriter } from '../../../felix/netlink/writer.js';
import {
  NFPROTO_INET,
  NFT_MSG_DELRULE,
  NFT_MSG_DELSET,
  NFT_MSG_DELSETELEM,
  NFT_MSG_NEWCHAIN,
  NFT_MSG_NEWRULE,
  NFT_MSG_NEWSET,
  NFT_MSG_NEWSETELEM,
  NFT_MSG_NEWTABLE,
} from '../../../felix/netlink/nf-constants.js';
import { writeRule } from '../../../felix/policy/nftnl-rule.js';
import { knownExpressions } from '../../../felix/policy/nftnl-rule-bytes.js';
import { batchBytes, writeOps } from '../../../felix/policy/nftnl-write.js';

/** Each message of `w` without its netlink header (length, type and flags stay; the sequence number goes). */
function messages(w: MessageWriter): Buffer[] {
  return w.starts.map((s, i) => {
    const end = i + 1 < w.starts.length ? w.starts[i + 1]! : w.len;
    const m = Buffer.from(w.buf.subarray(s, end));
    m.writeUInt32LE(0, 8);
    return m;
  });
}

/** The batch's messages are the rules' written alone, each with the set id it had in the batch (anonymous sets numbered from 1). */
function assertWrittenAsAlone(w: MessageWriter, ops: readonly NftOp[]): void {
  const alone = new MessageWriter(1);
  let id = 1;
  for (const op of ops) if (op.kind === 'add rule') writeRule(alone, NFPROTO_INET, 'podroute', op.chain, op.expr, op.comment, () => id++);
  const got = messages(w);
  const want = messages(alone);
  assert.equal(got.length, want.length, 'as many messages');
  for (const [i, m] of got.entries())
    assert.ok(m.equals(want[i]!), `message ${i} differs:\n${m.toString('hex')}\n${want[i]!.toString('hex')}`);
}

describe('felix/policy nftnl writer', () => {
  const plain = 'ip daddr 10.96.0.1 tcp dport 80 counter accept';
  const anonymous = 'tcp dport { 80, 1000-2600, 8080 } counter accept';
  const rule = (expr: string, comment: string): NftOp => ({ kind: 'add rule', chain: 'c', expr, comment });

  it('writes a repeated rule, with or without anonymous sets, as each alone is written', () => {
    const ops = [rule(plain, 'a|1'), rule(anonymous, 'b|2'), rule(plain, 'c|3'), rule(anonymous, ''), rule(plain, '')];
    const w = new MessageWriter(1);
    writeOps(w, NFPROTO_INET, 'podroute', ops, () => undefined);
    assertWrittenAsAlone(w, ops);
  });

  it('writes a rule an earlier batch compiled from the bytes kept, as it is written alone', () => {
    const kept = 'meta mark & 0x00100000 == 0x00000000 jump pi-kept-writer-test';
    const ops = [rule(kept, 'a|1'), rule(anonymous, 'b|2'), rule(plain, 'c|3')];
    assert.equal(knownExpressions(NFPROTO_INET, kept), undefined, 'not kept before any batch wrote it');
    writeOps(new MessageWriter(1), NFPROTO_INET, 'podroute', ops, () => undefined);
    assert.ok(knownExpressions(NFPROTO_INET, kept), 'kept once a batch compiled it');
    assert.equal(
      knownExpressions(NFPROTO_INET, anonymous),
      undefined,
      'a rule with anonymous sets is not kept (their ids are the batch’s)',
    );
    const w = new MessageWriter(1);
    writeOps(w, NFPROTO_INET, 'podroute', ops, () => undefined);
    assertWrittenAsAlone(w, ops);
  });

  it('sizes a batch from its operations, so that writing it does not grow the buffer', () => {
    const elements = Array.from({ length: 2000 }, (_, i) => ({ key: `10.96.${i >> 8}.${i & 255} . tcp . 80`, verdict: `goto svc-${i}` }));
    const ops: NftOp[] = [
      { kind: 'add table' },
      ...elements.map((e): NftOp => ({ kind: 'add chain', chain: e.verdict.slice(5) })),
      { kind: 'add map', map: 'm', type: 'ipv4_addr . inet_proto . inet_service', elements },
      ...elements.map((_, i) => rule(`ip daddr 10.96.${i >> 8}.${i & 255} counter accept`, `r${i}|0123456789ab`)),
    ];
    const size = batchBytes(ops);
    const w = new MessageWriter(1, size);
    writeOps(w, NFPROTO_INET, 'podroute', ops, () => undefined);
    assert.equal(w.buf.length, size, `the batch of ${w.len} bytes outgrew the ${size} estimated`);
    assert.ok(size < 4 * w.len, `${size} bytes reserved for a batch of ${w.len}`);
  });

  /** Each message's nf_tables type (NFT_MSG_*) and the operation it was written for. */
  const written = (ops: NftOp[]): [number, number][] => {
    const w = new MessageWriter(1);
    const opOf = writeOps(w, NFPROTO_INET, 'podroute', ops, (s) =>
      s === 'old' ? { type: 'ipv4_addr', interval: false, map: false } : undefined,
    );
    assert.equal(opOf.length, w.count, 'an operation for each message');
    return w.starts.map((s, i) => [w.buf.readUInt16LE(s + 4) & 0xff, opOf[i]!]);
  };

  it('writes the elements of a set or map the batch creates after its rules, then the element operations on it, in order', () => {
    const ops: NftOp[] = [
      { kind: 'add table' },
      { kind: 'add chain', chain: 'to' },
      { kind: 'add map', map: 'm', type: 'ipv4_addr', elements: [{ key: '10.0.0.1', verdict: 'goto to' }] },
      { kind: 'add set', set: 's', type: 'ipv4_addr', interval: false, elements: ['10.0.0.2'] },
      { kind: 'add element', set: 'old', elements: ['10.0.0.3'] },
      rule('ip daddr 10.0.0.9 accept', ''),
      { kind: 'delete map element', map: 'm', keys: ['10.0.0.1'] },
      rule('ip saddr @s accept', ''),
      { kind: 'add element', set: 's', elements: ['10.0.0.4'] },
    ];
    assert.deepEqual(written(ops), [
      [NFT_MSG_NEWTABLE, 0],
      [NFT_MSG_NEWCHAIN, 1],
      [NFT_MSG_NEWSET, 2],
      [NFT_MSG_NEWSET, 3],
      // A set the batch did not create: its elements stay where they were.
      [NFT_MSG_NEWSETELEM, 4],
      [NFT_MSG_NEWRULE, 5],
      [NFT_MSG_NEWRULE, 7],
      [NFT_MSG_NEWSETELEM, 2],
      [NFT_MSG_NEWSETELEM, 3],
      [NFT_MSG_DELSETELEM, 6],
      [NFT_MSG_NEWSETELEM, 8],
    ]);
  });

  it('writes the elements of a set the batch creates and then deletes before its deletion', () => {
    const ops: NftOp[] = [
      { kind: 'add set', set: 's', type: 'ipv4_addr', interval: false, elements: ['10.0.0.2'] },
      rule('ip saddr @s accept', ''),
      { kind: 'flush chain', chain: 'c' },
      { kind: 'delete set', set: 's' },
    ];
    assert.deepEqual(written(ops), [
      [NFT_MSG_NEWSET, 0],
      [NFT_MSG_NEWRULE, 1],
      [NFT_MSG_DELRULE, 2],
      [NFT_MSG_NEWSETELEM, 0],
      [NFT_MSG_DELSET, 3],
    ]);
  });
});
