#!/usr/bin/env bash
# Pandora side by side with PostgreSQL on one machine: the same workload,
# the same number of transactions in flight, interleaved rounds, medians.
#
#   bash deploy/compare/compare.sh [--workloads smallbank,tatp,tpcc] [--rounds 3] [--seconds 5] ...
#
# Starts a local Pandora cluster (deploy/local/cluster.sh: two memory
# daemons on loopback, regions on /dev/shm) and a throw-away PostgreSQL
# (deploy/postgres/postgres.sh), loads each workload once on both, then runs
# pandora-bench and pandora-pg-bench alternately for --rounds rounds (the
# order flips every round, so a slow drift of the machine hits both alike)
# and prints medians of throughput, p50/p99 latency and abort/retry rates
# with the ratio Pandora/PostgreSQL (deploy/compare/compare_table.py).
# Every run must pass its consistency check or the script fails.
#
# Concurrency: pandora-bench runs --threads T worker threads of
# --coordinators C coroutines, i.e. T x C transactions in flight;
# PostgreSQL needs one connection (one backend process) per transaction in
# flight, so pandora-pg-bench gets T x C client threads, one connection
# each (--pg-connections overrides). Both share this machine's cores.
#
# Stops everything it started (the cluster's daemons, the PostgreSQL
# postmaster, a running bench), by pid, on every exit (trap).
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

usage() {
  cat <<USAGE
Usage: bash deploy/compare/compare.sh [options]

Options:
  --build DIR            Release build with pandora-bench, pandora-memd and
                         pandora-pg-bench                          [build/release]
  --workloads LIST       comma list of smallbank, tatp, tpcc       [smallbank]
  --rounds N             interleaved rounds (medians over them)    [3]
  --seconds S            measured seconds per run                  [5]
  --warmup-seconds S     warm-up seconds per run                   [1]
  --threads T            pandora-bench worker threads              [1]
  --coordinators C       pandora-bench coordinators per thread     [8]
  --pg-connections N     pandora-pg-bench threads/connections      [T x C]
  --backend B            pandora-bench transport: shm, tcp          [shm]
  --replicas N           Pandora's f+1 (two daemons: 1 or 2)       [2]
  --accounts N           SmallBank accounts                        [100000]
  --subscribers N        TATP subscribers                          [100000]
  --warehouses N         TPC-C warehouses                          [1]
  --tpcc-items N         TPC-C rows in item and stock rows per     [100000]
                         warehouse (1..1048574; the spec's 100000)
  --tpcc-customers-per-district N
                         TPC-C customers per district, also the    [3000]
                         initial orders per district, the last 30%
                         undelivered (10..4095; the spec's 3000)
  --region-size SIZE     each memory daemon's region   [what pandora-bench --plan
                         names for the largest workload]
  --pg-medium M          where PostgreSQL's cluster (and WAL) lives:
                         shm  /dev/shm, the medium Pandora's regions use here
                              (both survive a process crash, not a reboot;
                              fsync on, but cheap)
                         disk \${TMPDIR:-/tmp} (fsync reaches the disk: stronger
                              durability than Pandora's /dev/shm regions)  [shm]
  --pg-unsafe            PostgreSQL with fsync/synchronous_commit off (NOT
                         durable; shows what durability costs)
  --pg-only-if-unknown   a workload pandora-bench does not know runs on
                         PostgreSQL only (its Pandora columns say n/a)
                         instead of failing the script
  --run-timeout-s N      give up on one run after N s       [seconds + warm-up + 120]
  --out DIR              keep the JSON reports and logs here, and started.pids
                         (the daemons' and the postmaster's pids)  [a temp dir, removed]
  -h, --help             this help

Build first: ninja -C build/release pandora-bench pandora-memd pandora-pg-bench
USAGE
}

die() { echo "compare.sh: error: $*" >&2; exit 1; }

build="$root/build/release"
workloads="smallbank"
rounds=3
seconds=5
warmup=1
threads=1
coordinators=8
pg_connections=""
backend=shm
replicas=2
accounts=100000
subscribers=100000
warehouses=1
tpcc_items=100000
tpcc_customers=3000
region_size=""
pg_medium=shm
pg_unsafe=()
pg_only_if_unknown=0
run_timeout=""
out=""

need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) need_value "$@"; build="$2"; shift 2 ;;
    --workloads) need_value "$@"; workloads="$2"; shift 2 ;;
    --rounds) need_value "$@"; rounds="$2"; shift 2 ;;
    --seconds) need_value "$@"; seconds="$2"; shift 2 ;;
    --warmup-seconds) need_value "$@"; warmup="$2"; shift 2 ;;
    --threads) need_value "$@"; threads="$2"; shift 2 ;;
    --coordinators) need_value "$@"; coordinators="$2"; shift 2 ;;
    --pg-connections) need_value "$@"; pg_connections="$2"; shift 2 ;;
    --backend) need_value "$@"; backend="$2"; shift 2 ;;
    --replicas) need_value "$@"; replicas="$2"; shift 2 ;;
    --accounts) need_value "$@"; accounts="$2"; shift 2 ;;
    --subscribers) need_value "$@"; subscribers="$2"; shift 2 ;;
    --warehouses) need_value "$@"; warehouses="$2"; shift 2 ;;
    --tpcc-items) need_value "$@"; tpcc_items="$2"; shift 2 ;;
    --tpcc-customers-per-district) need_value "$@"; tpcc_customers="$2"; shift 2 ;;
    --region-size) need_value "$@"; region_size="$2"; shift 2 ;;
    --pg-medium) need_value "$@"; pg_medium="$2"; shift 2 ;;
    --pg-unsafe) pg_unsafe=(--unsafe); shift ;;
    --pg-only-if-unknown) pg_only_if_unknown=1; shift ;;
    --run-timeout-s) need_value "$@"; run_timeout="$2"; shift 2 ;;
    --out) need_value "$@"; out="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

