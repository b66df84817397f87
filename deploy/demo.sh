#!/usr/bin/env bash
# The local demo: builds Release, starts 2 memory daemons and a 3-server
# ZooKeeper ensemble on loopback, runs pandora-transport-demo against the
# daemons over every backend, then a transactional workload (SmallBank by
# default) through pandora-bench on each backend with its end-of-run
# consistency check, then a fail-over: three pandora-fd replicas, three
# compute nodes, one SIGKILLed half-way through, its recovery summarised and
# the survivors' throughput plotted. Always stops everything it started.
# Exit code: 0 when every phase passed.
set -euo pipefail

usage() {
  cat <<USAGE
Usage: bash deploy/demo.sh [--seconds N] [--nodes N] [--backend shm|tcp|all]
                           [--workload smallbank|micro|none] [--protocol pandora|ford|log-a-latch]
                           [--failover-seconds N] [--fd-timeout-us US] [--out DIR]

Runs deploy/setup.sh release (installs packages if missing, builds
build/release) and installs python3-matplotlib if missing, starts N
(default 2) pandora-memd daemons and a 3-server ZooKeeper ensemble on
127.0.0.1 with deploy/local/cluster.sh --zookeeper, and then:
  1. pandora-transport-demo against all of them for each backend (mixed
     READ/WRITE/CAS/FAA with verification) and its throughput table;
  2. pandora-bench: loads the workload's tables once (rows replicated on
     min(2, N) nodes), then runs it for N seconds on each backend with
     4 coordinators and prints throughput, aborts, latency percentiles,
     remote operations per transaction and the consistency check (SmallBank:
     the total money equals the initial total plus the committed net changes).
     (Fixed compute ids 16 and 15, no failure detector yet.)
  3. fail-over (not with --workload none; protocol pandora): starts three
     pandora-fd replicas (--fd-timeout-us, default 20000: the design's 5 ms
     fenced live processes on a loaded 2-core machine), runs the workload
     on three compute processes for --failover-seconds (default 6, with a
     1 ms throughput timeline), SIGKILLs the third half-way through, waits
     for its recovery and prints: detection and end-to-end times, each
     recovery step, the records rolled back/forward, the survivors' commits
     before/after, the worst 10 ms of the survivors, and the path of the
     timeline plot (PNG, in --out, default /tmp/pandora-demo-failover); then
     audits the data once more.
Stops everything at the end (also on failure or Ctrl-C).
USAGE
}

