// A TCP port nobody listens on, for a listener that must be told its port before it starts
// (the demo's speakers on loopback, and the tests' and benchmarks' daemons). Not part of the
// library's API: the kernel's pick, so another process may take it before the caller does.
import { createServer } from 'node:net';

/** A port free on `host` a moment ago (the kernel's pick for port 0). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
