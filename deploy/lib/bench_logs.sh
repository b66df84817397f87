# shellcheck shell=bash
# What the fail-over scripts (deploy/failover/) read from pandora-bench runs.
# Sourced; the caller defines die().

# Waits (bounded, 60 s) until file $1 has a line matching the ERE $2; with a
# pid $3, fails at once if that process (the bench writing $1) ends first.
wait_for_line() {
  local file="$1" pattern="$2" pid="${3:-}" deadline=$((SECONDS + 60))
  while ! grep -qE -- "$pattern" "$file" 2>/dev/null; do
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
      tail -n 20 "$file" >&2
      die "pandora-bench (pid $pid) ended before printing /$pattern/ (log: $file)"
    fi
    [[ $SECONDS -lt $deadline ]] || die "no /$pattern/ in $file within 60 s"
    sleep 0.01
  done
}

# The money total a SmallBank run's check printed into log $1 ("check
# passed: total money (cents) = N"); empty when there is none.
money_in_log() {
  sed -n 's/^check passed: total money (cents) = \([0-9-]*\).*/\1/p' "$1" | head -n1
}

# Runs an audit-only pandora-bench (the command line after $1, without
# --seconds) logging to $1, and prints the money total it found.
audit_money() {
  local log="$1"
  shift
  "$@" --seconds 0 >"$log" 2>&1 || { tail -n 5 "$log" >&2; die "the audit failed (log: $log)"; }
  money_in_log "$log"
}
