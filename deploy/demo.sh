#!/usr/bin/env bash
# The local demo: builds Release, starts 2 memory daemons on loopback, runs
# pandora-transport-demo against both over every backend, prints its table,
# and always stops the daemons again. Exit code = the demo's.
set -euo pipefail

usage() {
  cat <<USAGE
Usage: bash deploy/demo.sh [--seconds N] [--nodes N] [--backend shm|tcp|all]

Runs deploy/setup.sh release (installs packages if missing, builds
build/release), starts N (default 2) pandora-memd daemons on 127.0.0.1 with
deploy/local/cluster.sh, runs pandora-transport-demo against all of them for
each backend (mixed READ/WRITE/CAS/FAA with verification), prints the
throughput table and stops the daemons (also on failure or Ctrl-C).
USAGE
}

seconds=3
nodes=2
backend=all
die() { echo "demo.sh: error: $*" >&2; exit 1; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) [[ $# -ge 2 ]] || die "--seconds needs a value"; seconds="$2"; shift 2 ;;
    --nodes) [[ $# -ge 2 ]] || die "--nodes needs a value"; nodes="$2"; shift 2 ;;
    --backend) [[ $# -ge 2 ]] || die "--backend needs a value"; backend="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

bash "$script_dir/setup.sh" release

demo_bin="$root/build/release/workloads/transport_bench/pandora-transport-demo"
[[ -x "$demo_bin" ]] || die "demo binary missing: $demo_bin"

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
bash "$script_dir/local/cluster.sh" start --nodes "$nodes" --dir "$state_dir" --region-dir "$region_dir"

export PMEM_IS_PMEM_FORCE=1
echo "==> running pandora-transport-demo (backend: $backend, ${seconds}s per backend and node)"
set +e
"$demo_bin" --nodes "$(cat "$state_dir/endpoints")" --cluster-id "$(cat "$state_dir/cluster_id")" \
  --secret-file "$state_dir/secret" --backend "$backend" --seconds "$seconds"
status=$?
set -e
if [[ $status -eq 0 ]]; then
  echo "==> demo finished: all operations verified"
else
  echo "==> demo FAILED (exit code $status); daemon logs:" >&2
  for log in "$state_dir"/node*.log; do
    [[ -f "$log" ]] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }
  done
fi
exit "$status"
