// `podroute flows`: the running agent's flow log (its control socket's GET /flows), as a table,
// wide, or JSON lines; --follow streams records as they change until interrupted.
import http from 'node:http';
import type { FlowEnd, FlowRecord } from '../agent/flow-records.js';
import { type CommandSpec, dispatch, type Io } from './args.js';
import { AGENT_CONTROL_FLAG, agentControl } from './flags.js';
import { columns } from './output.js';

const end = (e: FlowEnd): string =>
  `${e.pod !== undefined ? `${e.namespace}/${e.pod}` : (e.ip ?? '-')}${e.port !== undefined ? `:${e.port}` : ''}`;

function row(r: FlowRecord, wide: boolean): string[] {
  const policy = r.policy ? `${r.policy.tier}/${r.policy.name} ${r.policy.rule}` : '-';
  const dst = r.dst.service ? `${end(r.dst)} (${r.dst.service}:${r.dst.servicePort})` : end(r.dst);
  const base = [r.time.slice(11, 23), r.node, r.proto, end(r.src), dst, r.verdict.toUpperCase(), policy];
  if (!wide) return base;
  const staged = r.staged?.map((s) => `${s.name} ${s.rule} ${s.action}`).join(', ') ?? '-';
  return [...base, String(r.count), String(r.packets), String(r.bytes), staged];
}

const HEAD = ['TIME', 'NODE', 'PROTO', 'SOURCE', 'DESTINATION', 'VERDICT', 'POLICY'];
const WIDE = [...HEAD, 'COUNT', 'PACKETS', 'BYTES', 'STAGED'];

function get(socketPath: string, path: string, onLine: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        buf += d;
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          onLine(buf.slice(0, i));
          buf = buf.slice(i + 1);
        }
      });
      res.on('end', () => {
        if (res.statusCode !== 200) {
          let message = buf;
          try {
            message = (JSON.parse(buf) as { error?: string }).error ?? buf;
          } catch {}
          return reject(new Error(message));
        }
        if (buf) onLine(buf);
        resolve();
      });
    });
    req.on('error', (e) => reject(new Error(`${socketPath}: ${e.message}`)));
  });
}

export function flowsCommand(io: Io): CommandSpec {
  return {
    name: 'flows',
    summary: "the running agent's flow log: who talked to whom, and which policy decided",
    options: {
      control: AGENT_CONTROL_FLAG,
      follow: { type: 'boolean', short: 'f', help: 'stream records as they change' },
      namespace: { type: 'string', value: '<namespace>', help: 'flows from or to pods of this namespace' },
      pod: { type: 'string', value: '<pod>', help: 'flows from or to this pod' },
      verdict: { type: 'string', choices: ['allow', 'deny'], help: 'only allowed or only denied flows' },
      since: { type: 'string', value: '<time|30s|5m>', help: 'records that changed since' },
      node: { type: 'string', value: '<node>', help: "only this node's records (of an agent that serves several, as a lab's)" },
      output: { type: 'string', short: 'o', choices: ['json', 'wide', 'table'], help: 'json (one record a line), wide, or a table' },
    },
    async run(p) {
      const v = p.values;
      const q = new URLSearchParams();
      for (const k of ['namespace', 'pod', 'verdict', 'since'] as const) if (typeof v[k] === 'string') q.set(k, v[k] as string);
      if (v.follow === true) q.set('follow', '1');
      const node = typeof v.node === 'string' ? v.node : undefined;
      const o = v.output === 'json' ? 'json' : v.output === 'wide' ? 'wide' : 'table';
      const path = `/flows?${q}`;
      const keep = (r: FlowRecord) => node === undefined || r.node === node;
      if (v.follow === true) {
        if (o !== 'json') io.stdout(`${columns([o === 'wide' ? WIDE : HEAD])}`);
        await get(agentControl(v.control), path, (line) => {
          if (!line) return;
          const r = JSON.parse(line) as FlowRecord;
          if (!keep(r)) return;
          io.stdout(o === 'json' ? `${line}\n` : `${row(r, o === 'wide').join('  ')}\n`);
        });
        return 0;
      }
      let text = '';
      await get(agentControl(v.control), path, (line) => {
        text += line;
      });
      const records = (JSON.parse(text || '[]') as FlowRecord[]).filter(keep);
      if (o === 'json') io.stdout(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
      else io.stdout(columns([o === 'wide' ? WIDE : HEAD, ...records.map((r) => row(r, o === 'wide'))]));
      return 0;
    },
  };
}

/** Runs `podroute flows <argv>` through the command tree (help and unknown flags included); returns the exit code. */
export function runFlowsCommand(argv: readonly string[], io: Io): Promise<number> {
  return dispatch({ ...flowsCommand(io), name: 'podroute flows' }, argv, io);
}
