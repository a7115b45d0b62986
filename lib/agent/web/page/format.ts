// Text and classes for what the page shows (pure: no DOM, tested in Node).

/** A BGP state as a colour class: Established, on its way (Connect to OpenConfirm), or down. */
export function stateClass(state: string | undefined): string {
  if (state === undefined) return 'state-unknown';
  if (state === 'Established') return 'state-established';
  if (state === 'Connect' || state === 'Active' || state === 'OpenSent' || state === 'OpenConfirm') return 'state-opening';
  return 'state-down';
}

/** Seconds as "3d 4h", "2h 5m", "4m 10s", "12s". */
export function duration(seconds: number | null): string {
  if (seconds === null) return '';
  const s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s % 60}s`;
  return `${s}s`;
}

const TYPE_TEXT: Record<string, string> = {
  mesh: 'node-to-node mesh',
  rr: 'route reflector',
  'rr-client': 'rr client',
  global: 'global',
  node: 'node specific',
};

export function sessionType(type: string): string {
  return TYPE_TEXT[type] ?? type;
}

/** Labels as "key=value" strings, sorted by key. */
export function labelTexts(labels: Record<string, string> | undefined): string[] {
  return Object.entries(labels ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`);
}
