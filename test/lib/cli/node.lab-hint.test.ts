// `podroute node status` on a host whose agents run inside a lab: besides "not running", which
// lab nodes run an agent and the `lab exec` line that asks one (it answers there, not here).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dispatch } from '../../../lib/cli/args.js';
import { nodeCommand } from '../../../lib/cli/node.js';
import type { LabState } from '../../../lib/lab/index.js';

describe('node status on a lab host', () => {
  let dir: string;
  const saved = { lab: process.env.PODROUTE_LAB_STATE_DIR, control: process.env.PODROUTE_CONTROL };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-node-lab-'));
    mkdirSync(join(dir, 'labs', 'tor'), { recursive: true });
    const proc = (node: string, what: string) => ({ node, what, pid: 1, startTime: '1', argv: [], log: '' });
    const state: LabState = {
      name: 'tor',
      topology: 'tor.clab.yml',
      prefix: 'tor-',
      dir: join(dir, 'labs', 'tor'),
      redisSocket: join(dir, 'labs', 'tor', 'redis.sock'),
      namespaces: ['tor1', 'n1', 'n2', 'redis'].map((node) => ({ node, name: `tor-${node}` })),
      processes: [proc('tor1', 'bgpd'), proc('n1', 'agent'), proc('n2', 'agent'), proc('redis', 'redis')],
      pods: [],
    };
    writeFileSync(join(dir, 'labs', 'tor', 'state.json'), JSON.stringify(state));
    process.env.PODROUTE_LAB_STATE_DIR = join(dir, 'labs');
    process.env.PODROUTE_CONTROL = join(dir, 'node.sock');
  });

  after(() => {
    for (const [k, v] of [
      ['PODROUTE_LAB_STATE_DIR', saved.lab],
      ['PODROUTE_CONTROL', saved.control],
    ] as const)
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    rmSync(dir, { recursive: true, force: true });
  });

  const status = async (argv: string[]) => {
    const out: string[] = [];
    const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => out.push(s) };
    const code = await dispatch({ name: 'podroute', summary: '', subcommands: [nodeCommand(io)] }, ['node', 'status', ...argv], io);
    return { code, text: out.join('') };
  };

  it('names the lab, the nodes that run an agent, and the lab exec line', async () => {
    const r = await status([]);
    assert.equal(r.code, 1);
    const sock = join(dir, 'node.sock');
    assert.equal(
      r.text,
      `podroute process is not running (control socket ${sock}: connect ENOENT ${sock}).\n` +
        'lab tor is up here; its agents run inside its nodes n1, n2 (each in its network namespace), with their control sockets there:\n' +
        '  podroute lab exec tor n1 podroute node status\n',
    );
  });

  it('a --control given names the socket meant: no lab hint', async () => {
    const r = await status(['--control', join(dir, 'other.sock')]);
    assert.equal(r.code, 1);
    assert.doesNotMatch(r.text, /lab tor/);
  });
});
