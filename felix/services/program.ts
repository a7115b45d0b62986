// How the node agent hands services to felix: compile, then set the services' part of the table
// the policy programmer already keeps (one programmer, one table, one transaction per change).
import type { PolicyApplyReport, PolicyProgrammer } from '../policy/programmer.js';
import type { ServiceCompiler, ServiceTable } from './compile.js';
import type { ServiceConntrack } from './conntrack.js';
import type { ServiceInput } from './input.js';

/** The key of the services' part in PolicyProgrammer.updatePart. */
export const SERVICES_PART = 'services';

/**
 * Compiles `input` with `compiler` (one per programmer: it remembers the ports it compiled) and
 * applies it beside whatever policy the programmer holds. Throws
 * ServiceCompileError (naming the field) for input felix cannot program, and then nothing
 * changes; the apply's outcome is in the report (and the programmer's 'report' event).
 * With `conntrack`, the UDP entries the change left pointing at removed endpoints are deleted
 * once it is in the kernel, before `applied` resolves (conntrack.ts).
 */
export function programServices(
  programmer: PolicyProgrammer,
  input: ServiceInput,
  compiler: ServiceCompiler,
  conntrack?: ServiceConntrack,
): { table: ServiceTable; applied: Promise<PolicyApplyReport> } {
  const table = compiler.compile(input);
  const applied = programmer.updatePart(SERVICES_PART, table);
  if (!conntrack) return { table, applied };
  const change = compiler.lastChange();
  const cleaned = applied.then(async (r) => {
    // A failed apply left the kernel as it was: nothing went stale yet.
    if (r.ok) await conntrack.applied(input, change);
    else conntrack.notApplied(change);
    return r;
  });
  return { table, applied: cleaned };
}
