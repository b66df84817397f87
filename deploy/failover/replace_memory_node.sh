#!/usr/bin/env bash
# Re-replication end to end (recovery/README.md, "Re-replication"): one
# local cluster (3 memory daemons, 2 replicas, a 3-server ZooKeeper
# ensemble, 3 pandora-fd replicas), SmallBank's transfers mix (money only
# moves) loaded, two pandora-bench processes running it throughout. Each
# round SIGKILLs memory node 3's daemon - the original (round 1 SIGSTOPs it
# instead, as if cut off, and checks that a replacement is refused while it
# runs again), then each replacement in turn, so the detector must watch a
# replacement again - waits for the fail-over, and brings the node back with
# 'cluster.sh replace --node 3' (a fresh region filled from the live
# replicas while every bench is paused). Recorded per round: kill ->
# failed over, the replace command's wall time, and the leader's pause,
# copy and row counts. Afterwards the money total must equal the loaded
# one, 'pandora-ctl verify' must find every row on each of its replicas,
# equal (so the replacements hold every row they should), and both benches
# must have exited 0. With --workload tpcc (a small TPC-C: new-orders insert
# while the node is out, so rows collide on the replacement and are
# relocated) TPC-C's consistency check replaces the money check.
#
#   bash deploy/failover/replace_memory_node.sh [--rounds 2] [--out DIR]
#
# Writes DIR/rounds.csv, DIR/summary.txt and the logs. Exits non-zero on
# any failed check. Stops everything it started (by pid), on every way out.
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

usage() {
  cat <<USAGE
Usage: bash deploy/failover/replace_memory_node.sh [options]

Options:
  --rounds N          kill + fail-over + replace cycles of node 3        [2]
  --out DIR           results: rounds.csv, summary.txt, logs
                                          [/tmp/pandora-replace-memory-node]
  --build DIR         build with pandora-bench/-memd/-fd/-ctl            [build/release]
  --workload W        smallbank (transfers) or tpcc (1 small warehouse)  [smallbank]
  --accounts N        SmallBank accounts                                 [100000]
  --protocol P        pandora, ford or log-a-latch                       [pandora]
  --coordinators N    coordinators of each bench (1 thread)              [8]
  --fd-timeout-us US  the detector's suspicion timeout (compute nodes)   [20000]
  --memory-timeout-us US  ... of memory nodes                            [100000]
  --zk-no-fsync       the ensemble skips fsync (cluster.sh --zk-no-fsync):
                      for the test suite on a disk that stalls fsyncs
  -h, --help          this help

Needs a Release build: bash deploy/setup.sh release
USAGE
}

die() { echo "replace_memory_node.sh: error: $*" >&2; exit 1; }

rounds=2
out="/tmp/pandora-replace-memory-node"
build="$root/build/release"
accounts=100000
workload=smallbank
protocol=pandora
coordinators=8
fd_timeout_us=20000
memory_timeout_us=100000
zk_flags=()
need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) need_value "$@"; rounds="$2"; shift 2 ;;
    --out) need_value "$@"; out="$2"; shift 2 ;;
    --build) need_value "$@"; build="$2"; shift 2 ;;
    --accounts) need_value "$@"; accounts="$2"; shift 2 ;;
    --workload) need_value "$@"; workload="$2"; shift 2 ;;
    --protocol) need_value "$@"; protocol="$2"; shift 2 ;;
    --coordinators) need_value "$@"; coordinators="$2"; shift 2 ;;
    --fd-timeout-us) need_value "$@"; fd_timeout_us="$2"; shift 2 ;;
    --memory-timeout-us) need_value "$@"; memory_timeout_us="$2"; shift 2 ;;
    --zk-no-fsync) zk_flags=(--zk-no-fsync); shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done
for n in rounds accounts coordinators fd_timeout_us memory_timeout_us; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || die "--${n//_/-} must be a positive integer, got '${!n}'"
done
case "$protocol" in pandora|ford|log-a-latch) ;; *) die "--protocol must be pandora, ford or log-a-latch, got '$protocol'" ;; esac
case "$workload" in
  smallbank)
    region=(--size 64M --log-size 16M)
    workload_flags=(--workload smallbank --accounts "$accounts" --mix transfers)
    what="SmallBank ($accounts accounts, $protocol)" ;;
  tpcc)
    # About 105 MB of tables (pandora-bench --plan), 64 KiB log lanes.
    region=(--size 128M --log-size 16M --lane-bytes 64K)
    workload_flags=(--workload tpcc --warehouses 1 --tpcc-items 10000 --tpcc-customers-per-district 300
                    --tpcc-max-orders-per-district 3000)
    what="TPC-C (1 warehouse, 10 000 items, $protocol)" ;;
  *) die "--workload must be smallbank or tpcc, got '$workload'" ;;
