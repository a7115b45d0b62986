// The cluster as an SVG picture, and its nodes as a table with their labels.
import type { ClusterPicture } from '../api.js';
import { byId, el, fillBody, row, svg } from './dom.js';
import { labelTexts } from './format.js';
import { BOX_H, BOX_W, layout } from './layout.js';

export function drawCluster(p: ClusterPicture): void {
  const l = layout(p);
  const picture = svg('svg', { viewBox: `0 0 ${l.width} ${l.height}`, width: l.width, height: l.height, role: 'img' });
  picture.appendChild(svg('title', {}, `The cluster seen from ${p.self}`));
  // Lines first, so boxes sit over their ends.
  for (const x of l.lines) {
    const d = x.bend ? `M ${x.x1} ${x.y1} Q ${x.bend.x} ${x.bend.y} ${x.x2} ${x.y2}` : `M ${x.x1} ${x.y1} L ${x.x2} ${x.y2}`;
    picture.appendChild(svg('path', { d, class: `session ${x.cls}` }, svg('title', {}, x.title)));
  }
  const labels = new Map(p.nodes.map((n) => [n.name, labelTexts(n.labels)]));
  for (const b of l.boxes) {
    const tip = [b.title, b.subtitle, ...(labels.get(b.id) ?? [])].join('\n');
    const g = svg('g', { class: `box-group ${b.kind}`, 'data-id': b.id });
    g.appendChild(svg('title', {}, tip));
    g.appendChild(svg('rect', { x: b.x, y: b.y, width: BOX_W, height: BOX_H, rx: 6, class: `box ${b.kind}${b.self ? ' self' : ''}` }));
    g.appendChild(svg('text', { x: b.x + 8, y: b.y + 18 }, clip(b.title, 22)));
    g.appendChild(svg('text', { x: b.x + 8, y: b.y + 34, class: 'small' }, clip(b.subtitle, 28)));
    picture.appendChild(g);
  }
  byId('cluster').replaceChildren(picture);
  const partial = byId('cluster-partial');
  partial.hidden = !p.partial;
  partial.textContent = p.partial ?? '';

  fillBody(
    'nodes',
    p.nodes.map((n) =>
      row([
        n.name === p.self ? el('strong', {}, n.name) : n.name,
        n.reflector ? `reflector (cluster ID ${n.reflector})` : 'node',
        [n.ipv4, n.ipv6].filter(Boolean).join(' '),
        n.asn,
        el('span', { cls: 'labels' }, ...labelTexts(n.labels).map((t) => el('span', { cls: 'label' }, t))),
      ]),
    ),
  );
}

export function drawLegend(): void {
  byId('cluster-legend').replaceChildren(
    el('span', { cls: 'state-established' }, '— Established'),
    el('span', { cls: 'state-opening' }, '— Connect, Active, OpenSent, OpenConfirm'),
    el('span', { cls: 'state-down' }, '— Idle'),
    el('span', { cls: 'note' }, '┄ another node’s session (its state is known to its own agent)'),
  );
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}
