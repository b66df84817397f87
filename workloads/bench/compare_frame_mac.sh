#!/usr/bin/env bash
# The cost of the optional tcp frame MAC: SmallBank on tcp with and without
# --frame-mac, alternating round by round against one loaded cluster, so both
# modes see the same machine. Prints every run and the medians.
#
#   bash workloads/bench/compare_frame_mac.sh [--rounds N] [--seconds S]
#
# Needs the Release build (bash deploy/setup.sh release). Starts and stops
# its own 2-daemon cluster (deploy/local/cluster.sh) in a temp directory.
set -euo pipefail

rounds=5
seconds=5
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "compare_frame_mac.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

root="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)"
bench="$root/build/release/workloads/bench/pandora-bench"
[[ -x "$bench" ]] || { echo "compare_frame_mac.sh: $bench not found; run: bash deploy/setup.sh release" >&2; exit 1; }
state="$(mktemp -d /tmp/pandora-frame-mac.XXXXXX)"
region_dir="/dev/shm/pandora-$(id -un)-frame-mac-$$"
cleanup() {
  bash "$root/deploy/local/cluster.sh" stop --dir "$state" >/dev/null 2>&1 || true
  rm -rf -- "$state" "$region_dir"
}
trap cleanup EXIT

bash "$root/deploy/local/cluster.sh" start --nodes 2 --dir "$state" \
  --region-dir "$region_dir" >/dev/null
common=(--memory-nodes "$(cat "$state/endpoints")" --cluster-id "$(cat "$state/cluster_id")"
        --secret-file "$state/secret" --workload smallbank --accounts 100000 --threads 1 --coordinators 4
        --backend tcp --log-level error)
"$bench" "${common[@]}" --compute-id 1 --load --seconds 0 >/dev/null

median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
plain=() mac=()
id=2
for r in $(seq 1 "$rounds"); do
  for mode in plain mac; do
    extra=()
    [[ $mode == mac ]] && extra=(--frame-mac)
    out="$("$bench" "${common[@]}" --compute-id "$id" --seconds "$seconds" --warmup-seconds 1 "${extra[@]}")"
    id=$((id + 1))
    tput="$(grep -o 'throughput: [0-9.]*' <<<"$out" | awk '{print $2}')"
    echo "round $r $mode $tput commits/s"
    if [[ $mode == mac ]]; then mac+=("$tput"); else plain+=("$tput"); fi
  done
done
echo "median without --frame-mac: $(printf '%s\n' "${plain[@]}" | median) commits/s"
echo "median with    --frame-mac: $(printf '%s\n' "${mac[@]}" | median) commits/s"
