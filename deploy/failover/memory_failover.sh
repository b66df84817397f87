#!/usr/bin/env bash
# A memory node's fail-over (recovery/README.md, "A memory node's failure";
# seed 4.3.2.5), measured: per round a fresh local cluster (3 memory
# daemons heartbeating the detector, 2 replicas, a 3-server ZooKeeper
# ensemble with its log on disk, 3 pandora-fd replicas), SmallBank's
# transfers mix (money only moves) loaded, two pandora-bench processes
# running it, and memory node 3 SIGKILLed once both commit. Recorded per
# round: kill -> detected (the leader's log), the ZooKeeper write (record +
# pause), the pause, how long the benches stood parked, how many in-flight
# transactions were decided by the live replicas, the benches' exit codes,
# the money total afterwards (must equal the loaded one) and a storage
# audit (pandora-ctl verify: replicas agree, no latch left).
#
#   bash deploy/failover/memory_failover.sh [--rounds 3] [--out DIR]
#
# Writes DIR/rounds.csv, DIR/summary.txt (medians) and each round's logs.
# Exits non-zero when a round loses money, a bench fails or no fail-over
# happens. Stops everything it started (by pid), on every way out.
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

usage() {
  cat <<USAGE
Usage: bash deploy/failover/memory_failover.sh [options]

Options:
  --rounds N          fresh clusters, one memory-node kill each        [3]
  --out DIR           results: rounds.csv, summary.txt, round<i>/ logs
                                          [/tmp/pandora-memory-failover]
  --build DIR         build with pandora-bench/-memd/-fd/-ctl          [build/release]
  --fd-timeout-us US  the detector's suspicion timeout (compute nodes) [20000]
  --memory-timeout-us US  ... of memory nodes (pandora-fd --memory-timeout-us) [100000]
  --accounts N        SmallBank accounts                               [100000]
  --seconds S         each bench's run                                 [12]
  --kill-after S      seconds after both benches commit                [3]
  --coordinators N    coordinators of each bench (1 thread)            [8]
  --protocol P        pandora, ford or log-a-latch                     [pandora]
  -h, --help          this help

Needs a Release build: bash deploy/setup.sh release
USAGE
}

die() { echo "memory_failover.sh: error: $*" >&2; exit 1; }

rounds=3
out="/tmp/pandora-memory-failover"
build="$root/build/release"
fd_timeout_us=20000
memory_timeout_us=100000
accounts=100000
seconds=12
kill_after=3
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
    --accounts) need_value "$@"; accounts="$2"; shift 2 ;;
    --seconds) need_value "$@"; seconds="$2"; shift 2 ;;
    --kill-after) need_value "$@"; kill_after="$2"; shift 2 ;;
    --coordinators) need_value "$@"; coordinators="$2"; shift 2 ;;
    --protocol) need_value "$@"; protocol="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done
for n in rounds fd_timeout_us memory_timeout_us accounts seconds kill_after coordinators; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || die "--${n//_/-} must be a positive integer, got '${!n}'"
done
case "$protocol" in pandora|ford|log-a-latch) ;; *) die "--protocol must be pandora, ford or log-a-latch, got '$protocol'" ;; esac
[[ $kill_after -lt $seconds ]] || die "--kill-after ($kill_after) must be below --seconds ($seconds)"
build="$(cd -- "$build" 2>/dev/null && pwd -P)" || die "no build directory $build (bash deploy/setup.sh release)"
bench="$build/workloads/bench/pandora-bench"
for b in "$bench" "$build/memory/pandora-memd" "$build/recovery/pandora-fd" "$build/deploy/pandora-ctl"; do
  [[ -x "$b" ]] || die "$b not found (bash deploy/setup.sh release)"
done
command -v python3 >/dev/null 2>&1 || die "python3 not found"

# shellcheck source=deploy/lib/private_dir.sh
source "$script_dir/../lib/private_dir.sh"
private_dir "$out" "output directory" || exit 2
out="$(cd -- "$out" && pwd -P)"
rm -rf -- "$out"/round* "$out/rounds.csv" "$out/summary.txt"
state=""
region_dir=""
bench_pids=()

