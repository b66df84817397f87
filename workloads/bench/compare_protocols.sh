#!/usr/bin/env bash
# Steady-state comparison of the three protocol modes (seed 4.5.2, figure
# 4.4): pandora vs ford vs log-a-latch, on a local cluster of two memory
# daemons (deploy/local/cluster.sh, loopback only).
#
#   bash workloads/bench/compare_protocols.sh [--rounds 5] [--seconds 5] ...
#
# For each workload (micro 50% writes, micro 100% writes, smallbank, tatp,
# tpcc) loads its tables, then for each backend (shm, tcp; verbs where there
# is an RDMA device, e.g. in the Soft-RoCE VM) and number of compute
# processes (--processes; more than one through deploy/bench/run.sh, whose
# merge checks them together) runs pandora-bench for the three protocols
# interleaved in rounds - pandora, ford, log-a-latch, pandora, ford, ... - so
# slow drifts of the machine hit all three alike, and prints a table of
# medians and of the per-round ratios to pandora (compare_table.py). TPC-C
# grows (orders, history) and is loaded afresh before each of its runs, so
# every run starts from the same database and none fills its tables. Every
# run also passes its consistency check or the script fails. This is a
# benchmark, not a test: numbers from a shared development machine are
# indicative only.
#
# Always stops the daemons and any running pandora-bench, by pid.
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

usage() {
  cat <<USAGE
Usage: bash workloads/bench/compare_protocols.sh [options]

Options:
  --build DIR          build directory with pandora-bench and pandora-memd
                       (a Release build)                           [build/release]
  --rounds N           rounds of (pandora, ford, log-a-latch)      [5]
  --seconds S          measured seconds per run                    [5]
  --warmup-seconds S   warm-up seconds per run                     [1]
  --threads N          worker threads of pandora-bench             [1]
  --coordinators N     coordinators per thread                     [8]
  --replicas N         f+1 (1 or 2 with two daemons)               [2]
  --keys N             micro keys                                  [100000]
  --accounts N         SmallBank accounts                          [100000]
  --subscribers N      TATP subscribers                            [100000]
  --warehouses N       TPC-C warehouses                            [1]
  --tpcc-customers-per-district N
                       TPC-C customers (and initial orders) per
                       district; fewer shorten its end-of-run audit    [3000]
  --backends LIST      comma list of shm, tcp, verbs               [shm,tcp]
                       (verbs: the daemons serve it when an RDMA device
                       is up, --verbs auto; pandora-bench takes the first
                       active device unless --rdma-device is given)
  --rdma-device NAME   pandora-bench --rdma-device (verbs)         [auto]
  --busy-poll-us N     daemons' tcp busy polling (pandora-memd)    [0]
  --workloads LIST     comma list of micro50, micro100, smallbank, tatp, tpcc
                                   [micro50,micro100,smallbank,tatp,tpcc]
  --processes LIST     comma list of compute-process counts; each count runs
                       every workload x protocol, N > 1 as N pandora-bench
                       processes (compute ids 1..N) of --threads x
                       --coordinators each, started together and merged by
                       deploy/bench/run.sh                          [1]
  --run-timeout-s N    give up on one pandora-bench run after N s (a hung run
                       fails the script instead of blocking it)    [seconds + warm-up + 120]
  --versus DIR         a second build to compare with (e.g. a worktree of an
                       older commit): its pandora-bench runs right after
                       (odd rounds) or before (even rounds) this build's for
                       every protocol, against the same daemons and load, and
                       the table adds this/versus ratios per round
  --out DIR            keep the JSON reports and logs here    [a temp dir, removed]
  -h, --help           this help

Build first: cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release &&
             ninja -C build/release pandora-bench pandora-memd
USAGE
}

die() { echo "compare_protocols.sh: error: $*" >&2; exit 1; }

build="$root/build/release"
rounds=5
seconds=5
warmup=1
threads=1
coordinators=8
replicas=2
keys=100000
accounts=100000
subscribers=100000
warehouses=1
tpcc_customers_per_district=3000
processes="1"
busy_poll_us=0
backends="shm,tcp"
rdma_device=""
run_timeout=""
workloads="micro50,micro100,smallbank,tatp,tpcc"
out=""
versus=""

