// Who may reach a bgpd's control socket and what it takes: the file's mode and group are the
// ones asked for whatever the umask, a body over the limit is refused before it reaches the
// speaker, and a client that trickles its request is cut off. A real speaker (no listener)
// answers on a real socket; the last case runs `podroute bgpd` itself.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BgpSpeaker } from '../../../bgp/index.js';
import { parseBgpdConfig } from '../../../lib/bgpd/config.js';
import { allPaths, callControl, serveControl } from '../../../lib/bgpd/control.js';
import { listenControlSocket, MAX_REQUEST_BODY, resolveControlSocket } from '../../../lib/bgpd/control-socket.js';
import { parseReflectorConfig } from '../../../lib/bgpd/reflector-config.js';
import { waitFor } from '../../support/wait.js';

const PODROUTE = join(fileURLToPath(import.meta.url), '../../../../bin/podroute.js');

/** A request with its body as given: `chunked` leaves out Content-Length. */
function post(socketPath: string, path: string, body: Buffer, chunked = false): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json' };
    if (!chunked) headers['content-length'] = body.length;
    const req = http.request({ socketPath, method: 'POST', path, headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    // The server may close while the rest of an oversize body is still being written.
    req.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? undefined : reject(e)));
    if (chunked) for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.subarray(i, i + 64 * 1024));
    else req.write(body);
    req.end();
  });
}

