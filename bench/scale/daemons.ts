// The reflectors under test, each one process (FRR: bgpd -Z) in a temp dir of its own,
// listening on 127.0.0.1:port and taking every client of 127.1.0.0/16 as a dynamic neighbour.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../../test/support/wait.js';
import { ROOT, listening, removeDir, start, stop, tempDir } from './harness.js';
import { execFileSync, execFileSync as run, spawnSync } from 'node:child_process';

export const REFLECTORS = ['podroute', 'bird', 'frr'] as const;
export type ReflectorKind = (typeof REFLECTORS)[number];

export interface Reflector {
  kind: ReflectorKind;
  version: string;
  pid: number;
  stop(): Promise<void>;
}

export const RR_ADDRESS = '127.0.0.1';
export const CLIENT_RANGE = '127.1.0.0/16';
export const ASN = 64512;
/** Long enough that no keepalive is due during a run: a busy daemon must not drop a client over one. */
export const HOLD_TIME = 240;

function version(argv: string[]): string {
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n')[0]!.trim();
}

/** `profileDir`: podroute writes a .cpuprofile of the whole run there (bench/speaker/cpu-profile.mjs). */
export async function startReflector(kind: ReflectorKind, port: number, profileDir = ''): Promise<Reflector> {
  const dir = tempDir(`scale-rr-${kind}-`);
  let argv: string[];
  let ver: string;
  if (kind === 'podroute') {
    writeFileSync(
      join(dir, 'rr.yaml'),
      [
        `asn: ${ASN}`,
        `routerId: ${RR_ADDRESS}`,
        `clusterId: ${RR_ADDRESS}`,
        `listen: { host: ${RR_ADDRESS}, port: ${port} }`,
        `gracefulRestart: { stateDir: ${dir} }`,
        'clientRanges:',
        `  - { range: ${CLIENT_RANGE}, holdTime: ${HOLD_TIME}, gracefulRestart: false }`,
        '',
      ].join('\n'),
    );
    argv = ['node', join(ROOT, 'bin/podroute.js'), 'reflector', '--config', join(dir, 'rr.yaml'), '--control', join(dir, 'rr.sock')];
    ver = `podroute @${execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()} (Node ${process.versions.node})`;
  } else if (kind === 'bird') {
    const conf = join(dir, 'bird.conf');
    writeFileSync(
      conf,
      [
        `router id ${RR_ADDRESS};`,
        'protocol device { scan time 60; }',
        // Resolves the clients' next hops (iBGP next hops are recursive in BIRD).
        'protocol static { ipv4; route 127.0.0.0/8 via "lo"; }',
        'protocol bgp clients {',
        `  local ${RR_ADDRESS} port ${port} as ${ASN};`,
        `  neighbor range ${CLIENT_RANGE} as ${ASN};`,
        '  dynamic name "c";',
        '  rr client;',
        `  rr cluster id ${RR_ADDRESS};`,
        `  hold time ${HOLD_TIME};`,
        `  keepalive time ${HOLD_TIME / 3};`,
        '  ipv4 { import all; export all; };',
        '}',
        '',
      ].join('\n'),
    );
    run('bird', ['-p', '-c', conf]);
    argv = ['bird', '-f', '-c', conf, '-s', join(dir, 'bird.ctl'), '-P', join(dir, 'bird.pid')];
    ver = version(['bird', '--version']);
  } else {
    const conf = join(dir, 'bgpd.conf');
    writeFileSync(
      conf,
      [
        'frr defaults traditional',
        'hostname rr',
        `router bgp ${ASN}`,
        ` bgp router-id ${RR_ADDRESS}`,
        ` bgp cluster-id ${RR_ADDRESS}`,
        ' no bgp ebgp-requires-policy',
        // The clients' next hops are 127.1.x.y: loopback addresses FRR otherwise refuses as martian.
        ' bgp allow-martian-nexthop',
        ' bgp listen limit 65535',
        ' neighbor CLIENTS peer-group',
        ` neighbor CLIENTS remote-as ${ASN}`,
        ` neighbor CLIENTS timers ${HOLD_TIME / 3} ${HOLD_TIME}`,
        ` bgp listen range ${CLIENT_RANGE} peer-group CLIENTS`,
        ' address-family ipv4 unicast',
        '  neighbor CLIENTS route-reflector-client',
        ' exit-address-family',
        '',
      ].join('\n'),
    );
    execFileSync('chown', ['-R', 'frr:frr', dir]);
    run('/usr/lib/frr/bgpd', ['-C', '-f', conf]);
    argv = [
      '/usr/lib/frr/bgpd',
      '-Z',
      '-p',
      String(port),
      '-l',
      RR_ADDRESS,
      '-f',
      conf,
      '-i',
      join(dir, 'bgpd.pid'),
      '-z',
      join(dir, 'zserv.api'),
      '--vty_socket',
      dir,
      '-P',
      '0',
      '-u',
      'frr',
      '-g',
      'frr',
    ];
    ver = `${version(['/usr/lib/frr/bgpd', '--version'])} (bgpd -Z)`;
  }
  const env =
    kind === 'podroute' && profileDir
      ? { ...process.env, NODE_OPTIONS: `--import ${join(ROOT, 'bench/speaker/cpu-profile.mjs')}`, PODROUTE_CPU_PROFILE_DIR: profileDir }
      : process.env;
  const p = start(argv, { env });
  await waitFor(
    async () => {
      if (p.exitCode !== null) throw new Error(`${kind} exited: ${p.tail()}`);
      return listening(RR_ADDRESS, port);
    },
    { what: `${kind} listening on ${RR_ADDRESS}:${port}`, timeoutMs: 30_000, intervalMs: 100 },
  ).catch((e) => {
    throw new Error(`${(e as Error).message}\n${p.tail()}`);
  });
  return {
    kind,
    version: ver,
    pid: p.pid!,
    stop: async () => {
      await stop(p);
      removeDir(dir);
    },
  };
}
