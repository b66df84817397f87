#!/usr/bin/env bash
# THE test command: sets up the Debug build (ASan + UBSan) and runs the whole
# test suite with ctest. Exit code = ctest's.
#
#   bash deploy/test.sh [extra ctest arguments, e.g. -R transport or -L smoke]
set -euo pipefail

usage() {
  cat <<USAGE
Usage: bash deploy/test.sh [ctest arguments...]

Runs deploy/setup.sh debug (installs packages if missing, builds build/debug),
then, with PMEM_IS_PMEM_FORCE=1 (regions live on /dev/shm; see README):
  ctest --test-dir build/debug --output-on-failure -j \$(nproc) --timeout 600 -LE 'failover|softroce-full|softroce-parts'
  ctest ... -j 1 -L '^failover\$' --repeat until-pass:2
(the whole-cluster fail-over tests run one at a time; one whose ZooKeeper
ensemble lost its quorum on a starved machine runs once more) and prints one
closing line over both. Tests labelled softroce-full (long Soft-RoCE VM
runs) are left out: bash deploy/test.sh -L softroce-full runs them; so are
those labelled softroce-parts, the steps softroce.vm runs in one VM, each
runnable alone (-L softroce-parts).
Extra arguments replace both passes with one ctest run with
those arguments (e.g. -R transport, -L smoke). Exits non-zero if a test
failed.

Environment:
  PANDORA_JOBS          build and test parallelism (default: nproc)
  PANDORA_TEST_TIMEOUT  per-test timeout in seconds (default: 600)
USAGE
}

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
esac

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/.." && pwd -P)"
jobs="${PANDORA_JOBS:-$(nproc)}"
timeout="${PANDORA_TEST_TIMEOUT:-600}"

bash "$script_dir/setup.sh" debug

# Regions live on /dev/shm, which is not PM: tell PMDK to treat them as PM so
# the flush path is that of real persistent memory (ARCHITECTURE.md 2b).
export PMEM_IS_PMEM_FORCE=1

log="$root/build/debug/Testing/test.sh.log"
mkdir -p "$(dirname -- "$log")"
: >"$log"

# run_ctest LABEL_ARGS... : one ctest pass appended to the log; sets $rc.
run_ctest() {
  echo "==> running tests: ctest $*" | tee -a "$log"
  set +e
  ctest --test-dir "$root/build/debug" --output-on-failure --timeout "$timeout" "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  set -e
}

status=0
if [[ $# -gt 0 ]]; then
  run_ctest -j "$jobs" "$@"
  status=$rc
else
  # Everything but the whole-cluster fail-over tests, the long Soft-RoCE
  # VM runs (label softroce-full) and the VM steps softroce.vm runs in one
  # boot (label softroce-parts), in parallel.
  run_ctest -j "$jobs" -LE 'failover|softroce-full|softroce-parts'
  status=$rc
  # Each fail-over test runs a ZooKeeper ensemble (3 JVMs), three detector
  # replicas, two daemons and compute processes: one at a time. A run whose
  # ensemble lost its quorum on a starved 2-core machine is run once more
  # (ctest prints both attempts).
  run_ctest -j 1 -L '^failover$' --repeat until-pass:2
  [[ $rc -eq 0 ]] || status=$rc
fi

# Repeat the summary at the end so it is not lost above a long failure log.
echo
echo "==> test summary (full log: build/debug/Testing/test.sh.log)"
grep -E '^[0-9]+% tests passed|^Total Test time|^The following tests|^[[:space:]]+[0-9]+ - ' "$log" || true
# One closing line over every pass.
awk '/^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+/ { f += $4; t += $NF }
     END { if (t > 0) printf "%d passed, %d failed\n", t - f, f }' "$log"
if [[ $status -eq 0 ]]; then
  echo "==> tests passed"
else
  echo "==> tests FAILED (ctest exit code $status)"
fi
exit "$status"
