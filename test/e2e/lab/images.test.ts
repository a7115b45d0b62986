// The lab images, built by containerlab/build-images.sh on a private engine: a second build
// reuses everything, and each image does its job in a container with no network.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireDocker, type BuildResult, buildImages, releaseDocker, type TestDocker } from '../../support/docker.js';
import { waitFor } from '../../support/wait.js';

// What build-images.sh packs into podroute/node. The test builds from a copy taken once, so
// that an edit in the checkout between the two builds cannot pass for a cache miss.
const PACKAGE_PATHS = [
  'package.json',
  'package-lock.json',
  'index.ts',
  'tsconfig.json',
  'tsconfig.build.json',
  'README.md',
  'LICENSE',
  'bin',
  'ip',
  'bgp',
  'reflector',
  'felix',
  'lib',
];
const repo = new URL('../../../', import.meta.url).pathname;

const IMAGES = ['podroute/base', 'podroute/node', 'podroute/frr', 'podroute/redis', 'podroute/bird'];
const version = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).version as string;
// What FRR needs to program routes (containerlab runs its nodes privileged; full privilege
// cannot be had where the host's own bounding set lacks a capability, as on our CI machines).
const FRR_CAPS = ['--cap-add', 'NET_ADMIN', '--cap-add', 'NET_RAW', '--cap-add', 'SYS_ADMIN'];

function sh(argv: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(argv[0]!, argv.slice(1), { timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) || 1 : 0, stdout, stderr }),
    );
    if (input !== undefined) child.stdin!.end(input);
  });
}

