#!/usr/bin/env bash
# A local ZooKeeper ensemble (Debian package `zookeeper`, 3.8) on 127.0.0.1.
#
#   bash deploy/local/zookeeper.sh start   --dir /tmp/pandora-zk [--servers 3]
#   bash deploy/local/zookeeper.sh status  --dir /tmp/pandora-zk
#   bash deploy/local/zookeeper.sh kill    --dir /tmp/pandora-zk --server 2
#   bash deploy/local/zookeeper.sh restart --dir /tmp/pandora-zk --server 2
#   bash deploy/local/zookeeper.sh resume  --dir /tmp/pandora-zk
#   bash deploy/local/zookeeper.sh stop    --dir /tmp/pandora-zk [--keep-data]
#
# State recorded in DIR (so stop/status/kill/restart and clients find it):
#   zk<i>.cfg   server i's configuration     zk<i>.port  its client port
#   zk<i>.pid   its java pid                 zk<i>.log   its stdout+stderr
#   zk<i>/      its dataDir (zk<i>/data) and dataLogDir (zk<i>/txlog): the
#               transaction log is on disk, as deployed
#   zk_connect  127.0.0.1:P1,127.0.0.1:P2,... (ZkOptions::hosts)
#   host        the address the servers bind (--host; 127.0.0.1 by default)
#   watchdog.pid  with --exit-with-pid: stops the servers when that pid ends
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
script_path="$script_dir/$(basename -- "${BASH_SOURCE[0]}")"

ZK_JAR=/usr/share/java/zookeeper.jar
ZK_CONF_DIR=/etc/zookeeper/conf
ZK_MAIN=org.apache.zookeeper.server.quorum.QuorumPeerMain
# log4j 1.2 + its slf4j binding: the server logs to the console, i.e. zk<i>.log.
ZK_CLASSPATH="$ZK_CONF_DIR:$ZK_JAR:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar"

usage() {
  cat <<USAGE
Usage: bash deploy/local/zookeeper.sh start|stop|status|kill|restart|resume --dir DIR [options]

Runs a ZooKeeper ensemble of N servers (the Debian 'zookeeper' package, one
java process each) on 127.0.0.1 only (or on the --host address), with
client, quorum and election ports chosen free on that address by this script. The client connect string is written
to DIR/zk_connect.

Commands:
  start     write the configurations, start every server, wait for a leader
  stop      SIGTERM the servers (SIGKILL after 10 s), stop the watchdog,
            remove the data directories (unless --keep-data)
  status    one line per server: index, pid, client port, mode or "down"
  kill      SIGKILL server --server I (fault tests); its data stays
  restart   start server --server I again on the same configuration and ports
            (SIGKILLs it first if it still runs)
  resume    start every recorded server again on its configuration, ports
            and data (after stop --keep-data, or after all of them died),
            wait for a leader, write DIR/zk_connect again

Options:
  --dir DIR            state directory (configs, pids, ports, logs, data) [required]
  --servers N          number of servers (start)                          [3]
  --tick-ms MS         ZooKeeper tickTime (start)                         [100]
  --sync-ms MS         start: how long the leader and a follower may go
                       unheard before the follower is dropped (syncLimit,
                       in ticks, rounded up). Not 500 ms: on 2 loaded cores
                       starved JVMs missed that, the leader dropped both
                       followers at once, and elections followed one
                       another for 30 s                               [3000]
  --init-ms MS         start: how long a follower may take to connect and
                       sync to a new leader (initLimit, in ticks)    [10000]
  --wait-s S           start/restart/resume: wait this long for a leader  [60]
  --no-fsync           start: forceSync=no, the transaction log is written
                       but not fsynced (tests on a shared machine, where an
                       fsync can stall for seconds; never for measurements
                       or real use)
  --nice N             start: run the servers at this nice value (negative:
                       root only), kept for restart. A data plane that
                       busy-polls on the same few cores otherwise starves
                       them into losing the quorum (seen on 2 cores)   [0]
  --exit-with-pid PID  start: a watchdog stops the ensemble when PID ends
  --host ADDR          start: the IPv4 address every server binds (client,
                       quorum and election ports), kept for status and
                       restart; an address of this host, e.g. inside a
                       network namespace (deploy/netns/netns.sh)  [127.0.0.1]
  --server I           kill/restart: which server (1..N)
  --keep-data          stop: keep DIR/zk<i>/ (default: remove them)
  -h, --help           this help

Needs java and the 'zookeeper' package (deploy/setup.sh installs both).
USAGE
}

