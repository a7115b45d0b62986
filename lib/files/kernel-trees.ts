// /proc and /sys, the kernel's own trees: no daemon's file belongs there, and procfs answers a
// mkdir in a folder that exists with ENOENT, so Node's recursive mkdir retries for ever there,
// burning a core. A path is judged as written and where its links lead (/dev/fd is /proc/self/fd).
import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

const KERNEL_TREES = ['/proc', '/sys'];

function kernelTree(path: string): string | undefined {
  return KERNEL_TREES.find((t) => path === t || path.startsWith(`${t}/`));
}

/** Where `path` leads: its deepest existing ancestor with its links resolved, then the rest as written. */
function whereItLeads(path: string): string {
  const rest: string[] = [];
  for (let at = path; ; at = dirname(at)) {
    try {
      return join(realpathSync(at), ...rest);
    } catch {
      if (dirname(at) === at) return path;
      rest.unshift(basename(at));
    }
  }
}

/**
 * Why `path` may not hold a daemon's file, or undefined: it is under /proc or /sys as written or
 * through a link. One step per component of the path.
 */
export function kernelTreeProblem(path: string): string | undefined {
  const absolute = resolve(path);
  const asWritten = kernelTree(absolute);
  const leads = asWritten === undefined ? whereItLeads(absolute) : absolute;
  const tree = asWritten ?? kernelTree(leads);
  if (tree === undefined) return undefined;
  const via = asWritten === undefined ? ` (${leads})` : '';
  return `${path}${via} is under ${tree}, the kernel's own file system, where no daemon's file belongs`;
}