need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) need_value "$@"; build="$2"; shift 2 ;;
    --rounds) need_value "$@"; rounds="$2"; shift 2 ;;
    --seconds) need_value "$@"; seconds="$2"; shift 2 ;;
    --warmup-seconds) need_value "$@"; warmup="$2"; shift 2 ;;
    --threads) need_value "$@"; threads="$2"; shift 2 ;;
    --coordinators) need_value "$@"; coordinators="$2"; shift 2 ;;
    --replicas) need_value "$@"; replicas="$2"; shift 2 ;;
    --keys) need_value "$@"; keys="$2"; shift 2 ;;
    --accounts) need_value "$@"; accounts="$2"; shift 2 ;;
    --subscribers) need_value "$@"; subscribers="$2"; shift 2 ;;
    --warehouses) need_value "$@"; warehouses="$2"; shift 2 ;;
    --tpcc-customers-per-district) need_value "$@"; tpcc_customers_per_district="$2"; shift 2 ;;
    --processes) need_value "$@"; processes="$2"; shift 2 ;;
    --busy-poll-us) need_value "$@"; busy_poll_us="$2"; shift 2 ;;
    --backends) need_value "$@"; backends="$2"; shift 2 ;;
    --rdma-device) need_value "$@"; rdma_device="$2"; shift 2 ;;
    --run-timeout-s) need_value "$@"; run_timeout="$2"; shift 2 ;;
    --workloads) need_value "$@"; workloads="$2"; shift 2 ;;
    --out) need_value "$@"; out="$2"; shift 2 ;;
    --versus) need_value "$@"; versus="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

for n in rounds seconds threads coordinators replicas keys accounts subscribers warehouses tpcc_customers_per_district; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || die "--${n//_/-} must be a positive integer, got '${!n}'"
done
[[ "$warmup" =~ ^[0-9]+$ ]] || die "--warmup-seconds must be a non-negative integer, got '$warmup'"
[[ -n "$run_timeout" ]] || run_timeout=$((seconds + warmup + 120))
[[ "$run_timeout" =~ ^[1-9][0-9]*$ ]] || die "--run-timeout-s must be a positive integer, got '$run_timeout'"
IFS=',' read -r -a backend_list <<<"$backends"
IFS=',' read -r -a workload_list <<<"$workloads"
IFS=',' read -r -a process_list <<<"$processes"
for b in "${backend_list[@]}"; do
  [[ "$b" == shm || "$b" == tcp || "$b" == verbs ]] || die "--backends: unknown backend '$b'"
done
for w in "${workload_list[@]}"; do
  [[ "$w" =~ ^(micro50|micro100|smallbank|tatp|tpcc)$ ]] ||
    die "--workloads: unknown workload '$w' (micro50, micro100, smallbank, tatp, tpcc)"
done
((${#workload_list[@]} > 0)) || die "--workloads is empty"
((${#process_list[@]} > 0)) || die "--processes is empty"
((threads * coordinators <= 63)) ||
  die "--threads x --coordinators must be at most 63 (one compute id's 64 log lanes, one kept for recovery)"
for p in "${process_list[@]}"; do
  [[ "$p" =~ ^[1-9][0-9]*$ ]] || die "--processes: '$p' is not a positive integer"
done

build="$(cd -- "$build" 2>/dev/null && pwd -P)" || die "no build directory (--build)"
bench="$build/workloads/bench/pandora-bench"
memd="$build/memory/pandora-memd"
[[ -x "$bench" ]] || die "pandora-bench not found at $bench (ninja -C $build pandora-bench)"
[[ -x "$memd" ]] || die "pandora-memd not found at $memd (ninja -C $build pandora-memd)"
versus_bench=""
if [[ -n "$versus" ]]; then
  versus="$(cd -- "$versus" 2>/dev/null && pwd -P)" || die "no build directory at --versus"
  versus_bench="$versus/workloads/bench/pandora-bench"
  [[ -x "$versus_bench" ]] || die "pandora-bench not found at $versus_bench (ninja -C $versus pandora-bench)"
fi
for b in "$build" ${versus:+"$versus"}; do
  if grep -q "fsanitize=address" "$b/build.ninja" 2>/dev/null; then
    echo "compare_protocols.sh: warning: $b is a sanitizer build; numbers will be far below a Release build" >&2
  fi
done

state="$(mktemp -d "${TMPDIR:-/tmp}/pandora-compare.XXXXXX")"
region_dir="/dev/shm/pandora-$user/compare-$$"
keep_out=1
if [[ -z "$out" ]]; then
  out="$state/reports"
  keep_out=0
fi
mkdir -p "$out"
bench_pid=""

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n "$bench_pid" ]] && kill -0 "$bench_pid" 2>/dev/null; then
    kill -TERM "$bench_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$bench_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$bench_pid" 2>/dev/null || true
    wait "$bench_pid" 2>/dev/null || true
  fi
  bash "$root/deploy/local/cluster.sh" stop --dir "$state" >/dev/null 2>&1 || true
  rm -rf -- "$state"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

workload_args() {
  case "$1" in
    micro50) echo "--workload micro --keys $keys --write-ratio 0.5" ;;
    micro100) echo "--workload micro --keys $keys --write-ratio 1" ;;
    smallbank) echo "--workload smallbank --accounts $accounts" ;;
    tatp) echo "--workload tatp --subscribers $subscribers" ;;
    tpcc) echo "--workload tpcc --warehouses $warehouses --tpcc-customers-per-district $tpcc_customers_per_district" ;;
  esac
}

