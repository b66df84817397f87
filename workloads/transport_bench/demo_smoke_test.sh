#!/usr/bin/env bash
# ctest smoke test: starts two memory daemons with deploy/local/cluster.sh,
# runs pandora-transport-demo for 1 s per backend and node, and passes iff the
# demo exits 0 (every operation verified). The daemons are always stopped.
#
#   demo_smoke_test.sh MEMD_BINARY DEMO_BINARY CLUSTER_SH
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 MEMD_BINARY DEMO_BINARY CLUSTER_SH" >&2
  exit 2
fi
memd="$1"
demo="$2"
cluster="$3"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

state_dir="$(mktemp -d "${TMPDIR:-/tmp}/pandora-smoke.XXXXXX")"
region_dir="/dev/shm/pandora-$user/smoke-$$"
cleanup() {
  local rc=$?
  bash "$cluster" stop --dir "$state_dir" --region-dir "$region_dir" || true
  rm -rf -- "$state_dir"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export PMEM_IS_PMEM_FORCE=1
# Sanitizer builds start slowly; the regions are small to keep start-up quick.
bash "$cluster" start --nodes 2 --dir "$state_dir" --region-dir "$region_dir" \
  --memd "$memd" --size 16M --log-size 1M

set +e
"$demo" --nodes "$(cat "$state_dir/endpoints")" --cluster-id "$(cat "$state_dir/cluster_id")" \
  --secret-file "$state_dir/secret" --backend all --seconds 1 --compute-id 3
status=$?
set -e
if [[ $status -ne 0 ]]; then
  echo "transport_demo_smoke: demo exited with $status; daemon logs:" >&2
  for log in "$state_dir"/node*.log; do
    [[ -f "$log" ]] && { echo "--- $log" >&2; cat "$log" >&2; }
  done
fi
exit "$status"
