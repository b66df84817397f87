#!/usr/bin/env bash
# A local Pandora cluster: N memory daemons (pandora-memd) on 127.0.0.1, and
# optionally a 3-server ZooKeeper ensemble and pandora-fd replicas.
#
#   bash deploy/local/cluster.sh start  --nodes 2 --dir /tmp/pandora-cluster
#   bash deploy/local/cluster.sh start  --nodes 2 --dir /tmp/pc --zookeeper --fd-replicas 3
#   bash deploy/local/cluster.sh status --dir /tmp/pandora-cluster
#   bash deploy/local/cluster.sh stop   --dir /tmp/pandora-cluster [--keep]
#   bash deploy/local/cluster.sh restart --dir /tmp/pc --fd-replicas 3   (after stop --keep, or a crash of all)
#   bash deploy/local/cluster.sh replace --dir /tmp/pc --node 3          (a failed-over node, filled again)
#
# State recorded in DIR (so stop/status and clients find everything):
#   secret          the cluster secret (mode 600)
#   cluster_id      the cluster id (0x hex)
#   region_dir      where the regions live
#   node<i>.pid     daemon pid            node<i>.port   its TCP port
#   node<i>.log     its stdout+stderr     node<i>.region its region file
#   region_size, log_size   what start gave --size / --log-size (for replace)
#   endpoints       HOST:PORT,HOST:PORT,... (for --nodes of the clients)
# With --zookeeper:
#   zk/             the ensemble (deploy/local/zookeeper.sh --dir DIR/zk)
#   zk_connect      HOST:PORT,... (for --zookeeper of pandora-bench/-fd/-ctl)
#   zk_root         the cluster's ZooKeeper path
# With --fd-replicas N:
#   fd<i>.pid       pandora-fd replica i's pid    fd<i>.log  its stdout+stderr
#   fd_timeout_us   the detector's timeout
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

usage() {
  cat <<USAGE
Usage: bash deploy/local/cluster.sh start|start-fd|stop|restart|replace|status [options]

Starts, stops or lists N pandora-memd daemons on 127.0.0.1 (loopback only).
Each listens on a kernel-chosen port (port 0 + --port-file) and maps a region
file on /dev/shm with PMEM_IS_PMEM_FORCE=1 (see README: survives process
crashes, not reboots).

Options:
  --dir DIR          state directory (pids, ports, logs, secret)   [required]
  --nodes N          number of memory daemons (start)              [2]
  --memd PATH        pandora-memd binary    [build/release/memory/pandora-memd]
  --region-dir DIR   where region files live             [/dev/shm/pandora-$user]
  --size SIZE        region size per daemon (start)                [128M]
  --log-size SIZE    log area size per daemon (start)              [16M]
  --threads N        daemon threads (start)                        [1]
  --busy-poll-us N   tcp data plane: poll N us before sleeping (start) [0]
  --cluster-id ID    cluster id (start)          [random, recorded in DIR]
  --log-level LEVEL  daemon log level (start)                      [info]
  --keep             stop: keep the region files and the ensemble's data
                     (default: remove them), so restart can bring the
                     cluster back
  -h, --help         this help

Failure detection (start; off unless asked for):
  --zookeeper        also start a ZooKeeper ensemble (deploy/local/zookeeper.sh,
                     transaction logs on disk in DIR/zk) and run
                     'pandora-ctl init' for this cluster; DIR/zk_connect holds
                     the connect string for --zookeeper of the clients
  --zk-servers N     ensemble size                                 [3]
  --zk-root PATH     the cluster's ZooKeeper path                  [/pandora]
  --zk-tick-ms MS    ZooKeeper tickTime: followers give up on a leader
                     silent for 5 ticks; 100 ms broke the quorum under load
                     on a 2-core machine, so longer here          [500]
  --zk-nice N        run the ZooKeeper servers at this nice value (negative:
                     root only; zookeeper.sh --nice)               [0]
  --zk-no-fsync      the ensemble writes its transaction log without
                     fsync (zookeeper.sh --no-fsync): for demos and tests
                     on a host whose disk stalls an fsync for seconds
                     (seen here: 10.5 s, which expires every session);
                     never for measurements or data that must survive
  --lane-bytes SIZE  pandora-ctl init --lane-bytes                 [16K]
  --protocol P       pandora-ctl init --protocol: the protocol every compute
                     node runs, which the recovery follows (pandora, ford,
                     log-a-latch)                                  [pandora]
  --fd-replicas N    start N pandora-fd replicas (needs --zookeeper); start
                     returns when all announced themselves and one leads.
                     The leader attaches to the memory nodes once tables are
                     loaded (it logs "leader data plane" in DIR/fd<i>.log);
                     wait for that before crashing anything        [0]
  --fd-timeout-us US pandora-fd --timeout-us (suspicion timeout)   [5000]
  --fd-arg ARG       pass ARG to every pandora-fd (repeatable, e.g.
                     --fd-arg=--tick-us=1000)
  --fd-nice N        run the replicas at this nice value (negative: root
                     only); on a small shared machine the detector's
                     threads must not queue behind busy compute nodes  [0]
  --fd PATH          pandora-fd binary     [build/release/recovery/pandora-fd]
  --ctl PATH         pandora-ctl binary    [build/release/deploy/pandora-ctl]

replace --node I brings failed-over memory node I back (recovery/README.md,
"Re-replication"): a daemon on a fresh region (the node's stale one is
removed) under node id I, then 'pandora-ctl replace-memory-node', with which
the detector's leader fills it from the live replicas while every compute
node is paused, and records it (compute nodes reconnect as they resume).
The region gets start's --size and --log-size (recorded in DIR).

start-fd starts --fd-replicas N replicas (default 3) for a cluster started
with --zookeeper, after its tables were loaded: it returns once the leader
has its data plane. (Loading first, with no detector running, spares the
loader - a CPU-heavy process on a small machine - from being suspected.)

start prints the endpoints (also in DIR/endpoints). stop stops the pandora-fd
replicas first, then the memory daemons, then the ensemble: SIGTERM to each
recorded pid, up to 10 s, then SIGKILL; it only signals pids that still are
the processes it started (pandora-fd / pandora-memd executables; the
ensemble's java processes are checked by deploy/local/zookeeper.sh).
status lists the daemons, the replicas and the ensemble's servers.

restart brings a whole cluster back from DIR after 'stop --keep' or after
every process died (a crash, a power cut of a host whose regions are on
real persistent memory): the ensemble from its data (zookeeper.sh resume),
the memory daemons on their regions (new ports; a failed-over node stays
down), 'pandora-ctl set-memory-nodes' to record where they listen, and with
--fd-replicas N the detector, whose leader recovers every compute node of
the old run (they never heartbeat again) before new ones join. Options of
start (--threads, --busy-poll-us, --log-level, --fd-*) apply again; --nodes,
--size and --log-size come from the regions.
USAGE
}

die() { echo "cluster.sh: error: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || { usage >&2; exit 2; }
cmd="$1"
shift
case "$cmd" in
  -h|--help) usage; exit 0 ;;
  start|stop|status|start-fd|restart|replace) ;;
  *) usage >&2; die "unknown command '$cmd' (expected start, start-fd, stop, restart, replace or status)" ;;
