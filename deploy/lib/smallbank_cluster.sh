# shellcheck shell=bash
# A fresh local cluster running SmallBank, for the fail-over measurements
# (deploy/failover/): 2 memory daemons, a ZooKeeper ensemble, 10000
# accounts loaded with no detector running, 3 pandora-fd replicas, then
# pandora-bench processes that commit. Sourced; the caller defines die()
# and `root` (the repository). Sourcing starts `work` (the round's
# directory, empty between rounds) and the array bench_pids (the benches
# started) empty; the functions keep them.
#
#   smallbank_binaries BUILD
#       checks and prints BUILD's pandora-memd, -bench, -ctl and -fd, one a
#       line (in a process substitution die() ends only that: count them)
#   smallbank_cluster DIR MEMD CTL BENCH FD FD_TIMEOUT_US [FD_ARG...]
#       starts it in DIR/c (logs in DIR); sets the array cluster_flags (the
#       --zookeeper ... --secret-file flags of its clients)
#   smallbank_benches DIR BENCH N
#       starts N benches logging to DIR/b0.log..; returns once each has
#       committed (60 s at most); appends their pids to bench_pids
#   smallbank_end_round [KEEP]
#       kills the benches left, stops the cluster, copies the detector's and
#       the benches' logs to directory KEEP (if given), removes $work
#   smallbank_cleanup
#       the caller's EXIT trap: the same, without keeping anything

work=""
bench_pids=()

smallbank_binaries() {
  local b
  for b in "$1/memory/pandora-memd" "$1/workloads/bench/pandora-bench" "$1/deploy/pandora-ctl" \
           "$1/recovery/pandora-fd"; do
    [[ -x "$b" ]] || die "$b not found (bash deploy/setup.sh release builds it)"
    printf '%s\n' "$b"
  done
}

smallbank_cluster() {
  local dir="$1" memd="$2" ctl="$3" bench="$4" fd="$5" fd_timeout_us="$6"
  shift 6
  local fd_args=() a
  for a in "$@"; do fd_args+=("--fd-arg=$a"); done
  bash "$root/deploy/local/cluster.sh" start --dir "$dir/c" --nodes 2 --zookeeper --memd "$memd" --ctl "$ctl" \
    >"$dir/start.log" 2>&1 || { cat "$dir/start.log" >&2; die "the cluster did not start"; }
  cluster_flags=(--zookeeper "$(cat "$dir/c/zk_connect")" --zk-root "$(cat "$dir/c/zk_root")"
                 --cluster-id "$(cat "$dir/c/cluster_id")" --secret-file "$dir/c/secret")
  "$bench" "${cluster_flags[@]}" --workload smallbank --accounts 10000 --load --seconds 0 >"$dir/load.log" 2>&1 ||
    { tail -n 20 "$dir/load.log" >&2; die "loading failed"; }
  bash "$root/deploy/local/cluster.sh" start-fd --dir "$dir/c" --fd-replicas 3 --fd "$fd" \
    --fd-timeout-us "$fd_timeout_us" ${fd_args[@]+"${fd_args[@]}"} >"$dir/fd.log" 2>&1 ||
    { cat "$dir/fd.log" >&2; die "the detector did not start"; }
}

smallbank_benches() {
  local dir="$1" bench="$2" n="$3" i
  local first=${#bench_pids[@]}
  for ((i = 0; i < n; i++)); do
    "$bench" "${cluster_flags[@]}" --workload smallbank --accounts 10000 --seconds 120 --threads 1 --coordinators 4 \
      --no-check --log-level info >"$dir/b$i.log" 2>&1 &
    bench_pids+=($!)
    disown "$!"  # no "Killed" line from bash for the ones a script kills
  done
  local deadline=$((SECONDS + 60))
  for ((i = 0; i < n; i++)); do
    until grep -q "commits so far" "$dir/b$i.log" 2>/dev/null; do
      kill -0 "${bench_pids[first + i]}" 2>/dev/null || { tail -n 20 "$dir/b$i.log" >&2; die "bench $i ended (log: $dir/b$i.log)"; }
      [[ $SECONDS -lt $deadline ]] || die "bench $i did not commit within 60 s (log: $dir/b$i.log)"
      sleep 0.2
    done
  done
}

smallbank_end_round() {
  local keep="${1:-}" p
  for p in ${bench_pids[@]+"${bench_pids[@]}"}; do kill -9 "$p" 2>/dev/null || true; done
  bench_pids=()
  [[ -n "$work" ]] || return 0
  if [[ -d "$work/c" ]]; then bash "$root/deploy/local/cluster.sh" stop --dir "$work/c" >/dev/null 2>&1 || true; fi
  if [[ -n "$keep" ]]; then
    rm -rf -- "$keep" && mkdir -p -- "$keep" && cp -- "$work"/c/fd*.log "$work"/b*.log "$keep"/ 2>/dev/null || true
  fi
  rm -rf -- "$work"
  work=""
}

smallbank_cleanup() { smallbank_end_round; }
