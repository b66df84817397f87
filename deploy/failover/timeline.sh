#!/usr/bin/env bash
# Fail-over throughput (seed 4.5.3, figures 4.8, 4.13, 4.14): three compute
# nodes (pandora-bench, joined through ZooKeeper) run the micro benchmark
# with 100% writes and a 1 ms throughput timeline; one of them is SIGKILLed
# at a fixed moment; the survivors' per-1-ms commit counts (from their
# --report JSON) are summed and plotted around the crash
# (plot_timeline.py), with the detection and publish instants of the
# recovery record marked, and the worst 10 ms bucket after the crash is
# reported relative to the survivors' pre-crash mean.
#
#   bash deploy/failover/timeline.sh [--keys 1000,100000] [--protocol pandora]
#
# One fresh cluster per hot-key setting (deploy/local/cluster.sh: 2 memory
# daemons, 3-server ZooKeeper ensemble with its log on disk, 3 pandora-fd
# replicas), all on 127.0.0.1. Always stops everything it started (by pid).
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

usage() {
  cat <<USAGE
Usage: bash deploy/failover/timeline.sh [options]

Options:
  --keys LIST         comma list of micro key counts (hot keys), one run each
                                                               [1000,100000]
  --protocol P        pandora or ford                                [pandora]
  --seconds S         each compute node's run (warm-up 0)            [10]
  --crash-at-ms MS    SIGKILL node 3 this long after the three started
                      running transactions                           [3000]
  --threads N         worker threads per compute node                [1]
  --coordinators N    coordinators per thread                        [4]
  --backend B         tcp or shm                                     [tcp]
  --zk-no-fsync       ZooKeeper writes its log without fsync (cluster.sh
                      --zk-no-fsync): on a host whose disk stalls fsync for
                      seconds, which expires sessions mid-run
  --size SIZE         region size of each memory daemon (K/M/G suffix);
                      default: room for the largest --keys setting
  --fd-timeout-us US  the detector's suspicion timeout               [5000]
  --fd-arg ARG        passed to every pandora-fd (repeatable)
  --fd-nice N         nice value of the pandora-fd replicas   [-10 as root, else 0]
  --out DIR           results: per setting a directory with the reports,
                      logs, recovery record, timeline.png and summary.txt
                                              [/tmp/pandora-failover-timeline]
  --build DIR         Release build                          [build/release]
  --attempts N        tries per setting when the machine spoils one (a
                      live node fenced after a stall, ...)                [5]
  -h, --help          this help

Needs a Release build (bash deploy/setup.sh release) and python3-matplotlib
(installed with apt-get if missing).
USAGE
}

die() { echo "timeline.sh: error: $*" >&2; exit 1; }

keys_list="1000,100000"
protocol=pandora
seconds=10
crash_at_ms=3000
threads=1
coordinators=4
backend=tcp
size=""
zk_fsync=()
fd_timeout_us=5000
fd_args=()
fd_nice=0
[[ "$(id -u)" -ne 0 ]] || fd_nice=-10
out="/tmp/pandora-failover-timeline"
build="$root/build/release"
attempts=5

need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --keys) need_value "$@"; keys_list="$2"; shift 2 ;;
    --protocol) need_value "$@"; protocol="$2"; shift 2 ;;
    --seconds) need_value "$@"; seconds="$2"; shift 2 ;;
    --crash-at-ms) need_value "$@"; crash_at_ms="$2"; shift 2 ;;
    --threads) need_value "$@"; threads="$2"; shift 2 ;;
    --coordinators) need_value "$@"; coordinators="$2"; shift 2 ;;
    --backend) need_value "$@"; backend="$2"; shift 2 ;;
    --size) need_value "$@"; size="$2"; shift 2 ;;
    --zk-no-fsync) zk_fsync=(--zk-no-fsync); shift ;;
    --fd-timeout-us) need_value "$@"; fd_timeout_us="$2"; shift 2 ;;
    --fd-arg) need_value "$@"; fd_args+=(--fd-arg "$2"); shift 2 ;;
    --fd-arg=*) fd_args+=(--fd-arg "${1#--fd-arg=}"); shift ;;
    --fd-nice) need_value "$@"; fd_nice="$2"; shift 2 ;;
    --out) need_value "$@"; out="$2"; shift 2 ;;
    --build) need_value "$@"; build="$2"; shift 2 ;;
    --attempts) need_value "$@"; attempts="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done
for n in seconds crash_at_ms threads coordinators fd_timeout_us attempts; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || die "--${n//_/-} must be a positive integer, got '${!n}'"
done
[[ "$protocol" == pandora || "$protocol" == ford ]] || die "--protocol must be pandora or ford, got '$protocol'"
[[ "$backend" == tcp || "$backend" == shm ]] || die "--backend must be tcp or shm, got '$backend'"
IFS=',' read -r -a keys_arr <<<"$keys_list"
max_keys=0
for k in "${keys_arr[@]}"; do
  [[ "$k" =~ ^[1-9][0-9]*$ ]] || die "--keys: '$k' is not a positive integer"
  [[ "$k" -le "$max_keys" ]] || max_keys="$k"
