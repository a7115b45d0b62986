#!/bin/sh
# Installs what the suite needs and is missing: npm packages, and (as root) the real peers,
# Redis (../shared/PEERS.md) and headless Chromium (the web page's browser tests) from Debian.
# Safe to run again: it only installs what is absent.
set -e
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

need=""
for pair in bgpd:frr bird:bird2 gobgpd:gobgpd exabgp:exabgp redis-server:redis-server redis-sentinel:redis-sentinel \
            tshark:tshark ping:iputils-ping ip:iproute2 ethtool:ethtool bgpdump:bgpdump nft:nftables etcd:etcd-server \
            dockerd:docker.io debootstrap:debootstrap conntrack:conntrack socat:socat wg:wireguard-tools \
            chromium:chromium; do
  bin=${pair%%:*}; pkg=${pair#*:}
  if ! command -v "$bin" >/dev/null 2>&1 && [ ! -x "/usr/lib/frr/$bin" ]; then need="$need $pkg"; fi
done
if [ -n "$need" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "ensure-deps: missing Debian packages:$need (run as root to install them; tests that need them will fail)" >&2
    exit 0
  fi
  echo "ensure-deps: installing$need" >&2
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  export DEBIAN_FRONTEND=noninteractive
  # Packages are installed, not started: a system dockerd would add docker0 and set the host's
  # FORWARD policy to DROP, and a system redis-server or etcd would hold ports the tests use.
  # policy-rc.d answering 101 is how Debian says "do not start services" (invoke-rc.d and
  # deb-systemd-invoke both ask it); ours is removed again, one already there is left alone.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get install -y -q $need >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q $need >/dev/null; }
fi

# The real-kernel VM (ipip, sctp, wireguard, which this machine's kernel may lack): qemu and the boot
# image's tools from Debian, and Debian's kernel package, downloaded once into /var/cache/podroute-kernel-vm.
if [ "$(id -u)" = 0 ] && [ "${PODROUTE_KERNEL_VM:-}" != 0 ]; then
  bash test/support/kernel-vm.sh --prepare
fi
