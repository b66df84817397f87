#!/usr/bin/env bash
# A throw-away PostgreSQL 15 server for comparisons with Pandora
# (workloads/peers/postgres/pandora-pg-bench, deploy/compare/compare.sh).
#
#   bash deploy/postgres/postgres.sh start  --dir DIR [--port P] [options]
#   bash deploy/postgres/postgres.sh status --dir DIR
#   bash deploy/postgres/postgres.sh stop   --dir DIR [--keep]
#
# State recorded in DIR:
#   data/         the cluster (initdb), owned by the server's user, mode 700
#   sock/         the unix socket directory, same owner, mode 700
#   password      the generated password of the database user `pandora`
#   pgpass        libpq password file (host:port:db:user:password), mode 600
#   conninfo      libpq connection string over the unix socket (the fast path
#                 the benchmark uses)
#   conninfo_tcp  the same over 127.0.0.1:PORT
#   port          the TCP port          postgres.pid  the postmaster's pid
#   postgres.log  the server's log      run_user      the user it runs as
#
# Authentication is scram-sha-256 with a generated password, on the unix
# socket and on 127.0.0.1 alike: no trust rule, so another local user who
# finds the port cannot connect, and the clients take the same path (a
# passfile) a real deployment does; the cost is one handshake per
# connection, outside any measurement. The server listens on 127.0.0.1 only.
#
# PostgreSQL refuses to run as root: run as root, the script runs the server
# as a dedicated system user (pandora-pg, created when missing; --run-user
# picks another), which must be able to reach DIR.
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"

usage() {
  cat <<USAGE
Usage: bash deploy/postgres/postgres.sh start|stop|status --dir DIR [options]

Starts, stops or shows a throw-away PostgreSQL 15 cluster under DIR,
listening on 127.0.0.1 and on a unix socket in DIR/sock, with a generated
password (scram-sha-256). DIR/conninfo is the libpq connection string.

Options:
  --dir DIR             state directory (cluster, socket, pid, port)  [required]
  --port P              TCP port on 127.0.0.1 (start)          [a free one]
  --shared-buffers S    shared_buffers (start)                 [1GB]
  --max-connections N   max_connections (start)                [128]
  --unsafe              (start) fsync=off, synchronous_commit=off,
                        full_page_writes=off: commits are NOT durable.
                        Only to show what durability costs; never the
                        comparison's default
  --bin DIR             PostgreSQL binaries   [/usr/lib/postgresql/15/bin]
  --run-user NAME       user the server runs as when started by root
                        (created as a system user when missing)  [pandora-pg]
  --keep                stop: keep DIR's cluster (default: remove data/ and sock/)
  -h, --help            this help

Settings (start; written to DIR/data/pandora_bench.conf):
  fsync = on, synchronous_commit = on, full_page_writes = on   durable commits
      (a commit returns after its WAL record is flushed to DIR's disk), as
      Pandora's commit returns after its log and data reached persistent
      memory on f+1 replicas
  wal_level = minimal, max_wal_senders = 0    no replication (PostgreSQL keeps
      one copy; Pandora keeps f+1): less WAL, and COPY into a table created
      in the same transaction skips WAL
  max_wal_size = 8GB, checkpoint_timeout = 30min   no checkpoint in a
      measured run (a checkpoint is a periodic dip, not steady state)
  max_pred_locks_per_transaction = 256   SERIALIZABLE's predicate locks of
      TPC-C's larger reads fit without escalating to whole relations
  autovacuum on (default)

stop sends the postmaster (the recorded pid, only while it still is a
postgres process) SIGINT (fast shutdown: active transactions roll back),
then SIGQUIT after 30 s (immediate shutdown), then SIGKILL after 10 s more.
USAGE
}

die() { echo "postgres.sh: error: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || { usage >&2; exit 2; }
cmd="$1"
shift
case "$cmd" in
  -h|--help) usage; exit 0 ;;
  start|stop|status) ;;
  *) usage >&2; die "unknown command '$cmd' (expected start, stop or status)" ;;
esac

dir=""
port=""
shared_buffers="1GB"
max_connections=128
unsafe=0
bin="/usr/lib/postgresql/15/bin"
run_user="pandora-pg"
keep=0

need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) need_value "$@"; dir="$2"; shift 2 ;;
    --port) need_value "$@"; port="$2"; shift 2 ;;
    --shared-buffers) need_value "$@"; shared_buffers="$2"; shift 2 ;;
    --max-connections) need_value "$@"; max_connections="$2"; shift 2 ;;
    --unsafe) unsafe=1; shift ;;
    --bin) need_value "$@"; bin="$2"; shift 2 ;;
    --run-user) need_value "$@"; run_user="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done

