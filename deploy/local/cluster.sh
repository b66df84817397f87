#!/usr/bin/env bash
# A local Pandora cluster: N memory daemons (pandora-memd) on 127.0.0.1.
#
#   bash deploy/local/cluster.sh start  --nodes 2 --dir /tmp/pandora-cluster
#   bash deploy/local/cluster.sh status --dir /tmp/pandora-cluster
#   bash deploy/local/cluster.sh stop   --dir /tmp/pandora-cluster [--keep]
#
# State recorded in DIR (so stop/status and clients find everything):
#   secret          the cluster secret (mode 600)
#   cluster_id      the cluster id (0x hex)
#   region_dir      where the regions live
#   node<i>.pid     daemon pid            node<i>.port   its TCP port
#   node<i>.log     its stdout+stderr     node<i>.region its region file
#   endpoints       HOST:PORT,HOST:PORT,... (for --nodes of the clients)
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

usage() {
  cat <<USAGE
Usage: bash deploy/local/cluster.sh start|stop|status [options]

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
  --keep             stop: keep the region files (default: remove them)
  -h, --help         this help

start prints the endpoints (also in DIR/endpoints). stop sends SIGTERM to each
recorded pid, waits up to 10 s, then SIGKILLs; it only signals pids that are
still pandora-memd processes.
USAGE
}

die() { echo "cluster.sh: error: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || { usage >&2; exit 2; }
cmd="$1"
shift
case "$cmd" in
  -h|--help) usage; exit 0 ;;
  start|stop|status) ;;
  *) usage >&2; die "unknown command '$cmd' (expected start, stop or status)" ;;
esac

dir=""
nodes=2
memd="$root/build/release/memory/pandora-memd"
region_dir="/dev/shm/pandora-$user"
size="128M"
log_size="16M"
threads=1
busy_poll_us=0
cluster_id=""
log_level="info"
keep=0

need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) need_value "$@"; dir="$2"; shift 2 ;;
    --nodes) need_value "$@"; nodes="$2"; shift 2 ;;
    --memd) need_value "$@"; memd="$2"; shift 2 ;;
    --region-dir) need_value "$@"; region_dir="$2"; shift 2 ;;
    --size) need_value "$@"; size="$2"; shift 2 ;;
    --log-size) need_value "$@"; log_size="$2"; shift 2 ;;
    --threads) need_value "$@"; threads="$2"; shift 2 ;;
    --busy-poll-us) need_value "$@"; busy_poll_us="$2"; shift 2 ;;
    --cluster-id) need_value "$@"; cluster_id="$2"; shift 2 ;;
    --log-level) need_value "$@"; log_level="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

[[ -n "$dir" ]] || die "--dir DIR is required"
[[ "$nodes" =~ ^[1-9][0-9]*$ && "$nodes" -le 64 ]] || die "--nodes must be 1..64, got '$nodes'"

# True when $1 is a live (not zombie) process.
alive() {
  local pid="$1" state
  kill -0 "$pid" 2>/dev/null || return 1
  state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
  [[ -n "$state" && "$state" != "Z" && "$state" != "X" ]]
}

# True when $1 is a live process whose executable is pandora-memd (so a pid
# recycled by an unrelated process is never signalled).
is_memd_pid() {
  local pid="$1" exe
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
  [[ "$(basename -- "${exe% (deleted)}")" == "pandora-memd" ]]
}

# Node indices recorded in DIR (from node<i>.pid files).
recorded_nodes() {
  local f
  shopt -s nullglob
  for f in "$dir"/node*.pid; do
    f="${f##*/node}"
    echo "${f%.pid}"
  done | sort -n
  shopt -u nullglob
}

# Stops every recorded daemon; removes regions unless --keep. Returns 1 when a
# daemon had to be SIGKILLed or did not exit cleanly.
stop_all() {
  local i pid rc=0 deadline
  local -a pids=()
  for i in $(recorded_nodes); do
    pid="$(cat "$dir/node$i.pid" 2>/dev/null || true)"
    if is_memd_pid "$pid"; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  deadline=$((SECONDS + 10))
  for pid in "${pids[@]}"; do
    while is_memd_pid "$pid" && [[ $SECONDS -lt $deadline ]]; do sleep 0.1; done
    if is_memd_pid "$pid"; then
      echo "cluster.sh: pid $pid did not exit after SIGTERM within 10 s; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      rc=1
    fi
  done
  for i in $(recorded_nodes); do
    if [[ $keep -eq 0 && -f "$dir/node$i.region" ]]; then
      rm -f -- "$(cat "$dir/node$i.region")"
    fi
    rm -f -- "$dir/node$i.pid" "$dir/node$i.port"
  done
  rm -f -- "$dir/endpoints"
  if [[ $keep -eq 0 && -f "$dir/region_dir" ]]; then
    rmdir -- "$(cat "$dir/region_dir")" 2>/dev/null || true
  fi
  return "$rc"
}

