import { etcdDatastore } from '../../../lib/datastore/index.js';
import { startEtcd, type EtcdServer } from '../../support/etcd.js';
import { datastoreSuite } from '../../support/datastore-suite.js';

describe('datastore: etcd backend (real etcd)', function () {
  this.timeout(60_000);
  let etcd: EtcdServer | undefined;
  let n = 0;
  before(async () => {
    etcd = await startEtcd();
  });
  after(async () => {
    await etcd?.stop();
  });
  // Each test gets its own prefix on the shared member: an empty store at revision 0. The
  // tests run one at a time, so each store's revisions are dense as the contract expects.
  datastoreSuite({
    open: async (o = {}) => etcdDatastore({ endpoints: etcd!.endpoints, name: `t${process.pid}-${n++}`, ...o }),
  });
});
