#!/usr/bin/env bash
# Checks the Soft-RoCE device inside the VM that deploy/softroce-vm/run.sh
# boots:
#
#   bash deploy/softroce-vm/run.sh -- deploy/softroce-vm/selftest.sh
#
#   1. ibv_devinfo: the device's port 1 is PORT_ACTIVE with active_mtu 4096,
#      and the device advertises atomics (atomic_cap ATOMIC_HCA);
#   2. the RoCE v2 GID index is discovered from sysfs (IPv4-mapped GID of
#      the netdev's address) and cross-checked with ibv_devinfo -v;
#   3. ibv_rc_pingpong loopback: server and client both in this VM on the
#      device, RC QPs, MTU 4096;
#   4. atomics: perftest's ib_atomic_lat (Debian package perftest), one run
#      with CMP_AND_SWAP and one with FETCH_AND_ADD, server and client both
#      here. (ibverbs-utils has no atomic example; perftest has.)
#
# Exits 0 when all pass, 1 at the first failure (with the tool's output).
# Exit code 77 (skipped) when not run inside the VM (no RDMA device).
set -euo pipefail

usage() {
  cat <<USAGE
Usage: deploy/softroce-vm/selftest.sh [--device NAME] [--iters N]

Meant to run inside the Soft-RoCE VM:
  bash deploy/softroce-vm/run.sh -- deploy/softroce-vm/selftest.sh

Checks NAME (default rxe0): port 1 PORT_ACTIVE, active_mtu 4096,
atomic_cap ATOMIC_HCA; finds the RoCE v2 GID index; runs an
ibv_rc_pingpong loopback (N iterations, default 200) and perftest's
ib_atomic_lat with CMP_AND_SWAP and FETCH_AND_ADD (N iterations each).
Exits 0 on success, 1 on a failed check, 77 when there is no such device.
USAGE
}

device=rxe0
iters=200
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --device)
      [[ $# -ge 2 && "$2" =~ ^[A-Za-z0-9_]+$ ]] || { echo "selftest: error: --device needs a device name (see --help)" >&2; exit 2; }
      device="$2"; shift 2 ;;
    --iters)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || { echo "selftest: error: --iters needs a positive integer (see --help)" >&2; exit 2; }
      iters="$2"; shift 2 ;;
    *) echo "selftest: error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# roce_v2_gid_index, listening: shared with perf_compare.sh.
# shellcheck source=guest_lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/guest_lib.sh"

sysdev="/sys/class/infiniband/$device"
if [[ ! -d "$sysdev" ]]; then
  echo "selftest: SKIP: no RDMA device $device here (run it in the VM: deploy/softroce-vm/run.sh -- $0)"
  exit 77
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/softroce-selftest.XXXXXXXX")"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf -- "$work"
}
trap cleanup EXIT

# Few processes: each exec reads its binary and libraries over 9p, slow
# under TCG on a busy host; bash builtins do the parsing and timing.
now_us() { local t="${EPOCHREALTIME/./}"; echo "$((10#$t))"; }
start_us="$(now_us)"
step() {
  local ms=$(( ($(now_us) - start_us) / 1000 ))
  printf 'selftest: [%d.%d s] %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*"
}
fail() {
  echo "selftest: FAIL: $*"
  exit 1
}

# ------------------------------------------------------------ 1. devinfo
step "ibv_devinfo -d $device -v"
ibv_devinfo -d "$device" -v >"$work/devinfo" 2>&1 || { cat "$work/devinfo"; fail "ibv_devinfo -d $device failed"; }
# The first "state:" and "active_mtu:" are port 1's (rxe has one port).
state="" active_mtu="" atomic_cap=""
while read -r key value _; do
  case "$key" in
    state:) [[ -n "$state" ]] || state="$value" ;;
    active_mtu:) [[ -n "$active_mtu" ]] || active_mtu="$value" ;;
    atomic_cap:) [[ -n "$atomic_cap" ]] || atomic_cap="$value" ;;
  esac
done <"$work/devinfo"
echo "selftest:   state $state, active_mtu $active_mtu, atomic_cap $atomic_cap"
[[ "$state" == PORT_ACTIVE ]] || { cat "$work/devinfo"; fail "port 1 of $device is '$state', not PORT_ACTIVE"; }
[[ "$active_mtu" == 4096 ]] || { cat "$work/devinfo"; fail "active_mtu of $device is '$active_mtu', not 4096 (is the netdev's MTU 9000?)"; }
[[ "$atomic_cap" == ATOMIC_HCA ]] || { cat "$work/devinfo"; fail "atomic_cap of $device is '$atomic_cap', not ATOMIC_HCA"; }

