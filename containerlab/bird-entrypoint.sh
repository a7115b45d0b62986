#!/bin/sh
# Runs BIRD 2 in the foreground on the bound /etc/bird/bird.conf, its control socket where birdc
# looks by default, as root (the lab's routers program their kernel). A file BIRD refuses stops
# the container at once with BIRD's own message, not a daemon that never answers.
set -e
CONF=/etc/bird/bird.conf
[ -f "$CONF" ] || { echo "bird-entrypoint: no $CONF: bind the router's config there" >&2; exit 1; }
bird -p -c "$CONF" || { echo "bird-entrypoint: bird refused $CONF" >&2; exit 1; }
mkdir -p /run/bird
# exec: BIRD is the container's first process and takes docker stop's SIGTERM itself.
exec bird -f -c "$CONF" -s /run/bird/bird.ctl
