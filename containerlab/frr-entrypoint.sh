#!/bin/sh
# Starts the FRR daemons /etc/frr/daemons enables (zebra and bgpd here) under watchfrr, reading
# /etc/frr/frr.conf, as FRR's own images do; then stays in the foreground until stopped.
set -e
# The daemons run as user frr: their runtime folder must be theirs. A bound frr.conf is read-only.
mkdir -p /var/run/frr /var/log/frr
chown frr:frr /var/run/frr /var/log/frr
chown frr:frr /etc/frr 2>/dev/null || true
[ -f /etc/frr/frr.conf ] || printf 'frr defaults traditional\nlog stdout informational\n' >/etc/frr/frr.conf
# Started in the background so that a stop asked for while FRR is still starting (or stuck, as
# zebra is without NET_ADMIN) is served at once: sh runs a trap only between commands.
trap '/usr/lib/frr/frrinit.sh stop; exit 0' TERM INT
/usr/lib/frr/frrinit.sh start &
wait $! || echo "frr-entrypoint: frrinit.sh start failed" >&2
while :; do sleep 3600 & wait $! || true; done
