// The process the services test runs inside a namespace (`ip netns exec`), in one of three roles:
//   serve --name N --tcp PORT --udp PORT   answers each TCP connection with "N\n" and echoes
//                                          every line back as "N <line>"; each datagram with "N"
//   count --host H --port P --count K [--udp] [--bind ADDR]
//                                          K connections (or datagrams, each from a new socket),
//                                          one after the other, each bounded; prints
//                                          {"by": {N: hits}, "errors": [...]} as JSON
//   hold --host H --port P                 one connection kept open, a line every 100 ms;
//                                          prints "hello N", then "echo K" per answer, "closed"
import { createSocket } from 'node:dgram';
import { connect, createServer } from 'node:net';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const STEP_MS = 2000;

function serve(): void {
  const name = flag('name') ?? 'unnamed';
  const tcp = createServer((sock) => {
    sock.write(`${name}\n`);
    let buf = '';
    sock.on('data', (d) => {
      buf += d.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        sock.write(`${name} ${buf.slice(0, i)}\n`);
        buf = buf.slice(i + 1);
      }
    });
    sock.on('error', () => {});
  });
  tcp.listen(Number(flag('tcp')), () => process.stdout.write('listening\n'));
  const udp = createSocket(flag('udp-family') === '6' ? 'udp6' : 'udp4');
  udp.on('message', (_m, from) => udp.send(name, from.port, from.address));
  udp.bind(Number(flag('udp')));
}

/** One TCP connection: the first line the far side sends, or why not. */
function tcpOnce(host: string, port: number, bind?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect({ host, port, localAddress: bind });
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error('timeout'));
    }, STEP_MS);
    let buf = '';
    sock.on('data', (d) => {
      buf += d.toString();
      const i = buf.indexOf('\n');
      if (i < 0) return;
      clearTimeout(timer);
      sock.end();
      resolve(buf.slice(0, i));
    });
    sock.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new Error(e.code ?? e.message));
    });
  });
}

/** One datagram from a socket of its own (a new source port, so a new conntrack entry). */
function udpOnce(host: string, port: number, bind?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    const timer = setTimeout(() => {
      sock.close();
      reject(new Error('timeout'));
    }, STEP_MS);
    sock.on('message', (m) => {
      clearTimeout(timer);
      sock.close();
      resolve(m.toString());
    });
    sock.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      sock.close();
      reject(new Error(e.code ?? e.message));
    });
    sock.bind({ address: bind }, () => sock.send('q', port, host));
  });
}

async function count(): Promise<void> {
  const host = flag('host')!;
  const port = Number(flag('port'));
  const n = Number(flag('count') ?? '1');
  const bind = flag('bind');
  const once = args.includes('--udp') ? udpOnce : tcpOnce;
  const by: Record<string, number> = {};
  const errors: string[] = [];
  for (let i = 0; i < n; i++) {
    try {
      const who = await once(host, port, bind);
      by[who] = (by[who] ?? 0) + 1;
    } catch (e) {
      errors.push((e as Error).message);
    }
  }
  process.stdout.write(`${JSON.stringify({ by, errors })}\n`);
}

function hold(): void {
  const sock = connect({ host: flag('host')!, port: Number(flag('port')) });
  let buf = '';
  let sent = 0;
  let timer: NodeJS.Timeout | undefined;
  sock.on('data', (d) => {
    buf += d.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.includes(' ')) {
        process.stdout.write(`hello ${line}\n`);
        timer = setInterval(() => sock.write(`${++sent}\n`), 100);
      } else process.stdout.write(`echo ${line.split(' ')[1]}\n`);
    }
  });
  sock.on('error', (e) => process.stdout.write(`error ${e.message}\n`));
  sock.on('close', () => {
    clearInterval(timer);
    process.stdout.write('closed\n');
    process.exit(0);
  });
}

const role = args[0];
if (role === 'serve') serve();
else if (role === 'count') void count();
else if (role === 'hold') hold();
else {
  process.stderr.write(`echo-peer: unknown role ${JSON.stringify(role)}\n`);
  process.exit(2);
}
