#!/usr/bin/env bash
# Multi-host on one machine: a Pandora cluster whose memory daemons, ZooKeeper
# ensemble, pandora-fd replicas and compute nodes each live in their own
# network namespace, joined by veth pairs to one bridge and talking tcp, with
# fault injection (kill, partition, delay, loss).
#
#   bash deploy/netns/netns.sh start --dir /tmp/pn --memory-nodes 2 [--zookeeper --fd-replicas 3]
#   bash deploy/netns/netns.sh run-compute c1 --dir /tmp/pn -- pandora-bench ARGS...
#   bash deploy/netns/netns.sh partition mem2 --dir /tmp/pn     (heal, kill, delay, loss)
#   bash deploy/netns/netns.sh stop --dir /tmp/pn
#
# Topology: a "switch" namespace PREFIX-sw holds the bridge PREFIXbr and the
# switch-side end PREFIXs<h> of every veth pair; node NAME's namespace
# PREFIX-NAME holds the other end PREFIXn<h> with the address SUBNET.<h>.
# Nothing is created in the caller's namespace: the bridge has no address, so
# runs never touch the host's interfaces or routes, and two runs (even with
# the same --subnet) are separate networks. Deleting a run's namespaces
# deletes every link it made.
#
# State recorded in DIR (status, stop and the fault commands find it there):
#   prefix, subnet       the run's name prefix and its /24 (A.B.C)
#   namespaces           every namespace created, one a line, written BEFORE
#                        it is created, so stop also removes a half-made run
#   nodes/NAME           node NAME: kind, host number, address, namespace, links
#   NAME.pid             "PID STARTTIME" of NAME's process (the start time
#                        from /proc/PID/stat, so a recycled pid is never signalled)
#   NAME.log             its stdout+stderr    NAME.rc  a compute node's exit code
#   NAME.port            a memory daemon's port
#   secret, cluster_id, endpoints, region_dir        as deploy/local/cluster.sh
#   zk/, zk_connect, zk_root                         with --zookeeper
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"
# shellcheck source=deploy/lib/cluster_common.sh
source "$root/deploy/lib/cluster_common.sh"

# Exit codes (scripts and the tests rely on them).
readonly EXIT_FAIL=1 EXIT_USAGE=2 EXIT_UNSUPPORTED=3 EXIT_TIMEOUT=124

usage() {
  cat <<USAGE
Usage: bash deploy/netns/netns.sh COMMAND [NAME] --dir DIR [options] [-- CMD ARGS...]

Runs a Pandora cluster with every process in its own network namespace (one
per memory daemon, one for the ZooKeeper ensemble, one per pandora-fd
replica, one per compute node), joined by veth pairs to a bridge; clients use
the tcp transport across them. Needs root and 'ip netns'. Names: mem<i>,
zk, fd<i>, and the compute nodes' own names.

Commands:
  start             create the network and start the daemons (options below)
  run-compute NAME [--background] -- CMD ARGS...
                    run CMD (e.g. pandora-bench) in compute node NAME's
                    namespace (created on first use, kept until stop; NAME:
                    a-z0-9_, at most 8 characters). In the foreground its
                    output goes to the terminal and netns.sh exits with its
                    exit code; --background returns once it started, output
                    in DIR/NAME.log, exit code in DIR/NAME.rc (see wait)
  wait NAME [--timeout-s S]
                    wait for compute node NAME's command to end; exits with
                    its exit code, or $EXIT_TIMEOUT when still running after S s [60]
  exec NAME -- CMD ARGS...
                    run CMD in NAME's namespace (foreground, its exit code)
  kill NAME [--signal SIG]
                    signal NAME's process (default KILL: a crash); zk<i>
                    kills ZooKeeper server i (deploy/local/zookeeper.sh kill)
  partition NAME    cut NAME off the network: its switch port goes down
                    (ip link set down), so its packets are dropped, no error
                    is reported to either side, tcp connections time out
  heal NAME         bring its switch port up again
  delay NAME MS     delay every packet NAME sends by MS ms (tc netem on its
                    interface; 0 removes it)
  loss NAME PCT     drop PCT % of the packets NAME sends (tc netem; 0 removes it)
  status            nodes, addresses, processes, link state, faults; with
                    ZooKeeper also the ensemble and 'pandora-ctl status'
  stop              stop every process of the run (SIGTERM, SIGKILL after
                    10 s, by recorded pid), kill what is left in its
                    namespaces, delete the namespaces (and with them every
                    link and the bridge) and the region files
  check [--netem]   exit 0 when this host can run netns.sh (root, ip netns,
                    veth, bridge; with --netem also tc netem), else say what
                    is missing and exit $EXIT_UNSUPPORTED

Options (start):
  --dir DIR            state directory                              [required]
  --memory-nodes N     memory daemons, namespaces mem1..memN        [2]
  --zookeeper          also a ZooKeeper ensemble (namespace zk) and
                       'pandora-ctl init' for this cluster
  --zk-servers N       servers in the ensemble (all in namespace zk)  [3]
  --zk-no-fsync        ZooKeeper writes its log without fsync (tests)
  --zk-root PATH       the cluster's ZooKeeper path                 [/pandora]
  --fd-replicas N      pandora-fd replicas (needs --zookeeper), namespaces
                       fd1..fdN; start returns once all announced
                       themselves and one leads                     [0]
  --fd-timeout-us US   pandora-fd --timeout-us                      [200000]
                       (longer than cluster.sh's 5 ms: namespaces and
                       bridges add scheduling on a small shared machine)
  --fd-arg ARG         pass ARG to every pandora-fd (repeatable)
  --subnet A.B.C.0/24  the run's private IPv4 /24 (10/8, 172.16/12 or
                       192.168/16); node addresses are A.B.C.1, .2, ...
                       Each run is its own network, so runs may share it [10.213.0.0/24]
  --prefix P           name prefix of the run's namespaces and links (a-z
                       then 1-5 of a-z0-9)           [pn + 4 random hex digits]
  --size SIZE          region size per memory daemon                [64M]
  --log-size SIZE      log area per memory daemon                   [16M]
  --log-level LEVEL    daemons' log level                           [info]
  --exit-with-pid PID  the daemons (and the ensemble's watchdog) stop when
                       PID ends: a test harness that is SIGKILLed leaves no
                       process behind (its namespaces: 'stop --dir' removes them)
  --build DIR          where the binaries are            [build/release]
  --memd PATH / --fd PATH / --ctl PATH   binaries [BUILD/memory/pandora-memd,
                       BUILD/recovery/pandora-fd, BUILD/deploy/pandora-ctl]
  -h, --help           this help

Clients find the cluster in DIR: endpoints (for --memory-nodes), secret,
cluster_id, zk_connect, zk_root. Example:
  B=build/release/workloads/bench/pandora-bench D=/tmp/pn
  bash deploy/netns/netns.sh run-compute c1 --dir \$D -- \$B --memory-nodes "\$(cat \$D/endpoints)" \\
      --cluster-id "\$(cat \$D/cluster_id)" --secret-file \$D/secret --compute-id 1 \\
      --workload smallbank --load --backend tcp --seconds 5

Exit codes: 0 done, $EXIT_FAIL failed, $EXIT_USAGE usage, $EXIT_UNSUPPORTED not possible on this
host (not root, no 'ip netns', veth or bridge; delay/loss: no tc netem,
e.g. kernel module sch_netem missing), $EXIT_TIMEOUT wait timed out; run-compute
(foreground), exec and wait exit with the command's own exit code.
USAGE
}

