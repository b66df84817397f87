# Shared by deploy/softroce-vm/run.sh (one VM) and two_vm.sh (two VMs on a
# private network): constants and exit codes, messages, option checks, the
# package check, the cached kernel and initramfs (prepare), and the pieces
# of a VM run (its control directory, QEMU command line, stage reports and
# the verdict when it stops). Sourced, not run; callers set `tmp` (their
# private directory) before prepare and `kernel_pkg` ("" = the default).
#
# All paths are derived from this file's location.

vm_lib_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
readonly vm_lib_dir

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

# Prefix of progress and error lines (two_vm.sh names its VMs in them).
vm_log_prefix="softroce-vm"
say() { echo "$vm_log_prefix: $*" >&2; }
# die CODE MESSAGE...
die() {
  local code="$1"
  shift
  echo "$vm_log_prefix: error: $*" >&2
  exit "$code"
}
usage_error() { die "$EXIT_USAGE" "$* (see --help)"; }

# need_value OPTION ARGC: the option takes a value.
need_value() { [[ "$2" -ge 2 ]] || usage_error "$1 needs a value"; }
positive_int() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "$1 expects a positive integer, got '$2'"; }

# -------------------------------------------------------------- packages
# shellcheck source=deploy/lib/debian_packages.sh
source "$vm_lib_dir/../lib/debian_packages.sh"
# 2: this host cannot install packages at all; 3: an install step failed.
install_packages() {
  local rc=0
  ensure_debian_packages softroce-vm "${PACKAGES[@]}" || rc=$?
  [[ $rc -eq 0 ]] || exit "$([[ $rc -eq 2 ]] && echo "$EXIT_CANNOT_RUN" || echo "$EXIT_PREPARE")"
}

# ------------------------------------------------ the kernel, initramfs
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
  key="$(cat "$vm_lib_dir/guest-init.sh" /bin/busybox "$kernel_dir/PROVENANCE" "$kernel_dir/modules.load" | sha256sum | cut -c1-16)"
  initramfs="$cache/initramfs-$key.cpio.gz"
  [[ -f "$initramfs" ]] && return
  say "building the initramfs (busybox, $(wc -l <"$kernel_dir/modules.load") modules, init)"
  local root="$tmp/initramfs"
  mkdir -p "$root/bin" "$root/modules"
  cp -- /bin/busybox "$root/bin/busybox"
  cp -- "$vm_lib_dir/guest-init.sh" "$root/init"
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

# ------------------------------------------------------------ a VM run

