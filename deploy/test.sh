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
then: ctest --test-dir build/debug --output-on-failure -j \$(nproc) --timeout 600
with PMEM_IS_PMEM_FORCE=1 (regions live on /dev/shm; see README). Extra
arguments are passed to ctest (e.g. -R transport, -L smoke). Exits with
ctest's exit code.

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
echo "==> running tests: ctest -j $jobs --timeout $timeout $*"
set +e
ctest --test-dir "$root/build/debug" --output-on-failure -j "$jobs" --timeout "$timeout" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

# Repeat the summary at the end so it is not lost above a long failure log.
echo
echo "==> test summary (full log: build/debug/Testing/test.sh.log)"
grep -E '^[0-9]+% tests passed|^Total Test time|^The following tests|^[[:space:]]+[0-9]+ - ' "$log" || true
if [[ $status -eq 0 ]]; then
  echo "==> tests passed"
else
  echo "==> tests FAILED (ctest exit code $status)"
fi
exit "$status"