die() { echo "netns.sh: error: $*" >&2; exit "$EXIT_FAIL"; }
usage_error() { echo "netns.sh: error: $*" >&2; echo "(see bash deploy/netns/netns.sh --help)" >&2; exit "$EXIT_USAGE"; }
unsupported() { echo "netns.sh: not supported on this host: $*" >&2; exit "$EXIT_UNSUPPORTED"; }
say() { echo "==> $*"; }

[[ $# -ge 1 ]] || { usage >&2; exit "$EXIT_USAGE"; }
cmd="$1"
shift
case "$cmd" in
  -h|--help) usage; exit 0 ;;
  start|run-compute|wait|exec|kill|partition|heal|delay|loss|status|stop|check) ;;
  *) usage_error "unknown command '$cmd' (expected start, run-compute, wait, exec, kill, partition, heal, delay, loss, status, stop or check)" ;;
esac

dir=""
memory_nodes=2
zookeeper=0
zk_servers=3
zk_fsync=()
zk_root=/pandora
fd_replicas=0
fd_port=7100  # each replica in its own namespace: a fixed port collides with nothing
fd_timeout_us=200000
fd_args=()
subnet="10.213.0.0/24"
prefix=""
size=64M
log_size=16M
log_level=info
exit_with_pid=""
build="$root/build/release"
memd="" fd_bin="" ctl_bin=""
background=0
timeout_s=60
signal=KILL
netem=0
positional=()
command_argv=()

need_value() { [[ $# -ge 2 && -n "$2" ]] || usage_error "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) need_value "$@"; dir="$2"; shift 2 ;;
    --memory-nodes) need_value "$@"; memory_nodes="$2"; shift 2 ;;
    --zookeeper) zookeeper=1; shift ;;
    --zk-servers) need_value "$@"; zk_servers="$2"; shift 2 ;;
    --zk-no-fsync) zk_fsync=(--no-fsync); shift ;;
    --zk-root) need_value "$@"; zk_root="$2"; shift 2 ;;
    --fd-replicas) need_value "$@"; fd_replicas="$2"; shift 2 ;;
    --fd-timeout-us) need_value "$@"; fd_timeout_us="$2"; shift 2 ;;
    --fd-arg) need_value "$@"; fd_args+=("$2"); shift 2 ;;
    --fd-arg=*) fd_args+=("${1#--fd-arg=}"); shift ;;
    --subnet) need_value "$@"; subnet="$2"; shift 2 ;;
    --prefix) need_value "$@"; prefix="$2"; shift 2 ;;
    --size) need_value "$@"; size="$2"; shift 2 ;;
    --log-size) need_value "$@"; log_size="$2"; shift 2 ;;
    --log-level) need_value "$@"; log_level="$2"; shift 2 ;;
    --exit-with-pid) need_value "$@"; exit_with_pid="$2"; shift 2 ;;
    --build) need_value "$@"; build="$2"; shift 2 ;;
    --memd) need_value "$@"; memd="$2"; shift 2 ;;
    --fd) need_value "$@"; fd_bin="$2"; shift 2 ;;
    --ctl) need_value "$@"; ctl_bin="$2"; shift 2 ;;
    --background) background=1; shift ;;
    --timeout-s) need_value "$@"; timeout_s="$2"; shift 2 ;;
    --signal) need_value "$@"; signal="$2"; shift 2 ;;
    --netem) netem=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; command_argv=("$@"); break ;;
    -*) usage_error "unknown option '$1'" ;;
    *) positional+=("$1"); shift ;;
  esac
