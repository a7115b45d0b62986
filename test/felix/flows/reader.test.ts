// The flow reader on a real kernel: a queue longer than one read (2,048 conntrack events) is read
// on at once, not one read a rest, so the rest between reads never caps the events a second.
import assert from 'node:assert/strict';
import type { ConntrackEvent } from '../../../felix/flows/conntrack-event.js';
import { FlowReader } from '../../../felix/flows/reader.js';
import { Lab, type Netns } from '../../support/netns.js';
import { waitFor } from '../../support/wait.js';

/** More than twice one read's conntrack events. */
const FLOWS = 5_000;
const REST_MS = 400;

// One UDP datagram to each of FLOWS ports of the loopback: FLOWS conntrack entries.
const SEND = `const s=require('node:dgram').createSocket('udp4');let n=0;const b=Buffer.from('x');
const go=()=>{for(let i=0;i<500&&n<${FLOWS};i++,n++)s.send(b,20000+n,'127.0.0.1');if(n<${FLOWS})setImmediate(go);else setTimeout(()=>process.exit(0),100)};go();`;

describe('felix/flows FlowReader on a real kernel', function () {
  this.timeout(30_000);
  const lab = new Lab({ tag: 'frd' });
  let ns: Netns;
  let reader: FlowReader | undefined;
  const events: ConntrackEvent[] = [];
  const count = (kind: ConntrackEvent['kind']) => events.filter((e) => e.kind === kind).length;

  before(async () => {
    ns = await lab.namespace('n');
    // A rule that looks at conntrack has the namespace track its connections.
    await ns.run(['nft', '-f', '-'], {
      input: 'table ip t {\n chain o {\n  type filter hook output priority 0; ct state new counter\n }\n}\n',
    });
    reader = await FlowReader.open(
      { netns: `/var/run/netns/${ns.name}`, group: 23, batchMs: REST_MS },
      (e) => events.push(e),
      () => undefined,
    );
  });
  after(async () => {
    reader?.close();
    await lab.destroy();
  });

  it('a queue of more events than one read takes is all read after one rest, none lost', async () => {
    await ns.run(['node', '-e', SEND]);
    await waitFor(() => count('new'), { what: 'the NEWs of the datagrams', until: (n) => n >= FLOWS, timeoutMs: 10_000, intervalMs: 10 });
    // The reader has just read and rests now: the flush queues a DESTROY for each entry at once.
    const flushed = Date.now();
    await ns.run(['conntrack', '-F']);
    await waitFor(() => count('destroy'), {
      what: 'the DESTROYs of the flush',
      until: (n) => n >= FLOWS,
      timeoutMs: 10_000,
      intervalMs: 10,
    });
    const took = Date.now() - flushed;
    // One read a rest would take three rests (2,048 events a read); this, the one it was in.
    assert.ok(took < 2 * REST_MS, `${FLOWS} DESTROYs read ${took} ms after the flush, with a rest of ${REST_MS} ms`);
    assert.equal(reader!.stats.lost, 0, 'the kernel dropped events');
    assert.equal(count('destroy'), FLOWS, 'a DESTROY for each entry');
  });
});