# Regions and lanes as pandora-bench --plan lays out each workload (one is
# loaded at a time, with the lanes its largest log record needs: 64 KiB for
# TPC-C's Delivery, 16 KiB otherwise). Without a registry compute id I owns
# the fixed slot of 64 lanes at (I - 1) x 64 (common/lane_map.h): the
# daemons' log area holds log / lane_bytes / 64 processes.
log_mb=16
region_without_log=0
lane_bytes=0
for w in "${workload_list[@]}"; do
  # shellcheck disable=SC2046 # workload_args is a list of flags
  plan="$("$bench" --plan --plan-log-size "${log_mb}M" $(workload_args "$w") 2>&1)" ||
    die "pandora-bench --plan for $w failed: $plan"
  plan_line="$(grep '^plan: ' <<<"$plan")" || die "pandora-bench --plan printed no plan line: $plan"
  need="$(sed -n 's/.* region_bytes_without_log=\([0-9]*\).*/\1/p' <<<"$plan_line")"
  lanes="$(sed -n 's/.* lane_bytes=\([0-9]*\).*/\1/p' <<<"$plan_line")"
  [[ -n "$need" && -n "$lanes" ]] || die "cannot read pandora-bench --plan's line: $plan_line"
  ((need <= region_without_log)) || region_without_log=$need
  ((lanes <= lane_bytes)) || lane_bytes=$lanes
done
max_processes=$((log_mb * 1048576 / lane_bytes / 64))
for p in "${process_list[@]}"; do
  ((p <= max_processes)) ||
    die "--processes $p: the daemons' ${log_mb} MiB log area holds the lanes of $max_processes" \
      "compute processes (lanes of $lane_bytes bytes)"
done
region_mb=$(( (region_without_log + 1048575) / 1048576 + log_mb ))
echo "==> starting 2 memory daemons (regions of ${region_mb}M on /dev/shm)"
bash "$root/deploy/local/cluster.sh" start --nodes 2 --dir "$state" --region-dir "$region_dir" \
  --memd "$memd" --size "${region_mb}M" --log-size "${log_mb}M" --busy-poll-us "$busy_poll_us" >/dev/null

# The flags of every run; one process also gets --compute-id 1 (run.sh
# assigns the ids of several).
common=(--memory-nodes "$(cat "$state/endpoints")" --cluster-id "$(cat "$state/cluster_id")"
        --secret-file "$state/secret" --threads "$threads" --coordinators "$coordinators"
        --replicas "$replicas" --log-level error)
[[ -z "$rdma_device" ]] || common+=(--rdma-device "$rdma_device")

