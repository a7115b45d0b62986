// One allocating process for the fault tests, as an agent would be: its own connection, the
// store-identity guard kept in memory, one call at a time until it holds `count` addresses.
// Each outcome is a line appended to its file, the acknowledged ones before the next call:
//   ok <handle> <ip> <sent> <acked>   the caller was told it got ip (times in ms since the epoch)
//   refused <code> <message>  IPAM refused (StoreReplaced while the store is not the one it knew)
//   unavailable <message>     the store did not answer; the handle may or may not hold an address
// A fresh handle follows every failure. Exits 0 with `count` acknowledged, 1 on any other
// error, 3 when the deadline passes first.
//   node --import tsx test/lib/datastore/allocator.ts '{"config":{...},"index":0,"count":500,"out":"/tmp/x","deadlineMs":60000}'
import { appendFileSync } from 'node:fs';
import { DatastoreUnavailableError, openDatastore, type DatastoreConfig } from '../../../lib/datastore/index.js';
import { Ipam, IpamError, memoryIdentityRecord } from '../../../lib/ipam/index.js';

interface AllocatorArgs {
  config: DatastoreConfig;
  index: number;
  count: number;
  out: string;
  deadlineMs: number;
}

const args = JSON.parse(process.argv[2] ?? '') as AllocatorArgs;
const deadline = Date.now() + args.deadlineMs;
const write = (line: string): void => appendFileSync(args.out, `${line.replace(/\n/g, ' ')}\n`);
const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const ds = await openDatastore(args.config);
const ipam = new Ipam(ds, { identity: memoryIdentityRecord() });
const node = `node-${args.index}`;
let acked = 0;
let code = 0;
try {
  for (let k = 0; acked < args.count; k++) {
    if (Date.now() > deadline) {
      write(`deadline ${acked} acknowledged`);
      code = 3;
      break;
    }
    const handle = `p${args.index}-${k}`;
    try {
      const sent = Date.now();
      const a = await ipam.autoAssign({ handle, node });
      write(`ok ${handle} ${a.ip} ${sent} ${Date.now()}`);
      acked++;
    } catch (e) {
      if (e instanceof IpamError && e.code === 'StoreReplaced') write(`refused ${e.code} ${e.message}`);
      else if (e instanceof DatastoreUnavailableError) write(`unavailable ${e.message}`);
      else throw e;
      await pause(50);
    }
  }
} catch (e) {
  write(`error ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
  code = 1;
} finally {
  await ds.close();
}
process.exit(code);
