#!/usr/bin/env bash
# deploy/local/zookeeper.sh refuses bad timing values before it writes or
# starts anything: each bad value exits non-zero naming the flag, and the
# state directory stays empty.
set -euo pipefail
script="$1"
dir="$(mktemp -d)"
trap 'rm -rf -- "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for args in "--sync-ms abc" "--sync-ms 0" "--sync-ms -5" "--sync-ms 99999999" \
            "--init-ms x1" "--init-ms 0" "--tick-ms 0" "--tick-ms 1.5"; do
  flag="${args%% *}"
  # shellcheck disable=SC2086  # $args is two words on purpose
  if out="$(bash "$script" start --dir "$dir/zk" $args 2>&1)"; then
    fail "start $args was accepted: $out"
  fi
  [[ "$out" == *"$flag"* ]] || fail "start $args: the error does not name $flag: $out"
  [[ ! -e "$dir/zk" ]] || fail "start $args created $dir/zk"
done
echo "PASS: every bad timing value refused before anything was started"
