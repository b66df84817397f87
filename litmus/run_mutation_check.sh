#!/usr/bin/env bash
# Benchmark-length mutation check: every bug switch against its litmus test
# (expect a violation) and the same configuration without the switch (expect
# none), on shm and tcp; the clean configurations also for log-a-latch (bug
# switches apply to the pandora protocol only); plus long runs of every test
# in every mode (ford included, recovered stop-the-world) with crashes at
# every crash point (--crash cycle, coverage required) and at random points.
# Prints one line per run, then the report table (test x protocol x backend
# x bug switch -> violations found / runs, time to first violation per run,
# crash coverage), and exits 1 if any run disagreed with its expectation.
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
declare -A found total times coverage
keys=()

# run EXPECTED KEY LABEL ARGS...   (KEY: "test|protocol|backend|bug|crash", a report row)
run() {
  local expected="$1" key="$2" label="$3"
  shift 3
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
  [ -n "${total[$key]+x}" ] || { keys+=("$key"); total[$key]=0; found[$key]=0; times[$key]=""; }
  total[$key]=$((total[$key] + 1))
  [ "$rc" -eq 1 ] && found[$key]=$((found[$key] + 1))
  times[$key]="${times[$key]}${times[$key]:+, }${first:--}"
  local cov
  cov=$(grep -m1 '^coverage:' "$log" | sed 's/^coverage: //')
  [ -n "$cov" ] && coverage[$key]="$cov"
}

for seed in $seeds; do
  for protocol in pandora log-a-latch; do
    for backend in shm tcp; do
      common=(--protocol "$protocol" --backend "$backend" --seconds "$seconds" --seed "$seed")
      skip() { [ "$1" != none ] && [ "$protocol" != pandora ]; }
      for bug in none complicit-abort; do
        skip $bug && continue
        run $([ $bug = none ] && echo 0 || echo 1) "litmus1|$protocol|$backend|$bug|none" \
          "litmus1 $bug $protocol/$backend seed $seed" --test litmus1 --bug $bug --crash none "${common[@]}"
      done
      for bug in none missing-insert-log; do
        skip $bug && continue
        run $([ $bug = none ] && echo 0 || echo 1) "litmus1-insert|$protocol|$backend|$bug|after-commit-write" \
          "litmus1-insert $bug $protocol/$backend seed $seed" \
          --test litmus1-insert --bug $bug --crash after-commit-write --crash-probability 0.01 "${common[@]}"
      done
      for bug in none covert-latches relaxed-latches; do
        skip $bug && continue
        # relaxed-latches cannot manifest on shm (operations execute in post order).
        [ $bug = relaxed-latches ] && [ $backend = shm ] && continue
        run $([ $bug = none ] && echo 0 || echo 1) "litmus2|$protocol|$backend|$bug|none" \
          "litmus2 $bug $protocol/$backend seed $seed" --test litmus2 --bug $bug --crash none "${common[@]}"
      done
      for bug in none lost-decision logging-without-latching; do
        skip $bug && continue
        run $([ $bug = none ] && echo 0 || echo 1) "litmus3|$protocol|$backend|$bug|after-abort-release" \
          "litmus3 $bug $protocol/$backend seed $seed" \
          --test litmus3 --bug $bug --crash after-abort-release --crash-probability 0.5 --instances 256 \
          "${common[@]}"
      done
    done
  done
  for protocol in pandora log-a-latch ford; do
    for backend in shm tcp; do
      for crash in cycle random; do
        run 0 "all|$protocol|$backend|none|$crash" "all $crash crashes $protocol/$backend seed $seed" \
          --test all --crash $crash --max-crashes 5000 --protocol "$protocol" --backend "$backend" \
          --seconds "$seconds" --seed "$seed" $([ $crash = cycle ] && echo --require-coverage)
      done
    done
  done
done

echo
echo "| test | protocol | backend | bug switch | crash | violations / runs | first violation after (s), per run | crash coverage |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for key in "${keys[@]}"; do
  IFS='|' read -r t p b bug crash <<<"$key"
  echo "| $t | $p | $b | $bug | $crash | ${found[$key]} / ${total[$key]} | ${times[$key]} | ${coverage[$key]:-} |"
done
echo
echo "mutation check: $runs runs, $failures disagreed with their expectation (logs in $log_dir)"
[ "$failures" -eq 0 ]
