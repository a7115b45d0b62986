#!/bin/bash
# A real Debian kernel for the suites that need modules this machine's kernel lacks (ipip, sctp,
# wireguard): one command run as root in a throwaway qemu VM that sees this machine's whole file
# tree (read-only, with a writable overlay in RAM), in the same working directory and PATH.
#
#   kernel-vm.sh --prepare | --ready
#   kernel-vm.sh [--mem MB] [--cpus N] [--out DIR] [--timeout S] [--pidfile FILE] -- COMMAND [ARG...]
#
# --prepare installs qemu and what builds the boot image from Debian, downloads Debian's kernel package
# once into $KERNEL_VM_CACHE (default /var/cache/podroute-kernel-vm) and exits; test/ensure-deps.sh runs it.
# --ready exits 0 when a run needs nothing more, else says what is missing.
# A run prints the command's stdout and stderr on its own and exits with the command's code. What the
# command writes is lost when the VM stops, except under --out DIR (this machine's DIR, read-write at
# the same path). --timeout S kills qemu by its PID after S seconds (exit 124); --pidfile FILE gets
# qemu's PID, so a caller can kill the VM itself. 125: the VM stopped before the command finished.
# No KVM (nested virtualisation does not boot here): qemu emulates the CPU, a few seconds to boot and
# several times slower than native, so run compiled JavaScript in it and keep what runs inside small.
set -euo pipefail
MEM=1536; CPUS=2; OUT=; TIMEOUT=0; PIDFILE=; PREPARE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --mem) MEM=$2; shift 2;; --cpus) CPUS=$2; shift 2;; --out) OUT=$(realpath "$2"); shift 2;;
    --timeout) TIMEOUT=$2; shift 2;; --pidfile) PIDFILE=$2; shift 2;; --prepare) PREPARE=1; shift;; --ready) PREPARE=2; shift;;
    --) shift; break;; *) break;;
  esac
