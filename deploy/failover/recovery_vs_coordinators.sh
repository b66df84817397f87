#!/usr/bin/env bash
# The log-recovery step against the number of outstanding coordinators on
# the failed compute node (seed Table 4.1: 1, 8, 64, 128, 256, 512): for each
# count, measure_detection.sh kills a SmallBank compute node running that
# many coordinators R times, and the recovery records give the log-recovery
# step (read the failed node's lanes on its log nodes, decide and repair
# every record) and the number of records it found. Prints a table of
# medians (and the whole per-count summaries in OUT/<count>/).
#
#   bash deploy/failover/recovery_vs_coordinators.sh [--rounds 5] [--counts 1,8,64,128,256,512]
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"

usage() {
  cat <<USAGE
Usage: bash deploy/failover/recovery_vs_coordinators.sh [options]

Options:
  --rounds N          crashes per coordinator count                    [5]
  --counts LIST       coordinator counts (threads x coordinators)  [1,8,64,128,256,512]
  --out DIR           results                 [/tmp/pandora-recovery-vs-coordinators]
  --build DIR         Release build                                    [build/release]
  --fd-timeout-us US  the detector's timeout (many coordinators on a
                      2-core machine delay heartbeats: raise it if the
                      runs report false suspicions)                    [20000]
  -h, --help          this help

Counts above 1 run on 2 worker threads (counts/2 coordinators each).
USAGE
}

die() { echo "recovery_vs_coordinators.sh: error: $*" >&2; exit 1; }

rounds=5
counts="1,8,64,128,256,512"
out="/tmp/pandora-recovery-vs-coordinators"
build=""
fd_timeout_us=20000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="${2:?--rounds needs a value}"; shift 2 ;;
    --counts) counts="${2:?--counts needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    --build) build="${2:?--build needs a value}"; shift 2 ;;
    --fd-timeout-us) fd_timeout_us="${2:?--fd-timeout-us needs a value}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer, got '$rounds'"
[[ "$counts" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--counts must be a comma list of integers, got '$counts'"
command -v python3 >/dev/null 2>&1 || die "python3 not found"
# shellcheck source=deploy/lib/private_dir.sh
source "$script_dir/../lib/private_dir.sh"
private_dir "$out" "output directory" || exit 2
out="$(cd -- "$out" && pwd -P)"

build_args=()
[[ -z "$build" ]] || build_args=(--build "$build")
IFS=, read -r -a list <<<"$counts"
for n in "${list[@]}"; do
  [[ "$n" -ge 1 && "$n" -le 4096 ]] || die "coordinator count $n must be in 1..4096"
  if [[ "$n" -eq 1 ]]; then threads=1; per=1; else threads=2; per=$((n / 2)); fi
  [[ $((threads * per)) -eq "$n" ]] || die "coordinator count $n must be 1 or even"
  echo "==> $n coordinator(s): $threads thread(s) x $per, $rounds crash(es)"
  bash "$script_dir/measure_detection.sh" --rounds "$rounds" --out "$out/$n" --threads "$threads" \
    --coordinators "$per" --fd-timeout-us "$fd_timeout_us" --kill-after-ms 500,1500 "${build_args[@]}" \
    >"$out/$n.log" 2>&1 || { tail -n 30 "$out/$n.log" >&2; die "the runs with $n coordinators failed (log: $out/$n.log)"; }
done

python3 - "$out" "${list[@]}" <<'PY' | tee "$out/table.txt"
import csv, statistics, sys
out, counts = sys.argv[1], sys.argv[2:]
print("coordinators | records (median) | log recovery p50 (us) | min..max (us) | end-to-end p50 (ms)")
print("---|---|---|---|---")
for n in counts:
    rows = list(csv.DictReader(open(f"{out}/{n}/crashes.csv")))
    # measure_detection.sh writes step times as integers, derived times
    # (end_to_end_us) with one decimal.
    lr = [float(r["log_recovery_us"]) for r in rows]
    rec = [float(r["records"]) for r in rows]
    e2e = [float(r["end_to_end_us"]) for r in rows]
    print(f"{n} | {statistics.median(rec):.0f} | {statistics.median(lr):.0f} | {min(lr):.0f}..{max(lr):.0f} | "
          f"{statistics.median(e2e) / 1000:.1f}")
PY
echo "==> table: $out/table.txt"