done

memd="${memd:-$build/memory/pandora-memd}"
fd_bin="${fd_bin:-$build/recovery/pandora-fd}"
ctl_bin_given="$ctl_bin"
ctl_bin="${ctl_bin:-$build/deploy/pandora-ctl}"

# ---------------------------------------------------------------- checks --

# Says why this host cannot run the launcher (exit 3), or returns.
check_host() {
  [[ "$(id -u)" -eq 0 ]] || unsupported "network namespaces need root (uid $(id -u))"
  command -v ip >/dev/null 2>&1 || unsupported "'ip' (iproute2) not found"
  # A throw-away namespace with a bridge and a veth pair: exactly what start
  # needs. Its name is unique to this process, and it is deleted on every path.
  local probe="pnchk$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    unsupported "'ip netns add' failed (no network namespace support, or /run/netns not writable)"
  fi
  local why=""
  if ! ip -n "$probe" link add "${probe}b" type bridge 2>/dev/null; then
    why="cannot create a bridge in a network namespace"
  elif ! ip -n "$probe" link add "${probe}x" type veth peer name "${probe}y" 2>/dev/null; then
    why="cannot create a veth pair in a network namespace"
  elif [[ "$netem" -eq 1 ]]; then
    if ! command -v tc >/dev/null 2>&1; then
      why="'tc' not found: delay and loss need tc netem"
    elif ! ip -n "$probe" link set lo up 2>/dev/null ||
         ! tc -n "$probe" qdisc add dev lo root netem delay 1ms 2>/dev/null; then
      why="tc netem is not available (kernel module sch_netem missing?): delay and loss cannot be injected; kill, partition and heal work"
    fi
  fi
  ip netns del "$probe" 2>/dev/null || true
  [[ -z "$why" ]] || unsupported "$why"
}

