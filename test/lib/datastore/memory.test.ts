import { memoryDatastore } from '../../../lib/datastore/index.js';
import { datastoreSuite } from '../../support/datastore-suite.js';

describe('datastore: memory backend', () => {
  datastoreSuite({ open: async (o = {}) => memoryDatastore(o) });
});
