#!/usr/bin/env node
// npm install's step: builds the felix netlink addon, the TCP-MD5 addon and the CNI shim, each
// optional. node-gyp is pointed at the running Node's own headers where they are installed
// (<prefix>/include/node, as distribution packages and the official tarballs put them), so it
// does not try to download them, which fails offline and as a user without node-gyp's cache.
// A build that fails prints what runs without it and node-gyp's reason, one line each, not
// node-gyp's whole log (npm install --foreground-scripts --loglevel verbose shows that).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The --nodedir for node-gyp: npm's own setting, else the running Node's prefix when it holds the headers. */
function nodeDir(env = process.env, execPath = process.execPath) {
  if (env.npm_config_nodedir) return env.npm_config_nodedir;
  const prefix = dirname(dirname(execPath));
  return existsSync(join(prefix, 'include/node/node_api.h')) && existsSync(join(prefix, 'include/node/common.gypi')) ? prefix : undefined;
}

/** The line of a failed build's output that says why, as near the cause as it can be found. */
function reason(output) {
  const lines = output.split('\n').map((l) => l.trim());
  const pick =
    lines.find((l) => /error:/i.test(l) && !l.startsWith('gyp')) ??
    lines.find((l) => l.startsWith('gyp ERR! stack Error:')) ??
    lines.find((l) => /not found|No such file/.test(l)) ??
    lines.filter(Boolean).at(-1);
  return pick ? pick.replace(/^gyp ERR! stack /, '') : 'no output';
}

const verbose = ['verbose', 'silly'].includes(process.env.npm_config_loglevel ?? '');

function build(argv) {
  const r = spawnSync(argv[0], argv.slice(1), { cwd: ROOT, encoding: 'utf8', stdio: verbose ? 'inherit' : 'pipe' });
  if (r.status === 0) return undefined;
  return r.error ? r.error.message : reason(`${r.stdout ?? ''}\n${r.stderr ?? ''}`);
}

function nodeGyp(dir) {
  const nd = nodeDir();
  const args = ['rebuild', '-C', dir, ...(nd ? [`--nodedir=${nd}`] : [])];
  // npm gives scripts its own node-gyp; outside npm, the one on the PATH.
  const gyp = process.env.npm_config_node_gyp;
  return build(gyp ? [process.execPath, gyp, ...args] : ['node-gyp', ...args]);
}

const parts = [
  {
    what: 'the felix netlink addon (felix/native)',
    without: 'podroute node run programs routes through ip -batch instead',
    run: () => nodeGyp('felix/native'),
  },
  {
    what: 'the TCP-MD5 addon (bgp/native)',
    without: 'BGP peers with a password are refused (never run unsigned), and a session from a localAddress binds a port per address',
    run: () => nodeGyp('bgp/native'),
  },
  {
    what: 'the CNI shim (cni/shim/podroute-cni)',
    without: 'a CNI runtime runs podroute-cni, the Node plugin, at a Node start per call',
    run: () => build(['sh', 'cni/shim/build.sh']),
  },
];

let failed = 0;
for (const p of parts) {
  const why = p.run();
  if (why === undefined) continue;
  failed++;
  process.stderr.write(`podroute: ${p.what} did not build (${why}); ${p.without}\n`);
}
if (failed > 0)
  process.stderr.write(
    'podroute: everything else works without them: the speaker library, bgpd, the reflector, the demo, the CLI, the datastores and IPAM (the builds need python3, make and a C compiler)\n',
  );