random_hex() {  # random_hex BYTES
  od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'
}

start_all() {
  [[ -x "$memd" ]] || die "pandora-memd not found at '$memd' (build it: bash deploy/setup.sh release, or pass --memd PATH)"
  mkdir -p "$dir"
  local i pid
  for i in $(recorded_nodes); do
    pid="$(cat "$dir/node$i.pid" 2>/dev/null || true)"
    if is_memd_pid "$pid"; then
      die "a cluster is already running from $dir (node$i pid $pid); stop it first: $0 stop --dir $dir"
    fi
  done
  rm -f -- "$dir"/node*.pid "$dir"/node*.port "$dir/endpoints"

  # The secret and the directory holding the regions are readable by this
  # user only: anyone who can read the secret can join the cluster.
  (umask 077 && mkdir -p "$region_dir")
  [[ -O "$region_dir" ]] || die "$region_dir is not owned by $user; choose another --region-dir"
  if [[ ! -s "$dir/secret" ]]; then
    (umask 077 && random_hex 32 >"$dir/secret")
  fi
  chmod 600 "$dir/secret"
  if [[ -z "$cluster_id" ]]; then
    # Keep the recorded id so a restart finds its regions acceptable.
    if [[ -s "$dir/cluster_id" ]]; then
      cluster_id="$(cat "$dir/cluster_id")"
    else
      # 0 is not a valid cluster id; a leading 1 rules it out.
      cluster_id="0x1$(random_hex 6)"
    fi
  fi
  echo "$cluster_id" >"$dir/cluster_id"
  echo "$region_dir" >"$dir/region_dir"

  # Regions on /dev/shm are not persistent memory; PMDK is told to treat them
  # as such so the flush discipline is that of real PM.
  export PMEM_IS_PMEM_FORCE=1
  for ((i = 1; i <= nodes; i++)); do
    local region="$region_dir/node$i.pm"
    echo "$region" >"$dir/node$i.region"
    # stdin/stdout/stderr are detached from the caller: a daemon must not
    # hold a pipe of whoever ran us (ctest, ssh) open.
    "$memd" \
      --pm-path "$region" --size "$size" --log-size "$log_size" \
      --node-id "$i" --listen 127.0.0.1:0 --port-file "$dir/node$i.port" \
      --cluster-id "$cluster_id" --secret-file "$dir/secret" \
      --threads "$threads" --busy-poll-us "$busy_poll_us" --log-level "$log_level" \
      </dev/null >"$dir/node$i.log" 2>&1 &
    echo "$!" >"$dir/node$i.pid"
  done

  # Wait (bounded) for each daemon to publish its port.
  local deadline=$((SECONDS + 30)) port endpoints=""
  for ((i = 1; i <= nodes; i++)); do
    pid="$(cat "$dir/node$i.pid")"
    while [[ ! -s "$dir/node$i.port" ]]; do
      if ! alive "$pid"; then
        echo "cluster.sh: node$i (pid $pid) exited during start-up; its log ($dir/node$i.log):" >&2
        tail -n 20 "$dir/node$i.log" >&2 || true
        stop_all || true
        exit 1
      fi
      if [[ $SECONDS -ge $deadline ]]; then
        echo "cluster.sh: node$i (pid $pid) did not write its port file within 30 s; log:" >&2
        tail -n 20 "$dir/node$i.log" >&2 || true
        stop_all || true
        exit 1
      fi
      sleep 0.05
    done
    # The port file may be observed mid-write; re-read until it is a number.
    port="$(tr -d '[:space:]' <"$dir/node$i.port")"
    while ! [[ "$port" =~ ^[0-9]+$ ]]; do
      [[ $SECONDS -lt $deadline ]] || { stop_all || true; die "node$i port file holds '$port'"; }
      sleep 0.05
      port="$(tr -d '[:space:]' <"$dir/node$i.port")"
    done
    echo "$port" >"$dir/node$i.port"
    endpoints+="${endpoints:+,}127.0.0.1:$port"
    echo "==> node$i: pid $pid, 127.0.0.1:$port, region $region_dir/node$i.pm"
  done
  echo "$endpoints" >"$dir/endpoints"
  echo "==> cluster id $cluster_id, secret file $dir/secret"
  echo "==> endpoints: $endpoints"
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
  return "$down"
}

case "$cmd" in
  start) start_all ;;
  stop)
    [[ -d "$dir" ]] || die "no cluster state directory $dir"
    stop_all && echo "==> cluster in $dir stopped" || { echo "==> cluster in $dir stopped (some daemons needed SIGKILL)"; exit 1; }
    ;;
  status) status_all ;;
esac
