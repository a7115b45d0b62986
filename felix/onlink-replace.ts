// Linux checks an IPv6 onlink gateway against the table (ip6_route_check_nh_onlink), where the
// route being replaced can cover the gateway through another device: a remote block moving from
// direct to VXLAN (CrossSubnet to Always) has its VTEP address inside the block, and the replace
// is refused with EINVAL ("Nexthop has invalid gateway", and "or device mismatch" in later kernels). Deleting the old route first takes it
// out of the check, so each Linux dataplane writes such a replace again as delete, then create;
// which outcome is that refusal is the dataplane's to say, as only it knows how the kernel's
// answer reached it.
import type { RouteWrite, WriteOutcome } from './dataplane.js';

/**
 * `outcomes` of `writes`, with every IPv6 onlink replace that `refused` recognises written again
 * through `write` as delete, then create: its outcome is then the create's (or the refusal, if
 * the delete failed).
 */
export async function retryOnlinkReplaces(
  writes: readonly RouteWrite[],
  outcomes: WriteOutcome[],
  refused: (o: WriteOutcome) => boolean,
  write: (writes: readonly RouteWrite[]) => Promise<WriteOutcome[]>,
): Promise<WriteOutcome[]> {
  const retry = writes.flatMap((w, i) => {
    const o = outcomes[i];
    const onlink = w.route.type === 'unicast' && w.route.nextHops.some((h) => h.onlink);
    return !o.ok && w.op === 'replace' && onlink && w.route.dst.includes(':') && refused(o) ? [i] : [];
  });
  if (retry.length === 0) return outcomes;
  const again = await write(
    retry.flatMap((i) => [
      { op: 'delete' as const, route: writes[i].route, metric: writes[i].metric },
      { op: 'create' as const, route: writes[i].route },
    ]),
  );
  retry.forEach((i, k) => {
    // Once the old route is gone, what counts is the create (a failure is retried as a replace).
    if (again[2 * k].ok) outcomes[i] = again[2 * k + 1];
  });
  return outcomes;
}
