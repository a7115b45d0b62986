// Where the cluster picture puts things (pure: no DOM, tested in Node). Peers outside the
// cluster on top, route reflectors under them, the other nodes below in rows; each row centred.
// A session is a line between two boxes, its class its state (this node's) or unknown.
import type { ClusterPicture } from '../api.js';
import { stateClass } from './format.js';

export interface Box {
  /** A node's name, or a peer's id. */
  id: string;
  kind: 'node' | 'reflector' | 'tor' | 'router';
  self: boolean;
  x: number;
  y: number;
  title: string;
  subtitle: string;
}

export interface Line {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
  /** The control point of a line bent around the boxes a straight one would cross. */
  bend?: { x: number; y: number };
  cls: string;
  /** Says who, what kind and which state, as a tooltip. */
  title: string;
}

export interface Layout {
  width: number;
  height: number;
  boxes: Box[];
  lines: Line[];
}

export const BOX_W = 150;
export const BOX_H = 44;
const GAP_X = 30;
const GAP_Y = 80;
const MARGIN = 20;
/** Nodes per row. */
const ROW = 8;

export function layout(p: ClusterPicture): Layout {
  const rows: Omit<Box, 'x' | 'y'>[][] = [];
  const peers = p.peers.map((x) => ({
    id: x.id,
    kind: x.role,
    self: false,
    title: x.name,
    subtitle: `${x.role === 'tor' ? 'ToR' : 'router'} ${x.address}${x.asn === undefined ? '' : ` AS ${x.asn}`}`,
  }));
  const nodeBox = (n: ClusterPicture['nodes'][number]) => ({
    id: n.name,
    kind: n.reflector ? ('reflector' as const) : ('node' as const),
    self: n.name === p.self,
    title: n.name,
    subtitle: `${n.reflector ? 'reflector ' : ''}${n.ipv4 ?? n.ipv6 ?? ''}`,
  });
  const reflectors = p.nodes.filter((n) => n.reflector).map(nodeBox);
  const others = p.nodes.filter((n) => !n.reflector).map(nodeBox);
  for (const group of [peers, reflectors]) for (let i = 0; i < group.length; i += ROW) rows.push(group.slice(i, i + ROW));
  for (let i = 0; i < others.length; i += ROW) rows.push(others.slice(i, i + ROW));

  const widest = Math.max(1, ...rows.map((r) => r.length));
  // Never narrower than three boxes: a line bent around a column of boxes needs the room.
  const width = MARGIN * 2 + Math.max(3, widest) * BOX_W + (Math.max(3, widest) - 1) * GAP_X;
  const boxes: Box[] = [];
  rows.forEach((r, i) => {
    const rowWidth = r.length * BOX_W + (r.length - 1) * GAP_X;
    const left = (width - rowWidth) / 2;
    r.forEach((b, j) => {
      boxes.push({ ...b, x: left + j * (BOX_W + GAP_X), y: MARGIN + i * (BOX_H + GAP_Y) });
    });
  });
  const height = MARGIN * 2 + Math.max(1, rows.length) * BOX_H + Math.max(0, rows.length - 1) * GAP_Y;

  const at = new Map(boxes.map((b) => [b.id, b]));
  const lines: Line[] = [];
  for (const s of p.sessions) {
    const a = at.get(s.a);
    const b = at.get(s.b);
    if (!a || !b) continue;
    const ends = { x1: a.x + BOX_W / 2, y1: a.y + BOX_H / 2, x2: b.x + BOX_W / 2, y2: b.y + BOX_H / 2 };
    const bend = bendAround(
      ends,
      boxes.filter((x) => x !== a && x !== b),
    );
    lines.push({
      ...ends,
      ...(bend ? { bend } : {}),
      cls: stateClass(s.state),
      title: `${s.a} – ${s.b} (${s.address}, ${s.type}): ${s.state ?? 'state known to their agents only'}`,
    });
  }
  return { width, height, boxes, lines };
}

type Ends = Pick<Line, 'x1' | 'y1' | 'x2' | 'y2'>;

/** Points along a quadratic curve (a straight line when the control point is its middle). */
function along(e: Ends, c: { x: number; y: number }, steps = 24): { x: number; y: number }[] {
  const out = [];
  for (let i = 1; i < steps; i++) {
    const t = i / steps;
    const u = 1 - t;
    out.push({ x: u * u * e.x1 + 2 * u * t * c.x + t * t * e.x2, y: u * u * e.y1 + 2 * u * t * c.y + t * t * e.y2 });
  }
  return out;
}

function crosses(points: { x: number; y: number }[], boxes: readonly Box[]): boolean {
  return points.some((p) => boxes.some((b) => p.x >= b.x - 4 && p.x <= b.x + BOX_W + 4 && p.y >= b.y - 4 && p.y <= b.y + BOX_H + 4));
}

/**
 * A line that would pass through another box (a node between a ToR and the node it serves)
 * bends sideways, by the least of a few widths that clears every box; undefined: straight.
 */
function bendAround(e: Ends, others: readonly Box[]): { x: number; y: number } | undefined {
  const mid = { x: (e.x1 + e.x2) / 2, y: (e.y1 + e.y2) / 2 };
  if (!crosses(along(e, mid), others)) return undefined;
  const length = Math.hypot(e.x2 - e.x1, e.y2 - e.y1) || 1;
  // The unit normal of the line: which way is sideways.
  const nx = -(e.y2 - e.y1) / length;
  const ny = (e.x2 - e.x1) / length;
  for (const d of [BOX_W, BOX_W * 1.5, BOX_W * 2, -BOX_W, -BOX_W * 1.5, -BOX_W * 2]) {
    const c = { x: mid.x + nx * d, y: mid.y + ny * d };
    if (!crosses(along(e, c), others)) return c;
  }
  return { x: mid.x + nx * BOX_W, y: mid.y + ny * BOX_W };
}
