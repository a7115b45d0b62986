import { memoryDatastore } from '../../../lib/datastore/index.js';
import { ipamSuite } from '../../support/ipam-suite.js';

describe('ipam: memory backend', () => {
  ipamSuite(async () => memoryDatastore());
});