esac

dir=""
nodes=2
memd="$root/build/release/memory/pandora-memd"
region_dir="/dev/shm/pandora-$user"
size="128M"
log_size="16M"
replace_node=""
threads=1
busy_poll_us=0
cluster_id=""
log_level="info"
keep=0
zookeeper=0
zk_servers=3
zk_root="/pandora"
zk_tick_ms=500
zk_fsync=()
zk_nice=0
lane_bytes="16K"
protocol=pandora
fd_replicas=0
fd_timeout_us=5000
fd_args=()
fd_nice=0
fd_bin="$root/build/release/recovery/pandora-fd"
ctl_bin="$root/build/release/deploy/pandora-ctl"

need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) need_value "$@"; dir="$2"; shift 2 ;;
    --nodes) need_value "$@"; nodes="$2"; shift 2 ;;
    --node) need_value "$@"; replace_node="$2"; shift 2 ;;
    --memd) need_value "$@"; memd="$2"; shift 2 ;;
    --region-dir) need_value "$@"; region_dir="$2"; shift 2 ;;
    --size) need_value "$@"; size="$2"; shift 2 ;;
    --log-size) need_value "$@"; log_size="$2"; shift 2 ;;
    --threads) need_value "$@"; threads="$2"; shift 2 ;;
    --busy-poll-us) need_value "$@"; busy_poll_us="$2"; shift 2 ;;
    --cluster-id) need_value "$@"; cluster_id="$2"; shift 2 ;;
    --log-level) need_value "$@"; log_level="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --zookeeper) zookeeper=1; shift ;;
    --zk-servers) need_value "$@"; zk_servers="$2"; shift 2 ;;
    --zk-root) need_value "$@"; zk_root="$2"; shift 2 ;;
    --zk-tick-ms) need_value "$@"; zk_tick_ms="$2"; shift 2 ;;
    --zk-no-fsync) zk_fsync=(--no-fsync); shift ;;
    --zk-nice) need_value "$@"; zk_nice="$2"; shift 2 ;;
    --lane-bytes) need_value "$@"; lane_bytes="$2"; shift 2 ;;
    --protocol) need_value "$@"; protocol="$2"; shift 2 ;;
    --fd-replicas) need_value "$@"; fd_replicas="$2"; shift 2 ;;
    --fd-timeout-us) need_value "$@"; fd_timeout_us="$2"; shift 2 ;;
    --fd-arg) need_value "$@"; fd_args+=("$2"); shift 2 ;;
    --fd-arg=*) fd_args+=("${1#--fd-arg=}"); shift ;;
    --fd-nice) need_value "$@"; fd_nice="$2"; shift 2 ;;
    --fd) need_value "$@"; fd_bin="$2"; shift 2 ;;
    --ctl) need_value "$@"; ctl_bin="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

