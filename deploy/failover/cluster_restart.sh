#!/usr/bin/env bash
# Whole-cluster restart (recovery/README.md, "Whole-cluster restart"),
# measured and checked: a local cluster (3 memory daemons, 2 replicas, a
# 3-server ZooKeeper ensemble with its log on disk, 3 pandora-fd replicas),
# SmallBank's transfers mix (money only moves) loaded; per round two
# pandora-bench processes run it and, once both commit, EVERY process of
# the cluster is SIGKILLed at once - benches, detector, memory daemons,
# ZooKeeper servers - as a power cut of a host with persistent memory would
# stop them. Then `cluster.sh restart` brings it back and the new detector
# leader recovers the dead benches. Recorded per round: how long the
# restart took, how long until both benches' pids were recovered, their
# log records rolled back and forward, the money total (must equal the
# loaded one) and `pandora-ctl verify`. The next round crashes the
# restarted cluster again; at the end one bench runs with its own check.
# Before round --memory-failure-round memory node 3 is killed alone and
# failed over first, so that restart must leave it down (its region is
# stale) and bring the cluster back on the other two; after the last round
# it is replaced (cluster.sh replace) and verify must find every row on
# each of its replicas again.
#
#   bash deploy/failover/cluster_restart.sh [--rounds 3] [--out DIR]
#
# Writes DIR/rounds.csv, DIR/summary.txt and each round's logs. Exits
# non-zero when a round loses money, fails verify, or a pid is not
# recovered. Stops everything it started (by pid), on every way out.
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

usage() {
  cat <<USAGE
Usage: bash deploy/failover/cluster_restart.sh [options]

Options:
  --rounds N          whole-cluster crashes and restarts               [3]
  --out DIR           results: rounds.csv, summary.txt, round<i>/ logs
                                          [/tmp/pandora-cluster-restart]
  --build DIR         build with pandora-bench/-memd/-fd/-ctl          [build/release]
  --fd-timeout-us US  the detector's suspicion timeout                 [20000]
  --memory-timeout-us US  ... of memory nodes (pandora-fd --memory-timeout-us) [100000]
  --memory-failure-round R  before round R, fail memory node 3 over (0: never) [2]
  --accounts N        SmallBank accounts                               [100000]
  --kill-after S      seconds after both benches commit                [2]
  --coordinators N    coordinators of each bench (1 thread)            [8]
  --protocol P        pandora, ford or log-a-latch                     [pandora]
  -h, --help          this help

Needs a Release build: bash deploy/setup.sh release
USAGE
}

die() { echo "cluster_restart.sh: error: $*" >&2; exit 1; }

rounds=3
out="/tmp/pandora-cluster-restart"
build="$root/build/release"
fd_timeout_us=20000
memory_timeout_us=100000
memory_failure_round=2
accounts=100000
kill_after=2
coordinators=8
protocol=pandora
need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) need_value "$@"; rounds="$2"; shift 2 ;;
    --out) need_value "$@"; out="$2"; shift 2 ;;
    --build) need_value "$@"; build="$2"; shift 2 ;;
    --fd-timeout-us) need_value "$@"; fd_timeout_us="$2"; shift 2 ;;
    --memory-timeout-us) need_value "$@"; memory_timeout_us="$2"; shift 2 ;;
    --memory-failure-round) need_value "$@"; memory_failure_round="$2"; shift 2 ;;
    --accounts) need_value "$@"; accounts="$2"; shift 2 ;;
    --kill-after) need_value "$@"; kill_after="$2"; shift 2 ;;
    --coordinators) need_value "$@"; coordinators="$2"; shift 2 ;;
    --protocol) need_value "$@"; protocol="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done
for n in rounds fd_timeout_us memory_timeout_us accounts kill_after coordinators; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || die "--${n//_/-} must be a positive integer, got '${!n}'"
done
[[ "$memory_failure_round" =~ ^[0-9]+$ ]] || die "--memory-failure-round must be 0 or a round, got '$memory_failure_round'"
case "$protocol" in pandora|ford|log-a-latch) ;; *) die "--protocol must be pandora, ford or log-a-latch, got '$protocol'" ;; esac
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
rm -rf -- "$out"/round* "$out/rounds.csv" "$out/summary.txt" "$out/final.log"
state=""
region_dir=""
bench_pids=()