force_sync=yes
die() { echo "zookeeper.sh: error: $*" >&2; exit 1; }
say() { echo "zookeeper.sh: $*"; }

[[ $# -ge 1 ]] || { usage >&2; exit 2; }
cmd="$1"
shift
case "$cmd" in
  -h|--help) usage; exit 0 ;;
  start|stop|status|kill|restart|resume|_watchdog) ;;
  *) usage >&2; die "unknown command '$cmd' (expected start, stop, status, kill, restart or resume)" ;;
esac

dir=""
servers=3
tick_ms=100
sync_ms=3000
init_ms=10000
wait_s=60
exit_with_pid=""
server=""
keep_data=0
nice_value=0
host=127.0.0.1

need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) need_value "$@"; dir="$2"; shift 2 ;;
    --servers) need_value "$@"; servers="$2"; shift 2 ;;
    --tick-ms) need_value "$@"; tick_ms="$2"; shift 2 ;;
    --sync-ms) need_value "$@"; sync_ms="$2"; shift 2 ;;
    --init-ms) need_value "$@"; init_ms="$2"; shift 2 ;;
    --wait-s) need_value "$@"; wait_s="$2"; shift 2 ;;
    --exit-with-pid) need_value "$@"; exit_with_pid="$2"; shift 2 ;;
    --server) need_value "$@"; server="$2"; shift 2 ;;
    --keep-data) keep_data=1; shift ;;
    --nice) need_value "$@"; nice_value="$2"; shift 2 ;;
    --no-fsync) force_sync=no; shift ;;
    --host) need_value "$@"; host="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

[[ -n "$dir" ]] || die "--dir DIR is required"
[[ "$servers" =~ ^[1-9][0-9]*$ && "$servers" -le 15 ]] || die "--servers must be 1..15, got '$servers'"
[[ "$tick_ms" =~ ^[1-9][0-9]*$ ]] || die "--tick-ms must be a positive integer, got '$tick_ms'"
[[ "$sync_ms" =~ ^[1-9][0-9]{0,6}$ ]] || die "--sync-ms must be a positive integer (ms), got '$sync_ms'"
[[ "$init_ms" =~ ^[1-9][0-9]{0,6}$ ]] || die "--init-ms must be a positive integer (ms), got '$init_ms'"
[[ "$wait_s" =~ ^[1-9][0-9]*$ ]] || die "--wait-s must be a positive integer, got '$wait_s'"
[[ "$nice_value" =~ ^-?[0-9]+$ && "$nice_value" -ge -20 && "$nice_value" -le 19 ]] ||
  die "--nice must be -20..19, got '$nice_value'"
