// The statements felix's flow log rules end in: a packet handed to nfnetlink_log with a prefix
// naming the rule that decides it, limited in the kernel. A Deny's (and a tier's closing drop's)
// comes in two: one for a packet a Service's DNAT sent (prefix code `DN`) and one for the rest,
// so that the agent can name the Service of a refused packet, which reaches policy with the
// endpoint's address and port (this kernel gives a logged packet no conntrack entry to read the
// address the client used from). With `ctMark`, an Allow writes its number into the
// connection's mark instead of logging, and a staged rule sets the mask's staged bit as it logs
// (rule-marks.ts).

import type { FlowLogRules } from '../policy/compile-chains.js';
import { type DecisionCode, decisionPrefix } from './decisions.js';
import { ctMarkLayout, ruleMarkNumber } from './rule-marks.js';

const hex32 = (n: number): string => `0x${(n >>> 0).toString(16).padStart(8, '0')}`;

/** The statements, each to follow the deciding rule's own match in a rule of its own before it. */
export function flowLogStatements(f: FlowLogRules, code: DecisionCode, id: string): string[] {
  const log = (c: DecisionCode) =>
    `limit rate ${f.ratePerSecond}/second burst ${f.burst} packets log prefix "${decisionPrefix(c, id)}" group ${f.group}`;
  if (f.ctMark !== undefined && (code === 'A' || code === 'SA' || code === 'SD' || code === 'SP')) {
    const layout = ctMarkLayout(f.ctMark);
    if (code !== 'A') return [`ct mark set ct mark | ${hex32(layout.staged)} ${log(code)}`];
    const n = ruleMarkNumber(id, layout);
    // The staged bit stays: a staged rule may have met the packet before this one.
    if (n !== undefined) return [`ct mark set ct mark & ${hex32(~layout.numberBits)} | ${hex32(n * 2 ** layout.shift)}`];
  }
  if (code !== 'D') return [log(code)];
  return [`ct status dnat ${log('DN')}`, `ct status & dnat == 0 ${log('D')}`];
}
