#!/usr/bin/env bash
# Runs two commands in two QEMU VMs ("a" and "b"), each with its own
# Soft-RoCE device rxe0, joined by a private network: a memory node and a
# compute node on different (virtual) hosts.
#
#   bash deploy/softroce-vm/two_vm.sh [options] --a 'COMMAND A' --b 'COMMAND B'
#
# The VMs are the ones deploy/softroce-vm/run.sh boots (same kernel, cache,
# initramfs and guest set-up: lib.sh), plus a second NIC joined by a QEMU
# socket network on 127.0.0.1 (a free port chosen at run time) with static
# addresses 10.214.0.1 (a) and 10.214.0.2 (b), MTU 9000; rxe0 is bound to
# that NIC. Both commands start once their VM is up and run concurrently;
# when B's ends, A's gets SIGTERM. A directory shared read-write by both VMs
# (the exchange) carries files between them (port files, secrets, results).
# QEMU processes are stopped by pid on every exit path.
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
readonly script_dir
# shellcheck source=deploy/softroce-vm/lib.sh
source "$script_dir/lib.sh"
vm_log_prefix="two-vm"

readonly A_ADDR=10.214.0.1 B_ADDR=10.214.0.2 NET1_PREFIX=24 NET1_MTU=9000
readonly A_MAC=52:54:00:d6:00:01 B_MAC=52:54:00:d6:00:02
readonly default_timeout_s=600 default_memory_mib=2048 default_cpus=1 default_grace_s=30

usage() {
  cat <<USAGE
Usage: bash deploy/softroce-vm/two_vm.sh [options] --a 'COMMAND A' --b 'COMMAND B'

Boots two VMs like run.sh does (Debian kernel under QEMU TCG, rdma_rxe, the
host's / read-only over 9p, chroot, root), each with a second NIC on a
private network between the two (a QEMU socket network on 127.0.0.1, port
chosen free at run time): VM a is $A_ADDR/$NET1_PREFIX, VM b $B_ADDR/$NET1_PREFIX,
MTU $NET1_MTU, and each VM's rxe0 is bound to that NIC (active_mtu 4096).
The user-mode NIC eth0 (10.0.2.15, restrict=on) stays as in run.sh.

COMMAND A and COMMAND B are shell command lines, each run with bash -c in
its VM (in the caller's working directory if it exists inside, else /).
They start when their VM is up and run concurrently:
  - when B's command ends, A's command gets SIGTERM (SIGKILL after
    --stop-grace-s): run a daemon in A, clients in B;
  - when either command fails (non-zero) or its VM stops without an exit
    code while the other still runs, the other one is stopped the same way.
Both exit codes are reported on stderr; the output of both is printed on
stdout, each line prefixed with "a| " or "b| ".

Inside both VMs (besides what run.sh sets): PANDORA_VM_NAME (a or b),
PANDORA_VM_ADDR (this VM's private address), PANDORA_VM_PEER_ADDR,
PANDORA_VM_A_ADDR=$A_ADDR, PANDORA_VM_B_ADDR=$B_ADDR, and
PANDORA_VM_EXCHANGE: a directory both VMs (and the host) see read-write at
the same path, empty at the start, removed at exit (kept with --keep-logs).
Wait for files there with a deadline (B for A's port file, say); a file
is visible in the other VM once it is closed (write it aside and rename
it for atomicity).

Options:
  --a COMMAND         command line for VM a (required)
  --b COMMAND         command line for VM b (required)
  --timeout-s N       stop both VMs (kill QEMU) N seconds after the first
                      boots (default $default_timeout_s)
  --memory MIB        memory per VM in MiB (default $default_memory_mib)
  --cpus N            CPUs per VM (default $default_cpus: two TCG vCPUs already
                      make two busy host threads)
  --stop-grace-s N    seconds between SIGTERM and SIGKILL when a command is
                      stopped (default $default_grace_s)
  --share DIR         also share host directory DIR read-write with both VMs,
                      at the same absolute path
  --keep-logs         keep the private directory (per VM: console.log,
                      qemu.log, ctl/out; the exchange) and print its path
  --kernel-package P  Debian kernel package to boot (as in run.sh)
  -h, --help          this help

Exit codes:
  0   both commands exited 0
  the failing command's exit code: B's when B's failed, unless B was
      stopped because A's had failed first; else A's (including A's answer
      to the SIGTERM at B's end: trap it and exit 0 after a clean stop)
  2   bad usage
  88-92, 94  as in run.sh, for whichever VM failed (a's first)
  93  a command did not finish within --timeout-s (QEMU killed)

Packages, cache and environment (PANDORA_VM_KERNEL_ARGS, PANDORA_VM_CACHE):
as in run.sh --help.
USAGE
}

# ---------------------------------------------------------------- options
timeout_s="$default_timeout_s"
memory_mib="$default_memory_mib"
cpus="$default_cpus"
grace_s="$default_grace_s"
share=""
keep_logs=0
kernel_pkg=""
cmd_a=""
cmd_b=""
have_a=0
have_b=0

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --a) need_value "$1" $#; cmd_a="$2"; have_a=1; shift 2 ;;
    --b) need_value "$1" $#; cmd_b="$2"; have_b=1; shift 2 ;;
    --timeout-s) need_value "$1" $#; positive_int "$1" "$2"; timeout_s="$2"; shift 2 ;;
    --memory) need_value "$1" $#; positive_int "$1" "$2"; memory_mib="$2"; shift 2 ;;
    --cpus) need_value "$1" $#; positive_int "$1" "$2"; cpus="$2"; shift 2 ;;
    --stop-grace-s) need_value "$1" $#; positive_int "$1" "$2"; grace_s="$2"; shift 2 ;;
    --share) need_value "$1" $#; share="$2"; shift 2 ;;
    --keep-logs) keep_logs=1; shift ;;
    --kernel-package)
      need_value "$1" $#
      [[ "$2" =~ ^linux-image-[a-z0-9.+~-]+$ ]] || usage_error "--kernel-package expects a linux-image-* package name, got '$2'"
      kernel_pkg="$2"; shift 2 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