[[ "$nice_value" -ge 0 || "$(id -u)" -eq 0 ]] || die "--nice $nice_value (a higher priority) needs root"
# A dotted quad only: the value goes into the server configurations.
[[ "$host" =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] &&
  ((10#${BASH_REMATCH[1]} <= 255 && 10#${BASH_REMATCH[2]} <= 255 && 10#${BASH_REMATCH[3]} <= 255 && 10#${BASH_REMATCH[4]} <= 255)) ||
  die "--host must be an IPv4 address, got '$host'"
[[ -z "$exit_with_pid" || "$exit_with_pid" =~ ^[1-9][0-9]*$ ]] || die "--exit-with-pid needs a pid, got '$exit_with_pid'"
# status, kill, restart and the watchdog talk to the address start chose.
if [[ "$cmd" != start && -s "$dir/host" ]]; then
  host="$(cat "$dir/host")"
fi

# proc_alive: the launchers' shared process checks.
# shellcheck source=../lib/cluster_common.sh
source "$script_dir/../lib/cluster_common.sh"

if [[ "$cmd" == start ]]; then
  private_dir "$dir" "ZooKeeper directory" || exit 2
fi
[[ -d "$dir" ]] || die "no directory $dir (nothing was started there)"
dir="$(cd -- "$dir" && pwd -P)"

# True when $1 is a live java process whose command line names server $2's
# cfg in this DIR (so a recycled pid is never signalled).
is_our_server() {
  local pid="$1" i="$2" exe
  proc_alive "$pid" || return 1
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
  [[ "$(basename -- "${exe% (deleted)}")" == java ]] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$dir/zk$i.cfg"
}

# True when $1 is a live bash running this script's watchdog for this DIR.
is_our_watchdog() {
  local pid="$1"
  proc_alive "$pid" || return 1
  local args
  args="$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null || true)"
  grep -qxF -- _watchdog <<<"$args" && grep -qxF -- "$dir" <<<"$args"
}

# Server indices recorded in DIR (from zk<i>.cfg files).
recorded_servers() {
  local f
  shopt -s nullglob
  for f in "$dir"/zk*.cfg; do
    f="${f##*/zk}"
    echo "${f%.cfg}"
  done | sort -n
}

# Sends a four-letter word to $host:$1; prints the answer (empty on failure).
four_letter() {
  local port="$1" word="$2"
  python3 - "$host" "$port" "$word" <<'PY' 2>/dev/null || true
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1.0)
    s.sendall(sys.argv[3].encode())
    out = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        out += b
    sys.stdout.write(out.decode(errors="replace"))
except Exception:
    pass
PY
}

# Mode of the server on client port $1: leader, follower, standalone, or "down".
server_mode() {
  local out mode
  out="$(four_letter "$1" srvr)"
  mode="$(sed -n 's/^Mode: //p' <<<"$out" | head -n1)"
  echo "${mode:-down}"
}

# Free ports on $host: binds $1 sockets to $host:0 at once (so they are
# distinct), prints them and closes them.
# Ports outside the kernel's ephemeral range (ip_local_port_range): a port
# picked from that range (bind to port 0) may be handed to any outgoing
# connection on the host while its server is down, and the restarted server
# then cannot bind it - its peers log "Cannot open channel to N at election
# address" until that connection ends (seen as a restarted server not
# rejoining for over 90 s in a full test run). The kernel never hands out
# ports outside the range on its own.
free_ports() {
  python3 - "$1" "$host" <<'PY'
import random, socket, sys
want, host = int(sys.argv[1]), sys.argv[2]
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        lo, hi = (int(x) for x in f.read().split())
except (OSError, ValueError):
    lo, hi = 32768, 60999
pool = [p for p in range(10000, 65536) if p < lo or p > hi]
random.shuffle(pool)
socks = []
for p in pool:
    if len(socks) == want:
        break
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, p))
        socks.append(s)
    except OSError:
        s.close()
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
}

# Starts server $1 from its cfg (in the background); records its pid.
launch_server() {
  local i="$1" pid
  mkdir -p -- "$dir/zk$i/data" "$dir/zk$i/txlog"
  echo "$i" >"$dir/zk$i/data/myid"
  # Fast start on a small machine: client VM-like JIT (C1 only), serial GC,
  # no perf data file, no attach listener. No JMX remote port is opened
  # (only the in-process MBean server, as with zkServer.sh's JMXLOCALONLY).
  # Short leader-election notification backoff so a quorum re-forms quickly
  # after a restarted server rejoins.
  local niceness=0
  [[ ! -f "$dir/nice" ]] || niceness="$(cat "$dir/nice")"
  [[ "$niceness" =~ ^-?[0-9]+$ ]] || die "$dir/nice holds '$niceness', not a nice value"
  # Its own process group (job control, set -m), so a Ctrl-C at the
  # caller's terminal does not reach it, but not its own session: a new
  # session (setsid) is a new scheduler autogroup, and autogroups share the
  # CPU per group. Measured in the fail-over test on 2 cores: restarted
  # JVMs in their own autogroups got 0-2 ms of CPU per 5 s while the
  # benches' group took both cores, so a restart took 20-180 s (nice
  # values act only within a group, hence no help from --nice).
  set -m
  nice -n "$niceness" java \
    -Xmx128m -Xms32m -Xss512k \
    -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 \
    -XX:-UsePerfData -XX:+DisableAttachMechanism -Xshare:auto \
    -Djava.net.preferIPv4Stack=true \
    -Dzookeeper.log.dir="$dir" \
    -Dzookeeper.root.logger=INFO,CONSOLE \
    -Dzookeeper.jmx.log4j.disable=true \
    -Dzookeeper.fastleader.minNotificationInterval=50 \
    -Dzookeeper.fastleader.maxNotificationInterval=1000 \
    -Dzookeeper.admin.enableServer=false \
    -cp "$ZK_CLASSPATH" "$ZK_MAIN" "$dir/zk$i.cfg" \
    >>"$dir/zk$i.log" 2>&1 </dev/null &
  pid=$!
  set +m
  echo "$pid" >"$dir/zk$i.pid"
}

