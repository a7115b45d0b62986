// A lab node that runs BIRD 2 (its image is a bird image): `bird -f` in the node's namespace with
// the config the topology binds to /etc/bird/bird.conf, its control socket in the lab folder, and
// `birdc`'s text read back into sessions for `podroute lab status`.
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { docker } from './docker.js';
import type { LabProcess, LabState } from './state.js';
import type { BgpSession } from './status.js';
import { isOurs, poll, run } from './system.js';
import { hostPath, type TopologyNode } from './topology.js';

/** Where a BIRD image reads its config, as containerlab binds it. */
export const BIRD_CONF = '/etc/bird/bird.conf';

export const birdDir = (state: Pick<LabState, 'dir'>, node: string) => join(state.dir, node, 'bird');
export const birdSocket = (state: Pick<LabState, 'dir'>, node: string) => join(birdDir(state, node), 'bird.ctl');

/** The runner's process helpers, passed in so this file does not import the runner. */
export interface BirdProcesses {
  start(state: LabState, node: string, what: string, argv: string[]): LabProcess;
  alive(state: LabState, node: string, what: string): LabProcess | undefined;
  tail(file: string): string;
}

/** One birdc command in a BIRD node; its text without the "BIRD x.y ready." banner. */
export async function birdc(state: LabState, node: string, command: string): Promise<string> {
  const out =
    state.runtime === 'docker'
      ? await docker(state.dockerHost!, ['exec', `${state.prefix}${node}`, 'birdc', command], { timeoutMs: 10_000 })
      : await run(['birdc', '-s', birdSocket(state, node), command], { timeoutMs: 10_000 });
  return out.replace(/^BIRD [^\n]* ready\.\n/, '');
}

/** Starts BIRD on a node unless it runs; checks the config first, so a bad one is named with its node. */
export async function ensureBird(state: LabState, node: TopologyNode, procs: BirdProcesses): Promise<void> {
  if (procs.alive(state, node.name, 'bird')) return;
  const bound = hostPath(node, BIRD_CONF);
  if (!bound) throw new Error(`topology.nodes.${node.name}.binds: a BIRD node needs a file bound to ${BIRD_CONF}`);
  const dir = birdDir(state, node.name);
  mkdirSync(dir, { recursive: true });
  // A copy: the node's config as it was at `up`, beside its socket and PID file.
  const conf = join(dir, 'bird.conf');
  copyFileSync(bound, conf);
  await run(['bird', '-p', '-c', conf]).catch((e: Error) => {
    throw new Error(`topology.nodes.${node.name}.binds: bird rejected ${bound}: ${e.message}`);
  });
  const sock = birdSocket(state, node.name);
  rmSync(sock, { force: true });
  const p = procs.start(state, node.name, 'bird', ['bird', '-f', '-c', conf, '-s', sock, '-P', join(dir, 'bird.pid')]);
  await poll(
    `bird of ${node.name} answering birdc`,
    async () => {
      if (!isOurs(p)) throw new Error(`bird exited: ${procs.tail(p.log)}`);
      if (!existsSync(sock)) return undefined;
      return (await birdc(state, node.name, 'show status')).includes('Daemon is up') ? true : undefined;
    },
    15_000,
    50,
  );
}

export interface BirdProtocol {
  name: string;
  proto: string;
  table: string;
  state: string;
  info: string;
  bgpState?: string;
  neighborAddress?: string;
  neighborAs?: number;
  localAs?: number;
  /** Lines of the detail block, trimmed, for what this parser does not lift. */
  details: string[];
}

/** Parses `show protocols all`. */
export function parseBirdProtocols(text: string): BirdProtocol[] {
  const protocols: BirdProtocol[] = [];
  let current: BirdProtocol | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('Name ') || line.trim() === '') continue;
    if (!/^\s/.test(line)) {
      const fields = line.trim().split(/\s+/);
      current = {
        name: fields[0]!,
        proto: fields[1] ?? '',
        table: fields[2] ?? '',
        state: fields[3] ?? '',
        info: fields.slice(5).join(' '),
        details: [],
      };
      protocols.push(current);
      continue;
    }
    if (!current) continue;
    const detail = line.trim();
    current.details.push(detail);
    const kv = /^([^:]+):\s*(.*)$/.exec(detail);
    if (!kv) continue;
    const [, key, value] = kv as unknown as [string, string, string];
    if (key === 'BGP state') current.bgpState = value;
    else if (key === 'Neighbor address') current.neighborAddress = value.split('%')[0];
    else if (key === 'Neighbor AS') current.neighborAs = Number(value);
    else if (key === 'Local AS') current.localAs = Number(value);
  }
  return protocols;
}

/** A BIRD node's BGP sessions, one per `protocol bgp`, in the shape `lab status` shows for every speaker. */
export function birdSessionsOf(protocols: BirdProtocol[]): BgpSession[] {
  return protocols
    .filter((p) => p.proto === 'BGP')
    .map((p) => {
      const families = p.details.flatMap((d) => /^Channel (ipv4|ipv6)$/.exec(d)?.slice(1, 2) ?? []).map((f) => `${f}-unicast`);
      const imported = p.details.reduce((n, d) => n + Number(/^Routes:\s+(\d+) imported/.exec(d)?.[1] ?? 0), 0);
      return {
        peer: p.neighborAddress ?? p.name,
        families,
        asn: p.neighborAs ?? 0,
        // BIRD says `Established` in its BGP state; anything else (Idle, Connect, Active…) as it says it.
        state: p.bgpState ?? p.state,
        prefixesReceived: imported,
      };
    });
}

export async function birdSessions(state: LabState, node: string): Promise<BgpSession[]> {
  return birdSessionsOf(parseBirdProtocols(await birdc(state, node, 'show protocols all')));
}
