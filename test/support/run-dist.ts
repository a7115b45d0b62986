// The whole suite's processes run dist/ (.mocharc.json requires this file): before the first
// test, dist/ is built if any source is newer, then PODROUTE_RUN=dist, which every podroute and
// podroute-cni a test starts inherits, and so do the agents and plugins those start in turn.
// Tests that are about a checkout's own run (the demo through `npm start`) give a bare
// environment, so they still run the sources through tsx.
import { ensureDist } from './dist.js';

export async function mochaGlobalSetup(): Promise<void> {
  await ensureDist();
  process.env.PODROUTE_RUN = 'dist';
}