for n in rounds seconds threads coordinators replicas accounts subscribers warehouses; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || die "--$n must be a positive integer, got '${!n}'"
done
[[ "$warmup" =~ ^[0-9]+$ ]] || die "--warmup-seconds must be a non-negative integer, got '$warmup'"
# pandora-bench's and pandora-pg-bench's bounds (both refuse values outside them).
[[ "$tpcc_items" =~ ^[1-9][0-9]{0,6}$ && "$tpcc_items" -le 1048574 ]] ||
  die "--tpcc-items must be 1..1048574, got '$tpcc_items'"
[[ "$tpcc_customers" =~ ^[1-9][0-9]{0,3}$ && "$tpcc_customers" -ge 10 && "$tpcc_customers" -le 4095 ]] ||
  die "--tpcc-customers-per-district must be 10..4095, got '$tpcc_customers'"
[[ -n "$pg_connections" ]] || pg_connections=$((threads * coordinators))
[[ "$pg_connections" =~ ^[1-9][0-9]*$ && "$pg_connections" -le 1024 ]] ||
  die "--pg-connections must be 1..1024, got '$pg_connections'"
[[ "$backend" == shm || "$backend" == tcp ]] || die "--backend must be shm or tcp, got '$backend'"
[[ "$pg_medium" == shm || "$pg_medium" == disk ]] || die "--pg-medium must be shm or disk, got '$pg_medium'"
[[ -z "$region_size" || "$region_size" =~ ^[1-9][0-9]*[KMGT]?$ ]] ||
  die "--region-size must look like 512M or 1G, got '$region_size'"