# vm_stop_pid PID: stops a QEMU process (SIGTERM, SIGKILL after 5 s) and
# reaps it. Only that pid is signalled.
vm_stop_pid() {
  local pid="$1" i
  [[ -n "$pid" ]] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

# vm_check_share OPTION DIR: prints DIR's canonical path, or fails with a
# usage error when it cannot be shared with a VM.
vm_check_share() {
  local opt="$1" dir="$2"
  [[ -d "$dir" ]] || usage_error "$opt $dir: not a directory"
  dir="$(cd -- "$dir" && pwd -P)"
  # The path goes into QEMU's option syntax (commas) and the guest's config
  # (a shell file): keep to plain characters.
  [[ "$dir" =~ ^/[A-Za-z0-9._/@+-]+$ ]] ||
    usage_error "$opt $dir: only letters, digits and ._/@+- are supported in the path"
  [[ "$dir" != "/" ]] || usage_error "$opt /: the host root is already shared (read-only)"
  case "$dir/" in
    /proc/*|/sys/*|/dev/*) usage_error "$opt $dir: cannot share a kernel file system" ;;
  esac
  echo "$dir"
}

# Sets project: the checkout when it lies under a directory the guest
# replaces. The guest puts fresh tmpfs on /tmp, /run and /dev/shm, hiding the
# host's: a checkout there (a CI clone in /tmp, say) would vanish with them,
# and with it the commands and binaries the harness is asked to run. Such a
# checkout is shared on its own, read-only, at the same path.
vm_detect_project() {
  project=""
  local repo_root
  repo_root="$(cd -- "$vm_lib_dir/../.." && pwd -P)"
  case "$repo_root/" in
    /tmp/*|/run/*|/dev/shm/*)
      [[ "$repo_root" =~ ^/[A-Za-z0-9._/@+-]+$ ]] ||
        die "$EXIT_PREPARE" "the checkout $repo_root lies under a directory the VM replaces, and its path has characters the share cannot carry (only letters, digits and ._/@+-); move it elsewhere"
      project="$repo_root" ;;
  esac
}

# vm_write_cmd FILE COMMAND [ARGS...]: the guest's cmd.sh, which runs
# COMMAND in the caller's working directory (else /).
vm_write_cmd() {
  local file="$1"
  shift
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
  } >"$file"
}

# vm_qemu_command ARRAY CTL_DIR CONSOLE_LOG CPUS MEMORY_MIB: sets the array
# named ARRAY to the QEMU command line of a VM with the user-mode NIC
# (eth0), the host root and the control share; callers add further shares
# and NICs.
vm_qemu_command() {
  local -n out="$1"
  local ctl_dir="$2" console="$3" n_cpus="$4" mem="$5"
  local boot_kernel="$kernel_dir/vmlinuz"
  [[ ! -f "$kernel_dir/vmlinux" ]] || boot_kernel="$kernel_dir/vmlinux"
  out=(
    qemu-system-x86_64
    -nodefaults -no-user-config -display none -no-reboot
    -machine pc -accel tcg,thread=multi -cpu max -smp "$n_cpus" -m "$mem"
    -kernel "$boot_kernel" -initrd "$initramfs"
    -append "console=ttyS0 panic=-1 quiet loglevel=4 rdinit=/init ${PANDORA_VM_KERNEL_ARGS:-}"
    -serial "file:$console"
    -netdev user,id=net0,restrict=on -device virtio-net-pci,netdev=net0
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap
    -virtfs "local,path=${ctl_dir//,/,,},mount_tag=ctl,security_model=none"
  )
}

# vm_show_log FILE LINES: the end of a log, for a harness failure.
vm_show_log() {
  [[ -s "$1" ]] || return 0
  echo "---- last $2 lines of $(basename -- "$1") ----" >&2
  tail -n "$2" -- "$1" >&2
  echo "----" >&2
}

# vm_verdict CTL_DIR CONSOLE_LOG QEMU_LOG TIMED_OUT STAGES_SEEN QEMU_RC TIMEOUT_S:
# what a stopped VM's run came to. Sets verdict_cmd=1 and verdict_code to
# the command's exit code when the guest reported one; else verdict_cmd=0,
# verdict_code to a harness exit code (90-94) and verdict_msg to why, after
# printing the ends of the logs that explain it.
vm_verdict() {
  local ctl_dir="$1" console="$2" qemu_log="$3" timed_out="$4" seen="$5" qemu_rc="$6" limit_s="$7"
  local fail_line code reason
  verdict_cmd=0 verdict_code="" verdict_msg=""
  if [[ -f "$ctl_dir/rc" ]]; then
    verdict_code="$(cat "$ctl_dir/rc")"
    if [[ "$verdict_code" =~ ^[0-9]+$ ]]; then
      verdict_cmd=1
    else
      verdict_msg="unreadable exit code '$verdict_code' from the VM"
      verdict_code="$EXIT_LOST"
    fi
    return 0
  fi
  fail_line="$(grep -m1 '^fail ' "$ctl_dir/stage" 2>/dev/null || true)"
  if [[ -z "$fail_line" ]]; then
    fail_line="$(grep -a -m1 -o 'FAILED ([0-9]*): .*' "$console" 2>/dev/null |
      sed -E 's/^FAILED \(([0-9]+)\): /fail \1 /' || true)"
  fi
  if [[ -n "$fail_line" ]]; then
    read -r _ code reason <<<"$fail_line"
    [[ "$code" =~ ^9[0-4]$ ]] || code="$EXIT_SETUP"
    vm_show_log "$console" 30
    verdict_code="$code" verdict_msg="VM set-up failed: $reason"
    return 0
  fi
  if [[ " $seen " == *" run "* ]]; then
    vm_show_log "$console" 30
    if [[ "$timed_out" -eq 1 ]]; then
      verdict_code="$EXIT_TIMEOUT" verdict_msg="the command did not finish within ${limit_s} s"
    else
      verdict_code="$EXIT_LOST" verdict_msg="the VM stopped while the command ran, without its exit code (QEMU exit $qemu_rc)"
    fi
    return 0
  fi
  vm_show_log "$qemu_log" 20
  vm_show_log "$console" 30
  verdict_code="$EXIT_BOOT"
  if [[ "$timed_out" -eq 1 ]]; then
    verdict_msg="the VM did not get to the command within ${limit_s} s (stages reached:${seen:- none})"
  else
    verdict_msg="the VM stopped before the command started (QEMU exit $qemu_rc; stages reached:${seen:- none})"
  fi
}
