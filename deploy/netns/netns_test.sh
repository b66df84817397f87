#!/usr/bin/env bash
# System tests of deploy/netns/netns.sh (ctest label netns; registered in
# deploy/netns/CMakeLists.txt). Each starts a cluster in network namespaces,
# runs pandora-bench over tcp across them, injects a partition, checks the
# outcome, stops the run and checks that nothing of it is left.
#
#   bash deploy/netns/netns_test.sh memory-partition  --memd M --fd F --ctl C --bench B
#   bash deploy/netns/netns_test.sh compute-partition --memd M --fd F --ctl C --bench B
#   bash deploy/netns/netns_test.sh memory-failover   --memd M --fd F --ctl C --bench B
#
# memory-partition: 2 memory daemons and compute nodes in their own
#   namespaces; a SmallBank run must pass its check; then a second run is
#   going when mem2's namespace is partitioned, and it must stop with exit 8
#   naming memory node 2 and mem2's address.
# compute-partition: 2 memory daemons, a ZooKeeper ensemble and 3 pandora-fd
#   replicas; a compute node joined through ZooKeeper is partitioned while it
#   runs, and the detector must fence and recover its pid (pandora-ctl status:
#   the pid in failed-ids and its recovery done, with a detection time).
# memory-failover: as compute-partition, but mem2's namespace is partitioned
#   under a running SmallBank (transfers) compute node: the detector fails
#   mem2 over (pandora-ctl status lists it), the compute node switches to
#   the surviving replicas and ends its run with exit 0, and an audit finds
#   the loaded money total.
#
# Exit 77 (ctest SKIP_RETURN_CODE) when this host cannot run network
# namespaces (not root, no ip netns, veth or bridge), with the reason.
# Every wait polls a condition against a deadline.
set -euo pipefail

readonly SKIP=77
script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
netns=(bash "$script_dir/netns.sh")

scenario="${1:-}"
shift || true
memd="" fd="" ctl="" bench=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --memd) memd="$2"; shift 2 ;;
    --fd) fd="$2"; shift 2 ;;
    --ctl) ctl="$2"; shift 2 ;;
    --bench) bench="$2"; shift 2 ;;
    *) echo "netns_test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$scenario" in
  memory-partition|compute-partition|memory-failover) ;;
  *) echo "usage: netns_test.sh memory-partition|compute-partition|memory-failover --memd M --fd F --ctl C --bench B" >&2
     exit 2 ;;
esac
for b in "$memd" "$fd" "$ctl" "$bench"; do
  [[ -x "$b" ]] || { echo "netns_test.sh: binary '$b' missing" >&2; exit 2; }
done

set +e
why="$("${netns[@]}" check 2>&1)"
rc=$?
set -e
if [[ $rc -eq 3 ]]; then
  echo "SKIP: this host cannot run network namespaces: $why"
  exit "$SKIP"
fi
[[ $rc -eq 0 ]] || { echo "netns.sh check failed ($rc): $why" >&2; exit 1; }

started=$SECONDS
dir="$(mktemp -d /tmp/pandora-netns-test.XXXXXX)"
# A per-test prefix (t + 5 random hex digits): parallel tests never collide,
# and the leftover check below looks for exactly this run's names.
prefix="t$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n' | cut -c1-5)"
recorded_pids=()

