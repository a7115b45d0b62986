// Live flows: the agent's stream (`/api/flows?follow=1`, one JSON record a line) and the records
// it kept, merged newest first, filtered by namespace, pod and verdict; a new filter starts over.
import type { FlowEndpoint, FlowRecord } from '../api.js';
import { byId, el, fillBody, row, say } from './dom.js';
import { labelTexts } from './format.js';
import { endpointText, type FlowFilter, flowKey, flowParams, policyText, splitLines, stagedText } from './flow-text.js';

/** Records shown at most; older ones drop off the bottom. */
const KEEP = 500;
/** Wait before following again after the stream ended or failed. */
const RETRY_MS = 2000;

export class FlowView {
  private records: FlowRecord[] = [];
  private seen = new Set<string>();
  private run: AbortController | undefined;
  private drawTimer: number | undefined;
  private filterTimer: number | undefined;
  private wired = false;

  /** Flow logs are off on this node: say so, and fetch nothing. */
  off(): void {
    this.run?.abort();
    say('flows-status', 'Flow logs are off on this node.');
    byId('flow-filters').hidden = true;
    byId('flows').hidden = true;
  }

  start(): void {
    const form = byId<HTMLFormElement>('flow-filters');
    form.hidden = false;
    byId('flows').hidden = false;
    if (!this.wired) {
      this.wired = true;
      form.addEventListener('submit', (e) => e.preventDefault());
      form.addEventListener('input', () => {
        window.clearTimeout(this.filterTimer);
        this.filterTimer = window.setTimeout(() => this.restart(), 250);
      });
    }
    this.restart();
  }

  private filter(): FlowFilter {
    const f = new FormData(byId<HTMLFormElement>('flow-filters'));
    return { namespace: String(f.get('namespace') ?? ''), pod: String(f.get('pod') ?? ''), verdict: String(f.get('verdict') ?? '') };
  }

  private restart(): void {
    this.run?.abort();
    const run = (this.run = new AbortController());
    this.records = [];
    this.seen.clear();
    this.draw();
    const filter = this.filter();
    say('flows-status', 'connecting…');
    // The stream first, then what was kept: a record made in between is in one or the other.
    void this.follow(filter, run.signal);
    void this.list(filter, run.signal);
  }

  private async list(filter: FlowFilter, signal: AbortSignal): Promise<void> {
    try {
      const res = await fetch(`/api/flows?${flowParams(filter, false)}`, { signal });
      if (!res.ok) throw new Error(await problem(res));
      const doc = (await res.json()) as { flows?: FlowRecord[] };
      this.add(Array.isArray(doc.flows) ? doc.flows : []);
    } catch (e) {
      if (!signal.aborted) say('flows-status', `flows: ${(e as Error).message}`);
    }
  }

  private async follow(filter: FlowFilter, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const res = await fetch(`/api/flows?${flowParams(filter, true)}`, { signal });
        if (!res.ok || !res.body) throw new Error(await problem(res));
        say('flows-status', `following${describe(filter)}`);
        const reader = res.body.getReader();
        const text = new TextDecoder();
        let buffered = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          const { lines, rest } = splitLines(buffered + text.decode(value, { stream: true }));
          buffered = rest;
          const got: FlowRecord[] = [];
          for (const line of lines) {
            try {
              got.push(JSON.parse(line) as FlowRecord);
            } catch {
              /* not a record: skipped */
            }
          }
          this.add(got);
        }
        if (!signal.aborted) say('flows-status', 'the stream ended; following again…');
      } catch (e) {
        if (signal.aborted) return;
        say('flows-status', `flows: ${(e as Error).message}; trying again…`);
      }
      await new Promise((resolve) => window.setTimeout(resolve, RETRY_MS));
    }
  }

  private add(records: readonly FlowRecord[]): void {
    let added = 0;
    for (const r of records) {
      if (!r || typeof r !== 'object') continue;
      const key = flowKey(r);
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      this.records.push(r);
      added++;
    }
    if (!added) return;
    this.records.sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0));
    for (const r of this.records.splice(KEEP)) this.seen.delete(flowKey(r));
    // Many records at once are drawn once.
    if (this.drawTimer === undefined) this.drawTimer = window.setTimeout(() => this.draw(), 50);
  }

  private draw(): void {
    window.clearTimeout(this.drawTimer);
    this.drawTimer = undefined;
    fillBody(
      'flows',
      this.records.map((r) =>
        row([
          el('td', { cls: 'mono', title: String(r.time) }, timeOfDay(r.time)),
          endpointCell(r.src),
          endpointCell(r.dst),
          String(r.proto ?? ''),
          el('td', { cls: r.verdict === 'deny' ? 'verdict-deny' : 'verdict-allow' }, String(r.verdict ?? '')),
          policyText(r),
          stagedText(r),
          num(r.bytes),
          num(r.packets),
          num(r.count),
        ]),
      ),
    );
  }
}

function endpointCell(e: FlowEndpoint | undefined): HTMLTableCellElement {
  const labels = labelTexts(e && typeof e.labels === 'object' && e.labels !== null ? e.labels : undefined);
  return el(
    'td',
    { title: e?.pod ? String(e.ip ?? '') : '' },
    el('span', { cls: 'mono' }, endpointText(e)),
    labels.length ? el('br') : null,
    ...labels.map((t) => el('span', { cls: 'label' }, t)),
  );
}

function timeOfDay(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleTimeString([], { hour12: false });
}

function num(n: unknown): string {
  return typeof n === 'number' ? String(n) : '';
}

function describe(f: FlowFilter): string {
  const parts = [f.namespace && `namespace ${f.namespace}`, f.pod && `pod ${f.pod}`, f.verdict && `verdict ${f.verdict}`].filter(Boolean);
  return parts.length ? ` (${parts.join(', ')})` : '';
}

async function problem(res: Response): Promise<string> {
  try {
    const doc = (await res.json()) as { error?: string };
    return doc.error ?? `HTTP ${res.status}`;
  } catch {
    return `HTTP ${res.status}`;
  }
}
