# Helpers for scripts that run inside the Soft-RoCE VM (selftest.sh,
# perf_compare.sh). Sourced, never run.
#
#   roce_v2_gid_index SYSDEV   prints the index of port 1's RoCE v2 GID that
#                              is IPv4-mapped (::ffff:a.b.c.d), the one to
#                              use for IPv4 addressing; returns 1 if none
#   listening PORT             true when a TCP socket listens on PORT

roce_v2_gid_index() {
  local sysdev="$1" type_file index type gid
  for type_file in "$sysdev"/ports/1/gid_attrs/types/*; do
    index="${type_file##*/}"
    type="" gid=""
    read -r type <"$type_file" 2>/dev/null || true   # unused entries: EINVAL
    [[ "$type" == "RoCE v2" ]] || continue
    read -r gid <"$sysdev/ports/1/gids/$index" 2>/dev/null || true
    if [[ "$gid" == 0000:0000:0000:0000:0000:ffff:* ]]; then
      echo "$index"
      return 0
    fi
  done
  return 1
}

# Reads /proc/net/tcp*: local address "ADDR:PORT" in hex, state 0A = LISTEN.
listening() {
  local hex sl local_addr rem st _ f
  printf -v hex ':%04X' "$1"
  for f in /proc/net/tcp /proc/net/tcp6; do
    while read -r sl local_addr rem st _; do
      [[ "$local_addr" == *"$hex" && "$st" == 0A ]] && return 0
    done <"$f"
  done
  return 1
}