describe('lab images (containerlab/build-images.sh)', function () {
  this.timeout(60_000);
  let docker: TestDocker | undefined;
  let first: BuildResult;
  const containers: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'images-test-'));
  const source = join(dir, 'src');

  const cli = async (...args: string[]) => {
    const r = await sh(['docker', '-H', docker!.host, ...args]);
    if (r.code !== 0) throw new Error(`docker ${args.join(' ')}: ${r.stderr.trim()}`);
    return r.stdout.trim();
  };
  const imageIds = async () => Promise.all(IMAGES.map((i) => cli('image', 'inspect', '--format', '{{.Id}}', `${i}:latest`)));
  const allLayers = async () => (await cli('images', '-a', '-q', '--no-trunc')).split('\n').sort();
  const runDetached = async (...args: string[]) => {
    const id = await cli('run', '-d', '--network', 'none', ...args);
    containers.push(id);
    return id;
  };

  before(async function () {
    this.timeout(20 * 60_000);
    const got = await acquireDocker();
    if (!got.docker) {
      console.log(`      skipped: ${got.reason}`);
      this.skip();
    }
    docker = got.docker;
    for (const p of PACKAGE_PATHS)
      cpSync(join(repo, p), join(source, p), {
        recursive: true,
        filter: (f) => !/\/(build|node_modules)(\/|$)/.test(f.slice(repo.length)),
      });
    symlinkSync(join(repo, 'node_modules'), join(source, 'node_modules'));
    first = await buildImages(docker, ['--source', source]);
    console.log(`      first build: ${first.seconds.toFixed(1)} s`);
  });

  after(async function () {
    this.timeout(60_000);
    if (docker && containers.length) await sh(['docker', '-H', docker.host, 'rm', '-f', '-v', ...containers]);
    rmSync(dir, { recursive: true, force: true });
    if (docker && (await releaseDocker())) {
      // The engine is gone and left the host as it found it: no process, no mount, no bridge.
      assert.throws(() => process.kill(docker!.pid, 0), 'dockerd still runs');
      const execRoot = docker.socket.slice(0, docker.socket.lastIndexOf('/'));
      const mounts = readFileSync('/proc/self/mounts', 'utf8')
        .split('\n')
        .filter((l) => l.includes(` ${execRoot}/`) || l.includes(` ${docker!.dataRoot}`));
      assert.deepEqual(mounts, []);
      assert.notEqual((await sh(['ip', 'link', 'show', 'docker0'])).code, 0, 'docker0 exists');
    }
  });

  it('a second build reuses everything: same image IDs, no new layers, in seconds', async () => {
    const ids = await imageIds();
    const layers = await allLayers();
    const again = await buildImages(docker!, ['--source', source]);
    console.log(`      second build: ${again.seconds.toFixed(1)} s`);
    assert.deepEqual(await imageIds(), ids);
    assert.deepEqual(await allLayers(), layers);
    for (const name of ['node', 'frr', 'redis', 'bird']) assert.match(again.output, new RegExp(`${name}: podroute/${name}:\\w+ exists`));
    assert.match(again.output, /base: .* \(cached\)/);
    assert.ok(again.seconds < 20, `second build took ${again.seconds} s`);
  });

  it("an image whose tag is gone is rebuilt from docker's layer cache into the same image", async function () {
    this.timeout(5 * 60_000);
    const before = await cli('image', 'inspect', '--format', '{{.Id}}', 'podroute/frr:latest');
    const hashTag = (await cli('image', 'inspect', '--format', '{{join .RepoTags " "}}', 'podroute/frr:latest'))
      .split(' ')
      .find((t) => t.startsWith('podroute/frr:') && t !== 'podroute/frr:latest');
    assert.ok(hashTag, 'podroute/frr carries its inputs-hash tag');
    await cli('image', 'rm', hashTag);
    const rebuilt = await buildImages(docker!, ['--source', source, '--only', 'frr']);
    assert.match(rebuilt.output, /frr: building/);
    assert.doesNotMatch(rebuilt.output, /frr\.Dockerfile: 0 step/);
    assert.equal(await cli('image', 'inspect', '--format', '{{.Id}}', 'podroute/frr:latest'), before);
  });

  it('podroute/node: podroute and podroute-cni on the PATH, the CNI plugin in /opt/cni/bin', async () => {
    const out = await cli('run', '--rm', '--network', 'none', '--entrypoint', 'podroute', 'podroute/node:latest', '--version');
    assert.equal(out, `podroute ${version}`);
    const r = await sh(
      [
        'docker',
        '-H',
        docker!.host,
        'run',
        '--rm',
        '-i',
        '--network',
        'none',
        '-e',
        'CNI_COMMAND=VERSION',
        '--entrypoint',
        '/opt/cni/bin/podroute-cni',
        'podroute/node:latest',
      ],
      '{"cniVersion":"1.0.0"}',
    );
    assert.equal(r.code, 0, r.stderr);
    const answer = JSON.parse(r.stdout) as { cniVersion: string; supportedVersions: string[] };
    assert.equal(answer.cniVersion, '1.0.0');
    assert.ok(answer.supportedVersions.includes('1.0.0'), `supportedVersions ${answer.supportedVersions.join(', ')} lacks 1.0.0`);
    const tools = await cli(
      'run',
      '--rm',
      '--network',
      'none',
      '--entrypoint',
      'sh',
      'podroute/node:latest',
      '-c',
      'for t in podroute-cni nft ip ping nsenter node; do command -v $t; done; node --version; cd /opt/podroute && ls */native/build/Release',
    );
    assert.deepEqual(tools.split('\n'), [
      '/usr/local/bin/podroute-cni',
      '/usr/sbin/nft',
      '/usr/sbin/ip',
      '/usr/bin/ping',
      '/usr/bin/nsenter',
      '/usr/local/bin/node',
      process.version,
      // The native addons, built on the host for this Node: netlink (routes, nf_tables, WireGuard), BFD's socket, TCP-MD5 and GTSM.
      'bgp/native/build/Release:',
      'bfd_socket.node',
      'tcp_md5.node',
      '',
      'felix/native/build/Release:',
      'netlink.node',
    ]);
  });

  it('podroute/node: the entrypoint waits for the uplink to have an IPv4 address, then runs the command', async () => {
    writeFileSync(join(dir, 'node.yaml'), 'uplink: eth1\n');
    const id = await runDetached(
      '--cap-add',
      'NET_ADMIN',
      '-v',
      `${join(dir, 'node.yaml')}:/etc/podroute/node.yaml:ro`,
      'podroute/node:latest',
      'sh',
      '-c',
      'echo started; sleep 60',
    );
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(await cli('logs', id), '', 'nothing runs before eth1 has an address');
    await cli('exec', id, 'sh', '-c', 'ip link add eth1 type veth peer name eth1p && ip addr add 10.77.0.1/24 dev eth1');
    await waitFor(() => cli('logs', id), {
      what: 'the command started by the entrypoint',
      until: (l) => l === 'started',
      timeoutMs: 10_000,
    });
  });

  it('podroute/frr: zebra and bgpd start on the bound frr.conf and vtysh answers', async () => {
    writeFileSync(
      join(dir, 'frr.conf'),
      'frr defaults traditional\nrouter bgp 65101\n bgp router-id 10.99.0.1\n no bgp ebgp-requires-policy\n',
    );
    const id = await runDetached(...FRR_CAPS, '-v', `${join(dir, 'frr.conf')}:/etc/frr/frr.conf:ro`, 'podroute/frr:latest');
    const version = await waitFor(() => cli('exec', id, 'vtysh', '-c', 'show version'), {
      what: 'vtysh show version',
      until: (v) => v.startsWith('FRRouting'),
    });
    assert.match(version, /^FRRouting 8\./);
    // watchfrr starts zebra, then bgpd: vtysh may answer before bgpd runs.
    await waitFor(async () => (await cli('exec', id, 'ps', '-o', 'comm=', '-C', 'zebra,bgpd')).split('\n').sort().join(' '), {
      what: 'zebra and bgpd running',
      until: (d) => d === 'bgpd zebra',
    });
    const bgp = await waitFor(
      async () => JSON.parse(await cli('exec', id, 'vtysh', '-c', 'show bgp ipv4 unicast json')) as { localAS?: number; routerId?: string },
      { what: "bgpd's view of frr.conf", until: (b) => b.localAS !== undefined },
    );
    assert.equal(bgp.localAS, 65101);
    assert.equal(bgp.routerId, '10.99.0.1');
    // The entrypoint stops the daemons on SIGTERM, well before docker's 10 s SIGKILL.
    const t0 = Date.now();
    await cli('stop', id);
    assert.ok(Date.now() - t0 < 8000, `docker stop took ${Date.now() - t0} ms`);
    assert.equal(await cli('inspect', '--format', '{{.State.ExitCode}}', id), '0');
  });

  it('podroute/bird: BIRD runs on the bound bird.conf and birdc answers; a file BIRD refuses stops the container with its message', async () => {
    writeFileSync(
      join(dir, 'bird.conf'),
      'router id 10.99.0.2;\nprotocol device { }\nprotocol bgp tor { local as 65102; neighbor 10.99.0.9 as 65109; ipv4 { import all; export none; }; }\n',
    );
    const id = await runDetached(
      '--cap-add',
      'NET_ADMIN',
      '-v',
      `${join(dir, 'bird.conf')}:/etc/bird/bird.conf:ro`,
      'podroute/bird:latest',
    );
    const status = await waitFor(() => cli('exec', id, 'birdc', 'show status'), {
      what: 'birdc show status',
      until: (s) => s.includes('Daemon is up'),
    });
    assert.match(status, /Router ID is 10\.99\.0\.2/);
    // The bound file's protocol, trying to reach a neighbour that is not there.
    assert.match(await cli('exec', id, 'birdc', 'show protocols'), /^tor\s+BGP\s+---\s+start/m);
    // BIRD is the container's first process and takes SIGTERM itself, well before docker's SIGKILL.
    const t0 = Date.now();
    await cli('stop', id);
    assert.ok(Date.now() - t0 < 8000, `docker stop took ${Date.now() - t0} ms`);
    assert.equal(await cli('inspect', '--format', '{{.State.ExitCode}}', id), '0');

    writeFileSync(join(dir, 'bad.bird.conf'), 'router id 10.99.0.2;\nprotocol bgp { local as 65102; neighbour nowhere; }\n');
    const bad = await runDetached('-v', `${join(dir, 'bad.bird.conf')}:/etc/bird/bird.conf:ro`, 'podroute/bird:latest');
    await waitFor(() => cli('inspect', '--format', '{{.State.Running}}', bad), {
      what: 'the refused container stopped',
      until: (r) => r === 'false',
    });
    assert.equal(await cli('inspect', '--format', '{{.State.ExitCode}}', bad), '1');
    const r = await sh(['docker', '-H', docker!.host, 'logs', bad]);
    assert.match(r.stderr + r.stdout, /\/etc\/bird\/bird\.conf:2:\d+ syntax error/, 'BIRD names the file and line it refused');
    assert.match(r.stderr + r.stdout, /bird-entrypoint: bird refused \/etc\/bird\/bird\.conf/);
  });

  it('podroute/redis: redis-server answers PING', async () => {
    const id = await runDetached('podroute/redis:latest');
    await waitFor(() => cli('exec', id, 'redis-cli', 'ping'), { what: 'redis PONG', until: (v) => v === 'PONG' });
    assert.match(await cli('exec', id, 'redis-cli', 'config', 'get', 'protected-mode'), /protected-mode\nno/);
  });
});
