#!/usr/bin/env bash
# deploy/local/zookeeper.sh start --exit-with-pid P, SIGKILLed together with P
# while its servers are still electing a leader (as when ctest kills a test
# that timed out): no server may outlive them. The watchdog used to start
# only after the election, so JVMs launched by a start killed before it ran
# forever. Servers this test finds still running are killed here, by the
# pids the script recorded, after the failure is reported.
set -euo pipefail
script="$1"
dir="$(mktemp -d)"
follow=""
cleanup() {
  local f pid
  for f in "$dir"/zk/zk*.pid "$dir"/zk/watchdog.pid; do
    [[ -f "$f" ]] || continue
    pid="$(cat "$f" 2>/dev/null || true)"
    [[ "$pid" =~ ^[1-9][0-9]*$ ]] && kill -KILL "$pid" 2>/dev/null || true
  done
  [[ -z "$follow" ]] || kill -KILL "$follow" 2>/dev/null || true
  rm -rf -- "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v java >/dev/null 2>&1 || { echo "SKIP: java not installed"; exit 77; }

# The pid the ensemble follows: a process of this test.
sleep 600 &
follow=$!
# A 2 s tick: the election takes several seconds, so the kill below lands
# while it runs.
bash "$script" start --dir "$dir/zk" --servers 3 --tick-ms 2000 --exit-with-pid "$follow" \
  >"$dir/start.log" 2>&1 &
start=$!

# Servers launched, quorum not yet reported.
deadline=$((SECONDS + 60))
until [[ -s "$dir/zk/zk3.pid" ]]; do
  kill -0 "$start" 2>/dev/null || { cat "$dir/start.log" >&2; fail "start ended before it launched 3 servers"; }
  [[ $SECONDS -lt $deadline ]] || fail "start launched no third server within 60 s"
  sleep 0.05
done
grep -q "leader elected" "$dir/start.log" && echo "note: the leader was elected before the kill"
servers=()
for i in 1 2 3; do servers+=("$(cat "$dir/zk/zk$i.pid")"); done
kill -KILL "$start" "$follow"
wait "$start" 2>/dev/null || true
wait "$follow" 2>/dev/null || true

# Every server must be stopped (the watchdog polls twice a second; a JVM
# takes up to its 10 s SIGTERM grace).
deadline=$((SECONDS + 30))
for pid in "${servers[@]}"; do
  while kill -0 "$pid" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]]; do
    [[ $SECONDS -lt $deadline ]] || fail "server pid $pid still runs 30 s after its start and followed pid were killed"
    sleep 0.1
  done
done
echo "PASS: a start killed during the election left no server behind (${servers[*]} stopped)"