[[ -n "$dir" ]] || die "--dir DIR is required"
[[ -z "$port" || ( "$port" =~ ^[1-9][0-9]*$ && "$port" -ge 1024 && "$port" -le 65535 ) ]] ||
  die "--port must be 1024..65535, got '$port'"
[[ "$shared_buffers" =~ ^[1-9][0-9]*(kB|MB|GB)$ ]] || die "--shared-buffers must look like 128MB or 1GB, got '$shared_buffers'"
[[ "$max_connections" =~ ^[1-9][0-9]*$ && "$max_connections" -le 10000 ]] ||
  die "--max-connections must be 1..10000, got '$max_connections'"
[[ "$run_user" =~ ^[a-z_][a-z0-9_-]*$ ]] || die "--run-user '$run_user' is not a valid user name"

# shellcheck source=deploy/lib/cluster_common.sh
source "$root/deploy/lib/cluster_common.sh"

is_postmaster() { proc_is_exe "$1" postgres; }

# Runs "$@" as the server's user: that user when we are root, else ourselves.
as_server() {
  if [[ "$(id -u)" -eq 0 ]]; then
    runuser -u "$(cat "$dir/run_user")" -- "$@"
  else
    "$@"
  fi
}

# Installs postgresql-15 the way deploy/setup.sh installs build packages.
ensure_binaries() {
  [[ -x "$bin/postgres" && -x "$bin/initdb" && -x "$bin/pg_ctl" ]] && return 0
  if [[ "$bin" == /usr/lib/postgresql/15/bin ]]; then
    # shellcheck source=deploy/lib/debian_packages.sh
    source "$root/deploy/lib/debian_packages.sh"
    ensure_debian_packages postgres.sh postgresql-15 || return 1
  fi
  [[ -x "$bin/postgres" && -x "$bin/initdb" && -x "$bin/pg_ctl" ]] ||
    { echo "postgres.sh: error: no PostgreSQL binaries in $bin (postgres, initdb, pg_ctl)" >&2; return 1; }
}