[[ -n "$dir" ]] || die "--dir DIR is required"
[[ "$nodes" =~ ^[1-9][0-9]*$ && "$nodes" -le 64 ]] || die "--nodes must be 1..64, got '$nodes'"
[[ "$zk_servers" =~ ^[1-9][0-9]*$ && "$zk_servers" -le 15 ]] || die "--zk-servers must be 1..15, got '$zk_servers'"
[[ "$fd_replicas" =~ ^[0-9]+$ && "$fd_replicas" -le 64 ]] || die "--fd-replicas must be 0..64, got '$fd_replicas'"
[[ "$fd_timeout_us" =~ ^[1-9][0-9]*$ ]] || die "--fd-timeout-us must be a positive integer, got '$fd_timeout_us'"
[[ "$fd_nice" =~ ^-?[0-9]+$ && "$fd_nice" -ge -20 && "$fd_nice" -le 19 ]] || die "--fd-nice must be -20..19, got '$fd_nice'"
[[ "$zk_nice" =~ ^-?[0-9]+$ && "$zk_nice" -ge -20 && "$zk_nice" -le 19 ]] || die "--zk-nice must be -20..19, got '$zk_nice'"
[[ "$zk_nice" -ge 0 || "$(id -u)" -eq 0 ]] || die "--zk-nice $zk_nice (a higher priority) needs root"
if [[ "$fd_nice" -lt 0 && "$(id -u)" -ne 0 ]]; then
  die "--fd-nice $fd_nice (a higher priority) needs root"
fi
[[ "$zk_root" == /* && "$zk_root" != */ ]] || die "--zk-root must be an absolute path without a trailing /, got '$zk_root'"
# stop and status know the daemons by their program name (is_memd_pid,
# is_fd_pid): one started under another name would be left running.
[[ "${memd##*/}" == pandora-memd ]] || die "--memd must name a program called pandora-memd, got '$memd'"
[[ "${fd_bin##*/}" == pandora-fd ]] || die "--fd must name a program called pandora-fd, got '$fd_bin'"
if [[ "$cmd" == start-fd && "$fd_replicas" -eq 0 ]]; then
  fd_replicas=3
fi
if [[ "$cmd" == start && "$fd_replicas" -gt 0 && "$zookeeper" -eq 0 ]]; then
  die "--fd-replicas needs --zookeeper (the failure detector keeps its state in ZooKeeper)"
fi

# shellcheck source=deploy/lib/cluster_common.sh
source "$root/deploy/lib/cluster_common.sh"

alive() { proc_alive "$@"; }
# Live pandora-memd / pandora-fd processes (so a pid recycled by an
# unrelated process is never signalled).
is_memd_pid() { proc_is_exe "$1" pandora-memd; }
is_fd_pid() { proc_is_exe "$1" pandora-fd; }

# FD replica indices recorded in DIR (from fd<i>.pid files).
recorded_fds() {
  local f
  shopt -s nullglob
  for f in "$dir"/fd*.pid; do
    f="${f##*/fd}"
    echo "${f%.pid}"
  done | sort -n
  shopt -u nullglob
}

# Stops the recorded pandora-fd replicas (SIGTERM, SIGKILL after 10 s).
stop_fds() {
  local i rc=0
  local -a pids=()
  for i in $(recorded_fds); do
    pids+=("$(cat "$dir/fd$i.pid" 2>/dev/null || true)")
  done
  stop_pids "cluster.sh: pandora-fd pid" is_fd_pid ${pids[@]+"${pids[@]}"} || rc=1
  for i in $(recorded_fds); do rm -f -- "$dir/fd$i.pid"; done
  return "$rc"
}

# Stops the ensemble started with --zookeeper (if any); with --keep its data
# stays for restart.
stop_zk() {
  [[ -d "$dir/zk" ]] || return 0
  local -a keep_data=()
  [[ $keep -eq 0 ]] || keep_data=(--keep-data)
  bash "$script_dir/zookeeper.sh" stop --dir "$dir/zk" ${keep_data[@]+"${keep_data[@]}"} >/dev/null || return 1
  rm -f -- "$dir/zk_connect"
}

# Node indices recorded in DIR (from node<i>.pid and node<i>.region files:
# a failed-over node left down by restart has only its region).
recorded_nodes() {
  local f
  shopt -s nullglob
  for f in "$dir"/node*.pid "$dir"/node*.region; do
    f="${f##*/node}"
    echo "${f%.*}"
  done | sort -nu
  shopt -u nullglob
}

