#!/bin/sh
# Builds the lab images with no image registry: a minimal Debian bookworm root made by
# debootstrap from this machine's own apt mirror, imported as podroute/base, and on it
#   podroute/node   Node (the binary that runs this script), the packed podroute, nftables, iproute2
#   podroute/frr    Debian's FRR (zebra, bgpd, vtysh) started from /etc/frr/daemons
#   podroute/redis  Debian's redis-server
#   podroute/bird   Debian's BIRD 2, run on /etc/bird/bird.conf
# Everything is cached by content: the debootstrap tarball (keyed by suite, mirror and package
# list) in the cache folder, and each image tagged with a hash of its inputs, so a second run
# that finds those tags does nothing. See containerlab/README.md, "Building the images".
# The braces make sh read the whole script before it runs any of it: an edit or a checkout
# during a build cannot change what the running build does.
{
set -eu

SUITE=bookworm
# What every image shares: the tools exec lines use (ip, sysctl, ping) and felix's nft.
BASE_PACKAGES=iproute2,iputils-ping,nftables,procps
LABEL=org.podroute.inputs

usage() {
  cat <<EOF
usage: containerlab/build-images.sh [--docker-host HOST] [--cache-dir DIR] [--source DIR] [--only NAME]...

Builds podroute/base, podroute/node, podroute/frr, podroute/redis and podroute/bird (tags :latest and
:<inputs hash>), skipping every image whose inputs hash is already tagged.

  --docker-host HOST  the daemon to build on (default \$DOCKER_HOST, else the client's default)
  --cache-dir DIR     where the debootstrap tarball is kept
                      (default \$PODROUTE_IMAGES_CACHE, else \${XDG_CACHE_HOME:-\$HOME/.cache}/podroute/images)
  --source DIR        the podroute sources packed into podroute/node (default: this checkout)
  --only NAME         build only node, frr, redis or bird (and the base); may be repeated

Environment: PODROUTE_IMAGES_MIRROR overrides the Debian mirror read from the apt sources.
debootstrap runs as root, only when the tarball is not cached yet.
EOF
}

say() { printf 'build-images: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${PODROUTE_IMAGES_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/podroute/images}
SOURCE=$ROOT
ONLY=""
while [ $# -gt 0 ]; do
  case $1 in
    --docker-host) [ $# -ge 2 ] || die "--docker-host needs a value"; DOCKER_HOST=$2; export DOCKER_HOST; shift 2 ;;
    --docker-host=*) DOCKER_HOST=${1#*=}; export DOCKER_HOST; shift ;;
    --cache-dir) [ $# -ge 2 ] || die "--cache-dir needs a value"; CACHE=$2; shift 2 ;;
    --cache-dir=*) CACHE=${1#*=}; shift ;;
    --source) [ $# -ge 2 ] || die "--source needs a value"; SOURCE=$(cd "$2" && pwd); shift 2 ;;
    --only)
      [ $# -ge 2 ] || die "--only needs a value"
      case $2 in node|frr|redis|bird) ONLY="$ONLY $2" ;; *) die "--only: unknown image \"$2\" (node, frr, redis or bird)" ;; esac
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
wanted() { [ -z "$ONLY" ] || case " $ONLY " in *" $1 "*) true ;; *) false ;; esac; }

# The classic builder: the daemon is Debian's 20.10, and a newer client would otherwise ask
# for buildx. Its layer cache ignores file times, so a restaged context reuses the layers.
DOCKER_BUILDKIT=0
export DOCKER_BUILDKIT

command -v docker >/dev/null 2>&1 || die "no docker client on PATH (apt-get install docker.io)"
if ! why=$(docker version --format '{{.Server.Version}}' 2>&1 >/dev/null); then
  case $why in
    *"permission denied"*) die "no access to the docker daemon at ${DOCKER_HOST:-the default socket}: run as root (or in the docker group)" ;;
    *) die "no docker daemon answers at ${DOCKER_HOST:-the default socket} (start dockerd, or pass --docker-host unix:///path/to/docker.sock): $(printf '%s' "$why" | tail -n 1)" ;;
  esac
