// `podroute node run`'s settings from a file, the environment and flags: a mistake in the file
// is refused with its path (and the field it most likely meant), a wrong type names the field,
// every mistake of every source is reported at once, and nothing listens when one is found.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NodeConfigError, nodeRunSettings } from '../../../lib/cli/node-config.js';
import { listening, podroute } from '../../support/daemon.js';
import { freePort } from '../../../bgp/session/free-port.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

describe('node run settings (node-config.ts)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-node-config-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** The file written, and the mistakes nodeRunSettings found in it (none: the settings). */
  function load(yaml: string, flags: Record<string, string> = {}, env: NodeJS.ProcessEnv = {}) {
    const file = join(dir, `node-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, yaml);
    try {
      return { file, settings: nodeRunSettings({ config: file, ...flags }, env), problems: [] as readonly string[] };
    } catch (e) {
      if (!(e instanceof NodeConfigError)) throw e;
      return { file, settings: undefined, problems: e.problems, message: e.message };
    }
  }

  it('an unknown field is refused with its path and the field it most likely meant', () => {
    const { file, problems } = load('nodeNmae: n1\nipv4Address: 10.0.0.1/24\n');
    assert.deepEqual(problems, [`${file}: nodeNmae: unknown field (did you mean nodeName?)`]);
    const far = load('frobnicate: 1\n');
    assert.deepEqual(far.problems, [`${far.file}: frobnicate: unknown field`]);
  });

  it('unknown fields inside the pool and the datastore, with their paths', () => {
    const { file, problems } = load(
      'defaultIpv4Pool: {cidr: 10.65.0.0/16, blocksize: 26}\ndatastore: {type: redis, urll: "redis://r:6379"}\n',
    );
    assert.deepEqual(problems, [
      `${file}: defaultIpv4Pool.blocksize: unknown field (did you mean blockSize?)`,
      `${file}: datastore.urll: unknown field of a redis datastore (did you mean url?)`,
    ]);
  });

  it('a wrong type is refused naming the field', () => {
    const cases: [string, RegExp][] = [
      ['asNumber: "65000"', /: asNumber: "65000" is a string, not a whole number$/],
      ['bgpPort: "179"', /: bgpPort: "179" is a string, not a whole number$/],
      ['holdTime: "90"', /: holdTime: "90" is a string, not a number of seconds$/],
      ['defaultIpv4Pool: {cidr: 10.65.0.0/16, blockSize: "26"}', /: defaultIpv4Pool\.blockSize: "26" is a string, not a whole number$/],
      ['nodeName: 7', /: nodeName: 7 is not a string \(quote it: "7"\)$/],
      ['holdTime: soon', /: holdTime: "soon" is not a number of seconds$/],
      ['labels: {rack: 1}', /: labels\.rack: 1 is not a string/],
      ['labels: [a, b]', /: labels: \["a","b"\] is not a mapping of label to value$/],
      ['defaultIpv4Pool: 10.65.0.0/16', /: defaultIpv4Pool: "10\.65\.0\.0\/16" is neither false nor a mapping/],
      ['defaultIpv4Pool: {cidr: 10.65.0.0/16, natOutgoing: "yes"}', /: defaultIpv4Pool\.natOutgoing: "yes" is not true or false$/],
      ['datastore: {type: etcd, endpoints: "http://e:2379"}', /: datastore\.endpoints: a list of the members' URLs/],
      ['datastore: {url: "redis://r:6379"}', /: datastore\.type: required \(memory, redis or etcd\)$/],
      ['healthPort: 99999', /^healthPort: 99999 is not a whole number in 0\.\.65535$/],
      ['dataplane: memroy', /^dataplane: "memroy" must be linux or memory$/],
    ];
    for (const [yaml, message] of cases) {
      const { problems } = load(`${yaml}\n`);
      assert.equal(problems.length, 1, `${yaml}: ${problems.join('; ')}`);
      assert.match(problems[0]!, message, yaml);
    }
  });

  it('every mistake of the file, the flags and the environment is reported at once, in one error', () => {
    const r = load('nodeNmae: n1\nasNumber: x\nlabels: {rack: 1}\npolicy: maybe\n', { as: 'abc' }, { NODENAME: 'n1', AS: 'y' });
    assert.equal(r.problems.length, 6, r.problems.join('\n'));
    assert.match(r.message!, /^6 mistakes in the settings of node run:\n/);
    for (const part of [
      /nodeNmae: unknown field/,
      /asNumber: "x"/,
      /labels\.rack: 1/,
      /--as: "abc" is not a whole number/,
      /AS: "y" is not a whole number/,
      /policy: "maybe" must be on or off/,
    ])
      assert.ok(
        r.problems.some((p) => part.test(p)),
        `${part} is not among ${r.problems.join('; ')}`,
      );
  });

  it('a socket in /proc or /sys is refused by its field, from the file or a flag', () => {
    const r = load('control: /proc/podroute/node.sock\n', { 'cni-socket': '/sys/podroute/cni.sock' });
    assert.deepEqual(r.problems, [
      "control: /proc/podroute/node.sock is under /proc, the kernel's own file system, where no daemon's file belongs",
      "cniSocket: /sys/podroute/cni.sock is under /sys, the kernel's own file system, where no daemon's file belongs",
    ]);
    assert.deepEqual(load('control: /run/podroute/node.sock\ncniSocket: "off"\n').problems, []);
  });

  it('the web page: a port and an address, from the file, a flag or the environment, checked as the health port', () => {
    assert.deepEqual(load('webPort: 8080\nwebHost: 10.0.0.1\n').settings?.webPort, 8080);
    const flags = load('nodeName: n1\n', { 'web-port': '8081', 'web-host': '::1' }).settings;
    assert.deepEqual([flags?.webPort, flags?.webHost], [8081, '::1']);
    const env = load('nodeName: n1\n', {}, { PODROUTE_WEB_PORT: '8082', PODROUTE_WEB_HOST: '0.0.0.0' }).settings;
    assert.deepEqual([env?.webPort, env?.webHost], [8082, '0.0.0.0']);
    assert.deepEqual(load('webPort: 70000\nwebHost: localhost\n').problems, [
      'webPort: 70000 is not a whole number in 0..65535',
      'webHost: "localhost" is not an IP address (0.0.0.0 or :: for every interface)',
    ]);
    assert.deepEqual(load('webPort: 9099\n').problems, [
      'webPort: 9099 is the health port too (healthPort); give the web page a port of its own',
    ]);
    assert.deepEqual(load('webPort: 9099\nhealthPort: 9100\n').problems, []);
    assert.deepEqual(load('webPort: 0\nhealthPort: 0\n').problems, []);
  });

  it('flags win over the environment, the environment over the file', () => {
    const yaml = 'nodeName: from-file\nasNumber: 65001\nuplink: eth9\n';
    const { settings } = load(yaml, { name: 'from-flag' }, { NODENAME: 'from-env', AS: '65002' });
    assert.deepEqual([settings?.nodeName, settings?.asNumber, settings?.uplink], ['from-flag', 65002, 'eth9']);
  });

  it('the YAML is a mapping, and the file must exist', () => {
    const list = load('- a\n- b\n');
    assert.match(list.problems[0]!, /^--config .*: must be a YAML mapping/);
    assert.throws(() => nodeRunSettings({ config: join(dir, 'none.yaml') }, {}), /--config .*none\.yaml: does not exist/);
  });

  it("every node file of the repository's labs is read as it is", () => {
    const files = ['mesh', 'rr', 'tor', 'tor-dualstack', 'crosssubnet'].flatMap((lab) =>
      readdirSync(join(ROOT, 'containerlab', lab))
        .filter((f) => f.endsWith('.yaml') && f !== 'cluster.yaml')
        .map((f) => join(ROOT, 'containerlab', lab, f)),
    );
    files.push(join(ROOT, 'test/e2e/policy/lab/n1.yaml'));
    assert.ok(files.length > 15, `only ${files.length} node files found`);
    for (const file of files) nodeRunSettings({ config: file }, {});
  });

  it('podroute node run with a bad file: exit 1, every mistake on stderr, nothing left listening', async function () {
    this.timeout(30_000);
    const port = await freePort();
    const control = join(dir, 'node.sock');
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'nodeName: n1\nasNumbr: 65000\nholdTime: x\n');
    const exit = await podroute([
      'node',
      'run',
      '--config',
      file,
      '--dataplane',
      'memory',
      '--datastore',
      'memory',
      '--control',
      control,
      '--health-port',
      String(port),
    ]);
    assert.equal(exit.code, 1, exit.stderr);
    assert.match(
      exit.stderr,
      /2 mistakes in the settings of node run:\n {2}.*asNumbr: unknown field \(did you mean asNumber\?\)\n {2}.*holdTime: "x" is not a number of seconds/,
    );
    assert.equal(await listening(port), false);
    assert.equal(existsSync(control), false);
  });

  // Node's recursive mkdir loops for ever under /proc: the agent never exited, a core burnt.
  it('podroute node run with a socket in /proc: exit 1 at once, naming the field, nothing listening', async function () {
    this.timeout(60_000);
    const port = await freePort();
    const exit = await podroute(
      ['node', 'run', '--name', 'n1', '--dataplane', 'memory', '--datastore', 'memory', '--health-port', String(port)].concat([
        '--cni-socket',
        '/proc/podroute/cni.sock',
      ]),
      30_000,
    );
    assert.equal(exit.code, 1, exit.stderr);
    assert.match(exit.stderr, /cniSocket: \/proc\/podroute\/cni\.sock is under \/proc/);
    assert.equal(await listening(port), false);
  });
});