# Stops every recorded daemon; removes regions unless --keep. Returns 1 when a
# daemon had to be SIGKILLed or did not exit cleanly.
stop_memds() {
  local i rc=0 region
  local -a pids=()
  for i in $(recorded_nodes); do
    pids+=("$(cat "$dir/node$i.pid" 2>/dev/null || true)")
  done
  stop_pids "cluster.sh: pid" is_memd_pid ${pids[@]+"${pids[@]}"} || rc=1
  for i in $(recorded_nodes); do
    if [[ $keep -eq 0 && -f "$dir/node$i.region" ]]; then
      region="$(cat "$dir/node$i.region")"
      rm -f -- "$region"
      # A daemon that was SIGKILLed (and not restarted, e.g. failed over)
      # leaves its shm clients' socket directory, REGION.shm.XXXXXX.
      rm -rf -- "$region".shm.??????
    fi
    rm -f -- "$dir/node$i.pid" "$dir/node$i.port"
  done
  rm -f -- "$dir/endpoints"
  if [[ $keep -eq 0 && -f "$dir/region_dir" ]]; then
    rmdir -- "$(cat "$dir/region_dir")" 2>/dev/null || true
  fi
  return "$rc"
}

# Stops everything recorded in DIR: the detector first (so it does not take
# the daemons' exit for failures), then the daemons, then the ensemble.
stop_all() {
  local rc=0
  stop_fds || rc=1
  stop_memds || rc=1
  stop_zk || rc=1
  return "$rc"
}

# Starts pandora-memd for node $1 on the region recorded in DIR/node$1.region
# (further flags after $1), its pid in DIR/node$1.pid, its output appended to
# DIR/node$1.log. With a detector's UDP ports reserved (DIR/fd_ports) it
# heartbeats them, so its death is failed over (recovery/README.md).
launch_memd() {
  local i="$1"
  shift
  local -a heartbeat_flags=()
  if [[ -s "$dir/fd_ports" ]]; then
    heartbeat_flags=(--fd-replicas "$(sed 's/^/127.0.0.1:/' "$dir/fd_ports" | paste -sd, -)")
  fi
  # Regions on /dev/shm are not persistent memory; PMDK is told to treat
  # them as such so the flush discipline is that of real PM. stdin/stdout/
  # stderr are detached from the caller: a daemon must not hold a pipe of
  # whoever ran us (ctest, ssh) open.
  PMEM_IS_PMEM_FORCE=1 "$memd" \
    --pm-path "$(cat "$dir/node$i.region")" --node-id "$i" --listen 127.0.0.1:0 --port-file "$dir/node$i.port" \
    --cluster-id "$cluster_id" --secret-file "$dir/secret" \
    --threads "$threads" --busy-poll-us "$busy_poll_us" --log-level "$log_level" \
    ${heartbeat_flags[@]+"${heartbeat_flags[@]}"} "$@" </dev/null >>"$dir/node$i.log" 2>&1 &
  echo "$!" >"$dir/node$i.pid"
}

# Waits (bounded) for each launched node in $@ to publish its port; writes
# DIR/endpoints. On a failure stops everything (stop_all) and exits 1.
collect_endpoints() {
  local deadline=$((SECONDS + 30)) i pid port endpoints=""
  for i in "$@"; do
    pid="$(cat "$dir/node$i.pid")"
    if ! port="$(wait_port_file "cluster.sh: node$i" "$pid" "$dir/node$i.port" "$dir/node$i.log" "$deadline")"; then
      stop_all || true
      exit 1
    fi
    echo "$port" >"$dir/node$i.port"
    endpoints+="${endpoints:+,}127.0.0.1:$port"
    echo "==> node$i: pid $pid, 127.0.0.1:$port, region $(cat "$dir/node$i.region")"
  done
  echo "$endpoints" >"$dir/endpoints"
  echo "==> cluster id $cluster_id, secret file $dir/secret"
  echo "==> endpoints: $endpoints"
}

# Dies when a recorded pandora-fd replica still runs ($1: what to do first).
refuse_running_fds() {
  local i pid
  for i in $(recorded_fds); do
    pid="$(cat "$dir/fd$i.pid" 2>/dev/null || true)"
    if is_fd_pid "$pid"; then
      die "a failure detector is already running from $dir (fd$i pid $pid); stop it first: $1"
    fi
  done
}

