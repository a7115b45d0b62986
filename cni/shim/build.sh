#!/bin/sh
# Builds the CNI shim (podroute-cni.c) into cni/shim/podroute-cni: plain C, no libraries.
# CC picks the compiler (default cc). npm's install step runs this; tests run it too.
set -e
dir=$(cd "$(dirname "$0")" && pwd)
${CC:-cc} -O2 -Wall -Werror -o "$dir/podroute-cni.tmp" "$dir/podroute-cni.c"
mv "$dir/podroute-cni.tmp" "$dir/podroute-cni"
