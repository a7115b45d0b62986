// CNI 1.1's STATUS and GC. STATUS: can an ADD succeed now, that is, is the datastore there
// (code 50 when not). GC: the runtime names every attachment it still holds; this node's
// WorkloadEndpoints made by this plugin for any other container are leftovers of a DEL that never
// came, and go as a DEL would take them: endpoint, host veth (unless it is marked as another
// container's), addresses.
import { NotFoundError } from '../datastore/index.js';
import { CONTAINER_ID_ANNOTATION } from '../resources/index.js';
import { Ipam } from '../ipam/index.js';
import { atLeast } from './cni-version.js';
import type { NetConf } from './config.js';
import { CNI_CODES, CniError } from './errors.js';
import { silent, type Say } from './notes.js';
import { deleteOwnVeth, nodeName, open, storeError, type StoreOpener } from './plugin.js';

/** Error codes of STATUS (CNI 1.1 §"STATUS"). */
export const STATUS_CODES = { pluginNotAvailable: 50, limitedConnectivity: 51 } as const;

function needs11(conf: NetConf, command: string): void {
  if (!atLeast(conf.cniVersion, '1.1.0'))
    throw new CniError(
      CNI_CODES.incompatibleVersion,
      `${command} is not part of CNI ${conf.cniVersion}`,
      `${command} exists from CNI 1.1.0`,
    );
}

export async function cmdStatus(conf: NetConf, procEnv: NodeJS.ProcessEnv = process.env, openStore?: StoreOpener): Promise<void> {
  needs11(conf, 'STATUS');
  let ds: Awaited<ReturnType<typeof open>>;
  try {
    ds = await open(conf, procEnv, openStore);
  } catch (e) {
    const why = e instanceof CniError ? e.message : (e as Error).message;
    throw new CniError(STATUS_CODES.pluginNotAvailable, `the datastore cannot be reached, so no pod can be added: ${why}`);
  }
  try {
    await ds.list('IPPool');
  } catch (e) {
    throw new CniError(STATUS_CODES.pluginNotAvailable, `the datastore does not answer: ${(e as Error).message}`);
  } finally {
    await ds.close().catch(() => undefined);
  }
}

/** What GC removed, by container ID (for the tests and the log; the runtime reads nothing back). */
export async function cmdGc(
  conf: NetConf,
  procEnv: NodeJS.ProcessEnv = process.env,
  openStore?: StoreOpener,
  say: Say = silent,
): Promise<string[]> {
  needs11(conf, 'GC');
  if (conf.validAttachments === undefined)
    throw new CniError(CNI_CODES.invalidConfig, 'network configuration: GC needs cni.dev/valid-attachments (an empty list if none)');
  const keep = new Set(conf.validAttachments.map((a) => a.containerID));
  const node = nodeName(conf, procEnv);
  const ds = await open(conf, procEnv, openStore);
  const removed: string[] = [];
  try {
    const ipam = new Ipam(ds);
    for (const wep of (await ds.list('WorkloadEndpoint')).items) {
      const containerId = wep.metadata.annotations?.[CONTAINER_ID_ANNOTATION];
      if (wep.spec.node !== node || containerId === undefined || keep.has(containerId)) continue;
      await ds.delete('WorkloadEndpoint', `${wep.metadata.namespace}/${wep.metadata.name}`).catch((e) => {
        if (!(e instanceof NotFoundError)) throw e;
      });
      await deleteOwnVeth(wep.spec.interfaceName, containerId, undefined, say);
      await ipam.releaseByHandle(containerId);
      removed.push(containerId);
    }
    return removed;
  } catch (e) {
    throw storeError(e, 'GC');
  } finally {
    await ds.close().catch(() => undefined);
  }
}
