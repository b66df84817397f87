#!/usr/bin/env bash
# pandora-fd refuses bad flags before it contacts anything (exit 2, the
# message naming the flag) and its --help lists the flags an operator
# tunes fail-over with.
set -euo pipefail
fd="$1"
dir="$(mktemp -d)"
trap 'rm -rf -- "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
printf 'fd-args-test-secret-0123456789\n' >"$dir/secret"
chmod 600 "$dir/secret"
# Port 1 on loopback: nothing answers there, and nothing is asked.
base=(--zookeeper 127.0.0.1:1 --cluster-id 0x5eed --secret-file "$dir/secret" --replica-id 1)

# expect_usage WANT FLAG...: exit 2 and WANT in the message.
expect_usage() {
  local want="$1" out rc=0
  shift
  out="$(timeout 20 "$fd" "${base[@]}" "$@" 2>&1)" || rc=$?
  [[ $rc -eq 2 ]] || fail "$* exited $rc, not 2 (a usage error): $out"
  [[ "$out" == *"$want"* ]] || fail "$*: the message does not say '$want': $out"
}

# A leader timeout within 4 ticks would depose a leader that merely waited
# for its next tick.
expect_usage "--leader-timeout-ms 1 must be 0 or longer than 4 ticks (--tick-us 250)" --leader-timeout-ms 1
expect_usage "--leader-timeout-ms 40 must be 0 or longer than 4 ticks (--tick-us 10000)" \
  --leader-timeout-ms 40 --tick-us 10000
expect_usage "leader-timeout-ms" --leader-timeout-ms 600001
expect_usage "leader-timeout-ms" --leader-timeout-ms -5
expect_usage "--replica-id 4 > --replicas 3" --replica-id 4

help="$("$fd" --help)"
for flag in --leader-timeout-ms --timeout-us --tick-us --zk-session-ms --replicas; do
  [[ "$help" == *"$flag"* ]] || fail "--help does not list $flag"
done
echo "PASS: bad flags refused with the flag named; --help lists the fail-over flags"