seconds=3
nodes=2
backend=all
workload=smallbank
protocol=pandora
failover_seconds=6
fd_timeout_us=20000
out="/tmp/pandora-demo-failover"
die() { echo "demo.sh: error: $*" >&2; exit 1; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) [[ $# -ge 2 ]] || die "--seconds needs a value"; seconds="$2"; shift 2 ;;
    --nodes) [[ $# -ge 2 ]] || die "--nodes needs a value"; nodes="$2"; shift 2 ;;
    --backend) [[ $# -ge 2 ]] || die "--backend needs a value"; backend="$2"; shift 2 ;;
    --workload) [[ $# -ge 2 ]] || die "--workload needs a value"; workload="$2"; shift 2 ;;
    --protocol) [[ $# -ge 2 ]] || die "--protocol needs a value"; protocol="$2"; shift 2 ;;
    --failover-seconds) [[ $# -ge 2 ]] || die "--failover-seconds needs a value"; failover_seconds="$2"; shift 2 ;;
    --fd-timeout-us) [[ $# -ge 2 ]] || die "--fd-timeout-us needs a value"; fd_timeout_us="$2"; shift 2 ;;
    --out) [[ $# -ge 2 ]] || die "--out needs a value"; out="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

case "$backend" in shm|tcp|all) ;; *) die "--backend must be shm, tcp or all (got '$backend')" ;; esac
case "$workload" in smallbank|micro|none) ;; *) die "--workload must be smallbank, micro or none (got '$workload')" ;; esac
case "$protocol" in pandora|ford|log-a-latch) ;; *) die "--protocol must be pandora, ford or log-a-latch (got '$protocol')" ;; esac
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -ge 1 ]] || die "--seconds must be a positive integer (got '$seconds')"
[[ "$failover_seconds" =~ ^[0-9]+$ && "$failover_seconds" -ge 4 ]] ||
  die "--failover-seconds must be an integer >= 4 (got '$failover_seconds')"
[[ "$fd_timeout_us" =~ ^[1-9][0-9]*$ ]] || die "--fd-timeout-us must be a positive integer (got '$fd_timeout_us')"

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

bash "$script_dir/setup.sh" release
if [[ "$workload" != none ]]; then
  bash "$script_dir/failover/ensure_matplotlib.sh"
fi
# Debian's python3 (python3-matplotlib), not a version manager's shim.
py=/usr/bin/python3
[[ -x "$py" ]] || py=python3

demo_bin="$root/build/release/workloads/transport_bench/pandora-transport-demo"
bench_bin="$root/build/release/workloads/bench/pandora-bench"
[[ -x "$demo_bin" ]] || die "demo binary missing: $demo_bin"
[[ "$workload" == none || -x "$bench_bin" ]] || die "benchmark binary missing: $bench_bin"

# A private state dir and region dir per run, so a concurrent run (or test)
# of the same user never shares daemons or regions with this one.
state_dir="$(mktemp -d "${TMPDIR:-/tmp}/pandora-demo.XXXXXX")"
region_dir="/dev/shm/pandora-$user/demo-$$"
bench_pids=()
cleanup() {
  local rc=$? p
  trap - EXIT INT TERM
  for p in "${bench_pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null || true; fi
    wait "$p" 2>/dev/null || true
  done
  echo "==> stopping the failure detector, the memory daemons and ZooKeeper"
  bash "$script_dir/local/cluster.sh" stop --dir "$state_dir" --region-dir "$region_dir" >/dev/null || true
  rm -rf -- "$state_dir"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "==> starting $nodes memory daemon(s) and a 3-server ZooKeeper ensemble on 127.0.0.1"
# The ensemble writes its log without fsync: on this kind of shared host an
# fsync can stall for 10 s, which expires every ZooKeeper session and turns
# a 20 ms fail-over into seconds (measure_detection.sh keeps fsync and
# reports such stalls). 16 MiB of log area: 1024 lanes of 16 KiB. Compute nodes that join through
# ZooKeeper lease lanes first-fit from lane 0; the single-process runs of
# phase 2 use the fixed slots of compute ids 15 and 16 (lanes 896..1023),
# which neither the leases nor the pids ZooKeeper issues here ever reach.
# The control plane (ZooKeeper, pandora-fd) runs at a higher priority when
# it can (root): the compute processes busy-poll, and on a 2-core machine
# they starved the ensemble into losing its quorum for seconds.
fd_nice=0
[[ "$(id -u)" -ne 0 ]] || fd_nice=-10
bash "$script_dir/local/cluster.sh" start --nodes "$nodes" --dir "$state_dir" --region-dir "$region_dir" \
  --size 128M --log-size 16M --zookeeper --zk-no-fsync --zk-nice "$fd_nice"
zk="$(cat "$state_dir/zk_connect")"

export PMEM_IS_PMEM_FORCE=1
echo "==> running pandora-transport-demo (backend: $backend, ${seconds}s per backend and node)"
set +e
"$demo_bin" --nodes "$(cat "$state_dir/endpoints")" --cluster-id "$(cat "$state_dir/cluster_id")" \
  --secret-file "$state_dir/secret" --backend "$backend" --seconds "$seconds"
status=$?
set -e
if [[ $status -eq 0 ]]; then
  echo "==> transport demo finished: all operations verified"
fi

# Each pandora-bench run is a new compute node: a fresh --compute-id (fixed
# lane slots, no failure detector: single processes, with their checks).
fo_backend=tcp
[[ "$backend" == all ]] || fo_backend="$backend"
if [[ $status -eq 0 && "$workload" != none ]]; then
  wl=(--workload "$workload" --protocol "$protocol")
  if [[ "$workload" == smallbank ]]; then wl+=(--accounts 100000); else wl+=(--keys 100000); fi
  common=(--memory-nodes "$(cat "$state_dir/endpoints")" --cluster-id "$(cat "$state_dir/cluster_id")"
          --secret-file "$state_dir/secret" "${wl[@]}"
          --threads 1 --coordinators 4 --warmup-seconds 1 --seconds "$seconds")
  backends=(shm tcp)
  [[ "$backend" == all ]] || backends=("$backend")
  compute_id=16
  load=(--load)
  for b in "${backends[@]}"; do
    echo "==> pandora-bench: $workload, protocol $protocol, backend $b, ${seconds}s"
    set +e
    "$bench_bin" "${common[@]}" --backend "$b" --compute-id "$compute_id" "${load[@]}"
    status=$?
    set -e
    load=()
    compute_id=$((compute_id - 1))
    [[ $status -eq 0 ]] || break
  done
  # The fail-over phase's compute nodes join through ZooKeeper (--zookeeper):
  # it assigns their pids and lane slots and the detector watches them.
  base=(--zookeeper "$zk" --cluster-id "$(cat "$state_dir/cluster_id")" --secret-file "$state_dir/secret" "${wl[@]}")
fi

# Fail-over: three compute nodes, the third killed half-way through.
if [[ $status -eq 0 && "$workload" != none ]]; then
  if [[ "$protocol" != pandora ]]; then
    echo "==> fail-over phase skipped: it runs protocol pandora only (got --protocol $protocol)"
  else
    echo "==> fail-over: starting 3 pandora-fd replicas (timeout ${fd_timeout_us} us)"
    # As root the replicas run at nice -10: on a small machine their threads
    # must not queue behind the busy compute processes.
    bash "$script_dir/local/cluster.sh" start-fd --dir "$state_dir" --fd-replicas 3 \
      --fd-timeout-us "$fd_timeout_us" --fd-nice "$fd_nice" >/dev/null || { status=1; echo "==> the failure detector did not start" >&2; }
  fi
  if [[ $status -eq 0 && "$protocol" == pandora ]]; then
    rm -rf -- "$out"
    # shellcheck source=deploy/lib/private_dir.sh
    source "$script_dir/lib/private_dir.sh"
    private_dir "$out" "output directory" || exit 2
    out="$(cd -- "$out" && pwd -P)"
    # One attempt: three processes, the third killed half-way. Returns 2
    # when the machine spoilt it (a live process fenced after a stall, one
    # that could not join or stopped by itself): the attempt is repeated.
    failover_attempt() {
      local i rc t
      bench_pids=()
      for i in 1 2 3; do
        # nice 5: the compute processes poll without sleeping and must not
        # starve the control plane sharing this machine's cores (their own
        # heartbeat thread asks for nice -10, granted to root).
        nice -n 5 "$bench_bin" "${base[@]}" --backend "$fo_backend" --threads 1 --coordinators 4 --warmup-seconds 0 \
          --seconds "$failover_seconds" --timeline-ms 1 --no-check --seed "$i" --report "$out/node$i.json" \
          --history "$out/node$i.history" --log-level error >"$out/node$i.log" 2>&1 &
        bench_pids+=("$!")
        # One registration at a time (they update the same ZooKeeper node).
        deadline=$((SECONDS + 60))
        until grep -qs '^joined the cluster as pid' "$out/node$i.log"; do
          if ! kill -0 "${bench_pids[$((i - 1))]}" 2>/dev/null || [[ $SECONDS -ge $deadline ]]; then
            echo "    process $i could not join: $(tail -n 1 "$out/node$i.log" | cut -c1-150)" >&2
            return 2
          fi
          sleep 0.01
        done
      done
      victim="${bench_pids[2]}"
      victim_pid="$(sed -n 's/^joined the cluster as pid \([0-9]*\).*/\1/p' "$out/node3.log" | head -n1)"
      sleep "$((failover_seconds / 2))"
      for i in 1 2 3; do
        if ! kill -0 "${bench_pids[$((i - 1))]}" 2>/dev/null; then
          echo "    process $i ended before the kill: $(grep -m1 -E 'fenced|stopped after|error' "$out/node$i.log" | cut -c1-150)" >&2
          return 2
        fi
      done
      t="$EPOCHREALTIME"
      kill -KILL "$victim"
      kill_ns="${t/./}000"
      wait "$victim" 2>/dev/null || true
      echo "==> fail-over: killed compute process 3 (pid $victim_pid, os pid $victim); waiting for its recovery"
      if ! "$py" "$script_dir/failover/zk_dump.py" --zookeeper "$zk" --pid "$victim_pid" --wait-done-s 30 \
          >"$out/recovery.json"; then
        echo "==> fail-over FAILED: pid $victim_pid was not recovered within 30 s" >&2
        return 1
      fi
      for i in 1 2; do
        rc=0
        wait "${bench_pids[$((i - 1))]}" || rc=$?
        if [[ $rc -eq 6 ]]; then
          echo "    surviving process $i was fenced (the detector suspected it after a stall)" >&2
          return 2
        elif [[ $rc -ne 0 ]]; then
          echo "==> fail-over FAILED: surviving compute process $i exited with $rc" >&2
          tail -n 5 "$out/node$i.log" >&2
          return 1
        fi
      done
      return 0
    }
    for attempt in 1 2 3; do
      echo "==> fail-over: $workload on 3 compute processes (1 thread x 4 coordinators each, $fo_backend) for" \
        "${failover_seconds}s; the third is killed with SIGKILL after $((failover_seconds / 2))s (attempt $attempt/3)"
      rc=0
      failover_attempt || rc=$?
      for p in "${bench_pids[@]}"; do
        if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null || true; fi
        wait "$p" 2>/dev/null || true
      done
      [[ $rc -eq 2 ]] || break
      echo "    attempt spoilt by the machine (timeout ${fd_timeout_us} us); trying again" >&2
    done
    if [[ $rc -ne 0 ]]; then
      status=1
      [[ $rc -ne 2 ]] || echo "==> fail-over FAILED: 3 attempts spoilt; on a loaded machine raise --fd-timeout-us" >&2
    fi
    bench_pids=()
    if [[ $status -eq 0 ]]; then
      echo "==> fail-over summary (the recovery record in ZooKeeper and the survivors' 1 ms timelines):"
      "$py" "$script_dir/failover/plot_timeline.py" --kill-ns "$kill_ns" --recovery "$out/recovery.json" \
        --pid "$victim_pid" --title "$workload, 3 compute processes, the third killed (SIGKILL), protocol pandora" \
        --png "$out/failover_timeline.png" --summary "$out/summary.txt" \
        "$out/node1.json:$out/node1.history" "$out/node2.json:$out/node2.history" | sed 's/^/    /' ||
        { status=1; echo "==> fail-over: the timeline could not be analysed" >&2; }
      rm -f -- "$out"/node*.history
    fi
    if [[ $status -eq 0 ]]; then
      echo "==> fail-over timeline: $out/failover_timeline.png"
      echo "==> auditing the data after the fail-over (every row present and in place)"
      set +e
      "$bench_bin" "${base[@]}" --backend "$fo_backend" --seconds 0 --log-level error >"$out/audit.log" 2>&1
      status=$?
      set -e
      if [[ $status -eq 0 ]]; then
        grep -iE "check|audit" "$out/audit.log" | sed 's/^/    /' || true
      else
        echo "==> the audit after the fail-over FAILED (exit $status):" >&2
        tail -n 20 "$out/audit.log" >&2
      fi
    fi
  fi
fi

if [[ $status -eq 0 ]]; then
  echo "==> demo finished: every phase passed its checks"
else
  echo "==> demo FAILED (exit code $status); daemon and detector logs:" >&2
  for log in "$state_dir"/node*.log "$state_dir"/fd*.log; do
    [[ -f "$log" ]] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }
  done
  for log in "$state_dir"/zk/zk*.log; do
    [[ -f "$log" ]] && { echo "--- $log (warnings)" >&2; grep -E " (WARN|ERROR) " "$log" | tail -n 10 >&2 || true; }
  done
fi
exit "$status"
