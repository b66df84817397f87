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

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
readonly script_dir
# shellcheck source=deploy/softroce-vm/lib.sh
source "$script_dir/lib.sh"

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

readonly default_timeout_s=300 default_memory_mib=2048
# Half the host's cores, 1 to 4. Each vCPU is a busy host thread under TCG:
# on the shared 2-core machine one vCPU ran the self-test in 33-41 s and two
# in 61-64 s (guest threads waiting on a descheduled vCPU).
default_cpus="$(( $(nproc 2>/dev/null || echo 2) / 2 ))"
(( default_cpus >= 1 )) || default_cpus=1
(( default_cpus <= 4 )) || default_cpus=4
readonly default_cpus

# ---------------------------------------------------------------- options
timeout_s="$default_timeout_s"
memory_mib="$default_memory_mib"
cpus="$default_cpus"
share=""
keep_logs=0
kernel_pkg=""

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

[[ -z "$share" ]] || share="$(vm_check_share --share "$share")"

# -------------------------------------------------------------- packages
[[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]] ||
  die "$EXIT_CANNOT_RUN" "needs an x86-64 Linux host (this is $(uname -s) $(uname -m))"

# ------------------------------------------------- private temporary dir
tmp=""
qemu_pid=""
tail_pid=""

stop_qemu() {
  [[ -n "$qemu_pid" ]] || return 0
  vm_stop_pid "$qemu_pid"
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

# --------------------------------------------------------------- the VM
prepare
vm_detect_project

ctl="$tmp/ctl"
mkdir -p "$ctl"
: >"$ctl/out"
cat >"$ctl/config" <<CONFIG
GUEST_ADDR=$GUEST_ADDR
GATEWAY_ADDR=$GATEWAY_ADDR
GUEST_HOSTNAME=$GUEST_HOSTNAME
SHARE='$share'
PROJECT='$project'
CONFIG
vm_write_cmd "$ctl/cmd.sh" "$@"

vm_qemu_command qemu "$ctl" "$tmp/console.log" "$cpus" "$memory_mib"
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

vm_verdict "$ctl" "$tmp/console.log" "$tmp/qemu.log" "$timed_out" "$seen_stages" "$qemu_rc" "$timeout_s"
if [[ "$verdict_cmd" -eq 1 ]]; then
  say "command exited with $verdict_code ($(elapsed) s after boot)"
  exit "$verdict_code"
fi
die "$verdict_code" "$verdict_msg"
