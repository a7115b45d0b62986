export { readMrt, readMrtFile, MrtFormatError, type MrtRecord, type MrtSession } from './reader.js';
export { TABLE_DUMP_V2, TableDumpSubtype, type MrtPeer, type MrtPeerIndexTable, type MrtRib, type MrtRibEntry } from './table-dump.js';
export { formatCommunity, formatLargeCommunity } from './communities.js';
