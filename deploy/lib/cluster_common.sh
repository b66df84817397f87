# Process and cluster-state helpers shared by the cluster launchers
# (deploy/local/cluster.sh on loopback, deploy/netns/netns.sh across network
# namespaces), so both start, find and stop their processes the same way.
# Sourced, never run; needs bash with `set -euo pipefail` in the caller.
#
#   proc_alive PID                 a live (not zombie) process
#   proc_is_exe PID NAME           ... whose executable's basename is NAME
#   random_hex BYTES               BYTES random bytes as hex
#   ensure_cluster_secret DIR      DIR/secret: 32 random bytes as hex, mode 600
#   ensure_cluster_id DIR [ID]     DIR/cluster_id: ID, else the recorded one,
#                                  else a new random one; prints it
#   wait_port_file WHO PID FILE LOG DEADLINE
#                                  waits until FILE holds a port number
#   stop_pids WHO CHECK PID...     SIGTERM, up to 10 s, then SIGKILL
#   private_dir DIR WHAT           (deploy/lib/private_dir.sh) DIR is this user's alone

# shellcheck source=deploy/lib/private_dir.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/private_dir.sh"

# True when $1 is a live (not zombie) process.
proc_alive() {
  local pid="$1" state
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
  [[ -n "$state" && "$state" != "Z" && "$state" != "X" ]]
}

# True when $1 is a live process whose executable is named $2 (so a pid
# recycled by an unrelated process is never signalled).
proc_is_exe() {
  local pid="$1" name="$2" exe
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  proc_alive "$pid" || return 1
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
  [[ "$(basename -- "${exe% (deleted)}")" == "$name" ]]
}

random_hex() {  # random_hex BYTES
  od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'
}

# The secret is readable by this user only: anyone who can read it can join
# the cluster. An existing one is kept so a restart finds its regions.
ensure_cluster_secret() {
  local dir="$1"
  if [[ ! -s "$dir/secret" ]]; then
    (umask 077 && random_hex 32 >"$dir/secret")
  fi
  chmod 600 "$dir/secret"
}

# Records and prints the cluster id: $2 when given, else the one recorded in
# DIR (so a restart finds its regions acceptable), else a new random one.
ensure_cluster_id() {
  local dir="$1" id="${2:-}"
  if [[ -z "$id" ]]; then
    if [[ -s "$dir/cluster_id" ]]; then
      id="$(cat "$dir/cluster_id")"
    else
      # 0 is not a valid cluster id; a leading 1 rules it out.
      id="0x1$(random_hex 6)"
    fi
  fi
  echo "$id" >"$dir/cluster_id"
  echo "$id"
}

# Waits until FILE (a daemon's --port-file) holds a port number and prints
# it. Returns 1, having said why on stderr ("WHO ..." with the tail of LOG),
# when PID exits first or SECONDS reaches DEADLINE.
wait_port_file() {
  local who="$1" pid="$2" file="$3" log="$4" deadline="$5" port
  while [[ ! -s "$file" ]]; do
    if ! proc_alive "$pid"; then
      echo "$who (pid $pid) exited during start-up; its log ($log):" >&2
      tail -n 20 "$log" >&2 || true
      return 1
    fi
    if [[ $SECONDS -ge $deadline ]]; then
      echo "$who (pid $pid) did not write its port file within 30 s; log:" >&2
      tail -n 20 "$log" >&2 || true
      return 1
    fi
    sleep 0.05
  done
  # The port file may be observed mid-write; re-read until it is a number.
  port="$(tr -d '[:space:]' <"$file")"
  while ! [[ "$port" =~ ^[0-9]+$ ]]; do
    if [[ $SECONDS -ge $deadline ]]; then
      echo "$who port file holds '$port'" >&2
      return 1
    fi
    sleep 0.05
    port="$(tr -d '[:space:]' <"$file")"
  done
  echo "$port"
}

# Sends SIGTERM to every PID for which `CHECK PID` holds (still the process
# we started), waits up to 10 s for all of them, then SIGKILLs the rest.
# Returns 1 when one needed SIGKILL. WHO starts the message ("x.sh: pid").
stop_pids() {
  local who="$1" check="$2" pid rc=0 deadline
  shift 2
  local -a pids=()
  for pid in "$@"; do
    if "$check" "$pid"; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  deadline=$((SECONDS + 10))
  for pid in ${pids[@]+"${pids[@]}"}; do
    while "$check" "$pid" && [[ $SECONDS -lt $deadline ]]; do sleep 0.05; done
    if "$check" "$pid"; then
      echo "$who $pid did not exit after SIGTERM within 10 s; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      rc=1
    fi
  done
  return "$rc"
}