# The user the server runs as: ourselves, or (as root) a dedicated system
# user, created without a home or a login shell.
choose_run_user() {
  if [[ "$(id -u)" -ne 0 ]]; then
    id -un
    return
  fi
  if ! id -u "$run_user" >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$run_user" >&2 ||
      die "could not create the system user $run_user (useradd)"
  fi
  echo "$run_user"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

recorded_pid() { [[ -s "$dir/postgres.pid" ]] && tr -d '[:space:]' <"$dir/postgres.pid"; }

start() {
  ensure_binaries || exit 1
  private_dir "$dir" "PostgreSQL directory" || exit 2
  # The server's user (another one when run as root) must enter it; nobody
  # else may write it (its data and socket directories are 700).
  chmod 755 "$dir"
  dir="$(cd -- "$dir" && pwd -P)"
  local pid
  pid="$(recorded_pid || true)"
  if [[ -n "$pid" ]] && is_postmaster "$pid"; then
    die "a server from $dir is running (pid $pid); stop it first"
  fi
  local user
  user="$(choose_run_user)"
  echo "$user" >"$dir/run_user"
  # The server's user must reach DIR (a directory under /root is not).
  as_server test -x "$dir" -a -r "$dir" ||
    die "user $user cannot enter $dir (a parent directory is closed to it): use a --dir under /tmp or /dev/shm"
  rm -rf -- "$dir/data" "$dir/sock"
  mkdir -m 700 "$dir/data" "$dir/sock"
  (umask 077 && random_hex 24 >"$dir/password")
  : >"$dir/postgres.log"
  if [[ "$(id -u)" -eq 0 ]]; then
    chown "$user:" "$dir/data" "$dir/sock" "$dir/password" "$dir/postgres.log"
  fi
  local initdb_log="$dir/initdb.log"
  if ! as_server "$bin/initdb" -D "$dir/data" -U pandora --pwfile="$dir/password" --auth=scram-sha-256 \
      --encoding=UTF8 --locale=C >"$initdb_log" 2>&1; then
    tail -n 20 "$initdb_log" >&2
    die "initdb failed (log: $initdb_log)"
  fi
  # Only this user, only scram, only the socket and 127.0.0.1.
  cat >"$dir/data/pg_hba.conf" <<HBA
# written by deploy/postgres/postgres.sh
local all pandora scram-sha-256
host  all pandora 127.0.0.1/32 scram-sha-256
HBA
  local durable=on
  [[ $unsafe -eq 0 ]] || durable=off
  local attempt started=0
  for attempt in 1 2 3; do
    local p="${port:-$(free_port)}"
    cat >"$dir/data/pandora_bench.conf" <<CONF
# written by deploy/postgres/postgres.sh (see its --help for why)
listen_addresses = '127.0.0.1'
port = $p
unix_socket_directories = '$dir/sock'
unix_socket_permissions = 0700
max_connections = $max_connections
shared_buffers = $shared_buffers
fsync = $durable
synchronous_commit = $durable
full_page_writes = $durable
wal_level = minimal
max_wal_senders = 0
max_wal_size = 8GB
checkpoint_timeout = 30min
max_pred_locks_per_transaction = 256
default_transaction_isolation = 'serializable'
log_min_messages = warning
log_checkpoints = on
CONF
    grep -q '^include_if_exists' "$dir/data/postgresql.conf" ||
      echo "include_if_exists = 'pandora_bench.conf'" >>"$dir/data/postgresql.conf"
    [[ "$(id -u)" -ne 0 ]] || chown "$user:" "$dir/data/pg_hba.conf" "$dir/data/pandora_bench.conf"
    if as_server "$bin/pg_ctl" start -w -t 60 -D "$dir/data" -l "$dir/postgres.log" >/dev/null 2>&1; then
      port="$p"
      started=1
      break
    fi
    # A kernel-chosen port taken by someone else between our probe and the
    # server's bind: try another; anything else is fatal.
    if [[ -z "$port" ]] && grep -q "Address already in use" "$dir/postgres.log"; then continue; fi
    tail -n 20 "$dir/postgres.log" >&2
    die "the server did not start (log: $dir/postgres.log)"
  done
  [[ $started -eq 1 ]] || die "no free port found in 3 attempts (log: $dir/postgres.log)"
  pid="$(head -n 1 "$dir/data/postmaster.pid")"
  echo "$pid" >"$dir/postgres.pid"
  echo "$port" >"$dir/port"
  (umask 077 && {
    echo "$dir/sock:$port:*:pandora:$(cat "$dir/password")"
    echo "127.0.0.1:$port:*:pandora:$(cat "$dir/password")"
  } >"$dir/pgpass")
  echo "host=$dir/sock port=$port user=pandora dbname=postgres passfile=$dir/pgpass" >"$dir/conninfo"
  echo "host=127.0.0.1 port=$port user=pandora dbname=postgres passfile=$dir/pgpass" >"$dir/conninfo_tcp"
  # pg_ctl -w saw the server ready; prove the password works over both paths.
  local c
  for c in conninfo conninfo_tcp; do
    "$bin/psql" -X -q -t -A -c 'select 1' "$(cat "$dir/$c")" >/dev/null 2>"$dir/psql_check.log" || {
      cat "$dir/psql_check.log" >&2
      stop_server
      die "the server runs but refused a connection through $c"
    }
  done
  echo "==> PostgreSQL $("$bin/postgres" --version | awk '{print $3}') running as $user, pid $pid," \
    "127.0.0.1:$port and $dir/sock; fsync/synchronous_commit $durable"
  echo "conninfo: $dir/conninfo"
}

# SIGINT (fast shutdown), SIGQUIT after 30 s, SIGKILL after 10 s more; only
# while the recorded pid still is a postgres process.
stop_server() {
  local pid
  pid="$(recorded_pid || true)"
  if [[ -z "$pid" ]] || ! is_postmaster "$pid"; then
    rm -f -- "$dir/postgres.pid"
    return 0
  fi
  local sig wait_s rc=0
  for step in INT:30 QUIT:10 KILL:5; do
    sig="${step%%:*}"
    wait_s="${step##*:}"
    [[ "$sig" == INT ]] || { echo "postgres.sh: pid $pid still running; sending SIG$sig" >&2; rc=1; }
    kill "-$sig" "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + wait_s))
    while is_postmaster "$pid" && [[ $SECONDS -lt $deadline ]]; do sleep 0.05; done
    is_postmaster "$pid" || break
  done
  is_postmaster "$pid" && die "pid $pid survived SIGKILL"
  rm -f -- "$dir/postgres.pid"
  return "$rc"
}

case "$cmd" in
  start) start ;;
  stop)
    [[ -d "$dir" ]] || die "no state directory $dir"
    rc=0
    stop_server || rc=$?
    if [[ $keep -eq 0 ]]; then rm -rf -- "$dir/data" "$dir/sock" "$dir/pgpass" "$dir/password"; fi
    echo "==> PostgreSQL in $dir stopped"
    exit "$rc"
    ;;
  status)
    pid="$(recorded_pid || true)"
    if [[ -n "$pid" ]] && is_postmaster "$pid"; then
      echo "running: pid $pid, port $(cat "$dir/port" 2>/dev/null), user $(cat "$dir/run_user" 2>/dev/null)"
    else
      echo "not running"
      exit 3
    fi
    ;;
esac
