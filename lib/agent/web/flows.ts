// Flow records as the web page receives them, the query that filters them, and the seam through
// which the agent hands them to the page: a provider function. No provider: the page says flow
// logs are off. `flowsFromControl` is a provider that reads the control socket's `/flows`.
import http from 'node:http';

// The records are the agent's own (flow-records.ts): one shape on the control socket and the page.
import type { FlowRecord } from '../flow-records.js';
export type { FlowEnd as FlowEndpoint, FlowPolicy, FlowRecord } from '../flow-records.js';

export interface FlowQuery {
  namespace?: string;
  pod?: string;
  verdict?: 'allow' | 'deny';
  /** ISO 8601: records from this time on. */
  since?: string;
  /**
   * false: the records kept that match, then the end. true: records as they are made, until
   * the signal aborts (whether those kept before are sent first is the provider's choice).
   */
  follow: boolean;
}

/** The seam: whatever keeps the node's flow records, as an async iterable per query. */
export type FlowProvider = (query: FlowQuery, signal: AbortSignal) => AsyncIterable<FlowRecord>;

/** Longer than any Kubernetes name (253): refused rather than passed on. */
const MAX_NAME = 253;

export class FlowQueryError extends Error {}

/**
 * The query from a URL's parameters (namespace, pod, verdict, since, follow), as the control
 * socket's `/flows` takes them; a bad one throws naming the parameter.
 */
export function parseFlowQuery(params: URLSearchParams): FlowQuery {
  const q: FlowQuery = { follow: false };
  for (const [key, value] of params) {
    switch (key) {
      case 'namespace':
      case 'pod':
        if (value === '') break;
        // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
        if (value.length > MAX_NAME || /[\u0000-\u001f\u007f]/.test(value))
          throw new FlowQueryError(`${key}: must be a name of at most ${MAX_NAME} characters`);
        q[key] = value;
        break;
      case 'verdict':
        if (value === '') break;
        if (value !== 'allow' && value !== 'deny') throw new FlowQueryError(`verdict: must be allow or deny, not ${JSON.stringify(value)}`);
        q.verdict = value;
        break;
      case 'since':
        if (value === '') break;
        if (Number.isNaN(Date.parse(value)) || !/^\d{4}-\d\d-\d\dT/.test(value))
          throw new FlowQueryError(`since: must be an ISO 8601 time (2026-01-02T15:04:05Z), not ${JSON.stringify(value)}`);
        q.since = new Date(value).toISOString();
        break;
      case 'follow':
        if (value !== '' && value !== '1' && value !== '0' && value !== 'true' && value !== 'false')
          throw new FlowQueryError(`follow: must be 1 or 0, not ${JSON.stringify(value)}`);
        q.follow = value === '1' || value === 'true';
        break;
      default:
        throw new FlowQueryError(`${key}: unknown parameter (known: namespace, pod, verdict, since, follow)`);
    }
  }
  return q;
}

/** The query as URL parameters, the inverse of parseFlowQuery. */
export function flowQueryParams(q: FlowQuery): URLSearchParams {
  const p = new URLSearchParams();
  if (q.namespace) p.set('namespace', q.namespace);
  if (q.pod) p.set('pod', q.pod);
  if (q.verdict) p.set('verdict', q.verdict);
  if (q.since) p.set('since', q.since);
  if (q.follow) p.set('follow', '1');
  return p;
}

/** A line of a follow stream over this is not a record: the stream is cut rather than buffered. */
const MAX_LINE = 64 * 1024;

/**
 * A provider reading the agent's control socket: `GET /flows` (an array of records) or, following,
 * its stream of one JSON record a line.
 */
export function flowsFromControl(socketPath: string): FlowProvider {
  return async function* (query, signal) {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.get({ socketPath, path: `/flows?${flowQueryParams(query)}`, signal }, resolve);
      req.on('error', reject);
    });
    if (res.statusCode !== 200) {
      const body = await text(res);
      throw new Error(`control /flows: ${res.statusCode} ${body.slice(0, 200)}`);
    }
    if (!query.follow) {
      // The control socket answers a JSON array, oldest first; {"flows": [...]} is read too.
      const doc = JSON.parse(await text(res)) as FlowRecord[] | { flows?: FlowRecord[] };
      yield* Array.isArray(doc) ? doc : (doc.flows ?? []);
      return;
    }
    let rest = '';
    try {
      for await (const chunk of res) {
        rest += (chunk as Buffer).toString('utf8');
        let nl = rest.indexOf('\n');
        while (nl >= 0) {
          const line = rest.slice(0, nl).trim();
          rest = rest.slice(nl + 1);
          if (line) yield JSON.parse(line) as FlowRecord;
          nl = rest.indexOf('\n');
        }
        if (rest.length > MAX_LINE) throw new Error(`control /flows: a line over ${MAX_LINE} bytes`);
      }
    } catch (e) {
      if (!signal.aborted) throw e;
    } finally {
      res.destroy();
    }
  };
}

async function text(res: http.IncomingMessage): Promise<string> {
  let s = '';
  for await (const chunk of res) {
    s += (chunk as Buffer).toString('utf8');
    if (s.length > 64 * 1024 * 1024) throw new Error('control /flows: the answer is over 64 MiB');
  }
  return s;
}
