#!/usr/bin/env bash
# deploy/local/cluster.sh refuses a --memd or --fd program that is not
# called pandora-memd / pandora-fd before it writes or starts anything:
# stop and status recognise the daemons by that name, so one started
# under another name (a copy of an older build, say) would be left running.
set -euo pipefail
script="$1"
dir="$(mktemp -d)"
trap 'rm -rf -- "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
printf '#!/bin/sh\nexit 0\n' >"$dir/fd-old"
chmod +x "$dir/fd-old"
for cmd in start start-fd; do
  for flag in --memd --fd; do
    if out="$(bash "$script" "$cmd" --dir "$dir/c" --zookeeper "$flag" "$dir/fd-old" 2>&1)"; then
      fail "$cmd $flag $dir/fd-old was accepted: $out"
    fi
    [[ "$out" == *"$flag must name a program called"* ]] || fail "$cmd $flag: the error does not say why: $out"
    [[ ! -e "$dir/c" ]] || fail "$cmd $flag created $dir/c"
  done
done
echo "PASS: programs under other names refused before anything was started"
