#!/bin/sh
# Runs every benchmark in bench/ in turn, at the sizes BENCHMARKS.md reports, and keeps each one's
# output with what a figure needs beside it: commit, date, machine, load average before and after,
# wall time. Root (network namespaces, nftables, iptables, ipset).
#
#   bench/all.sh [--out DIR] [NAME ...]     NAME: codec ipam rib routes felix-stream policy services services-feed
#                                           conntrack-cleanup flows speaker speaker-gobgp reflector mesh agent-latency
#                                           soak
#                                           (default: all; soak alone takes an hour)
#
# Each benchmark's output goes to DIR/NAME.txt (default DIR: a new directory under /tmp), and a
# one-line summary per benchmark to DIR/summary.txt. The machine is best left quiet: the wall times
# move with other load, the ratios against the reference measured in the same run much less.
set -u
cd "$(dirname "$0")/.."

out=''
if [ "${1:-}" = '--out' ]; then
  out=$2
  shift 2
fi
[ -n "$out" ] || out=$(mktemp -d /tmp/podroute-bench.XXXXXX)
mkdir -p "$out"

# name | command (run from the repository's root)
BENCHMARKS='codec|node --import tsx bench/codec.ts 15
ipam|npx tsx bench/ipam.ts 2000
rib|node --expose-gc --import tsx bench/rib.ts
routes|npx tsx bench/routes.ts 100000 3
felix-stream|npx tsx bench/felix-stream.ts 1400 4 25
policy|npx tsx bench/policy.ts --reps 200
services|npx tsx bench/services.ts --services 10000 --updates 200 --resyncs 10
services-feed|npx tsx bench/services-feed.ts
conntrack-cleanup|npx tsx bench/conntrack-cleanup.ts --entries 100000 --reps 20
flows|npx tsx bench/flows.ts --rate 10000 --seconds 10
speaker|node --import tsx bench/speaker/run.ts --scenario 1x100k,1x100k-warm,10x100k,mrt,mrt-warm,calico,calico-warm,mrt-v6 --daemons podroute,bird,frr
speaker-gobgp|node --import tsx bench/speaker/run.ts --scenario 1x100k,1x100k-warm,calico,calico-warm,mrt-v6 --daemons podroute,gobgp
reflector|node --import tsx bench/scale/reflector.ts --clients 1400 --timeout 300
mesh|node --import tsx bench/scale/mesh.ts --nodes 1000,4000
agent-latency|npx tsx bench/agent-latency.ts --pods 100
soak|npx tsx bench/soak.ts --minutes 60'

machine="$(nproc) cores, $(awk '/MemTotal/ { printf "%.1f GB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r), Node $(node --version)"
commit=$(git rev-parse --short HEAD)
echo "commit $commit; $machine; results in $out" | tee "$out/summary.txt"

echo "$BENCHMARKS" | while IFS='|' read -r name cmd; do
  if [ $# -gt 0 ]; then
    case " $* " in *" $name "*) ;; *) continue ;; esac
  fi
  before=$(cut -d' ' -f1-3 /proc/loadavg)
  start=$(date +%s)
  {
    echo "# $name: $cmd"
    echo "# commit $commit, $(date -u '+%Y-%m-%d %H:%M UTC'), $machine"
    echo "# load average before: $before"
  } >"$out/$name.txt"
  sh -c "$cmd" >>"$out/$name.txt" 2>&1 </dev/null
  rc=$?
  after=$(cut -d' ' -f1-3 /proc/loadavg)
  wall=$(($(date +%s) - start))
  echo "# load average after: $after; wall ${wall} s; exit $rc" >>"$out/$name.txt"
  echo "$name: exit $rc, wall ${wall} s, load $before -> $after: $cmd" | tee -a "$out/summary.txt"
done