[[ "$have_a" -eq 1 && -n "$cmd_a" ]] || usage_error "--a COMMAND is required"
[[ "$have_b" -eq 1 && -n "$cmd_b" ]] || usage_error "--b COMMAND is required"
(( memory_mib >= 256 )) || usage_error "--memory $memory_mib: at least 256 MiB are needed"
(( cpus <= 64 )) || usage_error "--cpus $cpus: at most 64"
[[ -z "$share" ]] || share="$(vm_check_share --share "$share")"

[[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]] ||
  die "$EXIT_CANNOT_RUN" "needs an x86-64 Linux host (this is $(uname -s) $(uname -m))"

# ------------------------------------------------- private temporary dir
tmp=""
declare -A qemu_pid=([a]="" [b]="") tail_pid=([a]="" [b]="")

stop_vm() {
  [[ -n "${qemu_pid[$1]}" ]] || return 0
  vm_stop_pid "${qemu_pid[$1]}"
  qemu_pid[$1]=""
}

cleanup() {
  local rc=$? v
  for v in a b; do stop_vm "$v"; done
  for v in a b; do
    if [[ -n "${tail_pid[$v]}" ]]; then
      kill -TERM "${tail_pid[$v]}" 2>/dev/null || true
      wait "${tail_pid[$v]}" 2>/dev/null || true
    fi
  done
  if [[ -n "$tmp" && -d "$tmp" ]]; then
    if [[ "$keep_logs" -eq 1 ]]; then
      say "logs kept in $tmp (a/ and b/: console.log, qemu.log, ctl/out; exchange/)"
    else
      rm -rf -- "$tmp"
    fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

tmp="$(mktemp -d "${TMPDIR:-/tmp}/pandora-two-vm.XXXXXXXX")"
# The exchange is shared by path: mktemp's name keeps to the characters
# vm_check_share allows unless TMPDIR does not.
exchange="$(vm_check_share exchange "$tmp")/exchange"
mkdir -m 0700 "$exchange"

# --------------------------------------------------------------- the VMs
prepare
vm_detect_project

# setup_vm NAME ADDR PEER_ADDR MAC COMMAND: the VM's control directory.
setup_vm() {
  local v="$1" addr="$2" peer="$3" mac="$4" cmd="$5"
  local ctl="$tmp/$v/ctl"
  mkdir -p "$ctl"
  : >"$ctl/out"
  cat >"$ctl/config" <<CONFIG
GUEST_ADDR=$GUEST_ADDR
GATEWAY_ADDR=$GATEWAY_ADDR
GUEST_HOSTNAME=pandora-vm-$v
SHARE='$share'
PROJECT='$project'
EXCHANGE='$exchange'
NET1_MAC=$mac
NET1_ADDR=$addr/$NET1_PREFIX
NET1_MTU=$NET1_MTU
STOPPABLE=1
STOP_GRACE_S=$grace_s
CONFIG
  vm_write_cmd "$ctl/cmd.sh" env PANDORA_VM_NAME="$v" PANDORA_VM_ADDR="$addr" PANDORA_VM_PEER_ADDR="$peer" \
    PANDORA_VM_A_ADDR="$A_ADDR" PANDORA_VM_B_ADDR="$B_ADDR" PANDORA_VM_EXCHANGE="$exchange" \
    /bin/bash -c "$cmd"
}
setup_vm a "$A_ADDR" "$B_ADDR" "$A_MAC" "$cmd_a"
setup_vm b "$B_ADDR" "$A_ADDR" "$B_MAC" "$cmd_b"

# vm_qemu NAME NETDEV_OPTIONS: sets `qemu` to VM NAME's command line.
vm_qemu() {
  local v="$1" netdev="$2" mac
  [[ "$v" == a ]] && mac="$A_MAC" || mac="$B_MAC"
  vm_qemu_command qemu "$tmp/$v/ctl" "$tmp/$v/console.log" "$cpus" "$memory_mib"
  qemu+=(-netdev "socket,id=net1,$netdev" -device "virtio-net-pci,netdev=net1,mac=$mac")
  qemu+=(-virtfs "local,path=$exchange,mount_tag=exchange,security_model=none")
  [[ -z "$share" ]] || qemu+=(-virtfs "local,path=$share,mount_tag=share,security_model=none")
  [[ -z "$project" ]] ||
    qemu+=(-virtfs "local,path=$project,mount_tag=project,security_model=none,readonly=on,multidevs=remap")
  return 0
}

# tcp_listening PORT: some socket listens on 127.0.0.1:PORT (or on any
# address), per /proc/net/tcp (state 0A).
tcp_listening() {
  local hex sl local_addr rem st _
  printf -v hex '%04X' "$1"
  while read -r sl local_addr rem st _; do
    [[ "$st" == 0A ]] || continue
    [[ "$local_addr" == "0100007F:$hex" || "$local_addr" == "00000000:$hex" ]] && return 0
  done </proc/net/tcp
  return 1
}

start_ns="$(date +%s%N)"
# Seconds since the first QEMU started, one decimal.
elapsed() { awk -v a="$start_ns" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
deadline=$(( $(date +%s) + timeout_s ))

# start_qemu NAME: runs `qemu` in the background for VM NAME and streams its
# command's output, prefixed (the tail ends by itself once QEMU is gone).
start_qemu() {
  local v="$1"
  "${qemu[@]}" </dev/null >"$tmp/$v/qemu.log" 2>&1 &
  qemu_pid[$v]=$!
  ( tail -n +1 -s 0.2 --pid="${qemu_pid[$v]}" -f "$tmp/$v/ctl/out" | sed -u "s/^/$v| /" ) &
  tail_pid[$v]=$!
}

# VM a listens for the private network on a free port of 127.0.0.1; another
# process may take the port between the choice and QEMU's bind: then again
# with another port.
say "booting VM a and VM b (TCG, $cpus CPU(s) and $memory_mib MiB each, timeout ${timeout_s} s)"
port=""
for attempt in 1 2 3 4 5; do
  candidate="$(shuf -i 20000-60999 -n 1)"
  tcp_listening "$candidate" && continue
  vm_qemu a "listen=127.0.0.1:$candidate"
  start_qemu a
  while kill -0 "${qemu_pid[a]}" 2>/dev/null && ! tcp_listening "$candidate"; do
    (( $(date +%s) < deadline )) || break
    sleep 0.1
  done
  if kill -0 "${qemu_pid[a]}" 2>/dev/null && tcp_listening "$candidate"; then
    port="$candidate"
    break
  fi
  stop_vm a
  wait "${tail_pid[a]}" 2>/dev/null || true
  tail_pid[a]=""
  if grep -qi 'address already in use' "$tmp/a/qemu.log" 2>/dev/null && (( $(date +%s) < deadline )); then
    say "port $candidate was taken meanwhile; trying another"
    : >"$tmp/a/ctl/out"
    continue
  fi
  vm_show_log "$tmp/a/qemu.log" 20
  die "$EXIT_BOOT" "QEMU for VM a did not start listening on 127.0.0.1:$candidate"
done
[[ -n "$port" ]] || die "$EXIT_BOOT" "no free port for the private network after 5 attempts"
vm_qemu b "connect=127.0.0.1:$port"
start_qemu b
say "private network: QEMU socket on 127.0.0.1:$port; a=$A_ADDR b=$B_ADDR (/$NET1_PREFIX, MTU $NET1_MTU)"

# ---------------------------------------------------------- supervision
declare -A seen=([a]="" [b]="") running=([a]=1 [b]=1) timed_out=([a]=0 [b]=0) qemu_rc=([a]=0 [b]=0)
declare -A stop_sent=([a]=0 [b]=0) stopped_for=([a]="" [b]="")

report_stages() {
  local v="$1" s
  [[ -f "$tmp/$v/ctl/stage" ]] || return 0
  while read -r s _; do
    [[ " ${seen[$v]} " == *" $s "* ]] && continue
    seen[$v]+=" $s"
    case "$s" in
      init) say "VM $v up, shares mounted ($(elapsed) s)" ;;
      rxe) say "VM $v: rxe0 ACTIVE on the private NIC ($(elapsed) s)" ;;
      run) say "VM $v: running its command ($(elapsed) s)" ;;
      done) say "VM $v: command exited with $(cat "$tmp/$v/ctl/rc" 2>/dev/null || echo '?') ($(elapsed) s)" ;;
    esac
  done <"$tmp/$v/ctl/stage"
}