stop_round() {
  local p
  for p in ${bench_pids[@]+"${bench_pids[@]}"}; do
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  bench_pids=()
  if [[ -n "$state" ]]; then
    bash "$root/deploy/local/cluster.sh" stop --dir "$state" --region-dir "$region_dir" >/dev/null 2>&1 || true
    rm -rf -- "$state"
    state=""
  fi
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_round
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# shellcheck source=deploy/lib/bench_logs.sh
source "$root/deploy/lib/bench_logs.sh"

cl_bins=(--memd "$build/memory/pandora-memd" --fd "$build/recovery/pandora-fd" --ctl "$build/deploy/pandora-ctl")
echo "round,kill_ns,detected_ns,detect_ms,record_ms,pause_ms,parked_ms_a,parked_ms_b,decided_a,decided_b,money_ok" \
  >"$out/rounds.csv"
failures=0
for ((r = 1; r <= rounds; r++)); do
  rd="$out/round$r"
  mkdir -p "$rd"
  state="$(mktemp -d "${TMPDIR:-/tmp}/pandora-memfail.XXXXXX")"
  region_dir="/dev/shm/pandora-$user/memfail-$$"
  echo "==> round $r: 3 memory daemons, ZooKeeper, SmallBank ($accounts accounts, $protocol), 3 pandora-fd replicas"
  bash "$root/deploy/local/cluster.sh" start --nodes 3 --dir "$state" --region-dir "$region_dir" "${cl_bins[@]}" \
    --size 64M --log-size 16M --zookeeper --protocol "$protocol" >"$rd/cluster_start.log" 2>&1 ||
    { cat "$rd/cluster_start.log" >&2; die "the cluster did not start"; }
  common=(--zookeeper "$(cat "$state/zk_connect")" --cluster-id "$(cat "$state/cluster_id")"
          --secret-file "$state/secret" --workload smallbank --accounts "$accounts" --mix transfers --protocol "$protocol" --log-level warn)
  "$bench" "${common[@]}" --load --seconds 0 >"$rd/load.log" 2>&1 || { tail -n 20 "$rd/load.log" >&2; die "loading failed"; }
  loaded="$(money_in_log "$rd/load.log")"
  [[ -n "$loaded" ]] || die "the load printed no money total (log: $rd/load.log)"
  bash "$root/deploy/local/cluster.sh" start-fd --dir "$state" "${cl_bins[@]}" --fd-timeout-us "$fd_timeout_us" \
    --fd-arg --memory-timeout-us --fd-arg "$memory_timeout_us" --log-level info >>"$rd/cluster_start.log" 2>&1 || { cat "$rd/cluster_start.log" >&2; die "the detector did not start"; }
  for n in a b; do
    "$bench" "${common[@]}" --threads 1 --coordinators "$coordinators" --seconds "$seconds" --warmup-seconds 0 \
      --timeline-ms 10 --report "$rd/bench-$n.json" --no-check >"$rd/bench-$n.log" 2>&1 &
    bench_pids+=($!)
  done
  wait_for_line "$rd/bench-a.log" '^\[ *[0-9.]+ s\]' "${bench_pids[0]}"
  wait_for_line "$rd/bench-b.log" '^\[ *[0-9.]+ s\]' "${bench_pids[1]}"
  sleep "$kill_after"
  t="$EPOCHREALTIME"
  kill -KILL "$(cat "$state/node3.pid")"
  kill_ns="${t/./}000"
  rc_a=0 rc_b=0
  wait "${bench_pids[0]}" || rc_a=$?
  wait "${bench_pids[1]}" || rc_b=$?
  bench_pids=()
  cat "$state"/fd*.log >"$rd/fd.log"
  after="$(audit_money "$rd/audit.log" "$bench" "${common[@]}")"
  # The storage below the transactions: replicas agree, no latch left.
  verify_rc=0
  "$build/deploy/pandora-ctl" verify --zookeeper "$(cat "$state/zk_connect")" --cluster-id "$(cat "$state/cluster_id")" \
    --secret-file "$state/secret" >"$rd/verify.log" 2>&1 </dev/null || verify_rc=$?
  python3 - "$rd" "$kill_ns" "$loaded" "$after" "$rc_a" "$rc_b" "$r" "$verify_rc" >>"$out/rounds.csv" <<'PY' || failures=$((failures + 1))
import datetime, re, sys
rd, kill_ns, loaded, after, rc_a, rc_b, rnd, verify_rc = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], *map(int, sys.argv[5:9])
fd = open(f"{rd}/fd.log").read()
def ts(line):
    t = datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp() * 1e9)
det = [l for l in fd.splitlines() if "memory node 3 missed by a majority" in l]
done = re.search(r"memory node 3 \(\S+\) failed over: configuration epoch \d+ \(record (\d+) us\), pause (\d+) us", fd)
problems = []
if not det or not done:
    problems.append("no fail-over in the detector's log")
parked, decided = [], []
for n in "ab":
    log = open(f"{rd}/bench-{n}.log").read()
    m = re.search(r"stop-the-world pauses: \d+ \(([0-9.]+) s parked\)", log)
    parked.append(float(m.group(1)) * 1e3 if m else float("nan"))
    m = re.search(r"memory-node fail-over: (\d+) transaction", log)
    decided.append(int(m.group(1)) if m else 0)
if rc_a or rc_b:
    problems.append(f"bench exit codes {rc_a}, {rc_b}")
if verify_rc:
    problems.append(f"pandora-ctl verify exited {verify_rc} (see verify.log)")
if loaded != after:
    problems.append(f"money {loaded} loaded, {after} after")
detected = ts(det[0]) if det else 0
print(f"{rnd},{kill_ns},{detected},{(detected - kill_ns) / 1e6:.1f},"
      f"{int(done.group(1)) / 1e3 if done else float('nan'):.1f},{int(done.group(2)) / 1e3 if done else float('nan'):.1f},"
      f"{parked[0]:.1f},{parked[1]:.1f},{decided[0]},{decided[1]},{int(loaded == after)}")
for p in problems:
    print(f"memory_failover.sh: round {rnd}: {p} (logs in {rd})", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
  tail -n 1 "$out/rounds.csv"
  stop_round
done

python3 - "$out/rounds.csv" "$memory_timeout_us" >"$out/summary.txt" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(k):
    v = [float(r[k]) for r in rows if r[k] not in ("nan", "")]
    return f"{statistics.median(v):.1f}" if v else "-"
print(f"{len(rows)} memory-node kills, memory-node timeout {int(sys.argv[2]) / 1000:g} ms; medians:")
print(f"  kill -> detected            {med('detect_ms')} ms")
print(f"  record + pause (ZooKeeper)  {med('record_ms')} ms")
print(f"  pause (write .. all parked) {med('pause_ms')} ms")
print(f"  benches parked              {med('parked_ms_a')} / {med('parked_ms_b')} ms")
print(f"  transactions decided by the live replicas: {sum(int(r['decided_a']) + int(r['decided_b']) for r in rows)}")
print(f"  money conserved in {sum(int(r['money_ok']) for r in rows)} of {len(rows)} rounds")
PY
cat "$out/summary.txt"
[[ $failures -eq 0 ]] || die "$failures round(s) failed (see above)"