fail() {
  echo "FAIL: $*" >&2
  for f in "$dir"/*.log; do
    [[ -f "$f" ]] || continue
    echo "----- tail of $f" >&2
    tail -n 15 "$f" >&2 || true
  done
  exit 1
}

# Stops the run on every exit path; then nothing of it may be left: no
# namespace with its prefix, no link with its prefix in this namespace, none
# of its processes.
cleanup() {
  local rc=$? f pid st left
  trap - EXIT
  for f in "$dir"/*.pid "$dir"/zk/*.pid; do
    [[ -f "$f" ]] || continue
    read -r pid st <"$f" || true
    [[ "$pid" =~ ^[0-9]+$ ]] && recorded_pids+=("$pid")
  done
  if [[ -s "$dir/namespaces" ]]; then
    "${netns[@]}" stop --dir "$dir" || { echo "FAIL: netns.sh stop failed" >&2; rc=1; }
  fi
  left="$(ip netns list | awk '{print $1}' | grep -E "^$prefix-" || true)"
  [[ -z "$left" ]] || { echo "FAIL: namespaces left behind: $left" >&2; rc=1; }
  left="$(ip -o link show | grep -E ": $prefix[a-z]" || true)"
  [[ -z "$left" ]] || { echo "FAIL: links left behind: $left" >&2; rc=1; }
  # A stopped process may be a zombie for a moment; wait for it, bounded.
  local deadline=$((SECONDS + 10))
  for pid in ${recorded_pids[@]+"${recorded_pids[@]}"}; do
    while [[ -e "/proc/$pid" && "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]] && [[ $SECONDS -lt $deadline ]]; do
      sleep 0.05
    done
    if [[ -e "/proc/$pid" && "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]]; then
      echo "FAIL: process $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-80)) still runs after stop" >&2
      rc=1
    fi
  done
  [[ ! -e "/dev/shm/pandora-$(id -un)-netns-$prefix" ]] || { echo "FAIL: region directory left behind" >&2; rc=1; }
  if [[ $rc -eq 0 ]]; then
    echo "PASS: $scenario in $((SECONDS - started)) s; run $prefix stopped, nothing left behind"
    rm -rf -- "$dir"
  else
    echo "state kept in $dir" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
# Interrupted: clean up as on any exit, and report it as a failure.
trap 'echo "FAIL: interrupted" >&2; exit 143' TERM
trap 'echo "FAIL: interrupted" >&2; exit 130' INT

# wait_for SECONDS WHAT COMMAND...: polls COMMAND until it succeeds.
wait_for() {
  local limit="$1" what="$2" deadline
  shift 2
  deadline=$((SECONDS + limit))
  until "$@"; do
    [[ $SECONDS -lt $deadline ]] || fail "$what: not within $limit s"
    sleep 0.1
  done
}

# A run that has committed transactions (its progress lines count them).
has_commits() { grep -qE '\([1-9][0-9]* commits so far\)' "$dir/$1.log" 2>/dev/null; }

# The daemons follow this script (--exit-with-pid): killed, it leaves none.
start_opts=(--dir "$dir" --prefix "$prefix" --memory-nodes 2 --size 32M --log-size 8M --memd "$memd" --exit-with-pid $$)
bench_common=(--cluster-id CID --secret-file "$dir/secret" --workload smallbank --accounts 1000 --backend tcp
              --threads 1 --coordinators 2)

if [[ "$scenario" == memory-partition ]]; then
  "${netns[@]}" start "${start_opts[@]}"
  bench_common[1]="$(cat "$dir/cluster_id")"
  nodes=(--memory-nodes "$(cat "$dir/endpoints")")
  mem2="$(cut -d, -f2 "$dir/endpoints")"
  [[ "$mem2" == 10.213.0.2:* ]] || fail "mem2's endpoint is '$mem2', not on its namespace's address"

  # 1. A short SmallBank run across the namespaces passes its check.
  "${netns[@]}" run-compute c1 --dir "$dir" -- "$bench" "${nodes[@]}" "${bench_common[@]}" \
    --compute-id 1 --load --seconds 2 --warmup-seconds 0 >"$dir/c1.out" 2>&1 ||
    { cat "$dir/c1.out" >&2; fail "the first SmallBank run failed"; }
  grep -q '^check passed' "$dir/c1.out" || { cat "$dir/c1.out" >&2; fail "the first run printed no passed check"; }
  grep -qE 'throughput: [1-9][0-9]* commits/s' "$dir/c1.out" || fail "the first run committed nothing"
  echo "ok: SmallBank across namespaces: $(grep -m1 '^throughput' "$dir/c1.out")"

  # 2. A second run is committing when mem2 is partitioned: it must stop
  # with exit 8 (memory node lost) naming node 2 at mem2's address, after
  # its 1 s operation timeout, not run on for its 60 s.
  "${netns[@]}" run-compute c2 --background --dir "$dir" -- "$bench" "${nodes[@]}" "${bench_common[@]}" \
    --compute-id 2 --seconds 60 --warmup-seconds 0 --op-timeout-ms 1000
  wait_for 20 "c2 committing" has_commits c2
  "${netns[@]}" partition mem2 --dir "$dir"
  set +e
  "${netns[@]}" wait c2 --dir "$dir" --timeout-s 20
  rc=$?
  set -e
  [[ $rc -eq 8 ]] || fail "c2 exited $rc after mem2 was partitioned, expected 8 (memory node lost)"
  grep -qF "memory node 2 ($mem2): connection lost" "$dir/c2.log" ||
    fail "c2's log does not name memory node 2 ($mem2) as lost"
  echo "ok: partitioned mem2: $(grep -m1 -o "memory node 2 ([^)]*): connection lost ([a-z]*)" "$dir/c2.log"), exit 8"
elif [[ "$scenario" == memory-failover ]]; then
  # Memory-node suspicion as slow as compute's: sanitizer builds on a loaded
  # host must not fail a live daemon over.
  "${netns[@]}" start "${start_opts[@]}" --zookeeper --zk-no-fsync --fd-replicas 3 --fd-timeout-us 1000000 \
    --fd-arg --memory-timeout-us --fd-arg 1000000 --fd "$fd" --ctl "$ctl"
  bench_common[1]="$(cat "$dir/cluster_id")"
  zk=(--zookeeper "$(cat "$dir/zk_connect")")
  ctl_status() {
    "${netns[@]}" exec zk --dir "$dir" -- "$ctl" status "${zk[@]}" --cluster-id "${bench_common[1]}" \
      --secret-file "$dir/secret" 2>&1
  }
  money() { sed -n 's/^check passed: total money (cents) = \([0-9-]*\).*/\1/p' "$1" | head -n1; }
  "${netns[@]}" run-compute loader --dir "$dir" -- "$bench" "${zk[@]}" "${bench_common[@]}" --mix transfers --load \
    --seconds 0 >"$dir/loader.out" 2>&1 || { cat "$dir/loader.out" >&2; fail "loading through ZooKeeper failed"; }
  loaded="$(money "$dir/loader.out")"
  [[ -n "$loaded" ]] || { cat "$dir/loader.out" >&2; fail "the load printed no money total"; }
  leader_ready() { grep -qs "leader data plane" "$dir"/fd*.log; }
  wait_for 30 "the detector's leader data plane" leader_ready

  "${netns[@]}" run-compute c2 --background --dir "$dir" -- "$bench" "${zk[@]}" "${bench_common[@]}" \
    --mix transfers --seconds 15 --warmup-seconds 0 --op-timeout-ms 1000 --no-check
  wait_for 30 "c2 committing" has_commits c2
  "${netns[@]}" partition mem2 --dir "$dir"
  failed_over() { ctl_status | grep -qE "^failed over \(out of the configuration\): node 2 at 10\.213\.0\.2:"; }
  wait_for 30 "the detector failing mem2 over" failed_over
  echo "ok: $(ctl_status | grep -E '^(epoch|failed over)' | tr '\n' ' ')"
  set +e
  "${netns[@]}" wait c2 --dir "$dir" --timeout-s 60
  rc=$?
  set -e
  [[ $rc -eq 0 ]] || fail "c2 exited $rc after mem2 was failed over, expected 0 (it runs on the surviving replicas)"
  grep -qF "memory configuration 1: 1 of 2 memory nodes live" "$dir/c2.log" || fail "c2 did not switch primaries"
  "${netns[@]}" run-compute audit --dir "$dir" -- "$bench" "${zk[@]}" "${bench_common[@]}" --mix transfers \
    --seconds 0 >"$dir/audit.out" 2>&1 || { cat "$dir/audit.out" >&2; fail "the audit after the fail-over failed"; }
  after="$(money "$dir/audit.out")"
  [[ "$after" == "$loaded" ]] || fail "money: loaded $loaded, $after after the fail-over"
  echo "ok: c2 ran on after mem2 was failed over ($(grep -m1 -o 'memory-node fail-over: [0-9]* transaction(s)' "$dir/c2.log" || echo 'no transaction in flight')); money conserved ($after)"
else
  "${netns[@]}" start "${start_opts[@]}" --zookeeper --zk-no-fsync --fd-replicas 3 --fd-timeout-us 300000 \
    --fd "$fd" --ctl "$ctl"
  bench_common[1]="$(cat "$dir/cluster_id")"
  zk=(--zookeeper "$(cat "$dir/zk_connect")")
  ctl_status() {
    "${netns[@]}" exec zk --dir "$dir" -- "$ctl" status "${zk[@]}" --cluster-id "${bench_common[1]}" \
      --secret-file "$dir/secret" 2>&1
  }

  "${netns[@]}" run-compute loader --dir "$dir" -- "$bench" "${zk[@]}" "${bench_common[@]}" --load --seconds 0 \
    >"$dir/loader.out" 2>&1 || { cat "$dir/loader.out" >&2; fail "loading through ZooKeeper failed"; }
  # The leader attaches to the memory nodes once the tables exist.
  leader_ready() { grep -qs "leader data plane" "$dir"/fd*.log; }
  wait_for 30 "the detector's leader data plane" leader_ready

  "${netns[@]}" run-compute c2 --background --dir "$dir" -- "$bench" "${zk[@]}" "${bench_common[@]}" \
    --seconds 60 --warmup-seconds 0 --op-timeout-ms 1000
  joined() { grep -qE '^joined the cluster as pid [0-9]+' "$dir/c2.log" 2>/dev/null; }
  wait_for 20 "c2 joining" joined
  pid="$(sed -nE 's/^joined the cluster as pid ([0-9]+).*/\1/p' "$dir/c2.log" | head -n1)"
  wait_for 20 "c2 committing" has_commits c2
  ctl_status | grep -qE "^  pid +$pid compute" || fail "pandora-ctl status does not list c2 (pid $pid) as a member"

  "${netns[@]}" partition c2 --dir "$dir"
  partitioned_at=$SECONDS
  # Recovered: pid in failed-ids, and its recovery record done with a
  # detection time (a clean leave has none: "detected -").
  recovered() {
    local s
    s="$(ctl_status)" || return 1
    grep -qE "^failed-ids \([0-9]+\):.* $pid( |\$)" <<<"$s" &&
      grep -qE "^  pid +$pid done +by replica [0-9]+ detected [0-9.]+ s ago" <<<"$s"
  }
  wait_for 30 "the detector recovering c2 (pid $pid)" recovered
  echo "ok: partitioned c2: $(ctl_status | grep -E "^  pid +$pid done")"
  # Cut off from everything, c2 cannot learn it was fenced; it stops when its
  # operations time out (a memory node lost: 8) or, if a fence answer got
  # through first, as fenced (6). Either way it stops by itself.
  set +e
  "${netns[@]}" wait c2 --dir "$dir" --timeout-s 20
  rc=$?
  set -e
  [[ $rc -eq 8 || $rc -eq 6 ]] || fail "partitioned c2 exited $rc, expected 8 or 6"
  # Lost to timeouts, its coordinators waited once (--memory-failover-wait-ms,
  # 10 s) for a declaration that never came, and it says so.
  if [[ $rc -eq 8 ]]; then
    grep -qE 'memory node [0-9]+ \([0-9.:]+\) unreachable and not declared failed within' "$dir/c2.log" ||
      fail "c2 stopped for a lost memory node but its log does not say that node was waited out"
  fi
  echo "ok: partitioned c2 stopped with exit $rc, $((SECONDS - partitioned_at)) s after its partition"
fi