fi
say "daemon ${DOCKER_HOST:-default} (dockerd $(docker version --format '{{.Server.Version}}'))"

sha() { sha256sum | cut -c1-64; }
short() { printf '%s' "$1" | cut -c1-12; }
has_image() { docker image inspect "$1" >/dev/null 2>&1; }
image_id() { docker image inspect --format '{{.Id}}' "$1"; }
elapsed() { echo $(($(date +%s) - $1)); }

# The mirror debootstrap reads: the first URI the machine's apt sources give for the suite.
mirror_from_apt() {
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822: a stanza is a paragraph; take one of Types deb whose Suites name the suite.
    awk -v suite="$SUITE" 'BEGIN { RS = ""; FS = "\n" }
      {
        types = ""; suites = ""; uris = ""
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^Types:/) types = " " substr($i, 7) " "
          if ($i ~ /^Suites:/) suites = " " substr($i, 8) " "
          if ($i ~ /^URIs:/) uris = substr($i, 6)
        }
        gsub(/[ \t]+/, " ", types); gsub(/[ \t]+/, " ", suites)
        if (types ~ / deb / && suites ~ (" " suite " ")) { split(uris, u, " "); if (u[1] != "") { print u[1]; exit } }
      }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -e 's/\[[^]]*\]//' "$f" | awk -v suite="$SUITE" '$1 == "deb" && $3 == suite { print $2; exit }'
  done
}