[[ -n "$run_timeout" ]] || run_timeout=$((seconds + warmup + 120))
[[ "$run_timeout" =~ ^[1-9][0-9]*$ ]] || die "--run-timeout-s must be a positive integer, got '$run_timeout'"
IFS=',' read -r -a workload_list <<<"$workloads"
[[ ${#workload_list[@]} -gt 0 ]] || die "--workloads is empty"
for w in "${workload_list[@]}"; do
  [[ "$w" == smallbank || "$w" == tatp || "$w" == tpcc ]] || die "--workloads: unknown workload '$w' (smallbank, tatp, tpcc)"
done

build="$(cd -- "$build" 2>/dev/null && pwd -P)" || die "no build directory (--build)"
bench="$build/workloads/bench/pandora-bench"
memd="$build/memory/pandora-memd"
pgbench="$build/workloads/peers/postgres/pandora-pg-bench"
[[ -x "$bench" ]] || die "pandora-bench not found at $bench (ninja -C $build pandora-bench)"
[[ -x "$memd" ]] || die "pandora-memd not found at $memd (ninja -C $build pandora-memd)"
[[ -x "$pgbench" ]] ||
  die "pandora-pg-bench not found at $pgbench (ninja -C $build pandora-pg-bench; it needs libpq-dev and nlohmann-json3-dev)"
if grep -q "fsanitize=address" "$build/build.ninja" 2>/dev/null; then
  echo "compare.sh: warning: $build is a sanitizer build; Pandora's numbers will be far below a Release build" >&2
fi

# Which workloads pandora-bench knows: its --workload choices in --help.
pandora_knows() {
  "$bench" --help | grep -E '^ *--workload ' | grep -qE "one of: ([a-z0-9-]+, )*$1(,|\))"
}
declare -A pandora_runs=()
for w in "${workload_list[@]}"; do
  if pandora_knows "$w"; then
    pandora_runs[$w]=1
  elif [[ $pg_only_if_unknown -eq 1 ]]; then
    pandora_runs[$w]=0
    echo "compare.sh: pandora-bench ($bench) does not know workload '$w': PostgreSQL only" >&2
  else
    die "pandora-bench ($bench) does not know workload '$w' (its --workload choices: $("$bench" --help |
      grep -E '^ *--workload ' | sed -E 's/.*one of: ([^)]*)\).*/\1/')); rebuild it with that workload, drop '$w' from --workloads, or pass --pg-only-if-unknown"
  fi
done

state="$(mktemp -d "${TMPDIR:-/tmp}/pandora-vs-pg.XXXXXX")"
chmod 755 "$state"  # the PostgreSQL user must enter it (pg state lives below)
if [[ "$pg_medium" == shm ]]; then
  pg_dir="$(mktemp -d "/dev/shm/pandora-pg-$user.XXXXXX")"
else
  pg_dir="$state/pg"
fi
chmod 755 "$pg_dir" 2>/dev/null || true
region_dir="/dev/shm/pandora-$user/vs-pg-$$"
keep_out=1
if [[ -z "$out" ]]; then
  out="$state/reports"
  keep_out=0
fi
# shellcheck source=deploy/lib/private_dir.sh
source "$script_dir/../lib/private_dir.sh"
private_dir "$out" "output directory" || exit 2
run_pid=""

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n "$run_pid" ]] && kill -0 "$run_pid" 2>/dev/null; then
    kill -TERM "$run_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$run_pid" 2>/dev/null || true
    wait "$run_pid" 2>/dev/null || true
  fi
  bash "$root/deploy/postgres/postgres.sh" stop --dir "$pg_dir" >/dev/null 2>&1 || true
  bash "$root/deploy/local/cluster.sh" stop --dir "$state" >/dev/null 2>&1 || true
  [[ "$pg_medium" != shm ]] || rm -rf -- "$pg_dir"
  rm -rf -- "$state"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

workload_args() {
  case "$1" in
    smallbank) echo "--workload smallbank --accounts $accounts" ;;
    tatp) echo "--workload tatp --subscribers $subscribers" ;;
    tpcc) echo "--workload tpcc --warehouses $warehouses --tpcc-items $tpcc_items --tpcc-customers-per-district $tpcc_customers" ;;
  esac
}

# Without --region-size: the largest region pandora-bench --plan names for a
# workload (one is loaded at a time), rounded up to MiB.
if [[ -z "$region_size" ]]; then
  region_without_log=0
  for w in "${workload_list[@]}"; do
    # shellcheck disable=SC2046 # workload_args is a list of flags
    plan="$("$bench" --plan $(workload_args "$w") 2>&1)" || die "pandora-bench --plan for $w failed: $plan"
    need="$(sed -n 's/^plan: .* region_bytes_without_log=\([0-9]*\).*/\1/p' <<<"$plan")"
    [[ -n "$need" ]] || die "pandora-bench --plan printed no plan line: $plan"
    ((need <= region_without_log)) || region_without_log=$need
  done
  region_size="$(( (region_without_log + 1048575) / 1048576 + 16 ))M"
fi
echo "==> starting 2 Pandora memory daemons (regions of $region_size on /dev/shm)"
bash "$root/deploy/local/cluster.sh" start --nodes 2 --dir "$state" --region-dir "$region_dir" \
  --memd "$memd" --size "$region_size" --log-size 16M >/dev/null
echo "==> starting PostgreSQL in $pg_dir (medium: $pg_medium)"
bash "$root/deploy/postgres/postgres.sh" start --dir "$pg_dir" --max-connections $((pg_connections + 16)) \
  ${pg_unsafe[@]+"${pg_unsafe[@]}"} >/dev/null