cleanup() {
  local rc=$? p
  trap - EXIT INT TERM
  for p in ${bench_pids[@]+"${bench_pids[@]}"}; do
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [[ -n "$state" ]]; then
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
ctl_status() { "$ctl" status "${ctl_args[@]}" </dev/null 2>&1; }
# Every pid recorded in DIR's pid files ($@: globs), alive or not.
pids_of() { local f; for f in "$@"; do [[ -f "$f" ]] && cat "$f"; done; return 0; }

cl_bins=(--memd "$build/memory/pandora-memd" --fd "$build/recovery/pandora-fd" --ctl "$ctl")
fd_flags=(--fd-timeout-us "$fd_timeout_us" --fd-arg --memory-timeout-us --fd-arg "$memory_timeout_us")
state="$(mktemp -d "${TMPDIR:-/tmp}/pandora-restart.XXXXXX")"
region_dir="/dev/shm/pandora-$user/restart-$$"
echo "==> a cluster: 3 memory daemons, ZooKeeper, SmallBank ($accounts accounts, transfers, $protocol), 3 pandora-fd replicas"
bash "$root/deploy/local/cluster.sh" start --nodes 3 --dir "$state" --region-dir "$region_dir" "${cl_bins[@]}" \
  --size 64M --log-size 16M --zookeeper --protocol "$protocol" >"$out/cluster_start.log" 2>&1 ||
  { cat "$out/cluster_start.log" >&2; die "the cluster did not start"; }
ctl_args=(--zookeeper "$(cat "$state/zk_connect")" --cluster-id "$(cat "$state/cluster_id")" --secret-file "$state/secret")
common=("${ctl_args[@]}" --workload smallbank --accounts "$accounts" --mix transfers --protocol "$protocol" --log-level warn)
"$bench" "${common[@]}" --load --seconds 0 >"$out/load.log" 2>&1 || { tail -n 20 "$out/load.log" >&2; die "loading failed"; }
loaded="$(money_in_log "$out/load.log")"
[[ -n "$loaded" ]] || die "the load printed no money total (log: $out/load.log)"
bash "$root/deploy/local/cluster.sh" start-fd --dir "$state" "${cl_bins[@]}" "${fd_flags[@]}" \
  >>"$out/cluster_start.log" 2>&1 || { cat "$out/cluster_start.log" >&2; die "the detector did not start"; }

echo "round,restart_ms,recovered_ms,records,rolled_back,rolled_forward,money_ok,verify_ok" >"$out/rounds.csv"
failures=0
for ((r = 1; r <= rounds; r++)); do
  rd="$out/round$r"
  mkdir -p "$rd"
  if [[ $r -eq $memory_failure_round ]]; then
    echo "==> before round $r: memory node 3 SIGKILLed alone, to be failed over"
    kill -KILL "$(cat "$state/node3.pid")"
    deadline=$((SECONDS + 60))
    until ctl_status | grep -q '^failed over (out of the configuration): node 3 '; do
      [[ $SECONDS -lt $deadline ]] || die "memory node 3 was not failed over within 60 s"
      sleep 0.05
    done
  fi
  for n in a b; do
    "$bench" "${common[@]}" --threads 1 --coordinators "$coordinators" --seconds 3600 --warmup-seconds 0 \
      --no-check >"$rd/bench-$n.log" 2>&1 &
    bench_pids+=($!)
  done
  wait_for_line "$rd/bench-a.log" '^\[ *[0-9.]+ s\]' "${bench_pids[0]}"
  wait_for_line "$rd/bench-b.log" '^\[ *[0-9.]+ s\]' "${bench_pids[1]}"
  bench_ids=()
  for n in a b; do
    id="$(sed -n 's/^joined the cluster as pid \([0-9]*\) .*/\1/p' "$rd/bench-$n.log" | head -n1)"
    [[ "$id" =~ ^[0-9]+$ ]] || die "bench $n printed no compute id (log: $rd/bench-$n.log)"
    bench_ids+=("$id")
  done
  sleep "$kill_after"
  # The crash: every process of the cluster at once.
  mapfile -t victims < <(pids_of "$state"/fd*.pid "$state"/node*.pid "$state"/zk/zk*.pid)
  echo "==> round $r: SIGKILL to the benches (pids ${bench_ids[*]}) and every detector replica, memory daemon and ZooKeeper server"
  kill -KILL "${bench_pids[@]}" "${victims[@]}" 2>/dev/null || true
  for p in "${bench_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  bench_pids=()
  for p in "${victims[@]}"; do
    deadline=$((SECONDS + 10))
    while kill -0 "$p" 2>/dev/null && [[ $SECONDS -lt $deadline ]]; do sleep 0.02; done
  done
  cp "$state"/fd*.log "$rd/" 2>/dev/null || true

  t0="$EPOCHREALTIME"
  bash "$root/deploy/local/cluster.sh" restart --dir "$state" "${cl_bins[@]}" --fd-replicas 3 "${fd_flags[@]}" \
    >"$rd/restart.log" 2>&1 || { cat "$rd/restart.log" >&2; die "round $r: restart failed"; }
  t1="$EPOCHREALTIME"
  if [[ $memory_failure_round -ge 1 && $r -ge $memory_failure_round ]]; then
    grep -q "node3 was failed over: it stays down" "$rd/restart.log" ||
      die "round $r: restart did not leave the failed-over memory node 3 down (log: $rd/restart.log)"
    [[ ! -e "$state/node3.pid" ]] || die "round $r: restart started the failed-over memory node 3"
  fi
  # Both benches' pids recovered, no compute member left, no recovery half-way.
  deadline=$((SECONDS + 60))
  while :; do
    st="$(ctl_status || true)"
    done_all=1
    for id in "${bench_ids[@]}"; do
      grep -qE "^  pid +$id +done " <<<"$st" || done_all=0
    done
    grep -qE '^  pid +[0-9]+ +compute ' <<<"$st" && done_all=0
    grep -qE '^  pid +[0-9]+ +(started|published) ' <<<"$st" && done_all=0
    [[ $done_all -eq 0 ]] || break
    [[ $SECONDS -lt $deadline ]] || { echo "$st" >&2; die "round $r: the benches' pids were not recovered within 60 s"; }
    sleep 0.05
  done
  t2="$EPOCHREALTIME"
  echo "$st" >"$rd/status.txt"
  after="$(audit_money "$rd/audit.log" "$bench" "${common[@]}")"
  verify_ok=1
  "$ctl" verify "${ctl_args[@]}" >"$rd/verify.log" 2>&1 </dev/null || verify_ok=0
  python3 - "$rd/status.txt" "$t0" "$t1" "$t2" "$loaded" "$after" "$verify_ok" "$r" "${bench_ids[@]}" \
    >>"$out/rounds.csv" <<'PY' || failures=$((failures + 1))
import re, sys
status, t0, t1, t2, loaded, after, verify_ok, rnd = sys.argv[1:9]
ids = [int(x) for x in sys.argv[9:]]
records = back = fwd = 0
for line in open(status):
    m = re.match(r"\s+pid\s+(\d+) done .*\((\d+) records: (\d+) rolled back, (\d+) forward\)", line)
    if m and int(m.group(1)) in ids:
        records += int(m.group(2)); back += int(m.group(3)); fwd += int(m.group(4))
problems = []
if loaded != after:
    problems.append(f"money {loaded} loaded, {after} after the restart")
if verify_ok != "1":
    problems.append("pandora-ctl verify found problems")
print(f"{rnd},{(float(t1) - float(t0)) * 1e3:.0f},{(float(t2) - float(t1)) * 1e3:.0f},{records},{back},{fwd},"
      f"{int(loaded == after)},{verify_ok}")
for p in problems:
    print(f"cluster_restart.sh: round {rnd}: {p} (logs in {sys.argv[1].rsplit('/', 1)[0]})", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
  tail -n 1 "$out/rounds.csv"
done

# The memory node failed over before a restart comes back after it: its
# replacement is filled from the live replicas, after which every row is on
# each of its replicas again (verify) and the final bench runs on all three.
if [[ $memory_failure_round -ge 1 && $memory_failure_round -le $rounds ]]; then
  bash "$root/deploy/local/cluster.sh" replace --dir "$state" --node 3 "${cl_bins[@]}" >"$out/replace.log" 2>&1 ||
    { tail -n 20 "$out/replace.log" >&2; die "cluster.sh replace of node 3 after the restarts failed"; }
  ! ctl_status | grep -q '^failed over' || die "memory node 3 is still failed over after cluster.sh replace"
  "$ctl" verify "${ctl_args[@]}" >"$out/verify_replaced.log" 2>&1 </dev/null ||
    die "pandora-ctl verify after the replacement found problems (log: $out/verify_replaced.log)"
  echo "memory node 3 replaced after the restarts: $(grep -o 'configuration epoch [0-9]*' "$out/replace.log" | tail -n 1)"
fi

# The restarted cluster runs transactions and checks them itself.
"$bench" "${common[@]}" --threads 1 --coordinators "$coordinators" --seconds 2 --warmup-seconds 0 \
  >"$out/final.log" 2>&1 || { tail -n 20 "$out/final.log" >&2; die "a bench on the restarted cluster failed (log: $out/final.log)"; }
grep -q '^check passed' "$out/final.log" || die "the final bench printed no passed check (log: $out/final.log)"

# What must be refused: a restart of a cluster that runs, and recording
# addresses that are not exactly the live memory nodes (one left out).
if bash "$root/deploy/local/cluster.sh" restart --dir "$state" "${cl_bins[@]}" >"$out/refused_restart.log" 2>&1; then
  die "cluster.sh restart of a running cluster was not refused (log: $out/refused_restart.log)"
fi
grep -q "still runs" "$out/refused_restart.log" || die "cluster.sh restart refused a running cluster without saying why"
epoch_before="$(ctl_status | sed -n 's/^epoch //p')"
rc=0
"$ctl" set-memory-nodes "${ctl_args[@]}" --memory-nodes "$(cut -d, -f1 "$state/endpoints")" \
  >"$out/refused_addresses.log" 2>&1 </dev/null || rc=$?
[[ $rc -eq 3 ]] || die "set-memory-nodes with a live node left out exited $rc, not 3 (log: $out/refused_addresses.log)"
[[ "$(ctl_status | sed -n 's/^epoch //p')" == "$epoch_before" ]] || die "a refused set-memory-nodes changed the record"

python3 - "$out/rounds.csv" >"$out/summary.txt" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(k):
    return f"{statistics.median(float(r[k]) for r in rows):.0f}"
print(f"{len(rows)} whole-cluster crashes (SIGKILL to every process), each restarted; medians:")
print(f"  cluster.sh restart (ensemble, daemons, addresses, detector)  {med('restart_ms')} ms")
print(f"  then until both dead benches were recovered                {med('recovered_ms')} ms")
print(f"  log records of the dead benches: {sum(int(r['records']) for r in rows)} "
      f"({sum(int(r['rolled_back']) for r in rows)} rolled back, {sum(int(r['rolled_forward']) for r in rows)} forward)")
print(f"  money conserved in {sum(int(r['money_ok']) for r in rows)} of {len(rows)} rounds, "
      f"verify clean in {sum(int(r['verify_ok']) for r in rows)}")
PY
cat "$out/summary.txt"
echo "final bench on the restarted cluster: $(grep '^check passed' "$out/final.log")"
[[ $failures -eq 0 ]] || die "$failures round(s) failed (see above)"