# --- podroute/base --------------------------------------------------------------------------
base_tarball() {
  MIRROR=${PODROUTE_IMAGES_MIRROR:-$(mirror_from_apt | head -n 1)}
  [ -n "$MIRROR" ] || die "no apt source names a Debian $SUITE mirror (set PODROUTE_IMAGES_MIRROR)"
  key=$(printf '%s\n' "$SUITE" "$MIRROR" minbase "$BASE_PACKAGES" slim | sha)
  TARBALL=$CACHE/base-$SUITE-$(short "$key").tar
  if [ -f "$TARBALL" ] && [ -f "$TARBALL.sha256" ]; then
    say "base: $TARBALL (cached)"
    return
  fi
  [ "$(id -u)" = 0 ] || die "debootstrap needs root (no cached base tarball at $TARBALL)"
  command -v debootstrap >/dev/null 2>&1 || die "no debootstrap on PATH (apt-get install debootstrap)"
  mkdir -p "$CACHE"
  work=$(mktemp -d "$CACHE/debootstrap.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  start=$(date +%s)
  say "base: debootstrap --variant=minbase --include=$BASE_PACKAGES $SUITE from $MIRROR (a few minutes)"
  if ! debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$work/root" "$MIRROR" >"$work/log" 2>&1; then
    tail -n 20 "$work/log" >&2
    die "debootstrap failed (log above)"
  fi
  # The downloaded .debs and package lists are dead weight: the images run apt-get update.
  rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/cache/apt/"*.bin "$work/root/var/lib/apt/lists/"* "$work/root/var/log/"*.log
  # As Debian's slim images: no manuals, translations or documentation but the copyrights, and
  # dpkg told to leave them out of what the images install later.
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/locale/*' 'path-exclude /usr/share/info/*' \
    >"$work/root/etc/dpkg/dpkg.cfg.d/podroute-slim"
  find "$work/root/usr/share/doc" ! -type d ! -name copyright -delete
  rm -rf "$work/root/usr/share/man/"* "$work/root/usr/share/locale/"* "$work/root/usr/share/info/"*
  tar --numeric-owner -C "$work/root" -cf "$work/base.tar" .
  sha256sum <"$work/base.tar" | cut -c1-64 >"$work/base.tar.sha256"
  mv "$work/base.tar" "$TARBALL"
  mv "$work/base.tar.sha256" "$TARBALL.sha256"
  rm -rf "$work"
  trap - EXIT
  say "base: $TARBALL ($(du -m "$TARBALL" | cut -f1) MB, $(elapsed "$start") s)"
}

base_image() {
  tarsum=$(cat "$TARBALL.sha256")
  BASE=podroute/base:$(short "$tarsum")
  if has_image "$BASE"; then
    say "base: $BASE exists"
  else
    say "base: docker import $TARBALL as $BASE"
    docker import --change "LABEL $LABEL=$tarsum" --change 'CMD ["/bin/bash"]' "$TARBALL" "$BASE" >/dev/null
  fi
  docker tag "$BASE" podroute/base:latest
}

# After the images built on it: an older base is only removable once nothing stands on it.
prune_base() {
  prune_older base "$BASE"
}

# An image is built when no image carries the tag of its inputs hash; either way :latest points
# at that image. $1 name, $2 inputs hash, $3 function that stages the context and builds.
build_tagged() {
  name=$1; hash=$2; builder=$3
  tag=podroute/$name:$(short "$hash")
  if has_image "$tag"; then
    say "$name: $tag exists (inputs unchanged)"
  else
    start=$(date +%s)
    say "$name: building $tag"
    ctx=$(mktemp -d "${TMPDIR:-/tmp}/podroute-image-$name.XXXXXX")
    if ! "$builder" "$ctx" "$tag" "$hash"; then
      rm -rf "$ctx"
      die "$name: the build failed"
    fi
    rm -rf "$ctx"
    say "$name: built $tag in $(elapsed "$start") s"
  fi
  docker tag "$tag" "podroute/$name:latest"
  prune_older "$name" "$tag"
  say "$name: podroute/$name:latest = $(image_id "$tag" | cut -c1-19), $(($(docker image inspect --format '{{.Size}}' "$tag") / 1000000)) MB"
}

# Older builds of an image go (their tags, and the layers only they used), or every source
# change would leave another image behind. One a container still uses stays.
prune_older() {
  docker image ls --filter "label=$LABEL" --format '{{.Repository}}:{{.Tag}}' "podroute/$1" | while IFS= read -r t; do
    case $t in
      "$2" | *:latest | *:"<none>") ;;
      *) if docker image rm "$t" >/dev/null 2>&1; then say "$1: removed the older $t"; fi ;;
    esac
  done
}

docker_build() {
  ctx=$1; tag=$2; hash=$3; dockerfile=$4
  shift 4
  # Only the build's errors and step lines: the step list shows what the layer cache reused.
  docker build --network host --build-arg "BASE=$BASE" --label "$LABEL=$hash" \
    -f "$dockerfile" -t "$tag" "$@" "$ctx" >"$ctx/.build.log" 2>&1 || {
    tail -n 30 "$ctx/.build.log" >&2
    return 1
  }
  grep -c 'Using cache' "$ctx/.build.log" | { read -r n; say "$(basename "$dockerfile"): $n step(s) from the layer cache"; }
}

# --- podroute/node --------------------------------------------------------------------------
# The sources that make the packed package: a change anywhere else (tests, docs) keeps the image.
PACKAGE_PATHS="package.json package-lock.json index.ts tsconfig.json tsconfig.build.json README.md LICENSE bin ip bgp reflector felix lib"

source_hash() {
  # The files themselves, not git's view of them: uncommitted edits count, and a copy of the
  # sources (--source) hashes the same as the checkout it came from.
  # shellcheck disable=SC2086
  (cd "$SOURCE" && find $PACKAGE_PATHS -type f ! -path '*/build/*' ! -path '*/node_modules/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha)
}