# Stops server $1: SIGTERM, up to 10 s, then SIGKILL; removes its pid file.
stop_server() {
  local i="$1" sig="${2:-TERM}" pid waited
  [[ -f "$dir/zk$i.pid" ]] || return 0
  pid="$(cat "$dir/zk$i.pid" 2>/dev/null || true)"
  if is_our_server "$pid" "$i"; then
    if [[ "$sig" == KILL ]]; then
      kill -KILL "$pid" 2>/dev/null || true
    else
      kill -TERM "$pid" 2>/dev/null || true
    fi
    waited=0
    while is_our_server "$pid" "$i" && [[ "$waited" -lt 100 ]]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    if is_our_server "$pid" "$i"; then
      echo "zookeeper.sh: server $i (pid $pid) ignored SIGTERM for 10 s, sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      waited=0
      while is_our_server "$pid" "$i" && [[ "$waited" -lt 50 ]]; do
        sleep 0.1
        waited=$((waited + 1))
      done
    fi
  fi
  rm -f -- "$dir/zk$i.pid"
}

stop_watchdog() {
  local pid
  [[ -f "$dir/watchdog.pid" ]] || return 0
  pid="$(cat "$dir/watchdog.pid" 2>/dev/null || true)"
  # The watchdog itself calls stop: never signal ourselves.
  if [[ "$pid" != "$$" ]] && is_our_watchdog "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
  fi
  rm -f -- "$dir/watchdog.pid"
}

stop_all() {
  local i
  stop_watchdog
  for i in $(recorded_servers); do
    stop_server "$i"
  done
  if [[ "$keep_data" -eq 0 ]]; then
    for i in $(recorded_servers); do
      rm -rf -- "${dir:?}/zk$i"
    done
  fi
}

print_log_tails() {
  local i
  for i in $(recorded_servers); do
    echo "----- tail of $dir/zk$i.log -----" >&2
    tail -n 25 -- "$dir/zk$i.log" >&2 2>/dev/null || true
  done
}

# Waits up to $wait_s for exactly one leader and every other live-listed
# server ($@: indices that must be up) a follower.
wait_for_quorum() {
  local deadline=$((SECONDS + wait_s)) i mode leaders ok line last=""
  while :; do
    leaders=0
    ok=1
    line=""
    for i in "$@"; do
      mode="$(server_mode "$(cat "$dir/zk$i.port")")"
      line+=" zk$i=$mode"
      case "$mode" in
        leader) leaders=$((leaders + 1)) ;;
        follower) ;;
        standalone) [[ "$servers_now" -eq 1 ]] || ok=0 ;;
        *) ok=0 ;;
      esac
      pid="$(cat "$dir/zk$i.pid" 2>/dev/null || true)"
      if ! is_our_server "$pid" "$i"; then
        echo "zookeeper.sh: server $i (pid ${pid:-?}) exited during start-up" >&2
        return 1
      fi
    done
    if [[ "$ok" -eq 1 ]] && { [[ "$leaders" -eq 1 ]] || [[ "$servers_now" -eq 1 ]]; }; then
      say "ready:$line"
      return 0
    fi
    if [[ "$line" != "$last" ]]; then
      say "waiting for a leader:$line"
      last="$line"
    fi
    if [[ "$SECONDS" -ge "$deadline" ]]; then
      echo "zookeeper.sh: no leader after ${wait_s} s:$line" >&2
      return 1
    fi
    sleep 0.1
  done
}