# What this script started, for whoever wants to verify it is gone after.
{
  cat "$state"/node*.pid
  cat "$pg_dir/postgres.pid"
} >"$out/started.pids"

pandora_common=(--memory-nodes "$(cat "$state/endpoints")" --cluster-id "$(cat "$state/cluster_id")"
                --secret-file "$state/secret" --compute-id 1 --threads "$threads" --coordinators "$coordinators"
                --replicas "$replicas" --backend "$backend" --log-level error)
pg_common=(--pg-dir "$pg_dir" --threads "$pg_connections")

# run LOG_NAME TIMEOUT BINARY ARGS...: runs one bench in the background (so
# the trap can stop it by pid); fails the script when it fails or hangs.
run() {
  local name="$1" limit="$2"
  shift 2
  "$@" >"$out/$name.log" 2>&1 &
  run_pid=$!
  local rc=0 deadline=$((SECONDS + limit))
  while kill -0 "$run_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  if kill -0 "$run_pid" 2>/dev/null; then
    echo "compare.sh: $name still running after $limit s; stopped. Its last lines:" >&2
    tail -n 5 "$out/$name.log" >&2
    exit 1
  fi
  wait "$run_pid" || rc=$?
  run_pid=""
  if [[ $rc -ne 0 ]]; then
    echo "compare.sh: $name exited with $rc; its output:" >&2
    tail -n 30 "$out/$name.log" >&2
    exit 1
  fi
}

# The size of workload $1, as the summary records it.
workload_size() {
  case "$1" in
    smallbank) echo "$accounts accounts" ;;
    tatp) echo "$subscribers subscribers" ;;
    tpcc) echo "$warehouses warehouse(s), $tpcc_items items, $tpcc_customers customers per district" ;;
  esac
}

cps() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["commits_per_second"]))' "$1"; }

for wl in "${workload_list[@]}"; do
  read -r -a wargs <<<"$(workload_args "$wl")"
  echo "==> $wl: loading ($(workload_size "$wl"))"
  if [[ ${pandora_runs[$wl]} -eq 1 ]]; then
    # Lanes sized by pandora-bench for the workload's largest log record.
    run "load__${wl}__pandora" $((run_timeout + 600)) "$bench" "${pandora_common[@]}" "${wargs[@]}" \
      --load --replace --seconds 0
  fi
  run "load__${wl}__postgres" $((run_timeout + 600)) "$pgbench" "${pg_common[@]}" "${wargs[@]}" --load --seconds 0 \
    --report "$out/load__${wl}__postgres.json"
  for ((r = 1; r <= rounds; r++)); do
    order=(pandora postgres)
    ((r % 2 == 1)) || order=(postgres pandora)
    for sys in "${order[@]}"; do
      name="${wl}__r${r}__${sys}"
      if [[ "$sys" == pandora ]]; then
        [[ ${pandora_runs[$wl]} -eq 1 ]] || continue
        run "$name" "$run_timeout" "$bench" "${pandora_common[@]}" "${wargs[@]}" --seconds "$seconds" \
          --warmup-seconds "$warmup" --seed "$r" --report "$out/$name.json"
      else
        run "$name" "$run_timeout" "$pgbench" "${pg_common[@]}" "${wargs[@]}" --seconds "$seconds" \
          --warmup-seconds "$warmup" --seed "$r" --report "$out/$name.json"
      fi
      printf '%-10s round %d/%d %-9s %9s commits/s\n' "$wl" "$r" "$rounds" "$sys" "$(cps "$out/$name.json")"
    done
  done
done

echo
durability="fsync + synchronous_commit on"
[[ ${#pg_unsafe[@]} -eq 0 ]] || durability="fsync + synchronous_commit OFF (not durable)"
echo "==> Pandora: $threads thread(s) x $coordinators coordinators, backend $backend, $replicas replica(s) on 2" \
  "memory daemons; PostgreSQL $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["server"]["version"].split()[0])' \
  "$out/load__${workload_list[0]}__postgres.json"): $pg_connections connections, SERIALIZABLE, $durability, cluster on" \
  "$pg_medium; ${seconds} s per run after ${warmup} s warm-up, $rounds interleaved rounds, medians"
sizes=""
for wl in "${workload_list[@]}"; do sizes+="${sizes:+; }$wl: $(workload_size "$wl")"; done
echo "==> sizes: $sizes"
python3 "$script_dir/compare_table.py" "$out"
[[ $keep_out -eq 0 ]] || echo "reports and logs: $out"