# request_stop NAME WHY: asks VM NAME's init to SIGTERM its command.
request_stop() {
  local v="$1"
  # Not when the command has ended already (its VM is powering off).
  [[ "${stop_sent[$v]}" -eq 0 && "${running[$v]}" -eq 1 && ! -f "$tmp/$v/ctl/rc" ]] || return 0
  stop_sent[$v]=1
  stopped_for[$v]="$2"
  say "stopping VM $v's command: $2"
  : >"$tmp/$v/ctl/stop"
}

# finished_ok NAME: VM NAME's command reported exit code 0.
finished_ok() { [[ "$(cat "$tmp/$1/ctl/rc" 2>/dev/null)" == 0 ]]; }

while [[ "${running[a]}" -eq 1 || "${running[b]}" -eq 1 ]]; do
  for v in a b; do
    [[ "${running[$v]}" -eq 1 ]] || continue
    report_stages "$v"
    if ! kill -0 "${qemu_pid[$v]}" 2>/dev/null; then
      wait "${qemu_pid[$v]}" || qemu_rc[$v]=$?
      qemu_pid[$v]=""
      running[$v]=0
      report_stages "$v"
    fi
  done
  # B done: A's daemon is no longer needed. Either failed: stop the other.
  if [[ "${running[b]}" -eq 0 ]]; then
    if finished_ok b; then request_stop a "VM b's command finished"; else request_stop a "VM b failed"; fi
  elif [[ -f "$tmp/b/ctl/rc" ]]; then
    request_stop a "VM b's command finished"
  fi
  if [[ "${running[a]}" -eq 0 || -f "$tmp/a/ctl/rc" ]] && ! finished_ok a; then
    request_stop b "VM a failed"
  fi
  if (( $(date +%s) >= deadline )); then
    for v in a b; do
      [[ "${running[$v]}" -eq 1 ]] || continue
      timed_out[$v]=1
      say "timeout: ${timeout_s} s reached, stopping VM $v (QEMU pid ${qemu_pid[$v]})"
      stop_vm "$v"
      running[$v]=0
    done
    break
  fi
  sleep 0.2
