#!/usr/bin/env bash
# Runs a command inside a QEMU VM that has a Soft-RoCE (rdma_rxe) device,
# rxe0, up: the host's kernel has no RDMA, a stock Debian kernel under QEMU
# (plain TCG emulation, no KVM needed) does.
#
#   bash deploy/softroce-vm/run.sh [options] -- COMMAND [ARGS...]
#
# The VM sees the host's / read-only (9p) and runs COMMAND chrooted into it,
# as root, in the caller's working directory when that exists inside the VM.
# Prints COMMAND's output on stdout and exits with its exit code; harness
# progress and failures go to stderr, with exit codes 88-94 (see --help).
# The kernel (apt-get download, verified, unpacked with dpkg -x) and the
# initramfs are cached per user; all other files live in a private temporary
# directory removed at exit, and QEMU is stopped by pid on every exit path.
# All paths are derived from this script's location, never from the caller's
# working directory.
set -euo pipefail

usage() {
  cat <<USAGE
Usage: bash deploy/softroce-vm/run.sh [options] -- COMMAND [ARGS...]

Boots a Debian kernel under QEMU (TCG, no KVM needed) with rdma_rxe, brings
up the Soft-RoCE device rxe0 on eth0 (MTU 9000, so active_mtu 4096), and runs
COMMAND inside the VM: as root, chrooted into the host's / (shared read-only
over 9p), with fresh tmpfs on /tmp, /run and /dev/shm, in the caller's
working directory if it exists inside the VM (else /). COMMAND's output is
printed on stdout; the exit code is COMMAND's.

Options:
  --timeout-s N       stop the VM (kill QEMU) after N seconds (default $default_timeout_s)
  --memory MIB        guest memory in MiB (default $default_memory_mib)
  --cpus N            guest CPUs (default $default_cpus: half the host's cores, 1-4)
  --share DIR         share host directory DIR read-write with the VM, mounted
                      at the same absolute path (for results); files written
                      there belong to the user who runs this script
  --keep-logs         keep the private directory (console log, QEMU log,
                      command output) and print its path
  --kernel-package P  Debian kernel package to boot (default: the one the
                      metapackage linux-image-amd64 depends on, per apt-cache)
  -h, --help          this help

Exit codes (COMMAND's own exit code otherwise):
  2   bad usage
  88  cannot run here (not x86-64 Linux, or packages missing and no way to
      install them); the ctest test counts this as skipped
  89  preparation failed (package install, kernel download/verification,
      initramfs build)
  90  the VM did not boot, or timed out before COMMAND started
  91  rxe0 did not come up (rdma link add failed or port not ACTIVE)
  92  other guest set-up failure (module load, 9p mount, network)
  93  COMMAND timed out (--timeout-s reached while it ran; QEMU killed)
  94  the VM stopped while COMMAND ran without reporting its exit code
      (kernel panic, out of memory)

Inside the VM: PANDORA_SOFTROCE_VM=1, HOME=TMPDIR=/tmp, PATH standard;
pass other variables with env, e.g. -- env FOO=1 ./test. The control
directory (cmd.sh, out, rc) is at /run/pandora-vm.

Packages (installed with apt-get when one is missing; sudo when not root):
  ${PACKAGES[*]}

Environment:
  PANDORA_VM_KERNEL_ARGS  extra kernel command line (e.g. loglevel=7 to debug)
  PANDORA_VM_CACHE    cache directory (default:
                      \${XDG_CACHE_HOME:-\$HOME/.cache}/pandora/softroce-vm)
USAGE
}

readonly PACKAGES=(
  qemu-system-x86 busybox-static cpio kmod iproute2
  rdma-core ibverbs-providers ibverbs-utils perftest
)
# Modules the guest needs; modprobe --show-depends resolves each one's
# dependencies for the chosen kernel and gives the load order (virtio PCI and
# net, 9p over virtio, ib_uverbs, rdma_rxe). crc32_generic comes first: rxe
# fails with "failed to init crc32 algorithm" without it.
readonly MODULE_TARGETS=(crc32_generic virtio_pci virtio_net 9pnet_virtio 9p ib_uverbs rdma_rxe)
# QEMU user-mode network: the guest's address and the gateway are QEMU's
# defaults; the network is restrict=on (no traffic leaves the VM).
readonly GUEST_ADDR=10.0.2.15 GATEWAY_ADDR=10.0.2.2 GUEST_HOSTNAME=pandora-vm

readonly EXIT_USAGE=2 EXIT_CANNOT_RUN=88 EXIT_PREPARE=89 EXIT_BOOT=90 EXIT_RXE=91 \
  EXIT_SETUP=92 EXIT_TIMEOUT=93 EXIT_LOST=94

readonly default_timeout_s=300 default_memory_mib=2048
# Half the host's cores, 1 to 4. Each vCPU is a busy host thread under TCG:
# on the shared 2-core machine one vCPU ran the self-test in 33-41 s and two
# in 61-64 s (guest threads waiting on a descheduled vCPU).
default_cpus="$(( $(nproc 2>/dev/null || echo 2) / 2 ))"
(( default_cpus >= 1 )) || default_cpus=1
(( default_cpus <= 4 )) || default_cpus=4
readonly default_cpus

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
readonly script_dir

say() { echo "softroce-vm: $*" >&2; }
# die CODE MESSAGE...
die() {
  local code="$1"
  shift
  echo "softroce-vm: error: $*" >&2
  exit "$code"
}
usage_error() { die "$EXIT_USAGE" "$* (see --help)"; }

# ---------------------------------------------------------------- options
timeout_s="$default_timeout_s"
memory_mib="$default_memory_mib"
cpus="$default_cpus"
share=""
keep_logs=0
kernel_pkg=""

# need_value OPTION ARGC: the option takes a value.
need_value() { [[ "$2" -ge 2 ]] || usage_error "$1 needs a value"; }
positive_int() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "$1 expects a positive integer, got '$2'"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --timeout-s) need_value "$1" $#; positive_int "$1" "$2"; timeout_s="$2"; shift 2 ;;
    --memory) need_value "$1" $#; positive_int "$1" "$2"; memory_mib="$2"; shift 2 ;;
    --cpus) need_value "$1" $#; positive_int "$1" "$2"; cpus="$2"; shift 2 ;;
    --share) need_value "$1" $#; share="$2"; shift 2 ;;
    --keep-logs) keep_logs=1; shift ;;
    --kernel-package)
      need_value "$1" $#
      [[ "$2" =~ ^linux-image-[a-z0-9.+~-]+$ ]] || usage_error "--kernel-package expects a linux-image-* package name, got '$2'"
      kernel_pkg="$2"; shift 2 ;;
    --) shift; break ;;
    *) usage_error "unknown option '$1' (the command goes after --)" ;;
  esac
