#!/usr/bin/env bash
# A memory node and a compute node on two (virtual) hosts, talking verbs
# over Soft-RoCE: deploy/softroce-vm/two_vm.sh boots the VMs, this script
# is both the host-side driver and the command run in each VM.
#
#   bash deploy/softroce-vm/cross_vm_check.sh [--bin-dir build/release] [options]
#
# VM a (memory): makes the cluster secret (mode 600) in the exchange
#   directory, starts pandora-memd --verbs on with its region on /dev/shm,
#   listening on a's private address, port file in the exchange; serves
#   until two_vm.sh stops it (SIGTERM once b is done), then stops the
#   daemon and exits with its exit code (0: clean shutdown).
# VM b (compute): waits for the daemon's endpoint, then pandora-bench
#   --backend verbs --workload smallbank --load (compute id 1) for
#   --seconds; it must exit 0 (including the end-of-run consistency check)
#   with committed transactions in its report. With --fence, a second run
#   (compute id 5) is fenced by `pandora-ctl fence 5 --memory-nodes` in VM a
#   once it commits, and must exit 6 ("this node was fenced") soon after.
#   (Without ZooKeeper: a ZooKeeper server did not start within 4 minutes in
#   a TCG VM, and while its JVM ran, the bench lost its queue pair.)
#
# Exit codes: two_vm.sh's (README, "Soft-RoCE VM"); the checks below exit 1
# with the reason, 2 on bad usage.
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
script_path="$script_dir/$(basename -- "${BASH_SOURCE[0]}")"

usage() {
  cat <<USAGE
Usage: bash deploy/softroce-vm/cross_vm_check.sh [options]

Boots two Soft-RoCE VMs with deploy/softroce-vm/two_vm.sh: pandora-memd
(--verbs on) in VM a, pandora-bench --backend verbs (SmallBank, loaded
first) in VM b against a's private address. Passes when the bench exits 0
with committed transactions (and, with --fence, a second bench run exits 6
after pandora-ctl fence in VM a) and the daemon stops cleanly.

Options:
  --bin-dir DIR     build directory holding memory/pandora-memd,
                    workloads/bench/pandora-bench and deploy/pandora-ctl
                    (default: build/release of this checkout)
  --memd PATH, --bench PATH, --ctl PATH
                    the binaries one by one (override --bin-dir)
  --seconds N       measured bench run in seconds (default 5)
  --accounts N      SmallBank accounts (default 1000)
  --fence           also check fencing: pandora-ctl fence in VM a, a second
                    bench run in VM b must exit 6
  --timeout-s N     two_vm.sh's timeout (default 600)
  --keep-logs       keep two_vm.sh's logs and the exchange directory
  -h, --help        this help

Inside the VMs this script runs as: --role memory|compute [same options].
USAGE
}

die() { echo "cross-vm: error: $*" >&2; exit "${2:-1}"; }
usage_error() { echo "cross-vm: error: $* (see --help)" >&2; exit 2; }

