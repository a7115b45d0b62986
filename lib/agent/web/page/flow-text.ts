// Flow records as text, and the stream's lines (pure: no DOM, tested in Node). Records come
// from the dataplane through the agent; a field missing or of another type shows as empty
// rather than breaking the table.
import type { FlowEndpoint, FlowRecord } from '../api.js';

export interface FlowFilter {
  namespace: string;
  pod: string;
  verdict: string;
}

/** The query string of `/api/flows` for a filter. */
export function flowParams(f: FlowFilter, follow: boolean): string {
  const p = new URLSearchParams();
  if (f.namespace.trim()) p.set('namespace', f.namespace.trim());
  if (f.pod.trim()) p.set('pod', f.pod.trim());
  if (f.verdict) p.set('verdict', f.verdict);
  if (follow) p.set('follow', '1');
  return p.toString();
}

/** "ns/pod:port", else "ip:port"; a Service it was sent to after "via". */
export function endpointText(e: FlowEndpoint | undefined): string {
  if (!e || typeof e !== 'object') return '';
  const port = typeof e.port === 'number' ? `:${e.port}` : '';
  const who = e.pod ? `${e.namespace ?? ''}/${e.pod}` : String(e.ip ?? '');
  const service = e.service ? ` via ${e.service}${typeof e.servicePort === 'number' ? `:${e.servicePort}` : ''}` : '';
  return `${who}${port}${service}`;
}

export function policyText(r: FlowRecord): string {
  const p = r.policy;
  if (!p || typeof p !== 'object') return r.verdict === 'deny' ? 'no policy allowed it' : '';
  return `${p.tier}/${p.name} ${p.rule}`;
}

/** What each staged policy would have decided. */
export function stagedText(r: FlowRecord): string {
  return (r.staged ?? []).map((s) => `${s.tier}/${s.name} ${s.rule} ${s.action}`).join('; ');
}

/** The same record seen twice (the list and the stream overlap) counts once. */
export function flowKey(r: FlowRecord): string {
  return JSON.stringify(r);
}

/** Newline-delimited JSON: the complete lines of what has arrived, and the rest to wait on. */
export function splitLines(buffered: string): { lines: string[]; rest: string } {
  const parts = buffered.split('\n');
  const rest = parts.pop() ?? '';
  return { lines: parts.map((l) => l.trim()).filter(Boolean), rest };
}
