#!/usr/bin/env bash
# System test of the PostgreSQL peer (ctest label postgres):
#   1. deploy/postgres/postgres.sh: bad flags refused; start, status, a
#      password-less connection refused, stop (the postmaster's pid is gone);
#   2. pandora-pg-bench's SmallBank check catches money created behind its
#      back during a run (exit 1, "check FAILED"); its TPC-C check names
#      each consistency condition (4-12) a hand-made change breaks;
#   3. deploy/compare/compare.sh refuses TPC-C sizes out of bounds; then
#      one short round: SmallBank on both
#      systems, TATP and TPC-C on PostgreSQL (and on Pandora once
#      pandora-bench knows them); every report's check passed, the table is
#      printed, and every process the script started is gone afterwards.
# Exit 77 (skipped) only when the PostgreSQL binaries are missing and cannot
# be installed.
#
#   bash tests/postgres/compare_test.sh BUILD_DIR
set -euo pipefail

build="$(cd -- "${1:?usage: compare_test.sh BUILD_DIR}" && pwd -P)"
root="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)"
pgbin=/usr/lib/postgresql/15/bin
pgbench="$build/workloads/peers/postgres/pandora-pg-bench"
bench="$build/workloads/bench/pandora-bench"

# shellcheck source=deploy/lib/cluster_common.sh
source "$root/deploy/lib/cluster_common.sh"
if [[ ! -x "$pgbin/postgres" ]]; then
  # shellcheck source=deploy/lib/debian_packages.sh
  source "$root/deploy/lib/debian_packages.sh"
  ensure_debian_packages compare_test.sh postgresql-15 ||
    { echo "SKIP: PostgreSQL 15 binaries missing in $pgbin and postgresql-15 could not be installed"; exit 77; }
fi