require_server_index() {
  [[ "$server" =~ ^[1-9][0-9]*$ ]] || die "$cmd needs --server I (1-based index)"
  [[ -f "$dir/zk$server.cfg" ]] || die "no server $server recorded in $dir (no zk$server.cfg)"
}

case "$cmd" in
  start)
    command -v java >/dev/null 2>&1 || die "java not found: install the Debian package 'zookeeper' (or run deploy/setup.sh)"
    command -v python3 >/dev/null 2>&1 || die "python3 not found (used to pick free ports and query servers)"
    [[ -r "$ZK_JAR" ]] || die "$ZK_JAR not found: install the Debian package 'zookeeper' (or run deploy/setup.sh)"
    for i in $(recorded_servers); do
      pid="$(cat "$dir/zk$i.pid" 2>/dev/null || true)"
      if is_our_server "$pid" "$i"; then
        die "server $i already runs in $dir (pid $pid); stop it first"
      fi
    done
    # Forget a previous ensemble's files in DIR.
    for i in $(recorded_servers); do
      rm -rf -- "${dir:?}/zk$i" "$dir/zk$i.cfg" "$dir/zk$i.port" "$dir/zk$i.pid" "$dir/zk$i.log"
    done
    rm -f -- "$dir/zk_connect" "$dir/watchdog.pid" "$dir/host"

    read -r -a ports <<<"$(free_ports $((3 * servers)))"
    [[ "${#ports[@]}" -eq $((3 * servers)) ]] || die "could not pick $((3 * servers)) free ports on $host"
    server_lines=""
    for ((i = 1; i <= servers; i++)); do
      server_lines+="server.$i=$host:${ports[$((3 * (i - 1) + 1))]}:${ports[$((3 * (i - 1) + 2))]}"$'\n'
    done
    connect=""
    for ((i = 1; i <= servers; i++)); do
      client_port="${ports[$((3 * (i - 1)))]}"
      cat >"$dir/zk$i.cfg" <<CFG
