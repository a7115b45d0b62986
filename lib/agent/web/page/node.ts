// The node's header, its BGP sessions and its routes.
import type { NodeView, RoutesView } from '../api.js';
import { byId, el, fillBody, row, say } from './dom.js';
import { duration, sessionType, stateClass } from './format.js';

export function drawNode(n: NodeView): void {
  say('node-name', n.node);
  document.title = `podroute ${n.node}`;
  const facts = [
    n.address && `IPv4 ${n.address}`,
    n.addressV6 && `IPv6 ${n.addressV6}`,
    `AS ${n.asn}`,
    n.routerId && `router ID ${n.routerId}`,
    n.clusterId && `route reflector, cluster ID ${n.clusterId}`,
    n.ready ? 'ready' : 'not ready',
    n.restarting && 'restarting',
    `routes: ${n.routes.learned} learned, ${n.routes.programmed} programmed${n.routes.failures ? `, ${n.routes.failures} failing` : ''}`,
    `advertises ${n.advertised.blocks.length} block${n.advertised.blocks.length === 1 ? '' : 's'}`,
  ].filter(Boolean);
  say('node-facts', facts.join(' · '));
  fillBody(
    'sessions',
    n.sessions.map((s) =>
      row([
        el('td', { cls: 'mono' }, s.address),
        s.asn,
        sessionType(s.type),
        s.source,
        el('td', { cls: stateClass(s.state) }, s.state),
        el('td', { title: s.since ?? '' }, duration(s.upSeconds)),
        s.prefixesReceived,
        s.prefixesSent,
        s.info === s.state ? '' : s.info,
      ]),
    ),
  );
  if (n.sessions.length === 0) fillBody('sessions', [row([el('td', { cls: 'note' }, 'no sessions')])]);
}

export function drawRoutes(r: RoutesView): void {
  say('bgp-routes-note', r.bgpTotal > r.bgp.length ? `the first ${r.bgp.length} of ${r.bgpTotal}` : routes(r.bgpTotal));
  fillBody(
    'bgp-routes',
    r.bgp.map((x) =>
      row([el('td', { cls: 'mono' }, x.prefix), el('td', { cls: 'mono' }, x.nextHop), x.from, x.asPath, x.stale ? 'stale' : '']),
    ),
  );
  say(
    'programmed-note',
    r.programmedTotal > r.programmed.length ? `the first ${r.programmed.length} of ${r.programmedTotal}` : routes(r.programmedTotal),
  );
  byId('programmed').replaceChildren(...r.programmed.map((x) => el('li', { cls: 'mono' }, x)));
  byId('unresolved-block').hidden = r.unresolved.length === 0;
  fillBody(
    'unresolved',
    r.unresolved.map((u) => row([el('td', { cls: 'mono' }, u.dst), u.reason])),
  );
}

function routes(n: number): string {
  return n === 1 ? '1 route' : `${n} routes`;
}