start_all() {
  [[ -x "$memd" ]] || die "pandora-memd not found at '$memd' (build it: bash deploy/setup.sh release, or pass --memd PATH)"
  private_dir "$dir" "cluster directory" || exit 2
  local i pid
  for i in $(recorded_nodes); do
    pid="$(cat "$dir/node$i.pid" 2>/dev/null || true)"
    if is_memd_pid "$pid"; then
      die "a cluster is already running from $dir (node$i pid $pid); stop it first: $0 stop --dir $dir"
    fi
  done
  refuse_running_fds "$0 stop --dir $dir"
  if [[ $zookeeper -eq 1 ]]; then
    [[ -x "$ctl_bin" ]] || die "pandora-ctl not found at '$ctl_bin' (build it: bash deploy/setup.sh release, or pass --ctl PATH)"
  fi
  if [[ $fd_replicas -gt 0 ]]; then
    [[ -x "$fd_bin" ]] || die "pandora-fd not found at '$fd_bin' (build it: bash deploy/setup.sh release, or pass --fd PATH)"
  fi
  rm -f -- "$dir"/fd*.pid "$dir/zk_connect" "$dir/zk_root" "$dir/fd_timeout_us" "$dir/fd_ports"
  rm -f -- "$dir"/node*.pid "$dir"/node*.port "$dir/endpoints"

  # The secret and the directory holding the regions are readable by this
  # user only: anyone who can read the secret can join the cluster.
  (umask 077 && mkdir -p "$region_dir")
  [[ -O "$region_dir" ]] || die "$region_dir is not owned by $user; choose another --region-dir"
  ensure_cluster_secret "$dir"
  cluster_id="$(ensure_cluster_id "$dir" "$cluster_id")"
  echo "$region_dir" >"$dir/region_dir"
  echo "$size" >"$dir/region_size"
  echo "$log_size" >"$dir/log_size"

  # With a failure detector, the daemons heartbeat its replicas so a memory
  # node's death is failed over (recovery/README.md): the replicas' UDP
  # ports are reserved now, before either side starts (DIR/fd_ports).
  if [[ $zookeeper -eq 1 ]]; then
    reserve_fd_ports "$((fd_replicas > 0 ? fd_replicas : 3))" >"$dir/fd_ports"
  fi
  local -a all=()
  for ((i = 1; i <= nodes; i++)); do
    echo "$region_dir/node$i.pm" >"$dir/node$i.region"
    : >"$dir/node$i.log"
    launch_memd "$i" --size "$size" --log-size "$log_size"
    all+=("$i")
  done
  collect_endpoints "${all[@]}"
  local endpoints
  endpoints="$(cat "$dir/endpoints")"
  [[ $zookeeper -eq 1 ]] || return 0

  start_zk "$endpoints"
  [[ $fd_replicas -gt 0 ]] || return 0
  start_fds
}