fail() { echo "compare_test.sh: FAILED: $*" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/pg-compare-test.XXXXXX")"
chmod 755 "$work"
pg="$work/pg"
bench_pid=""
cleanup() {
  local rc=$?
  [[ -z "$bench_pid" ]] || { kill -TERM "$bench_pid" 2>/dev/null || true; wait "$bench_pid" 2>/dev/null || true; }
  bash "$root/deploy/postgres/postgres.sh" stop --dir "$pg" >/dev/null 2>&1 || true
  # Whatever compare.sh recorded and left alive would be its bug; still never leave it running.
  if [[ -s "$work/out/started.pids" ]]; then
    while read -r pid; do
      if proc_is_exe "$pid" postgres || proc_is_exe "$pid" pandora-memd; then kill -KILL "$pid" 2>/dev/null || true; fi
    done <"$work/out/started.pids"
  fi
  rm -rf -- "$work"
  exit "$rc"
}
trap cleanup EXIT

echo "== 1. postgres.sh"
for bad in "--port 80" "--port x" "--max-connections 0" "--shared-buffers lots" "--bogus"; do
  # shellcheck disable=SC2086
  if bash "$root/deploy/postgres/postgres.sh" start --dir "$pg" $bad >/dev/null 2>&1; then fail "postgres.sh accepted $bad"; fi
done
bash "$root/deploy/postgres/postgres.sh" start --dir "$pg" --shared-buffers 128MB
pid="$(cat "$pg/postgres.pid")"
proc_is_exe "$pid" postgres || fail "recorded pid $pid is not a running postgres"
bash "$root/deploy/postgres/postgres.sh" status --dir "$pg" | grep -q "running: pid $pid" || fail "status does not show pid $pid"
[[ "$(stat -c %a "$pg/pgpass")" == 600 ]] || fail "pgpass is not mode 600"
port="$(cat "$pg/port")"
if PGPASSWORD=wrong "$pgbin/psql" -X -w -c 'select 1' "host=127.0.0.1 port=$port user=pandora dbname=postgres" \
    >/dev/null 2>&1; then
  fail "a wrong password was accepted"
fi
[[ "$("$pgbin/psql" -X -At -c 'show fsync' "$(cat "$pg/conninfo")")" == on ]] || fail "fsync is not on"

echo "== 2. the SmallBank check catches an inconsistency"
"$pgbench" --pg-dir "$pg" --workload smallbank --accounts 2000 --load --seconds 0 >/dev/null
"$pgbench" --pg-dir "$pg" --workload smallbank --accounts 2000 --threads 2 --seconds 3 --warmup-seconds 0 \
  >"$work/tamper.log" 2>&1 &
bench_pid=$!
# Tamper once the run is under way (its first progress line), well before its end.
deadline=$((SECONDS + 60))
until grep -q 'commits/s (' "$work/tamper.log"; do
  proc_alive "$bench_pid" || fail "pandora-pg-bench ended before its first progress line: $(cat "$work/tamper.log")"
  [[ $SECONDS -lt $deadline ]] || fail "no progress line within 60 s"
  sleep 0.05
done
"$pgbin/psql" -X -q -c 'UPDATE savings SET bal = bal + 7 WHERE id = 1999' "$(cat "$pg/conninfo")"
rc=0
wait "$bench_pid" || rc=$?
bench_pid=""
[[ $rc -eq 1 ]] || fail "pandora-pg-bench exited $rc after money was created behind its back; output: $(cat "$work/tamper.log")"
grep -q "check FAILED" "$work/tamper.log" || fail "no 'check FAILED' in: $(cat "$work/tamper.log")"
grep -q "off by 7" "$work/tamper.log" || fail "the check did not find the 7 cents: $(cat "$work/tamper.log")"

echo "== 2b. the TPC-C check names each consistency condition broken behind its back"
tpcc=(--pg-dir "$pg" --workload tpcc --warehouses 1 --tpcc-items 100 --tpcc-customers-per-district 30)
"$pgbench" "${tpcc[@]}" --load --seconds 0 >"$work/tpcc-load.log" 2>&1 ||
  fail "TPC-C load at a small scale failed its own check: $(cat "$work/tpcc-load.log")"
grep -q "conditions 1-12 hold" "$work/tpcc-load.log" || fail "no conditions 1-12 in: $(cat "$work/tpcc-load.log")"
customer="c_w_id = 1 AND c_d_id = 1 AND c_id = 1"
# Order 1 was loaded delivered (carrier set, lines dated 2024-01-01, amount
# 0.00), order 30 (the last of 30 per district) undelivered (carrier and
# delivery dates NULL, a new_order row).
delivered="o_w_id = 1 AND o_d_id = 1 AND o_id = 1"
undelivered="o_w_id = 1 AND o_d_id = 1 AND o_id = 30"
line="ol_w_id = 1 AND ol_d_id = 1 AND ol_o_id = 1 AND ol_number = 1"
# tamper SQL | SQL that undoes it | the conditions it must break
while IFS='|' read -r damage undo conditions; do
  "$pgbin/psql" -X -q -c "$damage" "$(cat "$pg/conninfo")"
  rc=0
  "$pgbench" "${tpcc[@]}" --seconds 0 >"$work/tpcc-check.log" 2>&1 || rc=$?
  [[ $rc -eq 1 ]] || fail "exit $rc, not 1, after '$damage': $(cat "$work/tpcc-check.log")"
  for n in $conditions; do
    grep -q "condition $n " "$work/tpcc-check.log" || fail "'$damage' did not break condition $n: $(cat "$work/tpcc-check.log")"
  done
  "$pgbin/psql" -X -q -c "$undo" "$(cat "$pg/conninfo")"
done <<TAMPER
UPDATE history SET h_amount = h_amount + 1 WHERE h_c_id = 1 AND h_d_id = 1 AND h_w_id = 1|UPDATE history SET h_amount = h_amount - 1 WHERE h_c_id = 1 AND h_d_id = 1 AND h_w_id = 1|8 9 10
UPDATE customer SET c_balance = c_balance + 1 WHERE $customer|UPDATE customer SET c_balance = c_balance - 1 WHERE $customer|10 12
UPDATE customer SET c_delivery_cnt = c_delivery_cnt + 1 WHERE $customer|UPDATE customer SET c_delivery_cnt = c_delivery_cnt - 1 WHERE $customer|11
UPDATE customer SET c_ytd_payment = c_ytd_payment + 1 WHERE $customer|UPDATE customer SET c_ytd_payment = c_ytd_payment - 1 WHERE $customer|12
UPDATE orders SET o_carrier_id = 3 WHERE $undelivered|UPDATE orders SET o_carrier_id = NULL WHERE $undelivered|5 7
UPDATE orders SET o_ol_cnt = o_ol_cnt + 1 WHERE $delivered|UPDATE orders SET o_ol_cnt = o_ol_cnt - 1 WHERE $delivered|4 6
UPDATE order_line SET ol_delivery_d = NULL WHERE $line|UPDATE order_line SET ol_delivery_d = '2024-01-01 00:00:00' WHERE $line|7
TAMPER
"$pgbench" "${tpcc[@]}" --seconds 0 >"$work/tpcc-check.log" 2>&1 || fail "undoing the damage did not pass: $(cat "$work/tpcc-check.log")"
bash "$root/deploy/postgres/postgres.sh" stop --dir "$pg"
proc_alive "$pid" && fail "postmaster $pid still alive after stop"

echo "== 3. compare.sh"
workloads=smallbank
for w in tatp tpcc; do
  [[ -x "$pgbench" ]] && "$pgbench" --help | grep -E '^ *--workload ' | grep -q "$w" && workloads+=",$w"
done
unknown=""
for w in ${workloads//,/ }; do
  "$bench" --help | grep -E '^ *--workload ' | grep -qE "one of: ([a-z0-9-]+, )*$w(,|\))" || [[ -n "$unknown" ]] || unknown="$w"
done
if [[ -n "$unknown" ]]; then
  # Without --pg-only-if-unknown a workload pandora-bench lacks is an error that names it.
  if bash "$root/deploy/compare/compare.sh" --build "$build" --workloads "$workloads" >"$work/unknown.log" 2>&1; then
    fail "compare.sh ran although pandora-bench does not know '$unknown'"
  fi
  grep -q "does not know workload '$unknown'" "$work/unknown.log" || fail "unclear message: $(cat "$work/unknown.log")"
fi
# TPC-C sizes outside pandora-bench's bounds are refused before anything starts.
for bad in "--tpcc-items 0" "--tpcc-items 1048575" "--tpcc-items 1x" "--tpcc-customers-per-district 9" \
           "--tpcc-customers-per-district 4096"; do
  # shellcheck disable=SC2086
  if bash "$root/deploy/compare/compare.sh" --build "$build" $bad >"$work/bad.log" 2>&1; then
    fail "compare.sh accepted $bad"
  fi
  grep -q "^compare.sh: error: ${bad%% *} must be" "$work/bad.log" || fail "unclear refusal of $bad: $(cat "$work/bad.log")"
done
# Small sizes: this checks compare.sh, not speed. TPC-C at 1 warehouse
# with 2% of the spec's items and 200 customers per district (fewer made
# PostgreSQL's serialization retries pathological); TATP with 500
# subscribers. Pandora's end-of-run audits read every row, which in this
# sanitizer build took ~5 s per audit at 2,000 subscribers or 300 customers;
# the test went from 95 s to 70 s.
bash "$root/deploy/compare/compare.sh" --build "$build" --workloads "$workloads" --pg-only-if-unknown --rounds 1 \
  --seconds 2 --warmup-seconds 1 --threads 1 --coordinators 4 --accounts 5000 --subscribers 500 \
  --warehouses 1 --tpcc-items 2000 --tpcc-customers-per-district 200 --out "$work/out" |
  tee "$work/compare.log"
# No --region-size: the regions are what pandora-bench --plan names (the
# loads above would have failed on too small a region).
grep -qE '^==> starting 2 Pandora memory daemons \(regions of [1-9][0-9]*M on' "$work/compare.log" ||
  fail "no planned region size"
grep -qE '^workload +system +commits/s +p50 us +p99 us +abort % +retry % +check' "$work/compare.log" ||
  fail "no table header"
grep -qE '^smallbank +Pandora +[0-9]+ .* passed 1/1$' "$work/compare.log" || fail "no Pandora SmallBank row"
grep -qE '^smallbank +PostgreSQL +[0-9]+ .* passed 1/1$' "$work/compare.log" || fail "no PostgreSQL SmallBank row"
grep -qE '^smallbank +Pandora/PostgreSQL +[0-9.]+x' "$work/compare.log" || fail "no ratio row"
for w in ${workloads//,/ }; do
  grep -qE "^$w +PostgreSQL +[0-9]+ .* passed 1/1\$" "$work/compare.log" || fail "no PostgreSQL $w row"
done
python3 - "$work/out" <<'PY'
import json, pathlib, sys
reports = [p for p in pathlib.Path(sys.argv[1]).glob("*__r1__*.json")]
assert reports, "no reports"
for p in reports:
    r = json.loads(p.read_text())
    assert r["check"]["ran"] and r["check"]["passed"], f"{p.name}: check {r['check']}"
    assert r["commits"] > 0, f"{p.name}: nothing committed"
print(f"{len(reports)} reports, every check passed")
PY
while read -r pid; do
  proc_alive "$pid" && fail "compare.sh left pid $pid running"
done <"$work/out/started.pids"
[[ -s "$work/out/started.pids" ]] || fail "compare.sh recorded no pids"
echo "compare_test.sh: passed"
