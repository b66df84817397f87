#!/usr/bin/env bash
# Fail-over latency of a compute node (seed 4.5.1 "recovery latency" and
# 4.5.3's "Distributed Failure Detector"): a pandora-bench running SmallBank,
# joined through ZooKeeper, is SIGKILLed at a random moment, R times; each
# time a new one is started for the next round. For every crash it records
# the kill instant (CLOCK_REALTIME just before kill -9), the recovery record
# the failure detector's leader wrote (detected_ns and the per-step
# durations) and published_ns from <root>/failed/<pid>, and reports p50/p99
# (and min/max) of detection (kill -> detected), end-to-end (kill ->
# published) and each step.
#
#   bash deploy/failover/measure_detection.sh [--rounds 50] [--out DIR]
#
# The cluster (deploy/local/cluster.sh --zookeeper --fd-replicas 3): two
# memory daemons, a 3-server ZooKeeper ensemble with its transaction log on
# disk (DIR/zk/zk<i>/txlog, as deploy/local/zookeeper.sh deploys it: no
# tmpfs), three pandora-fd replicas; everything on 127.0.0.1.
# Always stops everything it started (by pid).
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

usage() {
  cat <<USAGE
Usage: bash deploy/failover/measure_detection.sh [options]

Options:
  --rounds N          crashes to measure                               [50]
  --out DIR           results: crashes.csv, summary.txt, per-round logs
                                              [/tmp/pandora-failover-detection]
  --build DIR         Release build with pandora-bench/-memd/-fd/-ctl  [build/release]
  --fd-timeout-us US  the detector's suspicion timeout                 [5000]
  --fd-arg ARG        passed to every pandora-fd (repeatable)
  --fd-nice N         nice value of the pandora-fd replicas   [-10 as root, else 0]
  --threads N         pandora-bench worker threads                     [1]
  --coordinators N    coordinators per thread                          [4]
  --backend B         data plane of the compute nodes: tcp or shm      [tcp]
  --accounts N        SmallBank accounts                               [100000]
  --kill-after-ms A,B kill at a uniformly random moment in [A, B] ms after
                      the bench's first progress line (it is running
                      transactions by then)                           [0,1000]
  --seed N            seed of the random kill moments                  [1]
  -h, --help          this help

Needs a Release build: bash deploy/setup.sh release
USAGE
}

die() { echo "measure_detection.sh: error: $*" >&2; exit 1; }

rounds=50
out="/tmp/pandora-failover-detection"
build="$root/build/release"
fd_timeout_us=5000
fd_args=()
fd_nice=0
[[ "$(id -u)" -ne 0 ]] || fd_nice=-10
threads=1
coordinators=4
backend=tcp
accounts=100000
kill_after="0,1000"
seed=1

need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) need_value "$@"; rounds="$2"; shift 2 ;;
    --out) need_value "$@"; out="$2"; shift 2 ;;
    --build) need_value "$@"; build="$2"; shift 2 ;;
    --fd-timeout-us) need_value "$@"; fd_timeout_us="$2"; shift 2 ;;
    --fd-arg) need_value "$@"; fd_args+=(--fd-arg "$2"); shift 2 ;;
    --fd-arg=*) fd_args+=(--fd-arg "${1#--fd-arg=}"); shift ;;
    --fd-nice) need_value "$@"; fd_nice="$2"; shift 2 ;;
    --threads) need_value "$@"; threads="$2"; shift 2 ;;
    --coordinators) need_value "$@"; coordinators="$2"; shift 2 ;;
    --backend) need_value "$@"; backend="$2"; shift 2 ;;
    --accounts) need_value "$@"; accounts="$2"; shift 2 ;;
    --kill-after-ms) need_value "$@"; kill_after="$2"; shift 2 ;;
    --seed) need_value "$@"; seed="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done
