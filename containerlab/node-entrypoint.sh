#!/bin/sh
# containerlab starts the container before it wires eth1 and runs the exec lines that address
# it: wait (bounded) for the uplink named in the node config to carry an IPv4 address.
set -e
UPLINK=$(sed -n 's/^uplink: *//p' /etc/podroute/node.yaml 2>/dev/null | tr -d '"' )
UPLINK=${UPLINK:-eth1}
i=0
until ip -4 addr show dev "$UPLINK" 2>/dev/null | grep -q inet; do
  i=$((i + 1))
  if [ "$i" -gt 120 ]; then echo "node-entrypoint: $UPLINK has no IPv4 address after 60 s" >&2; exit 1; fi
  sleep 0.5
done
mkdir -p /var/run/podroute
exec "$@"