# Written by deploy/local/zookeeper.sh: server $i of $servers, on $host only.
tickTime=$tick_ms
initLimit=$(((init_ms + tick_ms - 1) / tick_ms))
syncLimit=$(((sync_ms + tick_ms - 1) / tick_ms))
dataDir=$dir/zk$i/data
dataLogDir=$dir/zk$i/txlog
clientPort=$client_port
clientPortAddress=$host
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok,mntr,stat
autopurge.purgeInterval=0
forceSync=$force_sync
quorumListenOnAllIPs=false
${server_lines}
CFG
      echo "$client_port" >"$dir/zk$i.port"
      connect+="${connect:+,}$host:$client_port"
    done
    echo "$connect" >"$dir/zk_connect"
    echo "$nice_value" >"$dir/nice"
    echo "$host" >"$dir/host"

    started_at=$SECONDS
    if [[ -n "$exit_with_pid" ]]; then
      # Before the first server: a caller that dies (or kills this script)
      # while the ensemble starts must not leave JVMs behind; once the pid
      # is gone the watchdog stops every server recorded so far.
      # Detached from our stdout so callers reading our output see EOF.
      setsid bash "$script_path" _watchdog --dir "$dir" --exit-with-pid "$exit_with_pid" \
        >>"$dir/watchdog.log" 2>&1 </dev/null &
      echo "$!" >"$dir/watchdog.pid"
    fi
    for ((i = 1; i <= servers; i++)); do
      launch_server "$i"
    done
    say "started $servers servers in $dir (client ports: $connect)"
    if [[ -n "$exit_with_pid" ]] && ! proc_alive "$exit_with_pid"; then
      # It ended while the servers were launched: the watchdog may have
      # stopped only those recorded before.
      keep_data=0
      stop_all
      rm -f -- "$dir/zk_connect"
      die "pid $exit_with_pid ended while the ensemble started; stopped it"
    fi
    servers_now="$servers"
    if ! wait_for_quorum $(seq 1 "$servers"); then
      print_log_tails
      keep_data=0
      stop_all
      rm -f -- "$dir/zk_connect"
      die "the ensemble in $dir did not elect a leader within ${wait_s} s (server logs above); stopped it"
    fi
    say "leader elected after $((SECONDS - started_at)) s"

    if [[ -n "$exit_with_pid" ]]; then
      say "watchdog pid $(cat "$dir/watchdog.pid" 2>/dev/null || echo "?") stops the ensemble when pid $exit_with_pid ends"
    fi
    echo "$connect"
    ;;

  _watchdog)
    # Internal: polls --exit-with-pid; when it is gone, stops the ensemble.
    [[ -n "$exit_with_pid" ]] || die "_watchdog needs --exit-with-pid"
    trap 'exit 0' TERM
    while proc_alive "$exit_with_pid"; do
      sleep 0.5 &
      wait $! || true
    done
    echo "zookeeper.sh: pid $exit_with_pid ended, stopping the ensemble in $dir"
    trap - TERM
    # Do not let stop_watchdog signal ourselves: the pid file names us.
    stop_all
    rm -f -- "$dir/zk_connect"
    ;;

  stop)
    stop_all
    rm -f -- "$dir/zk_connect"
    say "stopped the ensemble in $dir$([[ "$keep_data" -eq 1 ]] && echo ' (data kept)')"
    ;;

  status)
    any=0
    for i in $(recorded_servers); do
      any=1
      pid="$(cat "$dir/zk$i.pid" 2>/dev/null || true)"
      port="$(cat "$dir/zk$i.port" 2>/dev/null || echo '?')"
      if is_our_server "$pid" "$i"; then
        echo "zk$i pid=$pid port=$port mode=$(server_mode "$port")"
      else
        echo "zk$i pid=- port=$port mode=down"
      fi
    done
    [[ "$any" -eq 1 ]] || die "no ensemble recorded in $dir"
    ;;

  kill)
    require_server_index
    pid="$(cat "$dir/zk$server.pid" 2>/dev/null || true)"
    if is_our_server "$pid" "$server"; then
      stop_server "$server" KILL
      say "killed server $server (pid $pid)"
    else
      rm -f -- "$dir/zk$server.pid"
      say "server $server was not running"
    fi
    ;;

  restart)
    require_server_index
    stop_server "$server" KILL
    launch_server "$server"
    say "restarted server $server (pid $(cat "$dir/zk$server.pid"), port $(cat "$dir/zk$server.port"))"
    ;;

  resume)
    mapfile -t recorded < <(recorded_servers)
    [[ ${#recorded[@]} -gt 0 ]] || die "no ensemble recorded in $dir (no zk<i>.cfg): start one instead"
    connect=""
    for i in "${recorded[@]}"; do
      pid="$(cat "$dir/zk$i.pid" 2>/dev/null || true)"
      if is_our_server "$pid" "$i"; then
        die "server $i still runs in $dir (pid $pid): resume starts an ensemble that is down"
      fi
      # Its transaction log is the registry's state: without it the server
      # would start empty and could win an election with nothing in it.
      [[ -s "$dir/zk$i/data/myid" && -d "$dir/zk$i/txlog" ]] ||
        die "server $i has no data in $dir/zk$i (stopped without --keep-data?): nothing to resume"
      port="$(cat "$dir/zk$i.port" 2>/dev/null || true)"
      [[ "$port" =~ ^[1-9][0-9]*$ ]] || die "no client port recorded for server $i ($dir/zk$i.port)"
      connect+="${connect:+,}$host:$port"
    done
    rm -f -- "$dir/zk_connect"
    started_at=$SECONDS
    for i in "${recorded[@]}"; do
      launch_server "$i"
    done
    servers_now="${#recorded[@]}"
    if ! wait_for_quorum "${recorded[@]}"; then
      print_log_tails
      for i in "${recorded[@]}"; do stop_server "$i"; done
      die "the ensemble in $dir did not elect a leader within ${wait_s} s (server logs above); stopped it, data kept"
    fi
    echo "$connect" >"$dir/zk_connect"
    say "resumed ${#recorded[@]} servers in $dir, leader elected after $((SECONDS - started_at)) s"
    echo "$connect"
    ;;
esac