build_node() {
  ctx=$1; tag=$2; hash=$3
  # npm pack builds dist/ and packs what package.json's files name; npm ci against the
  # repository's lockfile installs the production dependencies and builds the native addons
  # for this Node, whose binary goes into the image (same bookworm libc).
  (cd "$SOURCE" && npm pack --silent --pack-destination "$ctx" >"$ctx/.pack.log" 2>&1) || {
    tail -n 20 "$ctx/.pack.log" >&2
    return 1
  }
  mkdir -p "$ctx/podroute"
  tar -xzf "$ctx"/podroute-*.tgz -C "$ctx/podroute" --strip-components=1 || return 1
  cp "$SOURCE/package-lock.json" "$ctx/podroute/" || return 1
  (cd "$ctx/podroute" && npm ci --omit=dev --no-audit --no-fund >"$ctx/.npm.log" 2>&1) || {
    tail -n 20 "$ctx/.npm.log" >&2
    return 1
  }
  rm -f "$ctx"/podroute-*.tgz "$ctx/podroute/package-lock.json"
  # Of the addons' build folders only the addons: the rest names the staging folder, and would
  # make every build's context differ.
  for b in "$ctx"/podroute/felix/native/build "$ctx"/podroute/bgp/native/build; do
    [ -d "$b" ] || continue
    find "$b" -mindepth 1 -maxdepth 1 ! -name Release -exec rm -rf {} +
    find "$b/Release" -mindepth 1 -maxdepth 1 ! -name '*.node' -exec rm -rf {} +
  done
  # The package runs without them (ip -batch for routes, no TCP-MD5), so the image does too; say so.
  for addon in felix/native/build/Release/netlink.node bgp/native/build/Release/tcp_md5.node; do
    [ -f "$ctx/podroute/$addon" ] || say "node: warning: $addon did not build (python3, make, a C compiler and Node's headers are needed)"
  done
  cp "$NODE_BIN" "$ctx/node" || return 1
  cp "$ROOT/containerlab/node-entrypoint.sh" "$ctx/" || return 1
  docker_build "$ctx" "$tag" "$hash" "$ROOT/containerlab/Dockerfile"
}

node_image() {
  NODE_BIN=$(command -v node) || die "node: no node on PATH (the image takes the binary that runs the build)"
  NODE_BIN=$(readlink -f "$NODE_BIN")
  command -v npm >/dev/null 2>&1 || die "node: no npm on PATH"
  head -c 4 "$NODE_BIN" | grep -q ELF || die "node: $NODE_BIN is not an ELF binary (a version-manager shim?); put the real node first on PATH"
  src=$(source_hash)
  hash=$(printf '%s\n' "$(image_id "$BASE")" "$src" \
    "$(sha256sum <"$NODE_BIN")" "$(sha256sum <"$ROOT/containerlab/Dockerfile")" \
    "$(sha256sum <"$ROOT/containerlab/node-entrypoint.sh")" "$(sha256sum <"$ROOT/containerlab/build-images.sh")" | sha)
  build_tagged node "$hash" build_node
}

# --- podroute/frr, podroute/redis, podroute/bird ---------------------------------------------------------------
build_frr() {
  cp "$ROOT/containerlab/daemons" "$ROOT/containerlab/frr-entrypoint.sh" "$1/"
  docker_build "$1" "$2" "$3" "$ROOT/containerlab/frr.Dockerfile"
}
build_redis() {
  docker_build "$1" "$2" "$3" "$ROOT/containerlab/redis.Dockerfile"
}
build_bird() {
  cp "$ROOT/containerlab/bird-entrypoint.sh" "$1/"
  docker_build "$1" "$2" "$3" "$ROOT/containerlab/bird.Dockerfile"
}
files_image() {
  name=$1; builder=$2; shift 2
  hash=$(for f in "$@"; do sha256sum <"$ROOT/containerlab/$f"; done | { cat; image_id "$BASE"; } | sha)
  build_tagged "$name" "$hash" "$builder"
}

all=$(date +%s)
base_tarball
base_image
wanted node && node_image
wanted frr && files_image frr build_frr frr.Dockerfile frr-entrypoint.sh daemons
wanted redis && files_image redis build_redis redis.Dockerfile
wanted bird && files_image bird build_bird bird.Dockerfile bird-entrypoint.sh
[ -n "$ONLY" ] || prune_base
say "done in $(elapsed "$all") s"
exit 0
}
