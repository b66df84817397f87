#!/usr/bin/env bash
# Benchmark-length mutation check: every bug switch against its litmus test
# (expect a violation) and the same configuration without the switch (expect
# none), on shm and tcp; the clean configurations also for log-a-latch (bug
# switches apply to the pandora protocol only); plus long random-crash runs
# of every test in every mode. Prints one line per run and a summary; exit 1
# if any run disagreed with its expectation.
#
#   litmus/run_mutation_check.sh [BUILD_DIR] [SECONDS] [SEEDS]
#
# BUILD_DIR defaults to build/debug (bug switches exist in Debug builds only),
# SECONDS (per run, default 120) and SEEDS (default "1 2 3").
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build/debug}"
seconds="${2:-120}"
seeds="${3:-1 2 3}"
bin="$build/litmus/driver/pandora-litmus"
[ -x "$bin" ] || { echo "no $bin (build the pandora-litmus target first)" >&2; exit 2; }
log_dir="$(mktemp -d "${TMPDIR:-/tmp}/pandora-mutation-XXXXXX")"
failures=0
runs=0

# run EXPECTED LABEL ARGS...
run() {
  local expected="$1" label="$2"
  shift 2
  runs=$((runs + 1))
  local log="$log_dir/run$runs.log"
  local start end rc
  start=$(date +%s.%N)
  "$bin" "$@" >"$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  local first
  first=$(grep -m1 '^first violation after' "$log" | awk '{print $4}')
  printf '%-60s exit %d (expected %d) %6.1f s%s\n' "$label" "$rc" "$expected" "$(echo "$end - $start" | bc)" \
    "${first:+, first violation after ${first} s}"
  if [ "$rc" -ne "$expected" ]; then
    failures=$((failures + 1))
    echo "    see $log"
  fi
}

for seed in $seeds; do
  for protocol in pandora log-a-latch; do
    for backend in shm tcp; do
      common=(--protocol "$protocol" --backend "$backend" --seconds "$seconds" --seed "$seed")
      skip() { [ "$1" != none ] && [ "$protocol" != pandora ]; }
      for bug in none complicit-abort; do
        skip $bug && continue
        run $([ $bug = none ] && echo 0 || echo 1) "litmus1 $bug $protocol/$backend seed $seed" \
          --test litmus1 --bug $bug --crash none "${common[@]}"
      done
      for bug in none missing-insert-log; do
        skip $bug && continue
        run $([ $bug = none ] && echo 0 || echo 1) "litmus1-insert $bug $protocol/$backend seed $seed" \
          --test litmus1-insert --bug $bug --crash after-commit-write --crash-probability 0.01 "${common[@]}"
      done
      for bug in none covert-latches relaxed-latches; do
        skip $bug && continue
        # relaxed-latches cannot manifest on shm (operations execute in post order).
        [ $bug = relaxed-latches ] && [ $backend = shm ] && continue
        run $([ $bug = none ] && echo 0 || echo 1) "litmus2 $bug $protocol/$backend seed $seed" \
          --test litmus2 --bug $bug --crash none "${common[@]}"
      done
      for bug in none lost-decision logging-without-latching; do
        skip $bug && continue
        run $([ $bug = none ] && echo 0 || echo 1) "litmus3 $bug $protocol/$backend seed $seed" \
          --test litmus3 --bug $bug --crash after-abort-release --crash-probability 0.5 --instances 256 \
          "${common[@]}"
      done
      run 0 "all random crashes $protocol/$backend seed $seed" --test all --crash random --require-coverage \
        --max-crashes 5000 "${common[@]}"
    done
  done
  for backend in shm tcp; do
    run 0 "all ford/$backend seed $seed" --test all --protocol ford --backend $backend --crash none \
      --seconds "$seconds" --seed "$seed" --require-coverage
  done
done
echo "mutation check: $runs runs, $failures disagreed with their expectation (logs in $log_dir)"
[ "$failures" -eq 0 ]
