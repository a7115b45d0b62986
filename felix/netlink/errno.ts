// errno names for messages a person reads ("EEXIST: File exists" beats "17").
const NAMES: Record<number, string> = {
  1: 'EPERM: Operation not permitted',
  2: 'ENOENT: No such file or directory',
  3: 'ESRCH: No such process',
  13: 'EACCES: Permission denied',
  16: 'EBUSY: Device or resource busy',
  17: 'EEXIST: File exists',
  19: 'ENODEV: No such device',
  22: 'EINVAL: Invalid argument',
  34: 'ERANGE: Numerical result out of range',
  95: 'EOPNOTSUPP: Operation not supported',
  97: 'EAFNOSUPPORT: Address family not supported',
  101: 'ENETUNREACH: Network is unreachable',
  105: 'ENOBUFS: No buffer space available (replies dropped)',
  110: 'ETIMEDOUT: no reply from the kernel',
  113: 'EHOSTUNREACH: No route to host',
};

export function errnoName(errno: number): string {
  return NAMES[errno] ?? `errno ${errno}`;
}