role=""
bin_dir="$script_dir/../../build/release"
memd="" bench="" ctl=""
seconds=5
accounts=1000
fence=0
timeout_s=600
keep_logs=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --role) [[ $# -ge 2 ]] || usage_error "--role needs a value"; role="$2"; shift 2 ;;
    --bin-dir) [[ $# -ge 2 ]] || usage_error "--bin-dir needs a value"; bin_dir="$2"; shift 2 ;;
    --memd) [[ $# -ge 2 ]] || usage_error "--memd needs a value"; memd="$2"; shift 2 ;;
    --bench) [[ $# -ge 2 ]] || usage_error "--bench needs a value"; bench="$2"; shift 2 ;;
    --ctl) [[ $# -ge 2 ]] || usage_error "--ctl needs a value"; ctl="$2"; shift 2 ;;
    --seconds) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "--seconds needs a positive integer"; seconds="$2"; shift 2 ;;
    --accounts) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "--accounts needs a positive integer"; accounts="$2"; shift 2 ;;
    --fence) fence=1; shift ;;
    --timeout-s) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "--timeout-s needs a positive integer"; timeout_s="$2"; shift 2 ;;
    --keep-logs) keep_logs=1; shift ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
[[ -n "$memd" ]] || memd="$bin_dir/memory/pandora-memd"
[[ -n "$bench" ]] || bench="$bin_dir/workloads/bench/pandora-bench"
[[ -n "$ctl" ]] || ctl="$bin_dir/deploy/pandora-ctl"

readonly CLUSTER_ID=0x7e57 NODE_ID=1 LOAD_PID=1 FENCED_PID=5

# Few processes inside the VMs: every exec reads its binary over 9p.
now_us() { local t="${EPOCHREALTIME/./}"; echo "$((10#$t))"; }
start_us="$(now_us)"
step() {
  local ms=$(( ($(now_us) - start_us) / 1000 ))
  printf 'cross-vm[%s]: [%d.%d s] %s\n' "${PANDORA_VM_NAME:-host}" $((ms / 1000)) $((ms % 1000 / 100)) "$*"
}

# wait_for FILE SECONDS [PID]: until FILE exists (and PID, if given, lives).
wait_for() {
  local file="$1" limit=$(( $(now_us) + $2 * 1000000 )) pid="${3:-}"
  until [[ -s "$file" ]]; do
    [[ -z "$pid" ]] || kill -0 "$pid" 2>/dev/null || return 1
    (( $(now_us) < limit )) || return 1
    sleep 0.2
  done
}

# rxe_counters: rxe0's counters (retransmissions, timeouts, ...), non-zero
# ones on one line, for a failure report.
rxe_counters() {
  local f v out=""
  for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do
    read -r v <"$f" 2>/dev/null || continue
    [[ "$v" == 0 ]] || out+=" ${f##*/}=$v"
  done
  step "rxe0 counters:${out:- all zero}"
}

# put FILE CONTENT: written aside, then renamed (the other VM sees all or nothing).
put() { printf '%s\n' "$2" >"$1.tmp.$$" && mv -- "$1.tmp.$$" "$1"; }

# -------------------------------------------------------------- host side
if [[ -z "$role" ]]; then
  for b in "$memd" "$bench" "$ctl"; do
    [[ -x "$b" ]] || die "$b: not an executable (build it: bash deploy/setup.sh release, or pass --bin-dir)" 2
  done
  memd="$(realpath -- "$memd")" bench="$(realpath -- "$bench")" ctl="$(realpath -- "$ctl")"
  common=(--memd "$memd" --bench "$bench" --ctl "$ctl" --seconds "$seconds" --accounts "$accounts")
  [[ "$fence" -eq 0 ]] || common+=(--fence)
  printf -v cmd_a '%q ' bash "$script_path" --role memory "${common[@]}"
  printf -v cmd_b '%q ' bash "$script_path" --role compute "${common[@]}"
  harness=(bash "$script_dir/two_vm.sh" --timeout-s "$timeout_s")
  [[ "$keep_logs" -eq 0 ]] || harness+=(--keep-logs)
  exec "${harness[@]}" --a "$cmd_a" --b "$cmd_b"
fi

# ------------------------------------------------------------ inside a VM
[[ -n "${PANDORA_VM_EXCHANGE:-}" && -d "$PANDORA_VM_EXCHANGE" ]] ||
  die "--role $role runs inside two_vm.sh's VMs (no PANDORA_VM_EXCHANGE here)" 2
x="$PANDORA_VM_EXCHANGE"
umask 077

memory_role() {
  local memd_pid=""
  stop_all() {
    [[ -n "$memd_pid" ]] || return 0
    kill -TERM "$memd_pid" 2>/dev/null || true
    local rc=0
    wait "$memd_pid" || rc=$?
    memd_pid=""
    step "pandora-memd exited with $rc"
    rxe_counters
    return "$rc"
  }
  # two_vm.sh sends SIGTERM once VM b is done: stop the daemon, report its code.
  trap 'step "SIGTERM: stopping pandora-memd"; rc=0; stop_all || rc=$?; exit "$rc"' TERM
  trap 'stop_all >/dev/null 2>&1 || true' EXIT

  # The cluster secret: 32 random bytes as hex, readable by root only, on
  # this guest's tmpfs; a copy goes to VM b through the exchange. Over 9p
  # the exchange's files belong to whichever host user runs QEMU, and
  # Pandora refuses a secret file another user owns.
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >/tmp/secret
  chmod 600 /tmp/secret
  cp -- /tmp/secret "$x/secret.tmp"
  chmod 600 "$x/secret.tmp"
  mv -- "$x/secret.tmp" "$x/secret"
  [[ "$(stat -c %a "$x/secret")" == 600 ]] || die "$x/secret has mode $(stat -c %a "$x/secret"), not 600"

  mkdir -p -m 0700 /dev/shm/pandora
  # --handshake-timeout-ms: under TCG a client took more than the default
  # 3 s from connecting to its Hello (seen: "no valid Hello within 3000 ms").
  step "starting pandora-memd --verbs on (rxe0) on $PANDORA_VM_ADDR"
  PMEM_IS_PMEM_FORCE=1 "$memd" --pm-path /dev/shm/pandora/node$NODE_ID.pm --size 64M --node-id "$NODE_ID" \
    --cluster-id "$CLUSTER_ID" --secret-file /tmp/secret --listen "$PANDORA_VM_ADDR:0" \
    --port-file /tmp/memd.port --verbs on --rdma-device rxe0 --log-level info --handshake-timeout-ms 60000 &
  memd_pid=$!
  wait_for /tmp/memd.port 120 "$memd_pid" || { stop_all || true; die "pandora-memd did not write its port file within 120 s"; }
  local endpoint
  endpoint="$PANDORA_VM_ADDR:$(cat /tmp/memd.port)"
  put "$x/memd.endpoint" "$endpoint"
  step "pandora-memd serves $endpoint (endpoint in the exchange)"

  if [[ "$fence" -eq 1 ]]; then
    step "waiting for VM b to ask for the fence of compute id $FENCED_PID"
    # Waits on a background sleep so that SIGTERM is handled at once.
    while [[ ! -s "$x/fence.request" ]]; do
      sleep 0.2 &
      wait $! || true
    done
    step "pandora-ctl fence $FENCED_PID"
    local rc=0
    "$ctl" fence "$FENCED_PID" --memory-nodes "$endpoint" --cluster-id "$CLUSTER_ID" --secret-file /tmp/secret || rc=$?
    put "$x/fence.done" "$rc"
    [[ "$rc" -eq 0 ]] || die "pandora-ctl fence $FENCED_PID exited with $rc"
  fi
  # Serve until two_vm.sh's SIGTERM (or the daemon ends by itself: a failure).
  local rc=0
  wait "$memd_pid" || rc=$?
  memd_pid=""
  die "pandora-memd exited with $rc before VM b was done"
}

# json_number FILE KEY: the first "KEY": N in a JSON report.
json_number() { sed -n "s/.*\"$2\": \\([0-9][0-9]*\\).*/\\1/p" "$1" | head -n 1; }

compute_role() {
  step "waiting for pandora-memd's endpoint from VM a"
  wait_for "$x/memd.endpoint" 300 || die "no endpoint from VM a within 300 s"
  local endpoint
  endpoint="$(cat "$x/memd.endpoint")"
  [[ "$(stat -c %a "$x/secret")" == 600 ]] || die "$x/secret has mode $(stat -c %a "$x/secret"), not 600"
  # A copy of our own on this guest's tmpfs (see memory_role).
  install -m 600 -- "$x/secret" /tmp/secret
  local common=(--memory-nodes "$endpoint" --cluster-id "$CLUSTER_ID" --secret-file /tmp/secret
    --backend verbs --rdma-device rxe0 --workload smallbank --accounts "$accounts")

  step "pandora-bench --backend verbs --load, $seconds s of SmallBank against $endpoint"
  # Bounded: a run that stops making progress fails here instead of at
  # two_vm.sh's timeout. Seen in 2 of 4 runs: a few commits, then nothing
  # completed and the run never ended (nor on SIGTERM), with
  # completer_retry_err=1 in VM b's rxe0 counters (a queue pair ran out of
  # retries; a passing run showed it too).
  local rc=0 limit=$((seconds + 180))
  timeout --kill-after=10 "$limit" "$bench" "${common[@]}" --compute-id "$LOAD_PID" --load --seconds "$seconds" \
    --warmup-seconds 1 --report /tmp/run.json || rc=$?
  if [[ "$rc" -ne 0 ]]; then
    rxe_counters
    [[ "$rc" -ne 124 && "$rc" -ne 137 ]] || die "pandora-bench did not finish within $limit s (hung; rc $rc)"
    die "pandora-bench exited with $rc"
  fi
  local commits
  commits="$(json_number /tmp/run.json commits)"
  [[ "${commits:-0}" -gt 0 ]] || die "pandora-bench reported no committed transactions: $(cat /tmp/run.json)"
  cp /tmp/run.json "$x/run.json"
  rxe_counters
  step "PASS: $commits SmallBank transactions committed over verbs across the two VMs (consistency check passed)"

  [[ "$fence" -eq 1 ]] || return 0
  step "fence check: pandora-bench as compute id $FENCED_PID, fenced by VM a once it commits"
  "$bench" "${common[@]}" --compute-id "$FENCED_PID" --seconds 300 --warmup-seconds 0 --no-check \
    >/tmp/fenced.log 2>&1 &
  local pid=$! limit=$(( $(now_us) + 120 * 1000000 ))
  until grep -Eq '\([1-9][0-9]* commits so far\)' /tmp/fenced.log; do
    kill -0 "$pid" 2>/dev/null || { cat /tmp/fenced.log; rxe_counters; die "the second bench run ended before committing"; }
    (( $(now_us) < limit )) || { kill -KILL "$pid"; cat /tmp/fenced.log; rxe_counters; die "the second bench run committed nothing in 120 s"; }
    sleep 0.2
  done
  put "$x/fence.request" "$FENCED_PID"
  local fenced_at
  fenced_at="$(now_us)"
  wait_for "$x/fence.done" 120 || { kill -KILL "$pid"; die "VM a did not fence within 120 s"; }
  [[ "$(cat "$x/fence.done")" == 0 ]] || { kill -KILL "$pid"; die "pandora-ctl fence failed in VM a"; }
  limit=$(( $(now_us) + 60 * 1000000 ))
  while kill -0 "$pid" 2>/dev/null; do
    (( $(now_us) < limit )) || { kill -KILL "$pid"; cat /tmp/fenced.log; rxe_counters; die "the fenced bench was still running 60 s after the fence"; }
    sleep 0.2
  done
  rc=0
  wait "$pid" || rc=$?
  local secs=$(( ($(now_us) - fenced_at) / 100000 ))
  tail -n 20 /tmp/fenced.log
  [[ "$rc" -eq 6 ]] || die "the fenced bench exited with $rc, not 6"
  grep -q 'was fenced' /tmp/fenced.log || die "the fenced bench did not say it was fenced"
  step "PASS: fenced by VM a, the bench in VM b exited 6 ($((secs / 10)).$((secs % 10)) s after the fence request)"
}

case "$role" in
  memory) memory_role ;;
  compute) compute_role ;;
  *) usage_error "--role must be memory or compute" ;;
esac
