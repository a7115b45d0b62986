// BFD keeps time while the main thread is busy: podroute's endpoint (its sessions on their own
// thread, as bgpd and the node agent run them) against FRR's bfdd at 100 ms × 3, across a veth
// between two namespaces. The podroute process's main thread is held in a busy loop for 1.5 s,
// five detection times: the session stays Up at both ends. Then bfdd takes the session down
// and up again during such a stall: the main thread hears every change afterwards, in order.
// BFD_STALL_THREAD=main runs the endpoint on the main event loop instead, where both fail.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Lab, type Netns } from '../../support/netns.js';
import type { ManagedProcess } from '../../support/process.js';
import { startBfdd } from '../../support/frr.js';
import { waitFor } from '../../support/wait.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const FRR = '10.95.0.1';
const OURS = '10.95.0.2';
const STALL_MS = 1500;

describe('BFD interop: a busy main thread does not take sessions down (FRR bfdd, 100 ms × 3)', function () {
  this.timeout(120_000);
  let lab: Lab;
  let frrNs: Netns;
  let dir: string;
  let node: ManagedProcess;
  const lines: string[] = [];

  const vtysh = (...commands: string[]) => frrNs.run(['vtysh', '--vty_socket', dir, ...commands.flatMap((c) => ['-c', c])]);
  const frrPeer = async (): Promise<{ status: string; downs: number }> => {
    const peers = JSON.parse(await vtysh('show bfd peers json')) as { peer: string; status: string }[];
    const counters = JSON.parse(await vtysh('show bfd peers counters json')) as { peer: string; 'session-down'?: number }[];
    return {
      status: peers.find((p) => p.peer === OURS)?.status ?? 'none',
      downs: counters.find((p) => p.peer === OURS)?.['session-down'] ?? 0,
    };
  };
  const states = () => lines.filter((l) => l.startsWith('state '));

  before(async () => {
    lab = new Lab({ tag: 'bfdst' });
    const ours = await lab.namespace('pr');
    frrNs = await lab.namespace('frr');
    await lab.link(ours, { v4: `${OURS}/24` }, frrNs, { v4: `${FRR}/24` });
    dir = join(lab.dir, 'frr');
    const peer = ` peer ${OURS} local-address ${FRR}\n  detect-multiplier 3\n  receive-interval 100\n  transmit-interval 100\n !`;
    await startBfdd(frrNs, dir, [peer]);
    node = ours.spawn(
      [
        'node',
        '--import',
        'tsx',
        join(ROOT, 'test/support/bfd-stall-node.ts'),
        process.env.BFD_STALL_THREAD ?? 'worker',
        FRR,
        OURS,
        String(STALL_MS),
      ],
      {
        name: 'podroute-bfd',
        cwd: ROOT,
      },
    );
    node.onOutput((text) => lines.push(...text.split('\n').filter(Boolean)));
    await waitFor(() => states().at(-1), {
      what: 'our session Up',
      until: (l) => l?.startsWith('state ') === true && l.split(' ')[2] === 'Up',
      timeoutMs: 60_000,
      intervalMs: 50,
    });
    await waitFor(async () => (await frrPeer()).status, {
      what: "bfdd's session up",
      until: (s) => s === 'up',
      timeoutMs: 10_000,
      intervalMs: 100,
    });
  });

  after(async () => {
    await lab?.destroy();
  });

  async function stall(): Promise<void> {
    const ends = lines.filter((l) => l === 'stall-end').length;
    node.signal('SIGUSR1');
    await waitFor(() => lines.filter((l) => l === 'stall-end').length, {
      what: 'the stall to end',
      until: (n) => n > ends,
      timeoutMs: 20_000,
      intervalMs: 20,
    });
  }

  it('a main thread busy for 1.5 s (five detection times): the session stays Up at both ends', async () => {
    const before = { frr: await frrPeer(), events: states().length };
    await stall();
    // What the thread would have reported during the stall arrives now, and a little after.
    await new Promise((r) => setTimeout(r, 500));
    const after = await frrPeer();
    assert.deepEqual(states().slice(before.events), [], `no state change on our side: ${lines.join(' | ')}`);
    assert.equal(after.status, 'up', 'bfdd says up');
    assert.equal(after.downs, before.frr.downs, "bfdd's session did not go down during the stall");
  });

  it("bfdd's session going down and up during a stall: the main thread hears each change afterwards, in order", async () => {
    const from = lines.length;
    // Both commands run while our main thread is held: down 200 ms into the stall, up 400 ms later.
    const configure = (what: string) =>
      `vtysh --vty_socket ${dir} -c 'configure terminal' -c bfd -c 'peer ${OURS} local-address ${FRR}' -c '${what}'`;
    const flip = frrNs.run(['sh', '-c', `sleep 0.2; ${configure('shutdown')}; sleep 0.4; ${configure('no shutdown')}`]);
    await stall();
    await flip;
    await waitFor(
      () =>
        lines
          .slice(from)
          .filter((l) => l.startsWith('state '))
          .at(-1),
      {
        what: 'our session Up again',
        until: (l) => l?.split(' ')[2] === 'Up',
        timeoutMs: 15_000,
        intervalMs: 50,
      },
    );
    const seen = lines.slice(from);
    const changes = seen.filter((l) => l.startsWith('state ')).map((l) => l.split(' '));
    assert.ok(
      seen.indexOf('stall-end') < seen.findIndex((l) => l.startsWith('state ')),
      `the changes came after the stall: ${seen.join(' | ')}`,
    );
    assert.deepEqual(changes[0]?.slice(1, 4), ['Up', 'Down', '3'], `first Up → Down, neighbor signaled session down: ${seen.join(' | ')}`);
    for (let i = 1; i < changes.length; i++) {
      assert.equal(changes[i]![1], changes[i - 1]![2], `each change starts where the one before ended: ${seen.join(' | ')}`);
    }
    await waitFor(async () => (await frrPeer()).status, {
      what: "bfdd's session up again",
      until: (s) => s === 'up',
      timeoutMs: 10_000,
      intervalMs: 100,
    });
  });
});