done
[[ $# -gt 0 ]] || usage_error "no command given (usage: run.sh [options] -- COMMAND [ARGS...])"
(( memory_mib >= 256 )) || usage_error "--memory $memory_mib: at least 256 MiB are needed"
(( cpus <= 64 )) || usage_error "--cpus $cpus: at most 64"

if [[ -n "$share" ]]; then
  [[ -d "$share" ]] || usage_error "--share $share: not a directory"
  share="$(cd -- "$share" && pwd -P)"
  # The path goes into QEMU's option syntax (commas) and the guest's config
  # (a shell file): keep to plain characters.
  [[ "$share" =~ ^/[A-Za-z0-9._/@+-]+$ ]] ||
    usage_error "--share $share: only letters, digits and ._/@+- are supported in the path"
  [[ "$share" != "/" ]] || usage_error "--share /: the host root is already shared (read-only)"
  case "$share/" in
    /proc/*|/sys/*|/dev/*) usage_error "--share $share: cannot share a kernel file system" ;;
  esac
fi

# -------------------------------------------------------------- packages
[[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]] ||
  die "$EXIT_CANNOT_RUN" "needs an x86-64 Linux host (this is $(uname -s) $(uname -m))"

# shellcheck source=deploy/lib/debian_packages.sh
source "$script_dir/../lib/debian_packages.sh"
# 2: this host cannot install packages at all; 3: an install step failed.
install_packages() {
  local rc=0
  ensure_debian_packages softroce-vm "${PACKAGES[@]}" || rc=$?
  [[ $rc -eq 0 ]] || exit "$([[ $rc -eq 2 ]] && echo "$EXIT_CANNOT_RUN" || echo "$EXIT_PREPARE")"
}

# ------------------------------------------------- private temporary dir
tmp=""
qemu_pid=""
tail_pid=""

stop_qemu() {
  [[ -n "$qemu_pid" ]] || return 0
  if kill -0 "$qemu_pid" 2>/dev/null; then
    kill -TERM "$qemu_pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do
      kill -0 "$qemu_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$qemu_pid" 2>/dev/null || true
  fi
  wait "$qemu_pid" 2>/dev/null || true
  qemu_pid=""
}

cleanup() {
  local rc=$?
  stop_qemu
  if [[ -n "$tail_pid" ]]; then
    kill -TERM "$tail_pid" 2>/dev/null || true
    wait "$tail_pid" 2>/dev/null || true
  fi
  if [[ -n "$tmp" && -d "$tmp" ]]; then
    if [[ "$keep_logs" -eq 1 ]]; then
      say "logs kept in $tmp (console.log: kernel and init; qemu.log; ctl/out: command output)"
    else
      rm -rf -- "$tmp"
    fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

tmp="$(mktemp -d "${TMPDIR:-/tmp}/pandora-softroce-vm.XXXXXXXX")"

# ------------------------------------------------------------- the kernel
cache="${PANDORA_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pandora/softroce-vm}"

# Sets kernel_pkg (unless given) and kernel_ver from the local apt lists.
resolve_kernel() {
  if [[ -z "$kernel_pkg" ]]; then
    kernel_pkg="$(apt-cache depends linux-image-amd64 2>/dev/null |
      awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9].*-amd64$/ { print $2; exit }')"
  fi
  kernel_ver=""
  if [[ -n "$kernel_pkg" ]]; then
    kernel_ver="$(apt-cache show --no-all-versions "$kernel_pkg" 2>/dev/null | awk '$1 == "Version:" { print $2; exit }')"
  fi
  if [[ -z "$kernel_pkg" || -z "$kernel_ver" ]]; then
    die "$EXIT_PREPARE" "cannot find ${kernel_pkg:-the kernel package linux-image-amd64 depends on} in the apt lists; run apt-get update or pass --kernel-package"
  fi
}

# What a cached kernel directory was made for: its layout (bump when
# fetch_kernel changes what it stores) and the module targets.
cache_key() {
  echo "layout 2"
  echo "modules ${MODULE_TARGETS[*]}"
}

# extract_pvh_kernel VMLINUZ CONFIG OUT: the uncompressed ELF kernel, when
# the kernel can boot through PVH (CONFIG_PVH) and its payload is XZ. QEMU
# boots such an ELF directly: under TCG this skips ~15 s of real-mode set-up
# and XZ decompression. Without one, run.sh boots VMLINUZ.
extract_pvh_kernel() {
  local vmlinuz="$1" config="$2" out="$3" offset magic
  grep -qx 'CONFIG_PVH=y' "$config" 2>/dev/null || return 0
  # The bzImage's payload starts at the first XZ stream header.
  offset="$(LC_ALL=C grep -obUaP -m1 '\xfd7zXZ\x00' "$vmlinuz" | head -n 1 | cut -d: -f1)"
  [[ -n "$offset" ]] || return 0
  tail -c "+$((offset + 1))" -- "$vmlinuz" | xz -dc --single-stream >"$out" 2>/dev/null || true
  magic="$(head -c 4 -- "$out" 2>/dev/null | od -An -tx1 | tr -d ' ')"
  if [[ "$magic" == 7f454c46 ]]; then
    say "extracted the uncompressed kernel for a PVH boot"
  else
    rm -f -- "$out"
  fi
}

# Downloads, verifies and unpacks the kernel into $kernel_dir (atomic: built
# aside, then renamed).
fetch_kernel() {
  local dl="$tmp/download" tree="$tmp/kernel-tree" stage
  mkdir -p "$dl"
  # apt-get download drops privileges to _apt when run as root; let it write.
  if [[ "$(id -u)" -eq 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$dl"; fi

  local uri_line expected_sha
  uri_line="$(apt-get download --print-uris "$kernel_pkg=$kernel_ver" 2>/dev/null | head -n 1)"
  expected_sha="$(sed -n 's/.* SHA256:\([0-9a-f]\{64\}\)$/\1/p' <<<"$uri_line")"
  [[ -n "$expected_sha" ]] || die "$EXIT_PREPARE" "apt-get download --print-uris gave no SHA256 for $kernel_pkg=$kernel_ver: '$uri_line'"

  say "downloading $kernel_pkg $kernel_ver (about 70 MB) from the configured Debian mirror"
  (cd -- "$dl" && apt-get -q download "$kernel_pkg=$kernel_ver") >"$tmp/download.log" 2>&1 || {
    cat "$tmp/download.log" >&2
    die "$EXIT_PREPARE" "apt-get download $kernel_pkg=$kernel_ver failed"
  }
  local deb
  deb="$(find "$dl" -maxdepth 1 -name '*.deb' -print -quit)"
  [[ -n "$deb" ]] || die "$EXIT_PREPARE" "apt-get download left no .deb in $dl"
  # apt checked the file against the signed index already; check again
  # against the hash the index gives, and record it.
  local actual_sha
  actual_sha="$(sha256sum "$deb" | cut -d' ' -f1)"
  [[ "$actual_sha" == "$expected_sha" ]] ||
    die "$EXIT_PREPARE" "$deb: SHA256 $actual_sha, but the signed apt index says $expected_sha"
  say "verified $(basename -- "$deb") (SHA256 $actual_sha, as in the signed apt index)"

  say "unpacking the kernel and resolving modules"
  dpkg -x "$deb" "$tree" || die "$EXIT_PREPARE" "dpkg -x $deb failed"
  local kver
  kver="$(find "$tree/lib/modules" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | head -n 1)"
  [[ -n "$kver" && -f "$tree/boot/vmlinuz-$kver" ]] || die "$EXIT_PREPARE" "$deb holds no lib/modules/VERSION with boot/vmlinuz-VERSION"
  # The package ships no modules.dep (the postinst runs depmod): make it.
  depmod -b "$tree" "$kver" || die "$EXIT_PREPARE" "depmod for $kver failed"

  stage="$(mktemp -d "$cache/.kernel-stage.XXXXXXXX")"
  mkdir -p "$stage/modules"
  cp -- "$tree/boot/vmlinuz-$kver" "$stage/vmlinuz"
  extract_pvh_kernel "$stage/vmlinuz" "$tree/boot/config-$kver" "$stage/vmlinux"
  local target kind path seen=" " name
  : >"$stage/modules.load"
  for target in "${MODULE_TARGETS[@]}"; do
    modprobe -d "$tree" -S "$kver" --show-depends "$target" >"$tmp/deps" 2>&1 ||
      die "$EXIT_PREPARE" "module $target not found for kernel $kver: $(cat "$tmp/deps")"
    while read -r kind path _; do
      [[ "$kind" == insmod ]] || continue   # "builtin NAME": nothing to load
      name="$(basename -- "$path")"
      case "$name" in
        *.ko.xz) xz -dc -- "$path" >"$stage/modules/${name%.xz}"; name="${name%.xz}" ;;
        *.ko.zst) zstd -qdc -- "$path" >"$stage/modules/${name%.zst}"; name="${name%.zst}" ;;
        *.ko.gz) gzip -dc -- "$path" >"$stage/modules/${name%.gz}"; name="${name%.gz}" ;;
        *.ko) cp -- "$path" "$stage/modules/$name" ;;
        *) die "$EXIT_PREPARE" "unexpected module file $path" ;;
      esac
      [[ "$seen" == *" $name "* ]] && continue
      seen+="$name "
      echo "$name" >>"$stage/modules.load"
    done <"$tmp/deps"
  done
  cache_key >"$stage/cache.key"
  cat >"$stage/PROVENANCE" <<EOF
package: $kernel_pkg
version: $kernel_ver
kernel: $kver
uri: $(cut -d' ' -f1 <<<"$uri_line" | tr -d "'")
sha256: $actual_sha
downloaded: $(date -u +%Y-%m-%dT%H:%M:%SZ)
EOF
  rm -rf -- "$kernel_dir"
  mv -- "$stage" "$kernel_dir"
  rm -rf -- "$tree" "$dl"
  say "kernel $kver cached in $kernel_dir ($(wc -l <"$kernel_dir/modules.load") modules: $(tr '\n' ' ' <"$kernel_dir/modules.load"))"
}

# Builds the initramfs (busybox, guest-init.sh as /init, the modules) unless
# one for the same inputs is cached; sets initramfs.
build_initramfs() {
  local key
  key="$(cat "$script_dir/guest-init.sh" /bin/busybox "$kernel_dir/PROVENANCE" "$kernel_dir/modules.load" | sha256sum | cut -c1-16)"
  initramfs="$cache/initramfs-$key.cpio.gz"
  [[ -f "$initramfs" ]] && return
  say "building the initramfs (busybox, $(wc -l <"$kernel_dir/modules.load") modules, init)"
  local root="$tmp/initramfs"
  mkdir -p "$root/bin" "$root/modules"
  cp -- /bin/busybox "$root/bin/busybox"
  cp -- "$script_dir/guest-init.sh" "$root/init"
  chmod 0755 "$root/init" "$root/bin/busybox"
  cp -- "$kernel_dir/modules/"*.ko "$root/modules/"
  cp -- "$kernel_dir/modules.load" "$root/modules.load"
  (cd -- "$root" && find . -print0 | LC_ALL=C sort -z |
    cpio --null -o -H newc -R 0:0 --quiet | gzip -n -6) >"$initramfs.tmp.$$" ||
    die "$EXIT_PREPARE" "building the initramfs failed"
  mv -- "$initramfs.tmp.$$" "$initramfs"
  rm -rf -- "$root"
}

prepare() {
  install_packages
  mkdir -p "$cache" || die "$EXIT_PREPARE" "cannot create the cache directory $cache"
  # One preparation at a time per cache (concurrent runs, ctest -j).
  local lock_fd
  exec {lock_fd}>"$cache/.lock"
  flock "$lock_fd"
  resolve_kernel
  kernel_dir="$cache/${kernel_pkg}_${kernel_ver//:/%3a}"
  if [[ -f "$kernel_dir/PROVENANCE" && -f "$kernel_dir/vmlinuz" ]] &&
     cmp -s "$kernel_dir/cache.key" <(cache_key); then
    say "kernel: $kernel_pkg $kernel_ver (cached in $kernel_dir)"
  else
    fetch_kernel
  fi
  build_initramfs
  prune_cache
  exec {lock_fd}>&-
}

# Kernels and initramfs images not used for a week (another kernel version,
# an older guest-init.sh) and leftovers of interrupted downloads go; what
# this run uses is marked as used.
prune_cache() {
  touch -- "$kernel_dir" "$initramfs"
  find "$cache" -mindepth 1 -maxdepth 1 -mtime +7 \
    \( -name 'initramfs-*.cpio.gz*' -o -name 'linux-image-*' -o -name '.kernel-stage.*' \) \
    -exec rm -rf -- {} + 2>/dev/null || true
}

# --------------------------------------------------------------- the VM
prepare

# The guest puts fresh tmpfs on /tmp, /run and /dev/shm, hiding the host's:
# a checkout there (a CI clone in /tmp, say) would vanish with them, and
# with it the commands and binaries this harness is asked to run. Such a
# checkout is shared on its own, read-only, at the same path.
project=""
repo_root="$(cd -- "$script_dir/../.." && pwd -P)"
case "$repo_root/" in
  /tmp/*|/run/*|/dev/shm/*)
    [[ "$repo_root" =~ ^/[A-Za-z0-9._/@+-]+$ ]] ||
      die "$EXIT_PREPARE" "the checkout $repo_root lies under a directory the VM replaces, and its path has characters the share cannot carry (only letters, digits and ._/@+-); move it elsewhere"
    project="$repo_root" ;;
esac

ctl="$tmp/ctl"
mkdir -p "$ctl"
: >"$ctl/out"
cat >"$ctl/config" <<EOF
GUEST_ADDR=$GUEST_ADDR
GATEWAY_ADDR=$GATEWAY_ADDR
GUEST_HOSTNAME=$GUEST_HOSTNAME
SHARE='$share'
PROJECT='$project'
EOF
{
  echo '#!/bin/bash'
  echo "# Written by deploy/softroce-vm/run.sh; runs as root in the VM's chroot."
  printf 'if ! cd -- %q 2>/dev/null; then\n' "$PWD"
  printf '  echo %q >&2\n' "softroce-vm: note: $PWD does not exist inside the VM; running in /"
  echo '  cd /'
  echo 'fi'
  printf 'exec'
  printf ' %q' "$@"
  echo
} >"$ctl/cmd.sh"

boot_kernel="$kernel_dir/vmlinuz"
[[ ! -f "$kernel_dir/vmlinux" ]] || boot_kernel="$kernel_dir/vmlinux"
qemu=(
  qemu-system-x86_64
  -nodefaults -no-user-config -display none -no-reboot
  -machine pc -accel tcg,thread=multi -cpu max -smp "$cpus" -m "$memory_mib"
  -kernel "$boot_kernel" -initrd "$initramfs"
  -append "console=ttyS0 panic=-1 quiet loglevel=4 rdinit=/init ${PANDORA_VM_KERNEL_ARGS:-}"
  -serial "file:$tmp/console.log"
  -netdev user,id=net0,restrict=on -device virtio-net-pci,netdev=net0
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap
  -virtfs "local,path=${ctl//,/,,},mount_tag=ctl,security_model=none"
)
[[ -z "$share" ]] || qemu+=(-virtfs "local,path=$share,mount_tag=share,security_model=none")
[[ -z "$project" ]] ||
  qemu+=(-virtfs "local,path=$project,mount_tag=project,security_model=none,readonly=on,multidevs=remap")

say "booting the VM (TCG, $cpus CPU(s), $memory_mib MiB, timeout ${timeout_s} s)"
start_ns="$(date +%s%N)"
# Seconds since QEMU started, one decimal.
elapsed() { awk -v a="$start_ns" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }

"${qemu[@]}" </dev/null >"$tmp/qemu.log" 2>&1 &
qemu_pid=$!
# Streams COMMAND's output while it runs; ends by itself once QEMU is gone.
tail -n +1 -s 0.2 --pid="$qemu_pid" -f "$ctl/out" &
tail_pid=$!

timed_out=0
seen_stages=""
report_stages() {
  [[ -f "$ctl/stage" ]] || return 0
  local s
  while read -r s _; do
    [[ " $seen_stages " == *" $s "* ]] && continue
    seen_stages+=" $s"
    case "$s" in
      init) say "VM up, shares mounted ($(elapsed) s)" ;;
      rxe) say "rxe0 ACTIVE on eth0 ($(elapsed) s)" ;;
      run) say "running: $*" ;;
    esac
  done <"$ctl/stage"
}
deadline=$(( $(date +%s) + timeout_s ))
while kill -0 "$qemu_pid" 2>/dev/null; do
  report_stages "$@"
  if (( $(date +%s) >= deadline )); then
    timed_out=1
    say "timeout: ${timeout_s} s reached, stopping QEMU (pid $qemu_pid)"
    stop_qemu
    break
  fi
  sleep 0.2
done
qemu_rc=0
if [[ -n "$qemu_pid" ]]; then
  wait "$qemu_pid" || qemu_rc=$?
  qemu_pid=""
fi
wait "$tail_pid" 2>/dev/null || true
tail_pid=""
report_stages "$@"

# show_log FILE LINES: the end of a log, for a harness failure.
show_log() {
  [[ -s "$1" ]] || return 0
  echo "---- last $2 lines of $(basename -- "$1") ----" >&2
  tail -n "$2" -- "$1" >&2
  echo "----" >&2
}

if [[ -f "$ctl/rc" ]]; then
  rc="$(cat "$ctl/rc")"
  [[ "$rc" =~ ^[0-9]+$ ]] || die "$EXIT_LOST" "unreadable exit code '$rc' from the VM"
  say "command exited with $rc ($(elapsed) s after boot)"
  exit "$rc"
fi
fail_line="$(grep -m1 '^fail ' "$ctl/stage" 2>/dev/null || true)"
if [[ -z "$fail_line" ]]; then
  fail_line="$(grep -a -m1 -o 'FAILED ([0-9]*): .*' "$tmp/console.log" 2>/dev/null |
    sed -E 's/^FAILED \(([0-9]+)\): /fail \1 /' || true)"
fi
if [[ -n "$fail_line" ]]; then
  read -r _ code reason <<<"$fail_line"
  [[ "$code" =~ ^9[0-4]$ ]] || code="$EXIT_SETUP"
  show_log "$tmp/console.log" 30
  die "$code" "VM set-up failed: $reason"
fi
if [[ " $seen_stages " == *" run "* ]]; then
  show_log "$tmp/console.log" 30
  [[ "$timed_out" -eq 0 ]] || die "$EXIT_TIMEOUT" "the command did not finish within ${timeout_s} s"
  die "$EXIT_LOST" "the VM stopped while the command ran, without its exit code (QEMU exit $qemu_rc)"
fi
show_log "$tmp/qemu.log" 20
show_log "$tmp/console.log" 30
if [[ "$timed_out" -eq 1 ]]; then
  die "$EXIT_BOOT" "the VM did not get to the command within ${timeout_s} s (stages reached:${seen_stages:- none})"
fi
die "$EXIT_BOOT" "the VM stopped before the command started (QEMU exit $qemu_rc; stages reached:${seen_stages:- none})"
