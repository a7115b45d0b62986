// A process that writes nf_tables batches and is meant to be killed in the middle, for tests
// of what the kernel keeps when a writer dies. Run as
//   node --import tsx nft-batch-writer.ts <netns> <table> <set> cut|stream <elements per batch>
// cut: BATCH_BEGIN and element additions without BATCH_END, sent, then "sent" on stdout once
//      the kernel has answered what follows it; then it waits (for SIGKILL) with the socket open.
// stream: batches of that many elements each (BATCH_BEGIN, many messages, BATCH_END), one after
//      the other as fast as the kernel takes them, "batch N" on stdout once the kernel has
//      committed the N-th, until killed.
import { NETLINK_NETFILTER, NFPROTO_INET } from '../../felix/netlink/nf-constants.js';
import { batchBegin, batchEnd, getGen } from '../../felix/netlink/nf-message.js';
import { NetlinkSocket } from '../../felix/netlink/socket.js';
import { MessageWriter } from '../../felix/netlink/writer.js';
import { writeOps } from '../../felix/policy/nftnl-write.js';

/** Elements in one message of a batch. */
const PER_MESSAGE = 10;

/** The address of the i-th element written: 10.x.y.z counting up from 10.0.0.1. */
const elementAddress = (i: number): string => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

const [netns, table, set, mode, batchText] = process.argv.slice(2);
const BATCH = Number(batchText);
if (!Number.isInteger(BATCH) || BATCH < 1) {
  process.stderr.write(`elements per batch: ${JSON.stringify(batchText)} is not a whole number above 0\n`);
  process.exit(2);
}
const sock = NetlinkSocket.open({ protocol: NETLINK_NETFILTER, netns: `/var/run/netns/${netns}` });
const kind = () => ({ type: 'ipv4_addr', interval: false, map: false });

/** Sends the batch in `w`, then a generation request, and waits for the kernel's answer to it. */
function send(w: MessageWriter): void {
  const barrier = new MessageWriter(w.seqAfter, 64);
  getGen(barrier);
  const refused = sock.transact(w, barrier, () => undefined);
  if (mode === 'stream' && refused.size) throw new Error(`the kernel refused a batch: ${JSON.stringify([...refused])}`);
}

function additions(w: MessageWriter, from: number, count: number): void {
  const ops = [];
  for (let i = 0; i < count; i += PER_MESSAGE)
    ops.push({
      kind: 'add element' as const,
      set,
      elements: Array.from({ length: Math.min(PER_MESSAGE, count - i) }, (_, j) => elementAddress(from + i + j + 1)),
    });
  writeOps(w, NFPROTO_INET, table, ops, kind);
}

if (mode === 'cut') {
  const w = sock.writer(1 << 16);
  batchBegin(w, 0);
  additions(w, 0, 100);
  // No BATCH_END: the batch is not finished when this process dies.
  send(w);
  process.stdout.write('sent\n');
  setInterval(() => undefined, 60_000);
} else if (mode === 'stream') {
  for (let n = 0; ; n++) {
    const w = sock.writer(1 << 20);
    batchBegin(w, 0);
    additions(w, n * BATCH, BATCH);
    batchEnd(w);
    send(w);
    process.stdout.write(`batch ${n + 1}\n`);
  }
} else {
  process.stderr.write(`mode ${JSON.stringify(mode)}: cut or stream\n`);
  process.exit(2);
}