# ------------------------------------------------------- 2. RoCE v2 GID
# sysfs lists each GID with its type; the one to use for IPv4 addressing is
# the RoCE v2 entry whose GID is IPv4-mapped (::ffff:a.b.c.d).
gid_index="$(roce_v2_gid_index "$sysdev")" || gid_index=""
[[ -n "$gid_index" ]] || {
  grep GID "$work/devinfo" || true
  fail "no IPv4-mapped RoCE v2 GID on $device port 1 (has the netdev an IPv4 address?)"
}
# ibv_devinfo -v prints e.g. "GID[  1]:  ::ffff:10.0.2.15, RoCE v2".
devinfo_gid=""
while read -r line; do
  [[ "$line" =~ ^GID\[\ *$gid_index\]: ]] && { devinfo_gid="$line"; break; }
done <"$work/devinfo"
[[ "$devinfo_gid" == *"RoCE v2"* ]] || fail "sysfs says GID index $gid_index is RoCE v2, ibv_devinfo -v says: '${devinfo_gid:-nothing}'"
echo "selftest:   RoCE v2 GID index $gid_index:${devinfo_gid#*:}"

# ------------------------------------------------------ loopback helpers

# wait_listening PORT: until a TCP socket listens on PORT (the tools' out-of-
# band exchange), for at most 60 s or until the server has exited.
wait_listening() {
  local port="$1" i
  for ((i = 0; i < 600; i++)); do
    listening "$port" && return 0
    kill -0 "$server_pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# loopback NAME PORT SERVER_CMD... -- CLIENT_CMD...: runs the server in the
# background, the client once the server listens; both must exit 0.
loopback() {
  local name="$1" port="$2"
  shift 2
  local -a server=() client=()
  while [[ "$1" != -- ]]; do server+=("$1"); shift; done
  shift
  client=("$@")
  timeout 120 "${server[@]}" >"$work/$name.server" 2>&1 &
  server_pid=$!
  if ! wait_listening "$port"; then
    cat "$work/$name.server"
    fail "$name: the server did not listen on port $port"
  fi
  local client_rc=0 server_rc=0
  timeout 120 "${client[@]}" >"$work/$name.client" 2>&1 || client_rc=$?
  wait "$server_pid" || server_rc=$?
  server_pid=""
  if [[ "$client_rc" -ne 0 || "$server_rc" -ne 0 ]]; then
    echo "--- server: ${server[*]}"; cat "$work/$name.server"
    echo "--- client: ${client[*]}"; cat "$work/$name.client"
    fail "$name: client exited $client_rc, server exited $server_rc (124: timed out)"
  fi
}

# --------------------------------------------------- 3. ibv_rc_pingpong
step "ibv_rc_pingpong loopback on $device, GID index $gid_index, MTU 4096, $iters iterations"
loopback pingpong 18515 \
  ibv_rc_pingpong -d "$device" -i 1 -g "$gid_index" -m 4096 -n "$iters" -p 18515 -- \
  ibv_rc_pingpong -d "$device" -i 1 -g "$gid_index" -m 4096 -n "$iters" -p 18515 127.0.0.1
pingpong_ok=0
while read -r line; do
  [[ "$line" == *" bytes in "* || "$line" == *" iters in "* ]] && echo "selftest:   $line"
  [[ "$line" == "$iters iters in "* ]] && pingpong_ok=1
done <"$work/pingpong.client"
[[ "$pingpong_ok" -eq 1 ]] || { cat "$work/pingpong.client"; fail "ibv_rc_pingpong did not report $iters iterations"; }

# ------------------------------------------------------ 4. atomics (CAS, FAA)
port=18520
for op in CMP_AND_SWAP FETCH_AND_ADD; do
  step "ib_atomic_lat $op loopback on $device, GID index $gid_index, $iters iterations"
  loopback "atomic-$op" "$port" \
    ib_atomic_lat -d "$device" -i 1 -x "$gid_index" -A "$op" -n "$iters" -p "$port" -- \
    ib_atomic_lat -d "$device" -i 1 -x "$gid_index" -A "$op" -n "$iters" -p "$port" 127.0.0.1
  # The header "#bytes #iterations t_min[usec] ...", then a line of numbers.
  header="" result=""
  while read -r line; do
    if [[ -n "$header" ]]; then result="$line"; break; fi
    [[ "$line" == "#bytes"* ]] && header="$line"
  done <"$work/atomic-$op.client"
  read -r -a fields <<<"$result"
  [[ "${fields[0]:-}" == 8 && "${fields[1]:-}" == "$iters" ]] ||
    { cat "$work/atomic-$op.client"; fail "ib_atomic_lat $op gave no result line for $iters iterations"; }
  read -r -a names <<<"$header"
  echo "selftest:   ${names[*]:2:3}: ${fields[*]:2:3}"
  port=$((port + 1))
done

step "PASS: $device active (MTU 4096, ATOMIC_HCA), RC send/recv, CAS and FAA loopback work"