done
[ $PREPARE != 0 ] || [ $# -gt 0 ] || { sed -n '2,16p' "$0"; exit 2; }
CACHE=${KERNEL_VM_CACHE:-/var/cache/podroute-kernel-vm}
# The boot image's name changes with what init does, so a cache made by an older script is rebuilt.
INITRD=initrd-3.gz
MODS="virtio virtio_ring virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p overlay"

prepare() {
  local need=() c pkg kver
  for c in qemu-system-x86_64:qemu-system-x86 cpio:cpio depmod:kmod; do
    command -v "${c%%:*}" >/dev/null || [ -x "/usr/sbin/${c%%:*}" ] || need+=("${c#*:}"); done
  if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1
    apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null ||
      { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null; }
  fi
  [ -f "$CACHE/$INITRD" ] && [ -f "$CACHE/vmlinuz" ] && return 0
  mkdir -p "$CACHE"; cd "$CACHE"
  pkg=$(apt-cache search --names-only '^linux-image-[0-9.]+-[0-9]+-amd64-unsigned$' | cut -d' ' -f1 | sort -V | tail -1)
  if [ -z "$pkg" ]; then
    apt-get update -q >/dev/null
    pkg=$(apt-cache search --names-only '^linux-image-[0-9.]+-[0-9]+-amd64-unsigned$' | cut -d' ' -f1 | sort -V | tail -1)
  fi
  [ -n "$pkg" ] || { echo "kernel-vm: no linux-image-*-amd64-unsigned package in the apt lists" >&2; exit 1; }
  rm -rf k ir ./*.deb ./initrd*.gz
  apt-get download -q "$pkg" >/dev/null 2>&1 || { echo "kernel-vm: apt-get download $pkg failed" >&2; exit 1; }
  dpkg -x "$pkg"_*.deb k; rm -f "$pkg"_*.deb
  kver=$(ls k/lib/modules); /usr/sbin/depmod -b "$CACHE/k" "$kver"; cp k/boot/vmlinuz-* vmlinuz.new
  # The initrd has no libc, so its busybox must be the static build. Taken from Debian's
  # busybox-static package, not installed: it conflicts with the dynamic busybox that
  # initramfs-tools pulls in, and a dynamic one here fails as /init with ENOENT (its loader).
  apt-get download -q busybox-static >/dev/null 2>&1 || { echo "kernel-vm: apt-get download busybox-static failed" >&2; exit 1; }
  rm -rf bb; dpkg -x busybox-static_*.deb bb; rm -f busybox-static_*.deb
  mkdir -p ir/bin ir/mods ir/proc ir/sys ir/dev; cp bb/bin/busybox ir/bin/busybox; rm -rf bb
  for m in $MODS; do cp "$(find k/lib/modules -name "$m.ko*" | head -1)" ir/mods/; done
  # The VM's root: this machine's / over 9p (read-only, cached in the guest: each file crosses 9p
  # once, which makes starting Node several times faster) under a RAM overlay; the control share
  # (.vm) carries the command in and its exit code and output out.
  cat > ir/init <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $MODS; do insmod /mods/\$m.ko* 2>/dev/null; done
o=trans=virtio,version=9p2000.L,msize=512000
mkdir -p /lower /rw /newroot; mount -t 9p -o \$o,ro,cache=loose host /lower
mount -t tmpfs rw /rw; mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot
mkdir -p /newroot/.vm; mount -t 9p -o \$o ctl /newroot/.vm
[ -s /newroot/.vm/out ] && mount -t 9p -o \$o out "/newroot\$(cat /newroot/.vm/out)"
umount /proc /sys; mount --move /dev /newroot/dev
exec switch_root /newroot /bin/sh /.vm/boot.sh
INIT
  chmod +x ir/init; (cd ir && find . | cpio -o -H newc 2>/dev/null | gzip) > "$INITRD.new"
  rm -rf ir; mv vmlinuz.new vmlinuz; mv "$INITRD.new" "$INITRD"
}

if [ $PREPARE = 1 ]; then prepare; exit 0; fi
if [ $PREPARE = 2 ]; then
  command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 is not installed"; exit 1; }
  [ -f "$CACHE/$INITRD" ] && [ -f "$CACHE/vmlinuz" ] || { echo "no prepared kernel in $CACHE"; exit 1; }
  exit 0
fi
[ -f "$CACHE/$INITRD" ] && command -v qemu-system-x86_64 >/dev/null || ( prepare )
KVER=$(ls "$CACHE/k/lib/modules")
CTL=$(mktemp -d /tmp/kernel-vm.XXXXXX)
QPID=; WATCH=
cleanup() {
  [ -z "$WATCH" ] || kill "$WATCH" 2>/dev/null || true
  [ -z "$QPID" ] || kill -9 "$QPID" 2>/dev/null || true
  rm -rf "$CTL"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
printf '%s' "$OUT" > "$CTL/out"
{ echo 'mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t tmpfs run /run'
  echo 'mount -t devpts devpts /dev/pts 2>/dev/null; mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm'
  echo "mount --bind $CACHE/k/lib/modules /lib/modules 2>/dev/null || { mkdir -p /lib/modules && mount --bind $CACHE/k/lib/modules /lib/modules; }"
  echo 'ip link set lo up 2>/dev/null; hostname kernel-vm 2>/dev/null'
  printf 'export PATH=%q HOME=/root\ncd %q\n' "$PATH" "$PWD"
  printf '%q ' "$@"; echo ' </dev/null >/.vm/stdout 2>/.vm/stderr'
  echo 'echo $? > /.vm/rc; sync; echo o > /proc/sysrq-trigger; sleep 10'
} > "$CTL/boot.sh"
share() { echo "-fsdev local,id=$1,path=$2,security_model=none,multidevs=remap$3 -device virtio-9p-pci,fsdev=$1,mount_tag=$1"; }
# shellcheck disable=SC2046
qemu-system-x86_64 -machine accel=tcg -cpu max -smp "$CPUS" -m "$MEM" -nographic -no-reboot -nic none \
  -kernel "$CACHE/vmlinuz" -initrd "$CACHE/$INITRD" -append "console=ttyS0 quiet loglevel=0 panic=-1" \
  $(share host / ,readonly=on) $(share ctl "$CTL" '') ${OUT:+$(share out "$OUT" '')} \
  </dev/null >"$CTL/console" 2>&1 &
QPID=$!
[ -z "$PIDFILE" ] || echo "$QPID" > "$PIDFILE"
if [ "$TIMEOUT" != 0 ]; then
  ( sleep "$TIMEOUT"; touch "$CTL/timedout"; kill -9 "$QPID" 2>/dev/null ) </dev/null >/dev/null 2>&1 &
  WATCH=$!
fi
wait "$QPID" || true
QPID=
[ ! -f "$CTL/stdout" ] || cat "$CTL/stdout"
[ ! -f "$CTL/stderr" ] || cat "$CTL/stderr" >&2
if [ -f "$CTL/timedout" ]; then
  echo "kernel-vm: killed the VM after ${TIMEOUT}s" >&2; exit 124
fi
if [ ! -f "$CTL/rc" ]; then
  echo "kernel-vm: the VM stopped before the command finished (kernel $KVER); its console's last lines:" >&2
  tr -d '\r' < "$CTL/console" | sed -e 's/\x1b[[0-9;?]*[a-zA-Z]//g' -e 's/\x1bc//g' | grep -v '^\s*$' | tail -20 >&2
  exit 125
fi
exit "$(cat "$CTL/rc")"
