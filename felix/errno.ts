// The kernel's errnos felix meets, under the names the kernel gives them, and the one way an
// errno becomes text a person reads ("EEXIST: File exists", never a bare 17).

import { constants } from 'node:os';

// The numbers come from the platform's own table: netlink answers with this kernel's errnos.
const E = constants.errno;

/** Felix lacks CAP_NET_ADMIN in the namespace: nothing it writes there will take. */
export const EPERM = E.EPERM;
/** A neighbour (ARP/FDB) entry to delete is not there. */
export const ENOENT = E.ENOENT;
/** A route to delete is not there, or not with our protocol and metric: someone removed it already. */
export const ESRCH = E.ESRCH;
export const EACCES = E.EACCES;
export const EBUSY = E.EBUSY;
/** A route (or device) with that key exists already: our record of the table is stale, or another program got there first. */
export const EEXIST = E.EEXIST;
/** A route's device does not exist: the pod's veth went with the pod, or a tunnel was never made. */
export const ENODEV = E.ENODEV;
/** The kernel refused the request's shape; for an IPv6 onlink route, a gateway the route table does not reach. */
export const EINVAL = E.EINVAL;
export const ERANGE = E.ERANGE;
/** The kernel lacks a driver asked for (no ipip module: IPIP routes cannot be programmed on this host). */
export const EOPNOTSUPP = E.EOPNOTSUPP;
export const EAFNOSUPPORT = E.EAFNOSUPPORT;
/** An IPv4 gateway not on any connected subnet ("Nexthop has invalid gateway"). */
export const ENETUNREACH = E.ENETUNREACH;
/** The socket's receive buffer overflowed and the kernel dropped replies: see {@link replyLost}. */
export const ENOBUFS = E.ENOBUFS;
/** No reply from the kernel in time: see {@link replyLost}. */
export const ETIMEDOUT = E.ETIMEDOUT;
export const EHOSTUNREACH = E.EHOSTUNREACH;
/** A set is full (its size bound), or a map's data does not fit. */
export const ENOSPC = E.ENOSPC;
/** An nf_tables batch or one of its attributes is larger than the kernel takes. */
export const EMSGSIZE = E.EMSGSIZE;
/** An nf_tables jump would make a loop of chains. */
export const ELOOP = E.ELOOP;
/**
 * The kernel's own ERESTART (not in the platform's table: user space never sees it from a
 * system call): an nf_tables batch planned against a generation that another commit has ended.
 */
export const ERESTART = 85;

// What each means, in strerror's words (or felix's, where the kernel's would mislead).
const TEXT = new Map<number, string>([
  [EPERM, 'EPERM: Operation not permitted'],
  [ENOENT, 'ENOENT: No such file or directory'],
  [ESRCH, 'ESRCH: No such process'],
  [EACCES, 'EACCES: Permission denied'],
  [EBUSY, 'EBUSY: Device or resource busy'],
  [EEXIST, 'EEXIST: File exists'],
  [ENODEV, 'ENODEV: No such device'],
  [EINVAL, 'EINVAL: Invalid argument'],
  [ERANGE, 'ERANGE: Numerical result out of range'],
  [EOPNOTSUPP, 'EOPNOTSUPP: Operation not supported'],
  [EAFNOSUPPORT, 'EAFNOSUPPORT: Address family not supported'],
  [ENETUNREACH, 'ENETUNREACH: Network is unreachable'],
  [ENOBUFS, 'ENOBUFS: No buffer space available (replies dropped)'],
  [ETIMEDOUT, 'ETIMEDOUT: no reply from the kernel'],
  [EHOSTUNREACH, 'EHOSTUNREACH: No route to host'],
  [ENOSPC, 'ENOSPC: No space left on device'],
  [EMSGSIZE, 'EMSGSIZE: Message too long'],
  [ELOOP, 'ELOOP: Too many levels of symbolic links (a loop of chains)'],
  [ERESTART, 'ERESTART: another nftables commit came first'],
]);

/** The platform's names of the errnos felix has no words for: "EPROTONOSUPPORT (errno 93)". */
const NAMES = new Map(Object.entries(E).map(([name, n]) => [n, `${name} (errno ${n})`]));

/**
 * The text of a failure: "ENODEV: No such device", or with `detail` in place of the generic
 * words, "ENODEV: device cali1 does not exist". An errno felix has no words for reads by the
 * platform's name, "EPROTONOSUPPORT (errno 93)", and one the platform does not name "errno N".
 */
export function errnoText(errno: number, detail?: string): string {
  const text = TEXT.get(errno);
  const name = text === undefined ? (NAMES.get(errno) ?? `errno ${errno}`) : text.slice(0, text.indexOf(':'));
  if (detail === undefined) return text ?? name;
  return `${name}: ${detail}`;
}

/**
 * The kernel's answer never arrived (ENOBUFS: dropped from a full receive buffer; ETIMEDOUT:
 * none in time). The request may or may not have been applied: a create that did happen
 * answers EEXIST when retried, so the retry must be ready to look again.
 */
export function replyLost(errno: number): boolean {
  return errno === ENOBUFS || errno === ETIMEDOUT;
}
