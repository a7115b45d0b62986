// A table's sets, elements and rules as the kernel reports them over netlink, attribute by
// attribute in hex, without what differs between two tables of the same content (the table's
// name and handle, the rules' and sets' handles): two writers of one table compare byte for
// byte, user data (a set's typeof, a rule's comment) included; a set's elements sorted.
import { NLM_F_DUMP, NLM_F_REQUEST } from '../../felix/netlink/constants.js';
import {
  NETLINK_NETFILTER,
  NFPROTO_INET,
  NFT_MSG_GETRULE,
  NFT_MSG_GETSET,
  NFT_MSG_GETSETELEM,
  NFT_MSG_NEWRULE,
  NFT_MSG_NEWSET,
  NFT_MSG_NEWSETELEM,
  NFTA_SET_ELEM_LIST_ELEMENTS,
  NFTA_SET_ELEM_LIST_SET,
  NFTA_SET_NAME,
  nftMsg,
} from '../../felix/netlink/nf-constants.js';
import { attrs, attrText, nfAttrsStart, nfBegin } from '../../felix/netlink/nf-message.js';
import { NetlinkSocket } from '../../felix/netlink/socket.js';
import { forEachAttr } from '../../felix/netlink/writer.js';

// NFTA_*_TABLE is attribute 1 of a set, a rule and an element list; the handles differ per table.
const TABLE = 1;
const SKIP: Readonly<Record<string, readonly number[]>> = {
  set: [TABLE, 16 /* NFTA_SET_HANDLE */],
  rule: [TABLE, 3 /* NFTA_RULE_HANDLE */, 6 /* NFTA_RULE_POSITION */],
};

function lines(kind: string, buf: Buffer, from: number, to: number): string {
  const parts: string[] = [];
  forEachAttr(buf, from, to, (t, a, b) => {
    if (!SKIP[kind].includes(t)) parts.push(`${t}=${buf.toString('hex', a, b)}`);
  });
  return parts.join(' ');
}

/** The table's sets (each followed by its elements, sorted), then its rules in order, one line each. */
export function rawTable(netns: string, table: string): string[] {
  const sock = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: `/var/run/netns/${netns}` });
  try {
    const out: string[] = [];
    const w = sock.writer(512);
    nfBegin(w, nftMsg(NFT_MSG_GETSET), NLM_F_REQUEST | NLM_F_DUMP, NFPROTO_INET);
    w.attrString(TABLE, table);
    w.end();
    const names: string[] = [];
    sock.dump(w, (type, buf, start, end) => {
      if (type !== nftMsg(NFT_MSG_NEWSET)) return;
      const from = nfAttrsStart(start);
      const a = attrs(buf, from, end);
      if (attrText(buf, a.get(TABLE)) !== table) return;
      names.push(attrText(buf, a.get(NFTA_SET_NAME)) ?? '');
      out.push(`set ${lines('set', buf, from, end)}`);
    });
    // Each element on its own line, sorted: a hash set dumps them in its own order.
    for (const name of names) {
      const w2 = sock.writer(512);
      nfBegin(w2, nftMsg(NFT_MSG_GETSETELEM), NLM_F_REQUEST | NLM_F_DUMP, NFPROTO_INET);
      w2.attrString(TABLE, table);
      w2.attrString(NFTA_SET_ELEM_LIST_SET, name);
      w2.end();
      const elements: string[] = [];
      sock.dump(w2, (type, buf, start, end) => {
        if (type !== nftMsg(NFT_MSG_NEWSETELEM)) return;
        const list = attrs(buf, nfAttrsStart(start), end).get(NFTA_SET_ELEM_LIST_ELEMENTS);
        if (list) forEachAttr(buf, list[0], list[1], (_t, a, b) => elements.push(`element ${name} ${buf.toString('hex', a, b)}`));
      });
      out.push(...elements.sort());
    }
    const r = sock.writer(512);
    nfBegin(r, nftMsg(NFT_MSG_GETRULE), NLM_F_REQUEST | NLM_F_DUMP, NFPROTO_INET);
    r.attrString(TABLE, table);
    r.end();
    sock.dump(r, (type, buf, start, end) => {
      const from = nfAttrsStart(start);
      if (type === nftMsg(NFT_MSG_NEWRULE) && attrText(buf, attrs(buf, from, end).get(TABLE)) === table)
        out.push(`rule ${lines('rule', buf, from, end)}`);
    });
    return out;
  } finally {
    sock.close();
  }
}