/** A body of many prefixes that is valid JSON and a valid call, only too large. */
function bigOriginate(bytes: number): Buffer {
  const prefixes: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const p = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`;
    prefixes.push(p);
    size += p.length + 3;
  }
  return Buffer.from(JSON.stringify({ prefixes }));
}

describe('bgpd control socket: mode, group and limits', function () {
  this.timeout(30_000);
  let dir: string;
  let speaker: BgpSpeaker;
  const servers: http.Server[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'podroute-ctlsock-'));
    speaker = new BgpSpeaker({ asn: 64512, routerId: '10.0.0.1', listen: false });
    speaker.originate('10.9.0.0/24');
  });
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
    await speaker.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('under umask 000 the socket is created 0660, never more open', async () => {
    const old = process.umask(0);
    try {
      const path = join(dir, 'bgpd.sock');
      servers.push(await serveControl(speaker, path, () => {}));
      assert.equal((statSync(path).mode & 0o7777).toString(8), '660');
      // The moment bind() made it, before the mode was set, it was the owner's only.
      const early = join(dir, 'early.sock');
      const server = http.createServer();
      const listen = server.listen.bind(server);
      let atBind = -1;
      server.listen = ((...args: Parameters<typeof listen>) => {
        const r = listen(...args);
        atBind = statSync(early).mode & 0o777;
        return r;
      }) as typeof server.listen;
      await listenControlSocket(server, { path: early, mode: 0o660 });
      servers.push(server);
      assert.equal(atBind.toString(8), '600');
      assert.equal((statSync(early).mode & 0o777).toString(8), '660');
      // And a file made right after, under the same umask, is 0666: the umask was restored.
      writeFileSync(join(dir, 'after'), '');
      assert.equal((statSync(join(dir, 'after')).mode & 0o777).toString(8), '666');
    } finally {
      process.umask(old);
    }
  });

  it('the mode and group asked for are the ones the file gets', async () => {
    const old = process.umask(0);
    try {
      const path = join(dir, 'bgpd.sock');
      const socket = await resolveControlSocket({ mode: 0o640, group: 4242 }, path);
      servers.push(await serveControl(speaker, socket, () => {}));
      const st = statSync(path);
      assert.equal((st.mode & 0o7777).toString(8), '640');
      assert.equal(st.gid, 4242);
      assert.equal(st.uid, process.getuid?.());
    } finally {
      process.umask(old);
    }
  });

  it('a group by name is resolved; an unknown name is refused naming the field', async () => {
    const path = join(dir, 'bgpd.sock');
    assert.equal((await resolveControlSocket({ mode: 0o660, group: 'root' }, path)).gid, 0);
    await assert.rejects(
      resolveControlSocket({ mode: 0o660, group: 'no-such-group-x9' }, path),
      /^ConfigError: control\.group: no group named no-such-group-x9$/,
    );
  });

  it('a live socket or another file at the path is refused; a stale socket is replaced', async () => {
    const live = join(dir, 'live.sock');
    const other = createServer().listen(live);
    await new Promise((r) => other.once('listening', r));
    await assert.rejects(resolveControlSocket({ mode: 0o660 }, live), /control: .*live\.sock: another daemon answers on it/);
    await new Promise((r) => other.close(r));
    const file = join(dir, 'file');
    writeFileSync(file, 'keep me');
    await assert.rejects(resolveControlSocket({ mode: 0o660 }, file), /control: .*file exists and is not a socket/);
    assert.ok(statSync(file).isFile(), `${file} is no longer a plain file`);
    // A socket file left by a killed daemon: a process that bound it and exited without unlinking.
    const stale = join(dir, 'stale.sock');
    execFileSync('python3', ['-c', 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', stale]);
    assert.ok(statSync(stale).isSocket(), `${stale} is not a socket`);
    servers.push(await serveControl(speaker, await resolveControlSocket({ mode: 0o660 }, stale), () => {}));
    assert.equal((await callControl<{ asn: number }>(stale, 'GET', '/status')).asn, 64512);
  });

  it('a body over 1 MiB gets 413 naming the limit, and the speaker is untouched', async () => {
    const path = join(dir, 'bgpd.sock');
    servers.push(await serveControl(speaker, path, () => {}));
    const before = JSON.stringify(allPaths(speaker, 'ipv4-unicast'));
    const body = bigOriginate(MAX_REQUEST_BODY + 1000);
    for (const chunked of [false, true]) {
      const r = await post(path, '/originate', body, chunked);
      assert.equal(r.status, 413, `${chunked ? 'chunked' : 'with a length'}: ${r.text}`);
      assert.match(JSON.parse(r.text).error, /over the limit of 1048576 bytes \(1 MiB\)/);
      assert.equal(JSON.stringify(allPaths(speaker, 'ipv4-unicast')), before);
    }
    // The same call under the limit is a call like any other.
    const small = bigOriginate(MAX_REQUEST_BODY / 2);
    const ok = await post(path, '/originate', small);
    assert.equal(ok.status, 200, ok.text);
    assert.ok(
      speaker.routes('ipv4-unicast').length > 10_000,
      `${speaker.routes('ipv4-unicast').length} ipv4-unicast routes: want more than 10,000`,
    );
  });

  it('a client that trickles its headers or its body is cut off within the time limits', async () => {
    const path = join(dir, 'bgpd.sock');
    servers.push(await serveControl(speaker, path, () => {}));
    const trickle = (first: string) =>
      new Promise<{ ms: number; answer: string }>((resolve) => {
        const start = Date.now();
        const s = connect(path);
        let answer = '';
        s.on('data', (c) => (answer += c.toString()));
        s.write(first);
        // One byte a second keeps the connection busy but never finishes the request.
        const t = setInterval(() => s.writable && s.write(' '), 1000);
        s.on('close', () => {
          clearInterval(t);
          resolve({ ms: Date.now() - start, answer });
        });
        s.on('error', () => undefined);
      });
    const [headers, body] = await Promise.all([
      trickle('GET /status HTTP/1.1\r\nHost: x\r\nX-Slow: a'),
      trickle('POST /originate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{'),
    ]);
    // headersTimeout 5 s, requestTimeout 10 s, checked every second.
    assert.ok(headers.ms >= 4_500 && headers.ms < 8_000, `headers cut off after ${headers.ms} ms`);
    assert.ok(body.ms >= 9_500 && body.ms < 13_000, `body cut off after ${body.ms} ms`);
    // Node answers 408 when it can, or just closes (the handler already holds the response).
    assert.ok(body.answer === '' || body.answer.startsWith('HTTP/1.1 408'), body.answer);
    assert.equal(JSON.stringify(allPaths(speaker, 'ipv4-unicast').map((r) => r.prefix)), '["10.9.0.0/24"]');
  });

  it('the file: `control` is a path or { path, mode, group }, checked strictly', () => {
    const base = 'asn: 64512\nrouterId: 10.0.0.1\n';
    assert.deepEqual(parseBgpdConfig(`${base}control: /run/bgpd.sock\n`).control, { path: '/run/bgpd.sock', mode: 0o660 });
    assert.deepEqual(parseBgpdConfig(`${base}control: { path: /run/b.sock, mode: "0600", group: bgp }\n`).control, {
      path: '/run/b.sock',
      mode: 0o600,
      group: 'bgp',
    });
    assert.deepEqual(parseReflectorConfig(`${base}control: { mode: "640", group: 120 }\n`).control, {
      path: undefined,
      mode: 0o640,
      group: 120,
    });
    assert.equal(parseBgpdConfig(base).control, undefined);
    const refused: [string, RegExp][] = [
      ['control: { mode: 0660 }', /^ConfigError: control\.mode: 660 is not a mode written in octal in quotes, like "0660"$/],
      ['control: { mode: "0777x" }', /^ConfigError: control\.mode: "0777x" is not a mode/],
      ['control: { mode: "0460" }', /^ConfigError: control\.mode: 0460 leaves the daemon's own user without read and write$/],
      ['control: { owner: me }', /^ConfigError: control\.owner: unknown field/],
      ['control: { group: "a b" }', /^ConfigError: control\.group: "a b" is not a group name or number$/],
      ['control: { group: -1 }', /^ConfigError: control\.group: -1 is not a group name or number$/],
      ['control: 5', /^ConfigError: control: a socket path, or \{ path, mode, group \}$/],
      [`control: /${'x'.repeat(120)}`, /^ConfigError: control: \/x+ is longer than a Unix socket path may be \(107 bytes\)$/],
    ];
    for (const [line, message] of refused) assert.throws(() => parseBgpdConfig(`${base}${line}\n`), message, line);
  });

  it("podroute bgpd under umask 000 makes its socket with the file's mode and group", async function () {
    if (process.getuid?.() !== 0) this.skip(); // chown to another group needs root
    const path = join(dir, 'bgpd.sock');
    const config = join(dir, 'bgpd.yaml');
    writeFileSync(config, `asn: 64512\nrouterId: 10.0.0.1\nlisten: false\ncontrol: { path: ${path}, mode: "0640", group: 4243 }\n`);
    const child = spawn('sh', ['-c', `umask 000; exec node ${PODROUTE} bgpd --config ${config}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    try {
      await waitFor(() => callControl<{ asn: number }>(path, 'GET', '/status'), { what: `bgpd answering (${stderr})`, timeoutMs: 20_000 });
      const st = statSync(path);
      assert.equal((st.mode & 0o7777).toString(8), '640');
      assert.equal(st.gid, 4243);
      await callControl(path, 'POST', '/stop', {});
      assert.equal(await exited, 0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
