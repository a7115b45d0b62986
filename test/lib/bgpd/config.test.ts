// The bgpd configuration file: what a good file becomes, and each mistake named by its path.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseBgpdConfig, readBgpdConfig } from '../../../lib/bgpd/config.js';
import { ConfigError } from '../../../lib/bgpd/fields.js';

const base = 'asn: 64512\nrouterId: 10.0.0.1\n';

describe('bgpd config', () => {
  it('a peer with long-lived graceful restart: on, or with its stale time, handed to the speaker as written', () => {
    const c = parseBgpdConfig(
      base +
        'peers:\n  - { address: 10.0.0.2, asn: 65002, longLivedGracefulRestart: { staleTime: 600 } }\n' +
        '  - { address: 10.0.0.3, asn: 65003, longLivedGracefulRestart: true }\n',
    );
    assert.deepEqual(
      c.peers.map((p) => p.longLivedGracefulRestart),
      [{ staleTime: 600 }, true],
    );
  });

  it('a full file: the speaker, peers with their families spelled out, ranges and networks', () => {
    const c = parseBgpdConfig(
      base +
        'listen: { host: 10.0.0.1 }\nhostname: r1\nmultipath: 4\nclusterId: 10.0.0.9\nstalePathTime: 30\ndefaultLocalPref: 150\nalwaysCompareMed: true\n' +
        'peers:\n  - { address: 10.0.0.2, asn: 65002, holdTime: 9, families: [ipv4, ipv6-unicast], addPath: { ipv4: both }, gracefulRestart: { restartTime: 60 }, passive: true }\n' +
        'dynamicNeighbors:\n  - { range: 10.1.0.0/16, asn: [65010, 65011] }\n' +
        'networks:\n  - 10.9.0.0/24\n  - { prefix: 2001:db8::/48, med: 7, localPref: 200, communities: ["1:2", no-export], largeCommunities: ["1:2:3"] }\n',
    );
    assert.deepEqual(c.speaker, {
      asn: 64512,
      routerId: '10.0.0.1',
      listen: { host: '10.0.0.1', port: 179 },
      hostname: 'r1',
      stalePathTime: 30,
      forwardingPreserved: true,
      rib: { multipath: { maxPaths: 4 }, clusterId: '10.0.0.9', defaultLocalPref: 150, alwaysCompareMed: true },
    });
    assert.deepEqual(c.peers, [
      {
        address: '10.0.0.2',
        asn: 65002,
        holdTime: 9,
        families: ['ipv4-unicast', 'ipv6-unicast'],
        addPath: { 'ipv4-unicast': 'both' },
        gracefulRestart: { restartTime: 60 },
        passive: true,
      },
    ]);
    assert.deepEqual(c.dynamicNeighbors, [{ range: '10.1.0.0/16', asn: [65010, 65011], families: undefined }]);
    assert.deepEqual(c.networks, [
      { prefix: '10.9.0.0/24' },
      { prefix: '2001:db8::/48', med: 7, localPref: 200, communities: ['1:2', 'no-export'], largeCommunities: ['1:2:3'] },
    ]);
  });

  it('a number in quotes is refused as the string it is, naming the field', () => {
    const text =
      'asn: "64512"\nrouterId: 10.0.0.1\nlisten: "179"\nstalePathTime: "30"\ngracefulRestart: { restartTime: "120" }\n' +
      'peers:\n  - { address: 10.0.0.2, asn: 65002, port: "1179", holdTime: "9", keepaliveTime: "3" }\n' +
      'networks:\n  - { prefix: 10.9.0.0/24, med: "7" }\n';
    assert.throws(
      () => parseBgpdConfig(text),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError, String(e));
        assert.deepEqual([...e.mistakes].sort(), [
          'asn: "64512" is a string, not a number in 1..4294967295',
          'gracefulRestart.restartTime: "120" is a string, not a number in 0..4095',
          'listen: "179" is a string; false, a port, or { host, port }',
          'networks[0].med: "7" is a string, not a number in 0..4294967295',
          'peers[0].holdTime: "9" is a string, not a number in 0..65535',
          'peers[0].keepaliveTime: "3" is a string, not a number in 0.1..65535',
          'peers[0].port: "1179" is a string, not a number in 1..65535',
          'stalePathTime: "30" is a string, not a number in 1..65535',
        ]);
        return true;
      },
    );
  });

  it('mistakes are named by their path', () => {
    const bad: [string, string][] = [
      ['asn: x\nrouterId: 10.0.0.1\n', 'asn: "x" is not a number in 1..4294967295'],
      ['asn: 1\nrouterId: r1\n', 'routerId: "r1" is not a dotted-quad identifier (four octets, not 0.0.0.0, such as 10.0.0.1)'],
      [
        'asn: 1\nrouterId: 010.0.0.1\n',
        'routerId: "010.0.0.1" is not a dotted-quad identifier (four octets, not 0.0.0.0, such as 10.0.0.1)',
      ],
      ['asn: 1\nrouterId: 0.0.0.0\n', 'routerId: "0.0.0.0" is not a dotted-quad identifier (four octets, not 0.0.0.0, such as 10.0.0.1)'],
      ['asn: 1\n', 'routerId: undefined is not a dotted-quad identifier (four octets, not 0.0.0.0, such as 10.0.0.1)'],
      [
        base + 'clusterId: "fe80::1%eth0"\n',
        'clusterId: "fe80::1%eth0" is not a dotted-quad identifier (four octets, not 0.0.0.0, such as 10.0.0.1)',
      ],
      [
        base + 'clusterId: "fd00::9"\n',
        'clusterId: "fd00::9" is not a dotted-quad identifier (four octets, not 0.0.0.0, such as 10.0.0.1)',
      ],
      [base + 'clusterId: 0.0.0.0\n', 'clusterId: "0.0.0.0" is not a dotted-quad identifier (four octets, not 0.0.0.0, such as 10.0.0.1)'],
      [base + 'colour: red\n', 'colour: unknown field'],
      [base + 'listen: yes\n', 'listen: false, a port, or { host, port }'],
      [base + 'peers: 10.0.0.2\n', 'peers: a list'],
      [base + 'peers:\n  - 10.0.0.2\n', 'peers[0]: a peer is a mapping'],
      [
        base + 'peers:\n  - { address: 10.0.0.2, asn: 1 }\n  - { address: 10.0.0.3, asn: 1, port: 0 }\n',
        'peers[1].port: 0 is not a number in 1..65535',
      ],
      [base + 'peers:\n  - { address: 10.0.0.2, asn: 1, range: 10.0.0.0/8 }\n', 'peers[0].range: unknown field'],
      [
        base + 'peers:\n  - { address: 10.0.0.2, asn: 1, gracefulRestart: { restartTime: 60, stale: 1 } }\n',
        'peers[0].gracefulRestart.stale: unknown field',
      ],
      [base + 'dynamicNeighbors:\n  - { range: 10.0.0.0/33, asn: 1 }\n', 'dynamicNeighbors[0].range: a prefix like 10.0.0.0/24'],
      [
        base + 'dynamicNeighbors:\n  - { range: 10.0.0.0/8, asn: [1, 0] }\n',
        'dynamicNeighbors[0].asn[1]: 0 is not a number in 1..4294967295',
      ],
      [base + 'networks:\n  - 10.0.0.0\n', 'networks[0].prefix: a prefix like 10.0.0.0/24'],
      [base + 'networks:\n  - 010.0.0.0/8\n', 'networks[0].prefix: a prefix like 10.0.0.0/24'],
      [base + 'networks:\n  - { prefix: 10.0.0.0/24, colour: red }\n', 'networks[0].colour: unknown field'],
      [
        base + 'networks:\n  - 10.0.0.0/24\n  - { prefix: 10.1.0.0/24, med: high }\n',
        'networks[1].med: "high" is not a number in 0..4294967295',
      ],
      [base + 'networks:\n  - { prefix: 10.0.0.0/24, med: 1.5 }\n', 'networks[0].med: 1.5 is not a whole number'],
      [base + 'networks:\n  - { prefix: 10.0.0.0/24, localPref: -1 }\n', 'networks[0].localPref: -1 is not a number in 0..4294967295'],
      [base + 'networks:\n  - { med: 5 }\n', 'networks[0].prefix: a prefix like 10.0.0.0/24'],
      [
        base + 'peers:\n  - { address: 10.0.0.2, asn: 1, holdTime: 9, keepaliveTime: 10 }\n',
        'peers[0].keepaliveTime: 10 is more than the hold time (9); at most the hold time',
      ],
      [
        base + 'peers:\n  - { address: 10.0.0.2, asn: 1, keepaliveTime: 91 }\n',
        'peers[0].keepaliveTime: 91 is more than the hold time (90, the default); at most the hold time',
      ],
      [
        base + 'dynamicNeighbors:\n  - { range: 10.0.0.0/8, asn: 1, holdTime: 30, keepaliveTime: 31 }\n',
        'dynamicNeighbors[0].keepaliveTime: 31 is more than the hold time (30); at most the hold time',
      ],
      [
        base + 'peers:\n  - { address: 10.0.0.2, asn: 1, gracefulRestart: { forwardingPreserved: true } }\n',
        'peers[0].gracefulRestart.forwardingPreserved: unknown field',
      ],
      [
        base + 'peers:\n  - { address: 10.0.0.2, asn: 1, longLivedGracefulRestart: { staleTime: 16777216 } }\n',
        'peers[0].longLivedGracefulRestart.staleTime: 16777216 is not a number in 0..16777215',
      ],
      [
        base + 'peers:\n  - { address: 10.0.0.2, asn: 1, longLivedGracefulRestart: { stale: 5 } }\n',
        'peers[0].longLivedGracefulRestart.stale: unknown field',
      ],
      [
        base + 'peers:\n  - { address: 10.0.0.2, asn: 1, longLivedGracefulRestart: 60 }\n',
        'peers[0].longLivedGracefulRestart: true, false or { staleTime }',
      ],
      [
        base + 'peers:\n  - { address: 10.0.0.2, asn: 1, gracefulRestart: false, longLivedGracefulRestart: true }\n',
        'peers[0].longLivedGracefulRestart: needs graceful restart, which this peer turns off (gracefulRestart: false)',
      ],
      [base + 'gracefulRestart: { restartTime: 4096 }\n', 'gracefulRestart.restartTime: 4096 is not a number in 0..4095'],
      [base + 'gracefulRestart: { forwardingPreserved: yes }\n', 'gracefulRestart.forwardingPreserved: "yes" is not true or false'],
      [base + 'gracefulRestart: { selectDeferTime: 0 }\n', 'gracefulRestart.selectDeferTime: 0 is not a number in 1..3600'],
      [base + 'gracefulRestart: { stateDir: "" }\n', 'gracefulRestart.stateDir: "" is not a directory path'],
      [
        base + 'gracefulRestart: { stateDir: /proc/podroute }\n',
        "gracefulRestart.stateDir: /proc/podroute is under /proc, the kernel's own file system, where no daemon's file belongs",
      ],
      [
        base + 'control: /sys/bgpd.sock\n',
        "control: /sys/bgpd.sock is under /sys, the kernel's own file system, where no daemon's file belongs",
      ],
      [
        base + 'control: { path: /proc/bgpd.sock }\n',
        "control.path: /proc/bgpd.sock is under /proc, the kernel's own file system, where no daemon's file belongs",
      ],
      [base + 'gracefulRestart: { stalePathTime: 10 }\n', 'gracefulRestart.stalePathTime: unknown field'],
      [base + 'gracefulRestart: true\n', 'gracefulRestart: a mapping (restartTime, forwardingPreserved, selectDeferTime, stateDir)'],
      [
        base + 'networks:\n  - { prefix: 10.0.0.0/24, largeCommunities: ["1::3"] }\n',
        'networks[0].largeCommunities[0]: "1::3" is not g:l1:l2',
      ],
      ['[]\n', 'config: the configuration is a mapping (asn, routerId, peers, ...)'],
    ];
    for (const [text, message] of bad) assert.throws(() => parseBgpdConfig(text), { message }, text);
    // A peer's address is a socket's end, where a link-local peer needs its zone.
    assert.equal(parseBgpdConfig(base + 'peers:\n  - { address: "fe80::2%eth0", asn: 1 }\n').peers[0]?.address, 'fe80::2%eth0');
  });

  it('every mistake of a file at once: two, three, and those inside one peer, each with its path', () => {
    const two = 'asn: x\nrouterId: r1\n';
    assert.throws(() => parseBgpdConfig(two), {
      name: 'ConfigError',
      message: [
        '2 mistakes:',
        '  asn: "x" is not a number in 1..4294967295',
        '  routerId: "r1" is not a dotted-quad identifier (four octets, not 0.0.0.0, such as 10.0.0.1)',
      ].join('\n'),
    });
    const three = `${base}colour: red\nnetworks: [10.0.0.0/33, 10.1.0.0/16]\npeers:\n  - { address: 10.0.0.2, asn: 1, port: 0 }\n`;
    assert.throws(() => parseBgpdConfig(three), {
      message: [
        '3 mistakes:',
        '  colour: unknown field',
        '  networks[0].prefix: a prefix like 10.0.0.0/24',
        '  peers[0].port: 0 is not a number in 1..65535',
      ].join('\n'),
    });
    // One peer's mistakes are all named; a keepalive is not compared with a hold time refused.
    const peer = `${base}peers:\n  - { address: nowhere, asn: 0, holdTime: 1, keepaliveTime: 5 }\n  - { address: 10.0.0.3, asn: 1 }\n  - { address: 10.0.0.3, asn: 2 }\n`;
    assert.throws(
      () => parseBgpdConfig(peer),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError, `${e} is not a ConfigError`);
        assert.deepEqual(e.mistakes, [
          'peers[0].address: "nowhere" is not an IP address',
          'peers[0].asn: 0 is not a number in 1..4294967295',
          'peers[0].holdTime: 1 (0, or 3..65535 seconds)',
          'peers[2].address: 10.0.0.3 is configured twice (peers[1])',
        ]);
        return true;
      },
    );
  });

  it("every mistake inside one block too: a network, gracefulRestart, maxRoutes, control, a peer's maxPrefixes", () => {
    const mistakes = (text: string) => {
      try {
        parseBgpdConfig(base + text);
      } catch (e) {
        assert.ok(e instanceof ConfigError, String(e));
        return e.mistakes;
      }
      assert.fail(`${text} was taken`);
    };
    assert.deepEqual(mistakes('networks:\n  - { prefix: 10.0.0.0/24, med: x, communities: ["1", "2:3", "x"] }\n'), [
      'networks[0].med: "x" is not a number in 0..4294967295',
      'networks[0].communities[0]: "1" is not asn:value',
      'networks[0].communities[2]: "x" is not asn:value',
    ]);
    assert.deepEqual(mistakes('gracefulRestart: { restartTime: 5000, selectDeferTime: 0 }\n'), [
      'gracefulRestart.restartTime: 5000 is not a number in 0..4095',
      'gracefulRestart.selectDeferTime: 0 is not a number in 1..3600',
    ]);
    assert.deepEqual(mistakes('maxRoutes: { limit: 0, restartAfter: -1 }\n'), [
      'maxRoutes.limit: 0 is not a number in 1..4294967295',
      'maxRoutes.restartAfter: -1 is not a number in 0..2000000',
    ]);
    assert.deepEqual(mistakes('control: { path: "", group: "-x" }\n'), [
      'control.path: "" is not a file path',
      'control.group: "-x" is not a group name or number',
    ]);
    assert.deepEqual(mistakes('peers:\n  - { address: 10.0.0.2, asn: 1, maxPrefixes: { ipv4: { limit: 0 }, ipv5: { limit: 1 } } }\n'), [
      'peers[0].maxPrefixes.ipv4.limit: 0 is not a number in 1..4294967295',
      'peers[0].maxPrefixes.ipv5: unknown family "ipv5" (ipv4-unicast or ipv6-unicast)',
    ]);
  });

  it('an unknown field is named with the known one it most likely stands for, unless that one is written too', () => {
    assert.throws(() => parseBgpdConfig(`${base}clusterID: 10.0.0.9\nmultipth: 2\n`), {
      message: '2 mistakes:\n  clusterID: unknown field; did you mean clusterId?\n  multipth: unknown field; did you mean multipath?',
    });
    assert.throws(() => parseBgpdConfig(`${base}peers:\n  - { address: 10.0.0.2, asn: 1, holdtime: 9 }\n`), {
      message: 'peers[0].holdtime: unknown field; did you mean holdTime?',
    });
    assert.throws(() => parseBgpdConfig(`${base}peers:\n  - { address: 10.0.0.2, adress: 10.0.0.3, asn: 1 }\n`), {
      message: 'peers[0].adress: unknown field',
    });
  });

  it('keepaliveTime up to the hold time is taken, and any with a hold time of 0 (no keepalives then)', () => {
    const c = parseBgpdConfig(
      base +
        'peers:\n  - { address: 10.0.0.2, asn: 1, holdTime: 9, keepaliveTime: 9 }\n  - { address: 10.0.0.3, asn: 1, holdTime: 0, keepaliveTime: 60 }\n',
    );
    assert.deepEqual(
      c.peers.map((p) => p.keepaliveTime),
      [9, 60],
    );
  });

  it('gracefulRestart: our restart time, the F bit, the selection deferral and the state directory', () => {
    const c = parseBgpdConfig(
      base + 'gracefulRestart: { restartTime: 60, forwardingPreserved: false, selectDeferTime: 30, stateDir: /var/run/bgpd }\n',
    );
    assert.equal(c.speaker.restartTime, 60);
    assert.equal(c.speaker.forwardingPreserved, false);
    assert.equal(c.speaker.selectDeferTime, 30);
    assert.equal(c.gracefulRestart?.stateDir, '/var/run/bgpd');
    // Left out: forwarding preserved (our routes are configuration), the speaker's own defaults.
    const d = parseBgpdConfig(base);
    assert.equal(d.speaker.forwardingPreserved, true);
    assert.equal(d.speaker.restartTime, undefined);
    assert.equal(d.gracefulRestart?.stateDir, undefined);
  });

  it('a file that cannot be read is named', () => {
    const dir = mkdtempSync(join(tmpdir(), 'podroute-bgpd-config-'));
    try {
      const file = join(dir, 'bgpd.yaml');
      assert.throws(() => readBgpdConfig(file), { message: new RegExp(`^${file}: ENOENT`) });
      writeFileSync(file, 'asn: [\n');
      assert.throws(() => readBgpdConfig(file), { message: new RegExp(`^${file}: not YAML or JSON`) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('peers[].ttlSecurity (GTSM) and ttl: taken as given, checked by range, not both', () => {
    const c = parseBgpdConfig(
      `${base}peers:\n  - { address: 10.0.0.2, asn: 65002, ttlSecurity: 1 }\n  - { address: 10.0.0.3, asn: 65003, ttl: 3 }\n`,
    );
    assert.deepEqual(
      c.peers.map((p) => [p.ttlSecurity, p.ttl]),
      [
        [1, undefined],
        [undefined, 3],
      ],
    );
    const bad = (peer: string) => {
      try {
        parseBgpdConfig(`${base}peers:\n  - { address: 10.0.0.2, asn: 65002, ${peer} }\n`);
      } catch (e) {
        if (e instanceof ConfigError) return e.message;
        throw e;
      }
      throw new Error(`accepted ${peer}`);
    };
    assert.match(bad('ttlSecurity: 255'), /peers\[0\]\.ttlSecurity: 255 is not a number in 1\.\.254/);
    assert.match(bad('ttl: 1.5'), /peers\[0\]\.ttl: 1\.5 is not a whole number/);
    assert.match(bad('ttl: 3, ttlSecurity: 1'), /peers\[0\]\.ttl: set ttl or ttlSecurity, not both/);
  });

  it("peers[].localAs: the AS of that session in place of the speaker's, checked by range", () => {
    const c = parseBgpdConfig(`${base}peers:\n  - { address: 10.0.0.2, asn: 65002, localAs: 65011 }\n`);
    assert.equal(c.peers[0]!.localAs, 65011);
    assert.throws(() => parseBgpdConfig(`${base}peers:\n  - { address: 10.0.0.2, asn: 65002, localAs: 0 }\n`), /peers\[0\]\.localAs/);
  });
});
