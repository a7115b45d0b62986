// Picks the dataplane: rtnetlink through the addon when it is built, else the clearly
// labelled ip -batch fallback (its description says so, and why).
import type { Dataplane } from './dataplane.js';
import { IpBatchDataplane } from './ipbatch-dataplane.js';
import { LinuxDataplane, type LinuxDataplaneOptions } from './linux-dataplane.js';
import { loadNative, nativeLoadError } from './netlink/native.js';

export function createLinuxDataplane(opts: LinuxDataplaneOptions = {}): Dataplane {
  if (loadNative()) return new LinuxDataplane(opts);
  return new IpBatchDataplane({ netns: opts.netns }, nativeLoadError());
}
