#!/usr/bin/env bash
# The local demo: builds Release, starts 2 memory daemons on loopback, runs
# pandora-transport-demo against both over every backend, then a
# transactional workload (SmallBank by default) through pandora-bench on each
# backend with its end-of-run consistency check, and always stops the daemons
# again. Exit code: 0 when every phase passed.
set -euo pipefail

usage() {
  cat <<USAGE
Usage: bash deploy/demo.sh [--seconds N] [--nodes N] [--backend shm|tcp|all]
                           [--workload smallbank|micro|none] [--protocol pandora|ford|log-a-latch]

Runs deploy/setup.sh release (installs packages if missing, builds
build/release), starts N (default 2) pandora-memd daemons on 127.0.0.1 with
deploy/local/cluster.sh, and then:
  1. pandora-transport-demo against all of them for each backend (mixed
     READ/WRITE/CAS/FAA with verification) and its throughput table;
  2. pandora-bench: loads the workload's tables once (rows replicated on
     min(2, N) nodes), then runs it for N seconds on each backend with
     4 coordinators and prints throughput, aborts, latency percentiles,
     remote operations per transaction and the consistency check (SmallBank:
     the total money equals the initial total plus the committed net changes).
Stops the daemons at the end (also on failure or Ctrl-C).
USAGE
}

seconds=3
nodes=2
backend=all
workload=smallbank
protocol=pandora
die() { echo "demo.sh: error: $*" >&2; exit 1; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) [[ $# -ge 2 ]] || die "--seconds needs a value"; seconds="$2"; shift 2 ;;
    --nodes) [[ $# -ge 2 ]] || die "--nodes needs a value"; nodes="$2"; shift 2 ;;
    --backend) [[ $# -ge 2 ]] || die "--backend needs a value"; backend="$2"; shift 2 ;;
    --workload) [[ $# -ge 2 ]] || die "--workload needs a value"; workload="$2"; shift 2 ;;
    --protocol) [[ $# -ge 2 ]] || die "--protocol needs a value"; protocol="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

case "$backend" in shm|tcp|all) ;; *) die "--backend must be shm, tcp or all (got '$backend')" ;; esac
case "$workload" in smallbank|micro|none) ;; *) die "--workload must be smallbank, micro or none (got '$workload')" ;; esac
case "$protocol" in pandora|ford|log-a-latch) ;; *) die "--protocol must be pandora, ford or log-a-latch (got '$protocol')" ;; esac
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -ge 1 ]] || die "--seconds must be a positive integer (got '$seconds')"

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

bash "$script_dir/setup.sh" release

demo_bin="$root/build/release/workloads/transport_bench/pandora-transport-demo"
bench_bin="$root/build/release/workloads/bench/pandora-bench"
[[ -x "$demo_bin" ]] || die "demo binary missing: $demo_bin"
[[ "$workload" == none || -x "$bench_bin" ]] || die "benchmark binary missing: $bench_bin"

# A private state dir and region dir per run, so a concurrent run (or test)
# of the same user never shares daemons or regions with this one.
state_dir="$(mktemp -d "${TMPDIR:-/tmp}/pandora-demo.XXXXXX")"
region_dir="/dev/shm/pandora-$user/demo-$$"
cleanup() {
  local rc=$?
  echo "==> stopping the memory daemons"
  bash "$script_dir/local/cluster.sh" stop --dir "$state_dir" --region-dir "$region_dir" || true
  rm -rf -- "$state_dir"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "==> starting $nodes memory daemon(s) on 127.0.0.1"
# 8 MiB of log area: 512 lanes of 16 KiB, i.e. log lanes for compute ids
# 1..8 (each pandora-bench run below is a new compute node).
bash "$script_dir/local/cluster.sh" start --nodes "$nodes" --dir "$state_dir" --region-dir "$region_dir" \
  --size 128M --log-size 8M

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

# Each pandora-bench run is a new compute node: a fresh --compute-id.
if [[ $status -eq 0 && "$workload" != none ]]; then
  common=(--memory-nodes "$(cat "$state_dir/endpoints")" --cluster-id "$(cat "$state_dir/cluster_id")"
          --secret-file "$state_dir/secret" --workload "$workload" --protocol "$protocol"
          --threads 1 --coordinators 4 --warmup-seconds 1 --seconds "$seconds")
  if [[ "$workload" == smallbank ]]; then common+=(--accounts 100000); else common+=(--keys 100000); fi
  backends=(shm tcp)
  [[ "$backend" == all ]] || backends=("$backend")
  compute_id=1
  load=(--load)
  for b in "${backends[@]}"; do
    echo "==> pandora-bench: $workload, protocol $protocol, backend $b, ${seconds}s"
    set +e
    "$bench_bin" "${common[@]}" --backend "$b" --compute-id "$compute_id" "${load[@]}"
    status=$?
    set -e
    load=()
    compute_id=$((compute_id + 1))
    [[ $status -eq 0 ]] || break
  done
fi

if [[ $status -eq 0 ]]; then
  echo "==> demo finished: every phase passed its checks"
else
  echo "==> demo FAILED (exit code $status); daemon logs:" >&2
  for log in "$state_dir"/node*.log; do
    [[ -f "$log" ]] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }
  done
fi
exit "$status"