done
# Every key is on both daemons: the micro table asks for 256 bytes of table
# area a key (slots at the table's load factor, 10M keys: 2.56 GB), plus
# the log area and 32 MiB of slack.
[[ -n "$size" ]] || size="$(( (max_keys * 256 + 48 * 1024 * 1024) / 1048576 + 1 ))M"
[[ "$size" =~ ^[1-9][0-9]*[KMG]?$ ]] || die "--size must be a size like 64M or 2G, got '$size'"
[[ "$crash_at_ms" -ge 1000 ]] || die "--crash-at-ms must be >= 1000 (the nodes are known to run after 1 s)"
[[ $((seconds * 1000)) -ge $((crash_at_ms + 2000)) ]] ||
  die "--seconds $seconds leaves less than 2 s after --crash-at-ms $crash_at_ms"

build="$(cd -- "$build" 2>/dev/null && pwd -P)" || die "no build directory $build (bash deploy/setup.sh release)"
bench="$build/workloads/bench/pandora-bench"
for b in "$bench" "$build/memory/pandora-memd" "$build/recovery/pandora-fd" "$build/deploy/pandora-ctl"; do
  [[ -x "$b" ]] || die "$b not found (bash deploy/setup.sh release)"
done
if grep -q "fsanitize=address" "$build/build.ninja" 2>/dev/null; then
  echo "timeline.sh: warning: $build is a sanitizer build; throughput will not be representative" >&2
fi
bash "$script_dir/ensure_matplotlib.sh"
# Debian's python3 (python3-matplotlib), not a version manager's shim.
py=/usr/bin/python3
[[ -x "$py" ]] || py=python3

# shellcheck source=deploy/lib/private_dir.sh
source "$script_dir/../lib/private_dir.sh"
private_dir "$out" "output directory" || exit 2
out="$(cd -- "$out" && pwd -P)"
state=""
region_dir=""
pids=()

stop_run() {
  local p
  for p in "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null || true; fi
    wait "$p" 2>/dev/null || true
  done
  pids=()
  if [[ -n "$state" ]]; then
    save_logs "$state" "$run_out"
    bash "$root/deploy/local/cluster.sh" stop --dir "$state" --region-dir "$region_dir" >/dev/null 2>&1 || true
    rm -rf -- "$state"
    state=""
  fi
}
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
  stop_run
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "timeline.sh: error: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

cl_bins=(--memd "$build/memory/pandora-memd" --fd "$build/recovery/pandora-fd" --ctl "$build/deploy/pandora-ctl")

# disturbed MESSAGE: this attempt was spoilt by the machine (a live node
# fenced after a stall, a node that stopped by itself, ZooKeeper unavailable):
# say so and return 1 so the setting is run again.
disturbed() {
  echo "    attempt spoilt: $*" >&2
  return 1
}

