// BGPFilter through `podroute apply -f`, `get bgpfilter [-o yaml]` and `delete`, beside a BGPPeer
// that names it and sets localASNumber: what comes back reads as what went in. (The datastore
// contract suite keeps the kind on every backend.)
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runDatastoreCommand } from '../../../lib/cli/datastore.js';
import { type BackendDatastore, memoryDatastore } from '../../../lib/datastore/index.js';
import { parseResources, type Resource } from '../../../lib/resources/index.js';

const MANIFESTS = `
apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: tor}
spec:
  exportV4:
  - {action: Reject, matchOperator: Equal, cidr: 10.65.1.0/26}
  importV4:
  - {action: Accept, matchOperator: In, cidr: 10.0.0.0/8, prefixLength: {min: 16, max: 24}}
  - {action: Reject}
  importV6:
  - {action: Reject, source: RemotePeers}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: rack1-tor}
spec:
  peerIP: 10.90.255.1
  asNumber: 65000
  localASNumber: 65011
  filters: [tor]
`;

const strip = (r: Resource): unknown => {
  const { resourceVersion: _rv, creationTimestamp: _ct, ...metadata } = r.metadata;
  return { ...r, metadata };
};

describe('podroute apply / get / delete: BGPFilter', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podroute-bgpfilter-cli-'));
  const file = join(dir, 'filter.yaml');
  const out: string[] = [];
  const err: string[] = [];
  const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s) };
  let ds: BackendDatastore;
  const cli = async (...argv: string[]): Promise<string> => {
    out.length = 0;
    err.length = 0;
    const code = await runDatastoreCommand(argv, io, ds);
    assert.equal(code, 0, `${argv.join(' ')}: ${err.join('')}`);
    return out.join('');
  };
  before(() => {
    ds = memoryDatastore();
    writeFileSync(file, MANIFESTS);
  });
  after(async () => {
    await ds.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('apply stores the filter and the peer; get -o yaml gives back what was applied', async () => {
    const applied = await cli('apply', '-f', file);
    assert.match(applied, /applied BGPFilter tor/);
    assert.match(applied, /applied BGPPeer rack1-tor/);
    const want = parseResources(MANIFESTS).map(strip);
    assert.deepEqual(parseResources(await cli('get', 'bgpfilter', 'tor', '-o', 'yaml')).map(strip), [want[0]]);
    assert.deepEqual(parseResources(await cli('get', 'bgppeer', 'rack1-tor', '-o', 'yaml')).map(strip), [want[1]]);
  });

  it('get prints a table of the rule counts per list, under every name of the kind', async () => {
    for (const arg of ['bgpfilter', 'bgpfilters', 'bgpfilters.projectcalico.org']) {
      const table = await cli('get', arg);
      assert.match(table, /^NAME\s+EXPORTV4\s+IMPORTV4\s+EXPORTV6\s+IMPORTV6\n/, arg);
      assert.match(table, /tor\s+1\s+2\s+0\s+1\n/, arg);
    }
  });

  it('delete removes it', async () => {
    assert.match(await cli('delete', 'bgpfilter', 'tor'), /deleted BGPFilter tor/);
    assert.equal(await ds.get('BGPFilter', 'tor'), undefined, 'still stored');
  });
});
