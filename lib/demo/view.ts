// The demo's screen: nodes, sessions, pods and each node's routes as `ip route` prints them,
// under a progress line. Pure: a snapshot and a header in, lines out.
import type { DemoEvent } from './cluster.js';
import type { Progress, Snapshot } from './snapshot.js';

export interface ViewHeader {
  title: string;
  /** "phase 2/4: route reflector (…)". */
  phase: string;
  /** Seconds since the phase began. */
  elapsed: number;
  notes: readonly string[];
  events: readonly DemoEvent[];
}

function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(head), ...rows.map(line)];
}

export function uptime(s: number): string {
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function progressLine(p: Progress, elapsed: number): string {
  const extra = [
    p.sessionsExtra ? `${p.sessionsExtra} sessions to close` : '',
    p.routesExtra ? `${p.routesExtra} routes to withdraw` : '',
  ].filter(Boolean);
  const counts =
    `${p.sessionsEstablished}/${p.sessionsExpected} sessions established, ` +
    `${p.routesProgrammed}/${p.routesExpected} routes programmed${extra.length ? `, ${extra.join(', ')}` : ''}`;
  return p.converged ? `converged in ${elapsed.toFixed(1)} s: ${counts}` : `converging: ${counts} (${elapsed.toFixed(1)} s)`;
}

function time(t: number): string {
  return new Date(t).toISOString().slice(11, 19);
}

/** Blocks of lines side by side, as many as fit in `width`; one under the other without a width. */
function columns(blocks: string[][], width: number | undefined): string[] {
  if (!width) return blocks.flat();
  const colWidth = Math.max(...blocks.flat().map((l) => l.length)) + 3;
  const perRow = Math.max(1, Math.floor((width + 3) / colWidth));
  const out: string[] = [];
  for (let i = 0; i < blocks.length; i += perRow) {
    const row = blocks.slice(i, i + perRow);
    const height = Math.max(...row.map((b) => b.length));
    for (let l = 0; l < height; l++)
      out.push(
        row
          .map((b) => (b[l] ?? '').padEnd(colWidth))
          .join('')
          .trimEnd(),
      );
  }
  return out;
}

/** A table's rows in side-by-side columns, each under its own header, when the width allows. */
function tableColumns(lines: string[], width: number | undefined): string[] {
  const [head, ...body] = lines;
  if (!width || body.length < 2) return lines;
  const w = Math.max(...lines.map((l) => l.length)) + 3;
  const perRow = Math.min(body.length, Math.max(1, Math.floor((width + 3) / w)));
  if (perRow === 1) return lines;
  const per = Math.ceil(body.length / perRow);
  const chunks: string[][] = [];
  for (let i = 0; i < body.length; i += per) chunks.push([head!, ...body.slice(i, i + per)]);
  return columns(chunks, width);
}

/** The view; with a width (a terminal's), each node's routes stand side by side. */
export function renderView(s: Snapshot, h: ViewHeader, width?: number): string[] {
  const out: string[] = [h.title, h.phase, progressLine(s.progress, h.elapsed), ''];
  out.push(
    'NODES',
    ...table(
      ['NAME', 'ADDRESS', 'AS', 'ROLE', 'PODS', 'BLOCKS'],
      s.nodes.map((n) => [
        n.name,
        n.address,
        String(n.asn),
        n.clusterId ? `reflector ${n.clusterId}` : 'node',
        String(s.pods.filter((p) => p.node === n.name).length),
        n.blocks.join(' ') || '-',
      ]),
    ),
    '',
  );
  const sessionRows = s.nodes.flatMap((n) =>
    n.sessions.map((x) => [
      n.name,
      `${x.peer}${x.peerName ? ` (${x.peerName})` : ''}`,
      x.type,
      x.state,
      x.state === 'Established' ? uptime(x.uptime) : '-',
      String(x.received),
      String(x.sent),
    ]),
  );
  if (s.tor)
    for (const x of s.tor.sessions)
      sessionRows.push([
        'tor',
        `${x.peer}${x.peerName ? ` (${x.peerName})` : ''}`,
        x.type,
        x.state,
        x.state === 'Established' ? uptime(x.uptime) : '-',
        String(x.received),
        String(x.sent),
      ]);
  out.push('SESSIONS', ...tableColumns(table(['NODE', 'PEER', 'TYPE', 'STATE', 'UPTIME', 'PFX RCVD', 'PFX SENT'], sessionRows), width), '');
  out.push(
    'PODS',
    ...tableColumns(
      table(
        ['NAME', 'NODE', 'IP', 'INTERFACE'],
        s.pods.map((p) => [p.name, p.node, p.ip, p.interfaceName]),
      ),
      width,
    ),
    '',
  );
  out.push("ROUTES (each node's dataplane, as `ip route` prints it; proto 81 is podroute)");
  const blocks = s.nodes.map((n) => [
    `${n.name}:`,
    ...n.routes.map((r) => `  ${r}${n.expected.includes(r) ? '' : '   <- to withdraw'}`),
    ...n.expected.filter((r) => !n.routes.includes(r)).map((r) => `  (pending) ${r}`),
  ]);
  out.push(...columns(blocks, width));
  if (s.tor) {
    out.push(`tor (AS ${s.tor.asn}, ${s.tor.address}), BGP table:`);
    for (const r of s.tor.routes) out.push(`  ${r.prefix} via ${r.nextHop} as-path ${r.asPath}`);
  }
  out.push('');
  if (h.notes.length) out.push(...h.notes.map((n) => `note: ${n}`), '');
  if (h.events.length) {
    out.push('EVENTS (latest)');
    for (const e of h.events) {
      const f = Object.entries(e.fields)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(' ');
      out.push(`  ${time(e.time)} ${e.event} ${f}`);
    }
  }
  return out;
}