# Starts the ensemble in DIR/zk and creates the cluster's tree in it.
start_zk() {
  local endpoints="$1" connect
  echo "==> starting a ZooKeeper ensemble of $zk_servers server(s) in $dir/zk (transaction logs on disk$(
    [[ ${#zk_fsync[@]} -eq 0 ]] || echo ", not fsynced"))"
  if ! bash "$script_dir/zookeeper.sh" start --dir "$dir/zk" --servers "$zk_servers" --tick-ms "$zk_tick_ms" \
      --nice "$zk_nice" ${zk_fsync[@]+"${zk_fsync[@]}"} >"$dir/zk_start.log" 2>&1; then
    cat "$dir/zk_start.log" >&2
    stop_all || true
    die "the ZooKeeper ensemble did not start (see above)"
  fi
  connect="$(cat "$dir/zk/zk_connect")"
  echo "$connect" >"$dir/zk_connect"
  echo "$zk_root" >"$dir/zk_root"
  local -a proto=()
  # Passed only when not the default, so a pandora-ctl without the flag works.
  [[ "$protocol" == pandora ]] || proto=(--protocol "$protocol")
  if ! "$ctl_bin" init --zookeeper "$connect" --zk-root "$zk_root" --cluster-id "$cluster_id" \
      --secret-file "$dir/secret" --memory-nodes "$endpoints" --lane-bytes "$lane_bytes" ${proto[@]+"${proto[@]}"} \
      </dev/null; then
    stop_all || true
    die "pandora-ctl init failed (see above)"
  fi
  echo "==> zookeeper: $connect (root $zk_root)"
}

# Prints N free loopback UDP ports, one per line (bound together, so
# distinct; released on exit, to be bound again by the replicas).
reserve_fd_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print("\n".join(str(s.getsockname()[1]) for s in socks))
PY
}

# Starts the pandora-fd replicas and waits (bounded) until every one has
# announced itself in ZooKeeper and one is the leader; with $1 = 1 also until
# the leader has its data plane (it sets it up once the tables are loaded and
# logs "leader data plane").
start_fds() {
  local wait_data_plane="${1:-0}" ready="is the leader" i pid connect
  [[ "$wait_data_plane" -eq 0 ]] || ready="leader data plane"
  # 2 (restart): the data plane, or the leader saying there are no tables
  # to attach to yet (a cluster restarted before anything was loaded).
  [[ "$wait_data_plane" -ne 2 ]] || ready="leader data plane|are the tables loaded\?"
  # On failure: start-fd stops only the replicas (the cluster was running
  # before), start stops everything it started.
  local on_fail=stop_all
  [[ "$wait_data_plane" -eq 0 ]] || on_fail=stop_fds
  connect="$(cat "$dir/zk_connect")"
  echo "$fd_timeout_us" >"$dir/fd_timeout_us"
  local ports=()
  [[ ! -f "$dir/fd_ports" ]] || mapfile -t ports <"$dir/fd_ports"
  for ((i = 1; i <= fd_replicas; i++)); do
    # The port the memory daemons heartbeat, if one was reserved for it.
    local port="${ports[$((i - 1))]:-0}"
    nice -n "$fd_nice" "$fd_bin" --zookeeper "$connect" --zk-root "$zk_root" --cluster-id "$cluster_id" \
      --secret-file "$dir/secret" --replica-id "$i" --replicas "$fd_replicas" --listen "127.0.0.1:$port" \
      --timeout-us "$fd_timeout_us" --log-level "$log_level" ${fd_args[@]+"${fd_args[@]}"} \
      </dev/null >"$dir/fd$i.log" 2>&1 &
    echo "$!" >"$dir/fd$i.pid"
  done
  local deadline=$((SECONDS + 30)) status=""
  while :; do
    for i in $(recorded_fds); do
      pid="$(cat "$dir/fd$i.pid")"
      # alive, not is_fd_pid: right after the fork the child is still bash.
      if ! alive "$pid"; then
        echo "cluster.sh: pandora-fd replica $i (pid $pid) exited during start-up; its log ($dir/fd$i.log):" >&2
        tail -n 20 "$dir/fd$i.log" >&2 || true
        "$on_fail" || true
        exit 1
      fi
    done
    status="$("$ctl_bin" status --zookeeper "$connect" --zk-root "$zk_root" --cluster-id "$cluster_id" \
      --secret-file "$dir/secret" </dev/null 2>&1 || true)"
    if grep -q "^fd replicas ($fd_replicas):" <<<"$status" && grep -qsE "$ready" "$dir"/fd*.log; then
      break
    fi
    if [[ $SECONDS -ge $deadline ]]; then
      echo "cluster.sh: the $fd_replicas pandora-fd replica(s) were not ready within 30 s; status:" >&2
      echo "$status" >&2
      for i in $(recorded_fds); do echo "--- $dir/fd$i.log" >&2; tail -n 10 "$dir/fd$i.log" >&2 || true; done
      "$on_fail" || true
      exit 1
    fi
    sleep 0.1
  done
  for i in $(recorded_fds); do
    echo "==> pandora-fd replica $i: pid $(cat "$dir/fd$i.pid"), log $dir/fd$i.log"
  done
  echo "==> failure detector: $fd_replicas replica(s), timeout ${fd_timeout_us} us${fd_args[*]:+, ${fd_args[*]}}, nice $fd_nice; $(grep -h "is the leader" "$dir"/fd*.log | head -n1 | sed 's/.*\(replica [0-9]* is the leader\).*/\1/')"
}

status_all() {
  local i pid port state any=0 down=0
  for i in $(recorded_nodes); do
    any=1
    pid="$(cat "$dir/node$i.pid" 2>/dev/null || true)"
    port="$(cat "$dir/node$i.port" 2>/dev/null || echo "?")"
    if is_memd_pid "$pid"; then state="running"; else state="not running"; down=1; fi
    echo "node$i: pid $pid, 127.0.0.1:$port, $state"
  done
  [[ $any -eq 1 ]] || { echo "no cluster recorded in $dir"; return 1; }
  for i in $(recorded_fds); do
    pid="$(cat "$dir/fd$i.pid" 2>/dev/null || true)"
    if is_fd_pid "$pid"; then state="running"; else state="not running"; down=1; fi
    echo "fd$i: pid $pid, $state, log $dir/fd$i.log"
  done
  if [[ -d "$dir/zk" ]]; then
    bash "$script_dir/zookeeper.sh" status --dir "$dir/zk" | sed 's/^/zookeeper: /' || down=1
    if [[ -s "$dir/zk_connect" && -x "$ctl_bin" ]]; then
      "$ctl_bin" status --zookeeper "$(cat "$dir/zk_connect")" --zk-root "$(cat "$dir/zk_root" 2>/dev/null || echo /pandora)" \
        --cluster-id "$(cat "$dir/cluster_id")" --secret-file "$dir/secret" </dev/null | sed 's/^/pandora-ctl: /' || down=1
    fi
  fi
  return "$down"
}

# restart: the whole cluster back from DIR (see usage).
restart_all() {
  private_dir "$dir" "cluster directory" || exit 2
  [[ -s "$dir/cluster_id" && -s "$dir/secret" && -s "$dir/region_dir" ]] ||
    die "no cluster recorded in $dir (cluster_id, secret, region_dir): start one instead"
  [[ -x "$memd" ]] || die "pandora-memd not found at '$memd' (build it: bash deploy/setup.sh release, or pass --memd PATH)"
  local i pid region
  local -a indices=()
  mapfile -t indices < <(recorded_nodes)
  [[ ${#indices[@]} -gt 0 ]] || die "no memory node recorded in $dir: start a cluster instead"
  for i in "${indices[@]}"; do
    pid="$(cat "$dir/node$i.pid" 2>/dev/null || true)"
    if is_memd_pid "$pid"; then
      die "node$i still runs (pid $pid): restart brings back a cluster that is down; stop it first: $0 stop --dir $dir --keep"
    fi
    [[ -s "$dir/node$i.region" ]] || die "node$i has no region recorded ($dir/node$i.region)"
    region="$(cat "$dir/node$i.region")"
    [[ -f "$region" ]] ||
      die "node$i's region $region is gone (stopped without --keep, or a reboot of a host whose regions" \
        "are on /dev/shm): its data cannot come back"
  done
  refuse_running_fds "$0 stop --dir $dir --keep"
  cluster_id="$(cat "$dir/cluster_id")"
  region_dir="$(cat "$dir/region_dir")"
  # Whatever fails from here, the regions and the ensemble's data stay.
  keep=1
  local with_zk=0
  [[ ! -d "$dir/zk" ]] || with_zk=1
  if [[ $fd_replicas -gt 0 && $with_zk -eq 0 ]]; then
    die "--fd-replicas needs the ensemble: $dir was started without --zookeeper"
  fi
  if [[ $with_zk -eq 1 ]]; then
    [[ -x "$ctl_bin" ]] || die "pandora-ctl not found at '$ctl_bin' (build it: bash deploy/setup.sh release, or pass --ctl PATH)"
  fi
  if [[ $fd_replicas -gt 0 ]]; then
    [[ -x "$fd_bin" ]] || die "pandora-fd not found at '$fd_bin' (build it: bash deploy/setup.sh release, or pass --fd PATH)"
  fi
  rm -f -- "$dir"/fd*.pid "$dir"/node*.pid "$dir"/node*.port "$dir/endpoints"

  # The ensemble first: it says which memory nodes were failed over (those
  # stay down: their regions are stale) and where the others must be recorded.
  local connect="" failed_ids=""
  if [[ $with_zk -eq 1 ]]; then
    echo "==> resuming the ZooKeeper ensemble in $dir/zk"
    if ! bash "$script_dir/zookeeper.sh" resume --dir "$dir/zk" >"$dir/zk_start.log" 2>&1; then
      cat "$dir/zk_start.log" >&2
      die "the ZooKeeper ensemble did not come back (see above)"
    fi
    connect="$(cat "$dir/zk/zk_connect")"
    echo "$connect" >"$dir/zk_connect"
    zk_root="$(cat "$dir/zk_root" 2>/dev/null || echo "$zk_root")"
    echo "$zk_root" >"$dir/zk_root"
    local status
    if ! status="$("$ctl_bin" status --zookeeper "$connect" --zk-root "$zk_root" --cluster-id "$cluster_id" \
        --secret-file "$dir/secret" </dev/null 2>&1)"; then
      echo "$status" >&2
      stop_zk || true
      die "pandora-ctl status failed on the resumed ensemble (see above)"
    fi
    failed_ids="$(sed -n 's/^failed over (out of the configuration)://p' <<<"$status" |
      grep -o 'node [0-9]*' | cut -d' ' -f2 || true)"
  fi

  local -a started=()
  for i in "${indices[@]}"; do
    if grep -qx "$i" <<<"$failed_ids"; then
      echo "==> node$i was failed over: it stays down (its region is stale; its shards are served by the other replicas)"
      continue
    fi
    # No --size/--log-size: the region keeps its own; --node-id and
    # --cluster-id must match its header (memd refuses otherwise).
    launch_memd "$i"
    started+=("$i")
  done
  [[ ${#started[@]} -gt 0 ]] || { stop_all || true; die "every memory node was failed over: nothing to restart"; }
  collect_endpoints "${started[@]}"
  local endpoints
  endpoints="$(cat "$dir/endpoints")"
  [[ $with_zk -eq 1 ]] || return 0

  if ! "$ctl_bin" set-memory-nodes --zookeeper "$connect" --zk-root "$zk_root" --cluster-id "$cluster_id" \
      --secret-file "$dir/secret" --memory-nodes "$endpoints" </dev/null; then
    stop_all || true
    die "pandora-ctl set-memory-nodes failed (see above); everything stopped, data kept"
  fi
  echo "==> zookeeper: $connect (root $zk_root)"
  [[ $fd_replicas -gt 0 ]] || return 0
  start_fds 2
}

# replace: failed-over node --node I filled again (see usage).
replace_one() {
  [[ "$replace_node" =~ ^[1-9][0-9]*$ ]] || die "replace needs --node I (the failed-over node's index), got '$replace_node'"
  local i="$replace_node" pid region port deadline
  [[ -s "$dir/zk_connect" && -s "$dir/cluster_id" && -s "$dir/secret" ]] ||
    die "no cluster with ZooKeeper recorded in $dir: replace needs the detector's leader to fill the node"
  [[ -x "$memd" ]] || die "pandora-memd not found at '$memd' (build it: bash deploy/setup.sh release, or pass --memd PATH)"
  [[ -x "$ctl_bin" ]] || die "pandora-ctl not found at '$ctl_bin' (build it: bash deploy/setup.sh release, or pass --ctl PATH)"
  [[ -s "$dir/node$i.region" ]] || die "node$i is not recorded in $dir"
  pid="$(cat "$dir/node$i.pid" 2>/dev/null || true)"
  if is_memd_pid "$pid"; then
    # Live, or failed over while it still runs (cut off, not dead): its
    # heartbeats would speak for the replacement under the same node id.
    die "node$i's daemon still runs (pid $pid): only a failed-over node is replaced, and its old daemon must be" \
      "stopped first"
  fi
  cluster_id="$(cat "$dir/cluster_id")"
  zk_root="$(cat "$dir/zk_root" 2>/dev/null || echo "$zk_root")"
  [[ ! -s "$dir/region_size" ]] || size="$(cat "$dir/region_size")"
  [[ ! -s "$dir/log_size" ]] || log_size="$(cat "$dir/log_size")"
  local -a zk=(--zookeeper "$(cat "$dir/zk_connect")" --zk-root "$zk_root" --cluster-id "$cluster_id"
               --secret-file "$dir/secret")
  # Refused before anything is touched: a node that was never failed over.
  if ! "$ctl_bin" status "${zk[@]}" </dev/null 2>/dev/null |
      sed -n 's/^failed over (out of the configuration)://p' | grep -qw "node $i"; then
    die "node$i is not failed over (pandora-ctl status): only a failed-over node is replaced"
  fi
  # Its old region is stale: a fresh one under the same path.
  region="$(cat "$dir/node$i.region")"
  rm -f -- "$region"
  rm -rf -- "$region".shm.??????
  rm -f -- "$dir/node$i.port"
  launch_memd "$i" --size "$size" --log-size "$log_size"
  pid="$(cat "$dir/node$i.pid")"
  deadline=$((SECONDS + 30))
  port="$(wait_port_file "cluster.sh: node$i" "$pid" "$dir/node$i.port" "$dir/node$i.log" "$deadline")" ||
    die "the replacement daemon for node$i did not start"
  echo "==> node$i: replacement daemon pid $pid, 127.0.0.1:$port, fresh region $region"
  if ! "$ctl_bin" replace-memory-node "$i" --endpoint "127.0.0.1:$port" "${zk[@]}" </dev/null; then
    stop_pids "cluster.sh: pid" is_memd_pid "$pid" || true
    rm -f -- "$dir/node$i.pid" "$dir/node$i.port"
    die "node$i was not brought back (see above); its replacement daemon is stopped"
  fi
  local endpoints="" n
  for n in $(recorded_nodes); do
    pid="$(cat "$dir/node$n.pid" 2>/dev/null || true)"
    if is_memd_pid "$pid" && [[ -s "$dir/node$n.port" ]]; then
      endpoints+="${endpoints:+,}127.0.0.1:$(cat "$dir/node$n.port")"
    fi
  done
  echo "$endpoints" >"$dir/endpoints"
  echo "==> endpoints: $endpoints"
}

# start-fd: a detector for a running cluster started with --zookeeper.
start_fd_only() {
  [[ -s "$dir/zk_connect" && -s "$dir/cluster_id" ]] ||
    die "no ZooKeeper recorded in $dir: start the cluster with --zookeeper first"
  [[ -x "$fd_bin" ]] || die "pandora-fd not found at '$fd_bin' (build it: bash deploy/setup.sh release, or pass --fd PATH)"
  [[ -x "$ctl_bin" ]] || die "pandora-ctl not found at '$ctl_bin' (build it: bash deploy/setup.sh release, or pass --ctl PATH)"
  local i pid
  for i in $(recorded_fds); do
    pid="$(cat "$dir/fd$i.pid" 2>/dev/null || true)"
    if is_fd_pid "$pid"; then
      die "a failure detector is already running from $dir (fd$i pid $pid); stop it first: $0 stop --dir $dir"
    fi
  done
  rm -f -- "$dir"/fd*.pid
  cluster_id="$(cat "$dir/cluster_id")"
  zk_root="$(cat "$dir/zk_root" 2>/dev/null || echo "$zk_root")"
  start_fds 1
}

case "$cmd" in
  start) start_all ;;
  start-fd) start_fd_only ;;
  restart) restart_all ;;
  replace) replace_one ;;
  stop)
    [[ -d "$dir" ]] || die "no cluster state directory $dir"
    stop_all && echo "==> cluster in $dir stopped" || { echo "==> cluster in $dir stopped (some daemons needed SIGKILL)"; exit 1; }
    ;;
  status) status_all ;;
esac
