import { memoryDatastore } from '../../lib/datastore/index.js';
import { ipamSuite } from './suite.js';

describe('ipam: memory backend', () => {
  ipamSuite(async () => memoryDatastore());
});