# run_bench LOG_NAME COMMAND...: runs COMMAND (pandora-bench, or run.sh,
# which stops its processes when terminated) in the background, so the trap
# can stop it by pid, and fails the script if it fails.
run_bench() {
  local name="$1"
  shift
  "$@" >"$out/$name.log" 2>&1 &
  bench_pid=$!
  local rc=0 deadline=$((SECONDS + ${bench_timeout:-$run_timeout}))
  while kill -0 "$bench_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.5; done
  if kill -0 "$bench_pid" 2>/dev/null; then
    echo "compare_protocols.sh: pandora-bench ($name) still running after ${bench_timeout:-$run_timeout} s" \
      "(--run-timeout-s; the load gets 600 s more); stopped. Its last lines:" >&2
    tail -n 5 "$out/$name.log" >&2
    exit 1  # the trap stops it
  fi
  wait "$bench_pid" || rc=$?
  bench_pid=""
  if [[ $rc -ne 0 ]]; then
    echo "compare_protocols.sh: pandora-bench ($name) exited with $rc; its output:" >&2
    tail -n 30 "$out/$name.log" >&2
    exit 1
  fi
}

# load WORKLOAD_ARGS...: (re)creates the tables of the workload these
# pandora-bench flags name and loads them (over shm: the daemons are local),
# replacing whatever was loaded before.
loads=0
load() {
  loads=$((loads + 1))
  bench_timeout=$((run_timeout + 600)) run_bench "load$loads" "$bench" "${common[@]}" --compute-id 1 --load \
    --replace "$@" --seconds 0 --no-check --backend shm
}


# measure NAME BENCH PROCESSES ARGS...: one measurement into $out/NAME.json,
# by one pandora-bench or by deploy/bench/run.sh with PROCESSES of them
# (their merged report; the per-process files stay in $out/NAME/).
measure() {
  local name="$1" with="$2" procs="$3"
  shift 3
  if ((procs == 1)); then
    run_bench "$name" "$with" "${common[@]}" --compute-id 1 "$@" --report "$out/$name.json"
  else
    run_bench "$name" bash "$root/deploy/bench/run.sh" --processes "$procs" --first-compute-id 1 \
      --bench "$with" --out "$out/$name" -- "${common[@]}" "$@"
    cp -- "$out/$name/merged.json" "$out/$name.json"
  fi
}

builds=1
[[ -z "$versus" ]] || builds=2
total=$(( ${#backend_list[@]} * ${#workload_list[@]} * ${#process_list[@]} * rounds * 3 * builds ))
n=0
loaded=""
for wl in "${workload_list[@]}"; do
  read -r -a wargs <<<"$(workload_args "$wl")"
  fresh=0
  if [[ "${wargs[1]}" != "$loaded" ]]; then
    echo "==> loading ${wargs[*]}"
    load "${wargs[@]}"
    loaded="${wargs[1]}"
    fresh=1
  fi
  for backend in "${backend_list[@]}"; do
    for procs in "${process_list[@]}"; do
      for ((r = 1; r <= rounds; r++)); do
        for protocol in pandora ford log-a-latch; do
          # With --versus, the two builds alternate which runs first.
          sides=(this)
          [[ -z "$versus" ]] || { ((r % 2)) && sides=(this versus) || sides=(versus this); }
          for side in "${sides[@]}"; do
            n=$((n + 1))
            name="${backend}__${wl}__p${procs}__r${r}__${protocol}"
            with="$bench"
            if [[ "$side" == versus ]]; then
              name+="__versus"
              with="$versus_bench"
            fi
            if [[ "$wl" == tpcc && $fresh -eq 0 ]]; then
              load "${wargs[@]}"
            fi
            fresh=0
            measure "$name" "$with" "$procs" "${wargs[@]}" --backend "$backend" --protocol "$protocol" \
              --seconds "$seconds" --warmup-seconds "$warmup" --seed "$r"
            cps="$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["commits_per_second"]))' \
              "$out/$name.json")"
            printf '[%3d/%d] %-5s %-9s %d proc round %d/%d %-12s %-6s %8s commits/s\n' "$n" "$total" "$backend" \
              "$wl" "$procs" "$r" "$rounds" "$protocol" "$side" "$cps"
          done
        done
      done
    done
  done
done

echo
echo "==> pandora-bench: $threads thread(s) x $coordinators coordinators per process, $replicas replica(s)," \
  "2 memory daemons, ${seconds} s per run after ${warmup} s warm-up, $rounds rounds"
python3 "$script_dir/compare_table.py" --markdown "$out"
[[ $keep_out -eq 0 ]] || echo "reports and logs: $out"
