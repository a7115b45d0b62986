// The route watch on the kernel: woken by its socket the moment the kernel queues a notice (no
// timer between the change and felix hearing of it), and deaf to felix's own writes.
import assert from 'node:assert/strict';
import { loadNative, nativeLoadError, PODROUTE_PROTOCOL } from '../../../felix/index.js';
import { watchRoutes } from '../../../felix/netlink/watch.js';
import { Namespaces, sh } from '../netns.js';

describe('felix route watch (rtnetlink)', function () {
  this.timeout(20_000);
  const spaces = new Namespaces('fxw');
  let ns = '';
  let stop: (() => void) | undefined;

  before(() => {
    if (!loadNative()) throw new Error(nativeLoadError());
    ns = spaces.add('a');
    sh(
      `ip -n ${ns} link add eth0 type veth peer name eth0p && ip -n ${ns} link set eth0 up && ip -n ${ns} link set eth0p up && ip -n ${ns} addr add 10.0.1.5/24 dev eth0`,
    );
  });
  after(() => {
    stop?.();
    spaces.cleanup();
  });

  it('hears a route change within a few milliseconds of the kernel making it, and ignores its own protocol', async () => {
    let heard = 0;
    let wake: (() => void) | undefined;
    const w = watchRoutes({ netns: spaces.path(ns), protocol: PODROUTE_PROTOCOL }, () => {
      heard++;
      wake?.();
    });
    assert.ok(w, 'the addon can watch a socket');
    stop = w;

    // A timer polling every 250 ms would make the mean wait ~125 ms; the socket's wake-up is one turn of the loop.
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      const seen = new Promise<void>((resolve) => {
        wake = resolve;
      });
      sh(`ip -n ${ns} route ${i % 2 ? 'del' : 'add'} 10.90.0.0/16 via 10.0.1.1 dev eth0`);
      const t0 = performance.now();
      const late = setTimeout(() => wake?.(), 1_000);
      await seen;
      clearTimeout(late);
      waits.push(performance.now() - t0);
    }
    assert.equal(heard, 5, `one notice per change (waits ${waits.map((x) => x.toFixed(1)).join(', ')} ms)`);
    const worst = Math.max(...waits);
    assert.ok(worst < 50, `every change heard within 50 ms, worst ${worst.toFixed(1)} ms (${waits.map((x) => x.toFixed(1)).join(', ')})`);

    // felix's own write (its protocol) is not news.
    heard = 0;
    wake = undefined;
    sh(`ip -n ${ns} route add 10.91.0.0/16 via 10.0.1.1 dev eth0 proto ${PODROUTE_PROTOCOL}`);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(heard, 0, "felix's own route is not a change to resolve through");
  });
});