# One attempt of one hot-key setting: fresh cluster, load, detector, three
# nodes, the kill, the record. Returns 1 when the attempt was disturbed.
run_setting() {
  local keys="$1" i rc deadline t victim
  rm -rf -- "$run_out"
  mkdir -p "$run_out"
  state="$(mktemp -d "${TMPDIR:-/tmp}/pandora-timeline.XXXXXX")"
  region_dir="/dev/shm/pandora-$user/timeline-$$"
  bash "$root/deploy/local/cluster.sh" start --nodes 2 --dir "$state" --region-dir "$region_dir" "${cl_bins[@]}" \
    --size "$size" --log-size 16M --zookeeper --zk-nice "$fd_nice" ${zk_fsync[@]+"${zk_fsync[@]}"} --protocol "$protocol" >"$run_out/cluster_start.log" 2>&1 ||
    { cat "$run_out/cluster_start.log" >&2; die "the cluster did not start"; }
  zk="$(cat "$state/zk_connect")"
  common=(--zookeeper "$zk" --cluster-id "$(cat "$state/cluster_id")" --secret-file "$state/secret"
          --backend "$backend" --workload micro --keys "$keys" --write-ratio 1 --protocol "$protocol"
          --log-level warn)
  "$bench" "${common[@]}" --load --seconds 0 --no-check >"$run_out/load.log" 2>&1 ||
    { tail -n 20 "$run_out/load.log" >&2; disturbed "loading failed"; return 1; }
  bash "$root/deploy/local/cluster.sh" start-fd --dir "$state" "${cl_bins[@]}" --fd-replicas 3 \
    --fd-timeout-us "$fd_timeout_us" --fd-nice "$fd_nice" ${fd_args[@]+"${fd_args[@]}"} --log-level info \
    >>"$run_out/cluster_start.log" 2>&1 ||
    { cat "$run_out/cluster_start.log" >&2; die "the failure detector did not start"; }

  for i in 1 2 3; do
    # --history only to anchor the timeline in CLOCK_REALTIME (its first
    # transaction's begin_ns), unless the report carries the start itself.
    "$bench" "${common[@]}" --threads "$threads" --coordinators "$coordinators" --warmup-seconds 0 \
      --seconds "$seconds" --timeline-ms 1 --no-check --seed "$i" --report "$run_out/node$i.json" \
      --history "$run_out/node$i.history" >"$run_out/node$i.log" 2>&1 &
    pids+=("$!")
    # One registration at a time (they update the same ZooKeeper node).
    deadline=$((SECONDS + 60))
    while ! grep -qs '^joined the cluster as pid' "$run_out/node$i.log"; do
      kill -0 "${pids[$((i - 1))]}" 2>/dev/null ||
        { disturbed "node $i ended before joining: $(tail -n 1 "$run_out/node$i.log" | cut -c1-120)"; return 1; }
      [[ $SECONDS -lt $deadline ]] || die "compute node $i did not join within 60 s"
      sleep 0.01
    done
  done
  # Every node prints its first progress line about 1 s after it started.
  deadline=$((SECONDS + 60))
  for i in 1 2 3; do
    while ! grep -qE '^\[ *[0-9.]+ s\]' "$run_out/node$i.log"; do
      kill -0 "${pids[$((i - 1))]}" 2>/dev/null ||
        { disturbed "node $i ended early: $(grep -m1 -E 'fenced|stopped after' "$run_out/node$i.log" | cut -c1-120)"; return 1; }
      [[ $SECONDS -lt $deadline ]] || die "compute node $i printed no progress within 60 s"
      sleep 0.005
    done
  done
  sleep "$(printf '%d.%03d' $(((crash_at_ms - 1000) / 1000)) $(((crash_at_ms - 1000) % 1000)))"
  victim="${pids[2]}"
  vpid="$(sed -n 's/^joined the cluster as pid \([0-9]*\).*/\1/p' "$run_out/node3.log" | head -n1)"
  for i in 1 2 3; do
    kill -0 "${pids[$((i - 1))]}" 2>/dev/null ||
      { disturbed "node $i ended before the kill: $(grep -m1 -E 'fenced|stopped after' "$run_out/node$i.log" | cut -c1-120)"; return 1; }
  done
  t="$EPOCHREALTIME"
  kill -KILL "$victim"
  kill_ns="${t/./}000"
  echo "$kill_ns" >"$run_out/kill_ns"
  wait "$victim" 2>/dev/null || true
  python3 "$script_dir/zk_dump.py" --zookeeper "$zk" --pid "$vpid" --wait-done-s 30 >"$run_out/recovery.json" ||
    { disturbed "pid $vpid (node 3) was not recovered within 30 s"; return 1; }
  for i in 1 2; do
    rc=0
    wait "${pids[$((i - 1))]}" || rc=$?
    [[ $rc -eq 0 ]] ||
      { disturbed "survivor node $i exited with $rc ($(grep -m1 -E 'fenced|stopped after' "$run_out/node$i.log" | cut -c1-100))"; return 1; }
  done
  if grep -q "stopped after leaving" "$run_out/node1.log" "$run_out/node2.log"; then
    disturbed "a survivor's coordinators stopped after leaving transactions to recovery"
    return 1
  fi
  pids=()
  return 0
}

pngs=()
for keys in "${keys_arr[@]}"; do
  run_out="$out/${protocol}_keys$keys"
  ok=0
  for ((attempt = 1; attempt <= attempts; attempt++)); do
    echo "==> micro, $keys hot keys, 100% writes, protocol $protocol, attempt $attempt/$attempts:" \
      "3 compute nodes x $threads thread(s) x $coordinators coordinators for ${seconds} s; node 3 killed" \
      "${crash_at_ms} ms after all three run"
    if run_setting "$keys"; then
      ok=1
    fi
    stop_run
    [[ $ok -eq 0 ]] || break
  done
  [[ $ok -eq 1 ]] || die "$attempts attempts of the $keys-key setting were spoilt (logs in $run_out)"
  "$py" "$script_dir/plot_timeline.py" --kill-ns "$kill_ns" --recovery "$run_out/recovery.json" --pid "$vpid" \
    --title "micro, 100% writes, $keys hot keys, $protocol: 3 compute nodes, node 3 killed" \
    --png "$run_out/timeline.png" --summary "$run_out/summary.txt" \
    "$run_out/node1.json:$run_out/node1.history" "$run_out/node2.json:$run_out/node2.history"
  echo "(fd timeout ${fd_timeout_us} us, fd nice $fd_nice, attempt $attempt)" >>"$run_out/summary.txt"
  rm -f -- "$run_out"/node*.history.gz
  gzip -f -- "$run_out"/node*.history
  pngs+=("$run_out/timeline.png")
done
echo
echo "timelines: ${pngs[*]}"
