import { etcdDatastore } from '../../../lib/datastore/index.js';
import { startEtcd, type EtcdServer } from '../../support/etcd.js';
import { ipamCheckSuite } from './check-suite.js';
import { ipamSuite } from '../../support/ipam-suite.js';

describe('ipam: etcd backend (real etcd)', function () {
  this.timeout(60_000);
  let etcd: EtcdServer | undefined;
  let n = 0;
  before(async () => {
    etcd = await startEtcd();
  });
  after(async () => {
    await etcd?.stop();
  });
  const open = () => etcdDatastore({ endpoints: etcd!.endpoints, name: `ipam${process.pid}-${n++}` });
  ipamSuite(open);
  describe('check and repair', () => ipamCheckSuite(open));
});
