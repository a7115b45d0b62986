// IPAMHandle: written by IPAM's own operations; the handle's ID defaults to the object's name.
import type { Checker, Obj } from './checker.js';

export function checkIPAMHandle(c: Checker, s: Obj, name: string): Obj {
  const block = s.block === undefined ? {} : c.obj(s.block, 'spec.block');
  return { handleID: c.str(s, 'handleID', 'spec') ?? name, block };
}