done
for v in a b; do
  wait "${tail_pid[$v]}" 2>/dev/null || true
  tail_pid[$v]=""
  report_stages "$v"
done

# ---------------------------------------------------------------- verdict
declare -A code=() is_cmd=() msg=()
for v in a b; do
  vm_verdict "$tmp/$v/ctl" "$tmp/$v/console.log" "$tmp/$v/qemu.log" "${timed_out[$v]}" "${seen[$v]}" \
    "${qemu_rc[$v]}" "$timeout_s"
  code[$v]="$verdict_code" is_cmd[$v]="$verdict_cmd" msg[$v]="$verdict_msg"
  [[ "$verdict_cmd" -eq 1 ]] || say "VM $v: error: $verdict_msg (exit $verdict_code)"
done
summary=""
for v in a b; do
  [[ "${is_cmd[$v]}" -eq 1 ]] && summary+=", VM $v's command exited with ${code[$v]}" ||
    summary+=", VM $v failed with ${code[$v]}"
  [[ -z "${stopped_for[$v]}" ]] || summary+=" (stopped: ${stopped_for[$v]})"
done
say "done $(elapsed) s after the first boot${summary}"
for v in a b; do
  [[ "${is_cmd[$v]}" -eq 1 ]] || exit "${code[$v]}"
done
if [[ "${code[b]}" -ne 0 && "${stopped_for[b]}" != "VM a failed" ]]; then exit "${code[b]}"; fi
if [[ "${code[a]}" -ne 0 ]]; then exit "${code[a]}"; fi
exit "${code[b]}"