for n in rounds fd_timeout_us threads coordinators accounts; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || die "--${n//_/-} must be a positive integer, got '${!n}'"
done
[[ "$seed" =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer, got '$seed'"
[[ "$backend" == tcp || "$backend" == shm ]] || die "--backend must be tcp or shm, got '$backend'"
[[ "$kill_after" =~ ^([0-9]+),([0-9]+)$ ]] || die "--kill-after-ms must be A,B (milliseconds), got '$kill_after'"
kill_min="${BASH_REMATCH[1]}"
kill_max="${BASH_REMATCH[2]}"
[[ "$kill_max" -ge "$kill_min" ]] || die "--kill-after-ms: B must be >= A"

build="$(cd -- "$build" 2>/dev/null && pwd -P)" || die "no build directory $build (bash deploy/setup.sh release)"
bench="$build/workloads/bench/pandora-bench"
for b in "$bench" "$build/memory/pandora-memd" "$build/recovery/pandora-fd" "$build/deploy/pandora-ctl"; do
  [[ -x "$b" ]] || die "$b not found (bash deploy/setup.sh release)"
done
if grep -q "fsanitize=address" "$build/build.ninja" 2>/dev/null; then
  echo "measure_detection.sh: warning: $build is a sanitizer build; timings will not be representative" >&2
fi
command -v python3 >/dev/null 2>&1 || die "python3 not found"

# shellcheck source=deploy/lib/private_dir.sh
source "$script_dir/../lib/private_dir.sh"
private_dir "$out" "output directory" || exit 2
mkdir -p "$out/rounds"
out="$(cd -- "$out" && pwd -P)"
rm -f -- "$out"/rounds/* "$out/crashes.csv" "$out/summary.txt"
state="$(mktemp -d "${TMPDIR:-/tmp}/pandora-detect.XXXXXX")"
region_dir="/dev/shm/pandora-$user/detect-$$"
bench_pid=""

# Keeps the detector's and the ensemble's logs with the results: the first
# and last 2 MB of each (a detector stuck retrying can log gigabytes).
save_logs() {
  local from="$1" to="$2" f
  mkdir -p "$to/zk"
  for f in "$from"/fd*.log "$from"/zk/zk*.log; do
    [[ -f "$f" ]] || continue
    local dest="$to/${f#"$from"/}"
    if [[ $(stat -c %s "$f") -le 4194304 ]]; then
      cp -f -- "$f" "$dest"
    else
      { head -c 2097152 "$f"; printf '\n[... %s bytes left out ...]\n' "$(stat -c %s "$f")"; tail -c 2097152 "$f"; } >"$dest"
    fi
  done
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n "$bench_pid" ]] && kill -0 "$bench_pid" 2>/dev/null; then
    kill -KILL "$bench_pid" 2>/dev/null || true
    wait "$bench_pid" 2>/dev/null || true
  fi
  # Keep the detector's and the ensemble's logs with the results.
  save_logs "$state" "$out"
  bash "$root/deploy/local/cluster.sh" stop --dir "$state" --region-dir "$region_dir" >/dev/null 2>&1 || true
  rm -rf -- "$state"
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "measure_detection.sh: error: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

cluster=(bash "$root/deploy/local/cluster.sh")
cl_bins=(--memd "$build/memory/pandora-memd" --fd "$build/recovery/pandora-fd" --ctl "$build/deploy/pandora-ctl")
echo "==> starting 2 memory daemons and a 3-server ZooKeeper ensemble"
"${cluster[@]}" start --nodes 2 --dir "$state" --region-dir "$region_dir" "${cl_bins[@]}" \
  --size 64M --log-size 16M --zookeeper --zk-nice "$fd_nice" >"$out/cluster_start.log" 2>&1 ||
  { cat "$out/cluster_start.log" >&2; die "the cluster did not start"; }
zk="$(cat "$state/zk_connect")"
common=(--zookeeper "$zk" --cluster-id "$(cat "$state/cluster_id")" --secret-file "$state/secret"
        --backend "$backend" --workload smallbank --accounts "$accounts" --log-level warn)

# Loaded before the detector starts: the loader is CPU-heavy and would risk
# being suspected on a small machine.
echo "==> loading SmallBank ($accounts accounts)"
"$bench" "${common[@]}" --load --seconds 0 --no-check >"$out/load.log" 2>&1 ||
  { tail -n 20 "$out/load.log" >&2; die "loading failed"; }
echo "==> starting 3 pandora-fd replicas (timeout ${fd_timeout_us} us)"
"${cluster[@]}" start-fd --dir "$state" "${cl_bins[@]}" --fd-replicas 3 --fd-timeout-us "$fd_timeout_us" \
  --fd-nice "$fd_nice" ${fd_args[@]+"${fd_args[@]}"} --log-level info >>"$out/cluster_start.log" 2>&1 ||
  { cat "$out/cluster_start.log" >&2; die "the failure detector did not start"; }

RANDOM="$seed"
echo "round,pid,os_pid,kill_ns,detected_ns,published_ns,detect_us,end_to_end_us,start_record_us,fence_us,log_recovery_us,truncate_us,publish_us,sweep_us,records,rolled_back,rolled_forward,swept,leader_replica" \
  >"$out/crashes.csv"
killed_pids=()
false_fenced=0
unrecovered=0
unrecovered_pids=()
join_failed=0
ended_early=0
echo "==> $rounds crashes: SmallBank on $threads thread(s) x $coordinators coordinators ($backend), SIGKILL" \
  "$kill_min..$kill_max ms after its first progress line"
# A live bench suspected by the detector: counted, reported, round repeated.
# A fenced bench says how long its own heartbeats paused at most: longer
# than the timeout is a stall of the bench, shorter points at the way to
# the replicas.
false_pauses=()
false_suspicion() {
  local pause
  false_fenced=$((false_fenced + 1))
  pause="$(sed -n 's/.*longest pause between two of its heartbeats was \([0-9.]*\) ms.*/\1/p' "$log" | tail -n 1)"
  [[ -z "$pause" ]] || false_pauses+=("$pause")
  mv -f -- "$log" "$out/rounds/false_suspicion$false_fenced.log"
  echo "         pid $1 was $2 (a false suspicion: $false_fenced so far${pause:+; its heartbeats paused up to $pause ms});"\
    "repeating round $r"
  [[ $false_fenced -le $((rounds * 2 + 10)) ]] ||
    die "$false_fenced false suspicions: the machine is too loaded for --fd-timeout-us $fd_timeout_us"
}

attempt=0
for ((r = 1; r <= rounds; r++)); do
  attempt=$((attempt + 1))
  log="$out/rounds/round$r.log"
  "$bench" "${common[@]}" --threads "$threads" --coordinators "$coordinators" --warmup-seconds 0 \
    --seconds 3600 --no-check --seed "$attempt" >"$log" 2>&1 &
  bench_pid=$!
  deadline=$((SECONDS + 60))
  while ! grep -qE '^joined the cluster as pid [0-9]+' "$log" && kill -0 "$bench_pid" 2>/dev/null &&
        [[ $SECONDS -lt $deadline ]]; do
    sleep 0.01
  done
  if ! grep -qE '^joined the cluster as pid [0-9]+' "$log"; then
    # ZooKeeper unavailable for a moment (a session expired while the
    # machine stalled): counted, reported, round repeated.
    kill -KILL "$bench_pid" 2>/dev/null || true
    wait "$bench_pid" 2>/dev/null || true
    bench_pid=""
    join_failed=$((join_failed + 1))
    mv -f -- "$log" "$out/rounds/join_failed$join_failed.log"
    echo "         a new pandora-bench could not join the cluster ($join_failed so far; $(grep -m1 -oE 'unavailable: .{0,80}' "$out/rounds/join_failed$join_failed.log" || echo 'see its log')); repeating round $r"
    [[ $join_failed -le 10 ]] || die "$join_failed benches could not join the cluster (ZooKeeper unavailable?)"
    r=$((r - 1))
    continue
  fi
  pid="$(sed -n 's/^joined the cluster as pid \([0-9]*\).*/\1/p' "$log" | head -n1)"
  delay_ms=$((kill_min + (RANDOM * 32768 + RANDOM) % (kill_max - kill_min + 1)))
  # Running transactions by its first progress line; then a random moment.
  # A bench the detector fences before we kill it (exit 6) is a false
  # suspicion: counted, reported, and the round is run again.
  deadline=$((SECONDS + 60))
  while ! grep -qE '^\[ *[0-9.]+ s\]' "$log" && kill -0 "$bench_pid" 2>/dev/null && [[ $SECONDS -lt $deadline ]]; do
    sleep 0.01
  done
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  if ! kill -0 "$bench_pid" 2>/dev/null; then
    rc=0
    wait "$bench_pid" || rc=$?
    bench_pid=""
    if [[ $rc -eq 6 ]] || grep -qE "declared failed and fenced|fenced" "$log"; then
      false_suspicion "$pid" "fenced before the kill"
      r=$((r - 1))
      continue
    fi
    # Ended by itself: e.g. every coordinator stopped after leaving a
    # transaction to recovery (operations timed out while the machine
    # stalled). Counted, reported, round repeated.
    ended_early=$((ended_early + 1))
    mv -f -- "$log" "$out/rounds/ended_early$ended_early.log"
    echo "         pid $pid ended by itself before the kill (exit $rc: $(grep -m1 -E 'stopped after|error|failed' "$out/rounds/ended_early$ended_early.log" | cut -c1-100)); repeating round $r"
    [[ $ended_early -le $((rounds * 2 + 10)) ]] || die "$ended_early benches ended before their kill (logs in $out/rounds)"
    r=$((r - 1))
    continue
  fi
  grep -qE '^\[ *[0-9.]+ s\]' "$log" || die "round $r: pandora-bench printed no progress within 60 s (log: $log)"
  t="$EPOCHREALTIME"
  kill -KILL "$bench_pid"
  kill_ns="${t/./}000"
  wait "$bench_pid" 2>/dev/null || true
  os_pid="$bench_pid"
  bench_pid=""
  killed_pids+=("$pid")
  if ! python3 "$script_dir/zk_dump.py" --zookeeper "$zk" --pid "$pid" --wait-done-s 20 >"$out/rounds/round$r.json"; then
    # Reported, not measured: the round is run again with a new process.
    unrecovered=$((unrecovered + 1))
    unrecovered_pids+=("$pid")
    mv -f -- "$log" "$out/rounds/unrecovered_pid$pid.log"
    echo "         pid $pid was NOT recovered within 20 s of its kill ($unrecovered so far); repeating round $r"
    [[ $unrecovered -le 5 ]] || die "$unrecovered killed processes were not recovered (fd logs: $out/fd*.log)"
    r=$((r - 1))
    continue
  fi
  detected_ns="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["recoveries"][sys.argv[2]]["detected_ns"])' \
    "$out/rounds/round$r.json" "$pid")"
  if grep -q "declared failed and fenced" "$log" || [[ "$detected_ns" -lt "$kill_ns" ]]; then
    false_suspicion "$pid" "suspected before the kill (detected_ns $detected_ns < kill $kill_ns)"
    killed_pids=("${killed_pids[@]:0:${#killed_pids[@]}-1}")
    r=$((r - 1))
    continue
  fi
  python3 - "$out/rounds/round$r.json" "$r" "$pid" "$os_pid" "$kill_ns" >>"$out/crashes.csv" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r, pid, os_pid, kill_ns = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
rec = d["recoveries"][pid]
pub = d["failed"][pid]["published_ns"]
det = rec["detected_ns"]
row = [r, pid, os_pid, kill_ns, det, pub, (det - kill_ns) / 1000, (pub - kill_ns) / 1000]
row += [rec[k] for k in ("start_record_us", "fence_us", "log_recovery_us", "truncate_us", "publish_us", "sweep_us",
                         "records", "rolled_back", "rolled_forward", "swept", "leader_replica")]
print(",".join(str(round(x, 1)) if isinstance(x, float) else str(x) for x in row))
PY
  printf '[%3d/%d] pid %-4s killed %4d ms after its first progress line: %s\n' "$r" "$rounds" "$pid" "$delay_ms" \
    "$(tail -n1 "$out/crashes.csv" | awk -F, '{printf "detected after %.1f ms, published after %.1f ms, log recovery %d us (%d records)", $7/1000, $8/1000, $11, $15}')"
done

python3 "$script_dir/zk_dump.py" --zookeeper "$zk" >"$out/zk_final.json"

{
  echo "Fail-over of a compute node: $rounds SIGKILLs of pandora-bench (SmallBank, $threads thread(s) x $coordinators"
  echo "coordinators, backend $backend, $accounts accounts), 2 memory daemons, 3 pandora-fd replicas"
  echo "(--timeout-us $fd_timeout_us${fd_args[*]:+, ${fd_args[*]}}, nice $fd_nice), a 3-server ZooKeeper ensemble with its"
  echo "transaction log on disk (deploy/local/zookeeper.sh), all on 127.0.0.1; build $build; $(nproc) cores."
  pauses="${false_pauses[*]:+ (the longest pause between their own heartbeats: ${false_pauses[*]} ms)}"
  echo "False suspicions (a live bench fenced before its kill; the round was repeated): $false_fenced$pauses."
  echo "Benches that ended by themselves before the kill (the round was repeated): $ended_early."
  echo "Benches that could not join (ZooKeeper session expired during a stall; the round was repeated): $join_failed."
  echo "Killed but not recovered within 20 s (the round was repeated): $unrecovered${unrecovered_pids[*]:+ (pids ${unrecovered_pids[*]})}."
  echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  # An fsync of ZooKeeper's log that stalls (the host's disk) delays every
  # ZooKeeper write of a recovery that overlaps it: said here, not hidden.
  echo "ZooKeeper fsync stalls of 1 s or more (its own warnings): $(grep -hoE 'fsync-ing the write ahead log in [^ ]+ took [0-9]+ms' \
    "$state"/zk/zk*.log 2>/dev/null | awk '{ms = $NF + 0; if (ms >= 1000) {n++; if (ms > m) m = ms}}
      END {if (n) printf "%d, the longest %d ms", n, m; else printf "none"}')."
  echo
  python3 "$script_dir/analyze_detection.py" "$out/crashes.csv"
} >"$out/summary.txt"
cat "$out/summary.txt"
echo
echo "results: $out/crashes.csv, $out/summary.txt (per-round logs and records in $out/rounds/)"