# A /24 of the private ranges, as A.B.C.0/24; prints A.B.C.
parse_subnet() {
  local s="$1"
  [[ "$s" =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.0/24$ ]] ||
    usage_error "--subnet must be A.B.C.0/24, got '$s'"
  local a=$((10#${BASH_REMATCH[1]})) b=$((10#${BASH_REMATCH[2]})) c=$((10#${BASH_REMATCH[3]}))
  ((a <= 255 && b <= 255 && c <= 255)) || usage_error "--subnet '$s' is not an IPv4 network"
  if ! ((a == 10 || (a == 172 && b >= 16 && b <= 31) || (a == 192 && b == 168))); then
    usage_error "--subnet '$s' is not private (10/8, 172.16/12, 192.168/16)"
  fi
  echo "$a.$b.$c"
}

# ----------------------------------------------------------------- state --

require_dir() {
  [[ -n "$dir" ]] || usage_error "--dir DIR is required"
  if [[ "$cmd" != start ]]; then
    [[ -s "$dir/prefix" ]] || die "no run recorded in $dir (no $dir/prefix); start one with: $0 start --dir $dir"
    prefix="$(cat "$dir/prefix")"
    [[ "$prefix" =~ ^[a-z][a-z0-9]{1,5}$ ]] || die "$dir/prefix holds '$prefix', not a prefix this script writes"
    # status talks to ZooKeeper with the pandora-ctl start used.
    if [[ -z "$ctl_bin_given" && -s "$dir/ctl_bin" ]]; then ctl_bin="$(cat "$dir/ctl_bin")"; fi
  fi
}

ns_name() { echo "$prefix-$1"; }
switch_ns() { ns_name sw; }

# node_get NAME KEY: a field of DIR/nodes/NAME (written by add_node).
node_get() {
  local f="$dir/nodes/$1" key="$2" line
  [[ -f "$f" ]] || return 1
  while IFS= read -r line; do
    if [[ "${line%%=*}" == "$key" ]]; then echo "${line#*=}"; return 0; fi
  done <"$f"
  return 1
}

node_exists() { [[ -f "$dir/nodes/$1" ]]; }
recorded_nodes() {  # in the order they were created
  [[ -f "$dir/node_order" ]] && cat "$dir/node_order"
  return 0
}

# The start time of process $1 in clock ticks since boot (field 22 of
# /proc/PID/stat; the fields after the command name, which may hold spaces).
proc_starttime() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  local -a f
  read -r -a f <<<"$stat"
  echo "${f[19]}"
}

record_pid() {  # record_pid NAME PID
  local st
  st="$(proc_starttime "$2" || echo 0)"
  echo "$2 $st" >"$dir/$1.pid.tmp"
  mv -f -- "$dir/$1.pid.tmp" "$dir/$1.pid"
}

# Prints NAME's recorded pid when that process still runs (same start time).
live_pid() {
  local name="$1" pid st
  [[ -s "$dir/$name.pid" ]] || return 1
  read -r pid st <"$dir/$name.pid" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  proc_alive "$pid" || return 1
  [[ "$(proc_starttime "$pid" || true)" == "$st" ]] || return 1
  echo "$pid"
}

# For stop_pids: is $1 still the process recorded for it (pid + start time)?
declare -A expected_start=()
pid_is_ours() {
  local pid="$1"
  [[ -n "${expected_start[$pid]:-}" ]] || return 1
  proc_alive "$pid" || return 1
  [[ "$(proc_starttime "$pid" || true)" == "${expected_start[$pid]}" ]]
}

# ---------------------------------------------------------------- network --

# Creates node NAME (kind KIND): its namespace, a veth pair to the switch,
# the next free address. Recorded before anything is created.
add_node() {
  local name="$1" kind="$2" host ns sveth nveth base
  base="$(cat "$dir/subnet")"
  host="$(cat "$dir/next_host")"
  [[ "$host" -le 254 ]] || die "no address left in $base.0/24 for $name (254 nodes at most)"
  echo $((host + 1)) >"$dir/next_host"
  ns="$(ns_name "$name")"
  sveth="${prefix}s$host"
  nveth="${prefix}n$host"
  mkdir -p "$dir/nodes"
  cat >"$dir/nodes/$name" <<NODE
kind=$kind
host=$host
addr=$base.$host
ns=$ns
sveth=$sveth
nveth=$nveth
NODE
  echo "$name" >>"$dir/node_order"
  echo "$ns" >>"$dir/namespaces"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n "$(switch_ns)" link add "$sveth" type veth peer name "$nveth" netns "$ns"
  ip -n "$(switch_ns)" link set "$sveth" master "${prefix}br"
  ip -n "$(switch_ns)" link set "$sveth" up
  ip -n "$ns" addr add "$base.$host/24" dev "$nveth"
  ip -n "$ns" link set "$nveth" up
}

create_switch() {
  local sw
  sw="$(switch_ns)"
  echo "$sw" >>"$dir/namespaces"
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add "${prefix}br" type bridge
  ip -n "$sw" link set "${prefix}br" up
}

# Runs CMD... in NAME's namespace, detached from the caller (stdin, stdout
# and stderr: a daemon must not hold the pipe of whoever ran us, e.g. ctest),
# output to DIR/NAME.log; records its pid. `ip netns exec` execs CMD in the
# same process, so the pid is CMD's.
launch() {
  local name="$1"
  shift
  ip netns exec "$(node_get "$name" ns)" "$@" </dev/null >"$dir/$name.log" 2>&1 &
  record_pid "$name" "$!"
}

# -------------------------------------------------------------------- stop --

# Stops everything the run in DIR made. Returns 1 when something needed
# SIGKILL or could not be removed.
stop_all() {
  local rc=0 name pid st ns
  local -a pids=()
  # Compute nodes first (they would count the daemons' exit as failures),
  # then the detector (it would count the daemons' exit as failures too),
  # then the memory daemons, then ZooKeeper.
  local kind
  for kind in compute fd memd; do
    pids=()
    for name in $(recorded_nodes); do
      [[ "$(node_get "$name" kind || true)" == "$kind" ]] || continue
      [[ -s "$dir/$name.pid" ]] || continue
      read -r pid st <"$dir/$name.pid" || continue
      [[ "$pid" =~ ^[0-9]+$ ]] || continue
      expected_start[$pid]="$st"
      pids+=("$pid")
    done
    stop_pids "netns.sh: $kind pid" pid_is_ours ${pids[@]+"${pids[@]}"} || rc=1
  done
  if [[ -d "$dir/zk" ]]; then
    # Signals recorded pids only; needs no network, so it runs here.
    bash "$root/deploy/local/zookeeper.sh" stop --dir "$dir/zk" >/dev/null || rc=1
  fi
  # Whatever still runs in the run's namespaces was started in them by this
  # run (a compute command's children, say): kill it by pid, or the
  # namespace would outlive its name.
  local -a namespaces=()
  [[ -f "$dir/namespaces" ]] && mapfile -t namespaces <"$dir/namespaces"
  for ns in ${namespaces[@]+"${namespaces[@]}"}; do
    [[ -e "/run/netns/$ns" ]] || continue
    for pid in $(ip netns pids "$ns" 2>/dev/null || true); do
      echo "netns.sh: pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-80)) still runs in $ns; SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
  # Node namespaces before the switch (deleting one removes its veth pair).
  local i
  for ((i = ${#namespaces[@]} - 1; i >= 0; i--)); do
    ns="${namespaces[$i]}"
    [[ -e "/run/netns/$ns" ]] || continue
    local tries=0
    # A namespace whose last process is still exiting can refuse deletion
    # for a moment; retry with a deadline instead of leaving it behind.
    until ip netns del "$ns" 2>/dev/null; do
      tries=$((tries + 1))
      if [[ $tries -ge 50 ]]; then
        echo "netns.sh: could not delete namespace $ns" >&2
        rc=1
        break
      fi
      sleep 0.1
    done
  done
  if [[ -f "$dir/region_dir" ]]; then
    # The directory is this run's own (named after its prefix): the regions
    # and the shm hand-off directories a SIGKILLed daemon leaves next to them.
    local rd
    rd="$(cat "$dir/region_dir")"
    if [[ "$rd" == "/dev/shm/pandora-$user-netns-$prefix" ]]; then
      rm -rf -- "$rd"
    else
      echo "netns.sh: $dir/region_dir names '$rd', not this run's region directory; left alone" >&2
      rc=1
    fi
    rm -f -- "$dir/region_dir"
  fi
  # Nothing of this run may be left: check, not assume.
  local left
  left="$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-" || true)"
  if [[ -n "$left" ]]; then
    echo "netns.sh: namespaces of run $prefix still exist: $left" >&2
    rc=1
  fi
  rm -f -- "$dir/namespaces" "$dir/node_order" "$dir/endpoints" "$dir/zk_connect" "$dir"/*.pid
  rm -rf -- "$dir/nodes"
  return "$rc"
}

# ------------------------------------------------------------------- start --

start_run() {
  check_host
  local base
  base="$(parse_subnet "$subnet")"
  [[ "$memory_nodes" =~ ^[1-9][0-9]*$ && "$memory_nodes" -le 32 ]] || usage_error "--memory-nodes must be 1..32, got '$memory_nodes'"
  [[ "$zk_servers" =~ ^[1-9][0-9]*$ && "$zk_servers" -le 7 ]] || usage_error "--zk-servers must be 1..7, got '$zk_servers'"
  [[ "$fd_replicas" =~ ^[0-9]+$ && "$fd_replicas" -le 16 ]] || usage_error "--fd-replicas must be 0..16, got '$fd_replicas'"
  [[ "$fd_timeout_us" =~ ^[1-9][0-9]*$ ]] || usage_error "--fd-timeout-us must be a positive integer, got '$fd_timeout_us'"
  [[ "$zk_root" == /* && "$zk_root" != */ ]] || usage_error "--zk-root must be an absolute path without a trailing /, got '$zk_root'"
  [[ -z "$exit_with_pid" || "$exit_with_pid" =~ ^[1-9][0-9]*$ ]] || usage_error "--exit-with-pid needs a pid, got '$exit_with_pid'"
  [[ "$fd_replicas" -eq 0 || "$zookeeper" -eq 1 ]] || usage_error "--fd-replicas needs --zookeeper (the failure detector keeps its state in ZooKeeper)"
  [[ ${#positional[@]} -eq 0 ]] || usage_error "start takes no NAME (got '${positional[0]}')"
  [[ -x "$memd" ]] || die "pandora-memd not found at '$memd' (build it: bash deploy/setup.sh release, or pass --build/--memd)"
  if [[ "$zookeeper" -eq 1 ]]; then
    [[ -x "$ctl_bin" ]] || die "pandora-ctl not found at '$ctl_bin' (pass --build/--ctl)"
  fi
  if [[ "$fd_replicas" -gt 0 ]]; then
    [[ -x "$fd_bin" ]] || die "pandora-fd not found at '$fd_bin' (pass --build/--fd)"
  fi
  if [[ -z "$prefix" ]]; then
    prefix="pn$(random_hex 2)"
  fi
  [[ "$prefix" =~ ^[a-z][a-z0-9]{1,5}$ ]] || usage_error "--prefix must be a-z then 1-5 of a-z0-9 (it goes into 15-character link names), got '$prefix'"

  private_dir "$dir" "run directory" || exit 2
  dir="$(cd -- "$dir" && pwd -P)"
  if [[ -s "$dir/namespaces" ]]; then
    die "$dir holds a run (prefix $(cat "$dir/prefix" 2>/dev/null || echo '?')); stop it first: $0 stop --dir $dir"
  fi
  if ip netns list | awk '{print $1}' | grep -qE "^$prefix-"; then
    die "namespaces with prefix '$prefix-' already exist (another run, or a leftover: stop it with its --dir); choose another --prefix"
  fi
  rm -f -- "$dir"/*.pid "$dir"/*.rc "$dir"/*.port "$dir/endpoints" "$dir/zk_connect" "$dir/node_order"
  rm -rf -- "$dir/nodes" "$dir/zk"
  echo "$prefix" >"$dir/prefix"
  echo "$base" >"$dir/subnet"
  echo 1 >"$dir/next_host"
  realpath -- "$ctl_bin" >"$dir/ctl_bin" 2>/dev/null || echo "$ctl_bin" >"$dir/ctl_bin"
  : >"$dir/namespaces"

  # From here on a failure removes everything this start made.
  trap 'rc=$?; if [[ $rc -ne 0 ]]; then echo "netns.sh: start failed; removing what it made" >&2; stop_all || true; fi' EXIT

  ensure_cluster_secret "$dir"
  local cluster_id
  cluster_id="$(ensure_cluster_id "$dir" "")"
  local region_dir="/dev/shm/pandora-$user-netns-$prefix"
  (umask 077 && mkdir -p "$region_dir")
  [[ -O "$region_dir" ]] || die "$region_dir is not owned by $user"
  echo "$region_dir" >"$dir/region_dir"

  say "run $prefix: subnet $base.0/24, state in $dir"
  create_switch
  say "switch: namespace $(switch_ns), bridge ${prefix}br"
  local i name ewp=() heartbeat=()
  [[ -z "$exit_with_pid" ]] || ewp=(--exit-with-pid "$exit_with_pid")
  # Every namespace first, in address order (memory nodes, ZooKeeper, the
  # detector's replicas), so the memory daemons can be told where the
  # replicas will listen: they heartbeat them, and a dead or cut-off
  # memory node is failed over (recovery/README.md).
  for ((i = 1; i <= memory_nodes; i++)); do add_node "mem$i" memd; done
  [[ "$zookeeper" -eq 0 ]] || add_node zk zk
  if [[ "$fd_replicas" -gt 0 ]]; then
    local replicas=""
    for ((i = 1; i <= fd_replicas; i++)); do
      add_node "fd$i" fd
      replicas+="${replicas:+,}$(node_get "fd$i" addr):$fd_port"
    done
    heartbeat=(--fd-replicas "$replicas")
  fi
  for ((i = 1; i <= memory_nodes; i++)); do
    name="mem$i"
    # Regions on /dev/shm are treated as PM (README, Persistent memory).
    launch "$name" env PMEM_IS_PMEM_FORCE=1 "$memd" \
      --pm-path "$region_dir/$name.pm" --size "$size" --log-size "$log_size" --node-id "$i" \
      --listen "$(node_get "$name" addr):0" --port-file "$dir/$name.port" \
      --cluster-id "$cluster_id" --secret-file "$dir/secret" --log-level "$log_level" ${ewp[@]+"${ewp[@]}"} \
      ${heartbeat[@]+"${heartbeat[@]}"}
  done
  local deadline=$((SECONDS + 30)) port pid endpoints=""
  for ((i = 1; i <= memory_nodes; i++)); do
    name="mem$i"
    read -r pid _ <"$dir/$name.pid"
    port="$(wait_port_file "netns.sh: $name" "$pid" "$dir/$name.port" "$dir/$name.log" "$deadline")" || exit 1
    endpoints+="${endpoints:+,}$(node_get "$name" addr):$port"
    say "$name: pid $pid, $(node_get "$name" addr):$port in namespace $(node_get "$name" ns)"
  done
  echo "$endpoints" >"$dir/endpoints"
  say "cluster id $cluster_id, secret file $dir/secret, endpoints $endpoints"

  if [[ "$zookeeper" -eq 1 ]]; then
    local zk_addr
    zk_addr="$(node_get zk addr)"
    say "zk: a ZooKeeper ensemble of $zk_servers server(s) on $zk_addr in namespace $(node_get zk ns)"
    if ! ip netns exec "$(node_get zk ns)" bash "$root/deploy/local/zookeeper.sh" start --dir "$dir/zk" \
        --servers "$zk_servers" --host "$zk_addr" --tick-ms 500 ${zk_fsync[@]+"${zk_fsync[@]}"} \
        ${ewp[@]+"${ewp[@]}"} </dev/null >"$dir/zk_start.log" 2>&1; then
      cat "$dir/zk_start.log" >&2
      die "the ZooKeeper ensemble did not start (see above)"
    fi
    cp "$dir/zk/zk_connect" "$dir/zk_connect"
    echo "$zk_root" >"$dir/zk_root"
    # pandora-ctl runs where ZooKeeper is; it reaches the daemons over the bridge.
    ip netns exec "$(node_get zk ns)" "$ctl_bin" init --zookeeper "$(cat "$dir/zk_connect")" --zk-root "$zk_root" \
      --cluster-id "$cluster_id" --secret-file "$dir/secret" --memory-nodes "$endpoints" </dev/null ||
      die "pandora-ctl init failed (see above)"
    say "zookeeper: $(cat "$dir/zk_connect") (root $zk_root)"
  fi

  if [[ "$fd_replicas" -gt 0 ]]; then
    for ((i = 1; i <= fd_replicas; i++)); do
      name="fd$i"
      launch "$name" "$fd_bin" --zookeeper "$(cat "$dir/zk_connect")" --zk-root "$zk_root" \
        --cluster-id "$cluster_id" --secret-file "$dir/secret" --replica-id "$i" --replicas "$fd_replicas" \
        --listen "$(node_get "$name" addr):$fd_port" --timeout-us "$fd_timeout_us" --log-level "$log_level" \
        ${ewp[@]+"${ewp[@]}"} ${fd_args[@]+"${fd_args[@]}"}
    done
    echo "$fd_timeout_us" >"$dir/fd_timeout_us"
    # Ready: every replica announced in ZooKeeper and one of them leads (as
    # deploy/local/cluster.sh start waits for it).
    deadline=$((SECONDS + 60))
    local status=""
    while :; do
      for ((i = 1; i <= fd_replicas; i++)); do
        read -r pid _ <"$dir/fd$i.pid"
        if ! proc_alive "$pid"; then
          echo "netns.sh: fd$i (pid $pid) exited during start-up; its log ($dir/fd$i.log):" >&2
          tail -n 20 "$dir/fd$i.log" >&2 || true
          exit 1
        fi
      done
      status="$(ctl_status 2>&1 || true)"
      if grep -q "^fd replicas ($fd_replicas):" <<<"$status" && grep -qs "is the leader" "$dir"/fd*.log; then
        break
      fi
      if [[ $SECONDS -ge $deadline ]]; then
        echo "netns.sh: the $fd_replicas pandora-fd replica(s) were not ready within 60 s; status:" >&2
        echo "$status" >&2
        exit 1
      fi
      sleep 0.1
    done
    for ((i = 1; i <= fd_replicas; i++)); do
      say "fd$i: pid $(live_pid "fd$i"), udp $(node_get "fd$i" addr) in namespace $(node_get "fd$i" ns)"
    done
    say "failure detector: $fd_replicas replica(s), timeout $fd_timeout_us us; $(grep -h "is the leader" "$dir"/fd*.log | head -n1 | sed 's/.*\(replica [0-9]* is the leader\).*/\1/')"
  fi
  trap - EXIT
  say "started; clients: --memory-nodes \"\$(cat $dir/endpoints)\" --cluster-id \"\$(cat $dir/cluster_id)\" --secret-file $dir/secret$(
    [[ "$zookeeper" -eq 0 ]] || echo " (or --zookeeper \"\$(cat $dir/zk_connect)\")")"
  say "stop with: bash $0 stop --dir $dir"
}

# pandora-ctl status, run in the ZooKeeper namespace.
ctl_status() {
  ip netns exec "$(node_get zk ns)" "$ctl_bin" status --zookeeper "$(cat "$dir/zk_connect")" \
    --zk-root "$(cat "$dir/zk_root" 2>/dev/null || echo /pandora)" --cluster-id "$(cat "$dir/cluster_id")" \
    --secret-file "$dir/secret" </dev/null
}

# ---------------------------------------------------------- other commands --

one_name() {  # the NAME argument of commands that take one
  [[ ${#positional[@]} -ge 1 ]] || usage_error "$cmd needs a NAME (see status)"
  [[ ${#positional[@]} -eq 1 || "$cmd" == delay || "$cmd" == loss ]] || usage_error "$cmd takes one NAME, got: ${positional[*]}"
  name="${positional[0]}"
  [[ "$name" =~ ^[a-z][a-z0-9_]{0,7}$ ]] || usage_error "'$name' is not a node name (a-z, then up to 7 of a-z0-9_)"
}

require_node() {
  node_exists "$1" || die "no node '$1' in the run in $dir (nodes: $(recorded_nodes | tr '\n' ' '))"
}

run_compute() {
  one_name
  [[ ${#command_argv[@]} -ge 1 ]] || usage_error "run-compute $name needs a command after --"
  case "$name" in
    sw|zk|zk[0-9]*|mem[0-9]*|fd[0-9]*) usage_error "'$name' is reserved for the run's own nodes; choose another compute name" ;;
  esac
  if node_exists "$name"; then
    [[ "$(node_get "$name" kind)" == compute ]] || die "'$name' is not a compute node"
    local running
    if running="$(live_pid "$name")"; then
      die "compute node $name still runs pid $running; wait for it or kill it first"
    fi
  else
    add_node "$name" compute
    say "$name: namespace $(node_get "$name" ns), address $(node_get "$name" addr)"
  fi
  rm -f -- "$dir/$name.rc" "$dir/$name.pid"
  local ns
  ns="$(node_get "$name" ns)"
  # The command learns where it runs (scripts may need their own address).
  export PANDORA_NETNS_DIR="$dir" PANDORA_NETNS_NAME="$name" PANDORA_NETNS_ADDR
  PANDORA_NETNS_ADDR="$(node_get "$name" addr)"
  if [[ "$background" -eq 1 ]]; then
    # A subshell waits for the command and records its exit code, so `wait`
    # can report it after this script has returned.
    (
      ip netns exec "$ns" "${command_argv[@]}" </dev/null >"$dir/$name.log" 2>&1 &
      cpid=$!
      record_pid "$name" "$cpid"
      rc=0
      wait "$cpid" || rc=$?
      echo "$rc" >"$dir/$name.rc.tmp" && mv -f -- "$dir/$name.rc.tmp" "$dir/$name.rc"
    ) </dev/null >/dev/null 2>&1 &
    local deadline=$((SECONDS + 10))
    until [[ -s "$dir/$name.pid" ]]; do
      [[ $SECONDS -lt $deadline ]] || die "$name's command did not start within 10 s"
      sleep 0.02
    done
    say "$name: pid $(cut -d' ' -f1 "$dir/$name.pid") runs ${command_argv[0]##*/} in the background (log $dir/$name.log; bash $0 wait $name --dir $dir)"
    return 0
  fi
  ip netns exec "$ns" "${command_argv[@]}" <&0 &
  local cpid=$! rc=0
  record_pid "$name" "$cpid"
  wait "$cpid" || rc=$?
  echo "$rc" >"$dir/$name.rc"
  exit "$rc"
}

wait_compute() {
  one_name
  require_node "$name"
  [[ "$timeout_s" =~ ^[0-9]+$ ]] || usage_error "--timeout-s must be a whole number of seconds, got '$timeout_s'"
  [[ -e "$dir/$name.pid" || -e "$dir/$name.rc" ]] || die "nothing was run on $name"
  local deadline=$((SECONDS + timeout_s))
  until [[ -s "$dir/$name.rc" ]]; do
    if [[ $SECONDS -ge $deadline ]]; then
      echo "netns.sh: $name still runs after $timeout_s s" >&2
      exit "$EXIT_TIMEOUT"
    fi
    sleep 0.05
  done
  local rc
  rc="$(cat "$dir/$name.rc")"
  say "$name exited with $rc"
  exit "$rc"
}

exec_in() {
  one_name
  require_node "$name"
  [[ ${#command_argv[@]} -ge 1 ]] || usage_error "exec $name needs a command after --"
  exec ip netns exec "$(node_get "$name" ns)" "${command_argv[@]}"
}

kill_node() {
  one_name
  if [[ "$name" =~ ^zk([0-9]+)$ ]]; then
    require_node zk
    bash "$root/deploy/local/zookeeper.sh" kill --dir "$dir/zk" --server "${BASH_REMATCH[1]}"
    return
  fi
  require_node "$name"
  [[ "$signal" =~ ^[A-Z0-9]+$ ]] || usage_error "--signal takes a name like KILL or TERM, got '$signal'"
  local pid
  pid="$(live_pid "$name")" || die "$name has no running process"
  kill -s "$signal" "$pid" || die "kill -s $signal $pid failed"
  say "sent SIG$signal to $name (pid $pid)"
}

set_link() {  # set_link up|down (NAME from the command line)
  local want="$1"
  one_name
  require_node "$name"
  local sveth state
  sveth="$(node_get "$name" sveth)"
  ip -n "$(switch_ns)" link set "$sveth" "$want"
  # Report the state the kernel shows, not the one asked for.
  state="$(ip -n "$(switch_ns)" -o link show "$sveth" | sed -n 's/.*state \([A-Z]*\).*/\1/p')"
  if [[ "$want" == down ]]; then
    [[ "$state" == DOWN ]] || die "switch port $sveth of $name is '$state' after 'ip link set down'"
    : >"$dir/$name.partitioned"
    say "$name partitioned: switch port $sveth down (its address $(node_get "$name" addr) is unreachable)"
  else
    rm -f -- "$dir/$name.partitioned"
    say "$name healed: switch port $sveth $state"
  fi
}

# delay/loss: one netem qdisc on the node's interface carries both; a value
# of 0 drops that part, and with both 0 the qdisc is removed.
set_netem() {
  one_name
  [[ ${#positional[@]} -eq 2 ]] || usage_error "usage: $cmd NAME $([[ "$cmd" == delay ]] && echo MS || echo PCT)"
  local value="${positional[1]}"
  if [[ "$cmd" == delay ]]; then
    [[ "$value" =~ ^[0-9]+$ && "$value" -le 60000 ]] || usage_error "delay takes whole milliseconds 0..60000, got '$value'"
  else
    [[ "$value" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v v="$value" 'BEGIN { exit !(v <= 100) }' ||
      usage_error "loss takes a percentage 0..100, got '$value'"
  fi
  require_node "$name"
  command -v tc >/dev/null 2>&1 || unsupported "'tc' not found: delay and loss need tc netem"
  local ns nveth delay=0 loss=0
  ns="$(node_get "$name" ns)"
  nveth="$(node_get "$name" nveth)"
  [[ ! -s "$dir/$name.delay" ]] || delay="$(cat "$dir/$name.delay")"
  [[ ! -s "$dir/$name.loss" ]] || loss="$(cat "$dir/$name.loss")"
  if [[ "$cmd" == delay ]]; then delay="$value"; else loss="$value"; fi
  local out
  if [[ "$delay" == 0 ]] && awk -v v="$loss" 'BEGIN { exit !(v == 0) }'; then
    tc -n "$ns" qdisc del dev "$nveth" root 2>/dev/null || true
  elif ! out="$(tc -n "$ns" qdisc replace dev "$nveth" root netem delay "${delay}ms" loss "${loss}%" 2>&1)"; then
    if grep -qiE "unknown|not supported|No such file" <<<"$out"; then
      unsupported "tc netem is not available ($out; kernel module sch_netem missing?): delay and loss cannot be injected here; kill, partition and heal work"
    fi
    die "tc qdisc replace dev $nveth root netem failed: $out"
  fi
  echo "$delay" >"$dir/$name.delay"
  echo "$loss" >"$dir/$name.loss"
  say "$name: packets it sends are delayed ${delay} ms and ${loss}% are dropped (netem on $nveth)"
}

status_run() {
  local name kind pid state link faults down=0
  echo "run $prefix: subnet $(cat "$dir/subnet").0/24, state in $dir"
  for name in $(recorded_nodes); do
    kind="$(node_get "$name" kind)"
    link="$(ip -n "$(switch_ns)" -o link show "$(node_get "$name" sveth)" 2>/dev/null | sed -n 's/.*state \([A-Z]*\).*/\1/p')"
    faults=""
    [[ ! -e "$dir/$name.partitioned" ]] || faults+=" partitioned"
    [[ ! -s "$dir/$name.delay" || "$(cat "$dir/$name.delay")" == 0 ]] || faults+=" delay $(cat "$dir/$name.delay") ms"
    [[ ! -s "$dir/$name.loss" || "$(cat "$dir/$name.loss")" == 0 ]] || faults+=" loss $(cat "$dir/$name.loss")%"
    if [[ "$kind" == zk ]]; then
      state="ensemble"
    elif pid="$(live_pid "$name")"; then
      state="pid $pid running"
    elif [[ -s "$dir/$name.rc" ]]; then
      state="exited $(cat "$dir/$name.rc")"
    elif [[ "$kind" == compute ]]; then
      state="nothing running"
    else
      state="not running"
      down=1
    fi
    printf '%-8s %-8s %-15s %-14s switch port %-5s %s%s\n' "$name" "$kind" "$(node_get "$name" addr)" \
      "$(node_get "$name" ns)" "${link:-gone}" "$state" "${faults:+,$faults}"
    [[ -n "$link" ]] || down=1
  done
  if node_exists zk; then
    ip netns exec "$(node_get zk ns)" bash "$root/deploy/local/zookeeper.sh" status --dir "$dir/zk" |
      sed 's/^/zookeeper: /' || down=1
    if [[ -x "$ctl_bin" ]]; then
      ctl_status | sed 's/^/pandora-ctl: /' || down=1
    fi
  fi
  return "$down"
}

case "$cmd" in
  check) check_host; echo "netns.sh: this host can run network-namespace clusters$([[ $netem -eq 0 ]] || echo ', with tc netem')" ;;
  start) [[ -n "$dir" ]] || usage_error "--dir DIR is required"; start_run ;;
  stop)
    require_dir
    if stop_all; then
      say "run $prefix in $dir stopped; its namespaces, links and processes are gone"
    else
      say "run $prefix in $dir stopped, with the problems above"
      exit "$EXIT_FAIL"
    fi
    ;;
  *)
    require_dir
    [[ -s "$dir/namespaces" ]] || die "the run in $dir is stopped"
    case "$cmd" in
      run-compute) run_compute ;;
      wait) wait_compute ;;
      exec) exec_in ;;
      kill) kill_node ;;
      partition) set_link down ;;
      heal) set_link up ;;
      delay|loss) set_netem ;;
      status) status_run ;;
    esac
    ;;
esac