esac
build="$(cd -- "$build" 2>/dev/null && pwd -P)" || die "no build directory $build (bash deploy/setup.sh release)"
bench="$build/workloads/bench/pandora-bench"
ctl="$build/deploy/pandora-ctl"
for b in "$bench" "$build/memory/pandora-memd" "$build/recovery/pandora-fd" "$ctl"; do
  [[ -x "$b" ]] || die "$b not found (bash deploy/setup.sh release)"
done
command -v python3 >/dev/null 2>&1 || die "python3 not found"

# shellcheck source=deploy/lib/private_dir.sh
source "$script_dir/../lib/private_dir.sh"
private_dir "$out" "output directory" || exit 2
out="$(cd -- "$out" && pwd -P)"
rm -rf -- "$out"/*.log "$out/rounds.csv" "$out/summary.txt" "$out"/bench-*.json
state=""
region_dir="/dev/shm/pandora-$user/replace-$$"
bench_pids=()

cleanup() {
  local rc=$? p
  trap - EXIT INT TERM
  for p in ${bench_pids[@]+"${bench_pids[@]}"}; do
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [[ -n "$state" ]]; then
    [[ $rc -eq 0 ]] || cat "$state"/fd*.log >"$out/fd.log" 2>/dev/null || true
    bash "$root/deploy/local/cluster.sh" stop --dir "$state" --region-dir "$region_dir" >/dev/null 2>&1 || true
    rm -rf -- "$state"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# shellcheck source=deploy/lib/bench_logs.sh
source "$root/deploy/lib/bench_logs.sh"

cl_bins=(--memd "$build/memory/pandora-memd" --fd "$build/recovery/pandora-fd" --ctl "$ctl")
state="$(mktemp -d "${TMPDIR:-/tmp}/pandora-replace.XXXXXX")"
echo "==> 3 memory daemons, ZooKeeper, $what"
bash "$root/deploy/local/cluster.sh" start --nodes 3 --dir "$state" --region-dir "$region_dir" "${cl_bins[@]}" \
  "${region[@]}" --zookeeper ${zk_flags[@]+"${zk_flags[@]}"} --protocol "$protocol" \
  >"$out/cluster_start.log" 2>&1 || { cat "$out/cluster_start.log" >&2; die "the cluster did not start"; }
zk=(--zookeeper "$(cat "$state/zk_connect")" --cluster-id "$(cat "$state/cluster_id")" --secret-file "$state/secret")
common=("${zk[@]}" "${workload_flags[@]}" --protocol "$protocol" --log-level warn)
"$bench" "${common[@]}" --load --seconds 0 >"$out/load.log" 2>&1 || { tail -n 20 "$out/load.log" >&2; die "loading failed"; }
loaded="-"
if [[ $workload == smallbank ]]; then
  loaded="$(money_in_log "$out/load.log")"
  [[ -n "$loaded" ]] || die "the load printed no money total (log: $out/load.log)"
fi
bash "$root/deploy/local/cluster.sh" start-fd --dir "$state" "${cl_bins[@]}" --fd-timeout-us "$fd_timeout_us" \
  --fd-arg --memory-timeout-us --fd-arg "$memory_timeout_us" --log-level info >>"$out/cluster_start.log" 2>&1 ||
  { cat "$out/cluster_start.log" >&2; die "the detector did not start"; }

# The benches run through every round, however long they take, until
# SIGTERM ends their runs cleanly (report, leave the cluster, exit 0).
for n in a b; do
  "$bench" "${common[@]}" --threads 1 --coordinators "$coordinators" --seconds 3600 \
    --warmup-seconds 0 --report "$out/bench-$n.json" --no-check >"$out/bench-$n.log" 2>&1 &
  bench_pids+=($!)
done
wait_for_line "$out/bench-a.log" '^\[ *[0-9.]+ s\]' "${bench_pids[0]}"
wait_for_line "$out/bench-b.log" '^\[ *[0-9.]+ s\]' "${bench_pids[1]}"

# Lines of the detectors' logs matching $1 (all replicas: whoever leads).
fd_count() { cat "$state"/fd*.log | grep -c -- "$1" || true; }

# Refused: replacing a node that is live (nothing is touched).
if bash "$root/deploy/local/cluster.sh" replace --dir "$state" --node 3 "${cl_bins[@]}" >"$out/refused.log" 2>&1; then
  die "cluster.sh replace of live node 3 succeeded (log: $out/refused.log)"
fi
grep -q "still runs" "$out/refused.log" || die "cluster.sh replace of live node 3: unexpected refusal (see $out/refused.log)"

echo "round,kill_ns,failed_over_ms,replace_ms" >"$out/rounds.csv"
for ((r = 1; r <= rounds; r++)); do
  sleep 2
  before="$(fd_count 'memory node 3 (.*) failed over')"
  t0="$EPOCHREALTIME"
  node3_pid="$(cat "$state/node3.pid")"
  # Round 1 stops the daemon instead (a node cut off, not dead): it is
  # failed over all the same, and must be gone before it is replaced.
  if [[ $r -eq 1 ]]; then kill -STOP "$node3_pid"; else kill -KILL "$node3_pid"; fi
  deadline=$((SECONDS + 60))
  while [[ "$(fd_count 'memory node 3 (.*) failed over')" -le "$before" ]]; do
    [[ $SECONDS -lt $deadline ]] || die "round $r: memory node 3 was not failed over within 60 s (detector logs: $state/fd*.log)"
    sleep 0.05
  done
  t1="$EPOCHREALTIME"
  if [[ $r -eq 1 ]]; then
    # Refused while the old daemon runs again: by cluster.sh (its pid) and
    # by pandora-ctl (it answers at its recorded address).
    kill -CONT "$node3_pid"
    if bash "$root/deploy/local/cluster.sh" replace --dir "$state" --node 3 "${cl_bins[@]}" >>"$out/refused.log" 2>&1; then
      die "cluster.sh replace succeeded while node 3's old daemon ran"
    fi
    rc=0
    "$ctl" replace-memory-node 3 --endpoint 127.0.0.1:1 "${zk[@]}" >>"$out/refused.log" 2>&1 </dev/null || rc=$?
    [[ $rc -ne 0 ]] && grep -q "old daemon still answers" "$out/refused.log" ||
      die "pandora-ctl replace-memory-node did not refuse while node 3's old daemon answered (see $out/refused.log)"
    kill -KILL "$node3_pid"
    # Gone once it is no process or a zombie (its reaper is not this shell).
    while [[ -r "/proc/$node3_pid/stat" && "$(awk '{print $3}' "/proc/$node3_pid/stat" 2>/dev/null)" != Z ]]; do
      sleep 0.05
    done
    # Refused: a daemon at a live node's address, and one serving another
    # node id, are no replacement for node 3.
    live1="127.0.0.1:$(cat "$state/node1.port")"
    rc=0
    "$ctl" replace-memory-node 3 --endpoint "$live1" "${zk[@]}" >>"$out/refused.log" 2>&1 </dev/null || rc=$?
    [[ $rc -ne 0 ]] || die "pandora-ctl replace-memory-node 3 at node 1's address succeeded"
    rc=0
    "$ctl" replace-memory-node 2 --endpoint 127.0.0.1:1 "${zk[@]}" >>"$out/refused.log" 2>&1 </dev/null || rc=$?
    [[ $rc -ne 0 ]] || die "pandora-ctl replace-memory-node of live node 2 succeeded"
    grep -q "is not failed over" "$out/refused.log" || die "replacing live node 2: unexpected refusal (see $out/refused.log)"
  fi
  t_replace="$EPOCHREALTIME"
  bash "$root/deploy/local/cluster.sh" replace --dir "$state" --node 3 "${cl_bins[@]}" >>"$out/replace.log" 2>&1 ||
    { tail -n 20 "$out/replace.log" >&2; die "round $r: cluster.sh replace failed"; }
  t2="$EPOCHREALTIME"
  # The record binds node 3 to the daemon just filled (the incarnation its
  # log names): the detector hears the node only from it.
  incarnation="$(grep -o 'node 3, cluster .* incarnation 0x[0-9a-f]*' "$state/node3.log" | tail -n 1 |
    sed 's/.* incarnation //')"
  [[ -n "$incarnation" ]] || die "round $r: the replacement's log names no incarnation ($state/node3.log)"
  status_text="$("$ctl" status "${zk[@]}" </dev/null 2>&1 || true)"
  grep -q "^bound to daemon incarnations:.* node 3 $incarnation\b" <<<"$status_text" ||
    die "round $r: the record does not bind node 3 to its replacement's daemon ($incarnation):" \
      "$(grep '^bound' <<<"$status_text" || echo 'no binding')"
  python3 -c 'import sys; a, b, c, d = (float(x) for x in sys.argv[2:]); print(f"{sys.argv[1]},{int(a * 1e9)},{(b - a) * 1e3:.1f},{(d - c) * 1e3:.1f}")' \
    "$r" "$t0" "$t1" "$t_replace" "$t2" | tee -a "$out/rounds.csv"
done
sleep 2
kill -TERM "${bench_pids[@]}"
rc_a=0 rc_b=0
wait "${bench_pids[0]}" || rc_a=$?
wait "${bench_pids[1]}" || rc_b=$?
bench_pids=()
cat "$state"/fd*.log >"$out/fd.log"
after="-"
if [[ $workload == smallbank ]]; then
  after="$(audit_money "$out/audit.log" "$bench" "${common[@]}")"
elif ! "$bench" "${common[@]}" --seconds 0 >"$out/audit.log" 2>&1; then
  after="check failed (audit.log)"
fi
verify_rc=0
"$ctl" verify "${zk[@]}" >"$out/verify.log" 2>&1 </dev/null || verify_rc=$?
"$ctl" status "${zk[@]}" >"$out/status.log" 2>&1 </dev/null || true

rc=0
python3 - "$out" "$loaded" "$after" "$rc_a" "$rc_b" "$verify_rc" "$rounds" >"$out/summary.txt" <<'PY' || rc=$?
import csv, re, statistics, sys
out, loaded, after = sys.argv[1], sys.argv[2], sys.argv[3]
rc_a, rc_b, verify_rc, rounds = map(int, sys.argv[4:8])
fd = open(f"{out}/fd.log").read()
back = re.findall(r"memory node 3 is back at \S+: configuration epoch \d+; \d+ fenced pid\(s\) fenced there, "
                  r"pause (\d+) us \(parked in (\d+) us, \d+ compute node\(s\) recovered in it\), (\d+) rows copied "
                  r"\((\d+) relocated, \d+ journaled moves finished\) in (\d+) us", fd)
rows = list(csv.DictReader(open(f"{out}/rounds.csv")))
problems = []
if len(back) != rounds:
    problems.append(f"{len(back)} replacement(s) in the detectors' logs, {rounds} expected")
if rc_a or rc_b:
    problems.append(f"bench exit codes {rc_a}, {rc_b}")
if verify_rc:
    problems.append(f"pandora-ctl verify exited {verify_rc} (see verify.log)")
if loaded != after:
    problems.append(f"money {loaded} loaded, {after} after" if loaded != "-" else f"TPC-C's consistency check: {after}")
if "failed over (out of the configuration)" in open(f"{out}/status.log").read():
    problems.append("a memory node is still failed over at the end (status.log)")
med = lambda v: f"{statistics.median(v):.1f}" if v else "-"
print(f"{len(rows)} rounds of kill -> fail-over -> replace of memory node 3; medians:")
print(f"  kill -> failed over               {med([float(r['failed_over_ms']) for r in rows])} ms")
print(f"  cluster.sh replace (wall)         {med([float(r['replace_ms']) for r in rows])} ms")
print(f"  the leader's pause                {med([int(b[0]) / 1e3 for b in back])} ms"
      f" (all parked after {med([int(b[1]) / 1e3 for b in back])} ms, copy {med([int(b[4]) / 1e3 for b in back])} ms)")
print(f"  rows copied per replacement       {med([int(b[2]) for b in back])} (relocated: {sum(int(b[3]) for b in back)})")
check = f"money {loaded} loaded, {after} after" if loaded != "-" else f"TPC-C's check {'passed' if after == '-' else after}"
print(f"  {check}; verify exit {verify_rc}; bench exits {rc_a}, {rc_b}")
for p in problems:
    print(f"replace_memory_node.sh: {p} (logs in {out})", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
cat "$out/summary.txt"
[[ $rc -eq 0 ]] || die "checks failed (see above)"
