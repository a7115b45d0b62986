// The CNI plugin (`podroute-cni`). See ../agent/README.md.
export { runCni } from './main.js';
export type { CniNote, Say } from './notes.js';
export { cmdAdd, cmdDel, cmdCheck, cmdVersion, workloadFor, type Workload } from './plugin.js';
export { CONTAINER_ID_ANNOTATION } from '../resources/index.js';
export { parseEnv, parseNetConf, SUPPORTED_VERSIONS, type NetConf, type CniEnv, type CniResult, type CniCommand } from './config.js';
export { CniError, CNI_CODES } from './errors.js';
export { hostVethName, GATEWAY as POD_GATEWAY, GATEWAY_V6 as POD_GATEWAY_V6 } from './veth.js';
