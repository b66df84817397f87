#!/usr/bin/env bash
# Our verbs transport next to perftest, the hardware's own tool, on the same
# Soft-RoCE device in the same VM. Runs INSIDE the VM:
#
#   mkdir -p results
#   bash deploy/softroce-vm/run.sh --cpus 1 --timeout-s 1200 --share "$PWD/results" -- \
#       bash deploy/softroce-vm/perf_compare.sh --out "$PWD/results"
#
#   1. finds the RoCE v2 GID index of rxe0 (as selftest.sh does);
#   2. starts one pandora-memd serving verbs on rxe0 (region on /dev/shm,
#      secret file of mode 600, PMEM_IS_PMEM_FORCE=1);
#   3. --rounds times, alternating: perftest (ib_read_lat -s 2 and -s 64,
#      ib_write_lat -s 2 and -s 64, ib_write_bw -t 1 (one WRITE at a time)
#      -s 2 and -s 64, ib_atomic_lat CMP_AND_SWAP and FETCH_AND_ADD,
#      ib_read_bw -s 65536 with its default tx-depth 128, and with -o 16;
#      server and client both here over rxe0), then pandora-transport-bench
#      --backend verbs --spin against that daemon for the same operations
#      (depth 1, WRITE/CAS/FAA posted Durability::kVisible as perftest's
#      and kPersistent; read64k at depth 128; diagnostics at depth 16);
#   4. prints op, perftest median, ours median, ratio (medians over the
#      rounds), and writes perf_compare.md / perf_compare.csv plus every raw
#      output to --out.
#
# Latency: perftest's t_typical (its median) and our p50 (doorbell to
# completion), both busy-polling the completion queue. Throughput: messages
# per second (perftest's MsgRate, our items_per_second). Soft-RoCE under
# QEMU TCG is emulated hardware: absolute numbers say nothing about a real
# NIC, only the ratios mean something.
#
# Exit: 0 done (the ratios are reported, not judged), 1 a tool failed,
# 2 usage, 77 no such RDMA device (not inside the VM).
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"
# roce_v2_gid_index, listening: shared with selftest.sh.
# shellcheck source=guest_lib.sh
source "$script_dir/guest_lib.sh"

usage() {
  cat <<USAGE
Usage: bash deploy/softroce-vm/perf_compare.sh --out DIR [options]

Meant to run inside the Soft-RoCE VM:
  bash deploy/softroce-vm/run.sh --cpus 1 --timeout-s 1200 --share DIR -- \\
      bash deploy/softroce-vm/perf_compare.sh --out DIR

Options:
  --out DIR        results directory (perf_compare.md, perf_compare.csv, raw/) [required]
  --build DIR      Release build with pandora-memd and pandora-transport-bench
                                                         [build/release]
  --device NAME    RDMA device                           [rxe0]
  --rounds N       perftest/ours alternations; medians over them  [5]
  --lat-iters N    iterations of each perftest latency run        [2000]
  --bw-iters N     iterations of ib_read_bw                       [2000]
  --min-time S     pandora-transport-bench --benchmark_min_time per latency benchmark [1]
  --bw-min-time S  the same for the 64 KiB READ throughput benchmarks [4]
USAGE
}

die() { echo "perf_compare: error: $*" >&2; exit "${2:-1}"; }

out=""
build="$root/build/release"
device=rxe0
rounds=5
lat_iters=2000
bw_iters=2000
min_time=1
bw_min_time=4
need_value() { [[ $# -ge 2 && -n "$2" ]] || die "option $1 needs a value (see --help)" 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) need_value "$@"; out="$2"; shift 2 ;;
    --build) need_value "$@"; build="$2"; shift 2 ;;
    --device) need_value "$@"; device="$2"; shift 2 ;;
    --rounds) need_value "$@"; rounds="$2"; shift 2 ;;
    --lat-iters) need_value "$@"; lat_iters="$2"; shift 2 ;;
    --bw-iters) need_value "$@"; bw_iters="$2"; shift 2 ;;
    --min-time) need_value "$@"; min_time="$2"; shift 2 ;;
    --bw-min-time) need_value "$@"; bw_min_time="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" 2 ;;
  esac
done
[[ -n "$out" ]] || { usage >&2; die "--out DIR is required" 2; }
for n in rounds lat_iters bw_iters; do
  [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || die "--${n//_/-} must be a positive integer, got '${!n}'" 2
done
for t in "$min_time" "$bw_min_time"; do
  [[ "$t" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--min-time/--bw-min-time must be a number of seconds, got '$t'" 2
done
[[ "$device" =~ ^[A-Za-z0-9_]+$ ]] || die "--device: bad name '$device'" 2

sysdev="/sys/class/infiniband/$device"
if [[ ! -d "$sysdev" ]]; then
  echo "perf_compare: SKIP: no RDMA device $device here; run it in the VM:"
  echo "  bash deploy/softroce-vm/run.sh --cpus 1 --timeout-s 1200 --share DIR -- bash $0 --out DIR"
  exit 77
fi

build="$(cd -- "$build" 2>/dev/null && pwd -P)" || die "no build directory (--build)"
memd="$build/memory/pandora-memd"
tbench="$build/workloads/transport_bench/pandora-transport-bench"
[[ -x "$memd" ]] || die "$memd not found (cmake --build $build --target pandora-memd)"
[[ -x "$tbench" ]] || die "$tbench not found (cmake --build $build --target pandora-transport-bench)"
for tool in ib_read_lat ib_write_lat ib_atomic_lat ib_read_bw; do
  command -v "$tool" >/dev/null || die "$tool not found (Debian package perftest)"
done
mkdir -p "$out/raw"
out="$(cd -- "$out" && pwd -P)"
raw="$out/raw"
rm -f -- "$raw"/*

work="$(mktemp -d "${TMPDIR:-/tmp}/perf-compare.XXXXXXXX")"
server_pid=""
memd_pid=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for pid in "$server_pid" "$memd_pid"; do
    [[ -n "$pid" ]] || continue
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf -- "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_us() { local t="${EPOCHREALTIME/./}"; echo "$((10#$t))"; }
start_us="$(now_us)"
step() {
  local ms=$(( ($(now_us) - start_us) / 1000 ))
  printf 'perf_compare: [%d.%d s] %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*"
}

# ------------------------------------------------------ RoCE v2 GID index
# The RoCE v2 entry whose GID is IPv4-mapped (guest_lib.sh).
gid_index="$(roce_v2_gid_index "$sysdev")" || gid_index=""
[[ -n "$gid_index" ]] || die "no IPv4-mapped RoCE v2 GID on $device port 1"
step "$device port 1, RoCE v2 GID index $gid_index"

# -------------------------------------------------------------- the daemon

cluster_id=$((0x5eed0000 + RANDOM))
region_dir="/dev/shm/perf-compare-$$"
mkdir -m 700 -p "$region_dir"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret")
chmod 600 "$work/secret"
step "starting pandora-memd (verbs on $device, region on $region_dir)"
PMEM_IS_PMEM_FORCE=1 "$memd" --pm-path "$region_dir/node1.pm" --size 64M --log-size 1M --node-id 1 \
  --cluster-id "$cluster_id" --secret-file "$work/secret" --listen 127.0.0.1:0 --port-file "$work/port" \
  --threads 1 --log-level warn --verbs on --rdma-device "$device" --rdma-gid-index "$gid_index" \
  --exit-with-pid $$ >"$raw/memd.log" 2>&1 &
memd_pid=$!
for ((i = 0; i < 1200; i++)); do
  [[ -s "$work/port" ]] && break
  kill -0 "$memd_pid" 2>/dev/null || { cat "$raw/memd.log"; die "pandora-memd exited"; }
  sleep 0.1
done
[[ -s "$work/port" ]] || { cat "$raw/memd.log"; die "pandora-memd published no port within 120 s"; }
memd_port="$(cat "$work/port")"
step "pandora-memd pid $memd_pid on 127.0.0.1:$memd_port"

# ------------------------------------------------------------- perftest
port=18600
# result_ok FILE: the line under perftest's "#bytes" header has a non-zero
# fifth number (t_typical or MsgRate). perftest converts cycles to time with
# a CPU frequency it samples at start; when the sample is too noisy (a busy
# host: "Correlation coefficient r^2 < 0.9") it computes with 0 MHz and
# reports zeros.
result_ok() {
  local line header=0 f
  while read -r -a f; do
    if [[ $header -eq 1 && "${f[0]:-}" =~ ^[0-9]+$ ]]; then
      [[ "${f[4]:-0}" =~ ^[0-9.]+$ && "${f[4]}" =~ [1-9] ]]
      return
    fi
    [[ "${f[0]:-}" == "#bytes" ]] && header=1
  done <"$1"
  return 1
}

# perftest NAME TOOL ARGS...: server and client of TOOL on $device, the
# client's output in raw/NAME.txt; up to 3 attempts while the result is zero.
perftest() {
  local name="$1" tool="$2"
  shift 2
  local attempt
  for attempt in 1 2 3; do
    perftest_once "$name" "$tool" "$@"
    result_ok "$raw/$name.txt" && return 0
    echo "perf_compare: $tool $*: no valid result (attempt $attempt; see raw/$name.txt), again"
    cp -- "$raw/$name.txt" "$raw/$name.attempt$attempt.txt"
  done
  die "$tool $*: no valid result in 3 attempts"
}

perftest_once() {
  local name="$1" tool="$2"
  shift 2
  local -a common=("$tool" -d "$device" -i 1 -x "$gid_index" -F -p "$port" "$@")
  timeout 300 "${common[@]}" >"$raw/$name.server.txt" 2>&1 &
  server_pid=$!
  local i
  for ((i = 0; i < 1200; i++)); do
    listening "$port" && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  local client_rc=0 server_rc=0
  timeout 300 "${common[@]}" 127.0.0.1 >"$raw/$name.txt" 2>&1 || client_rc=$?
  wait "$server_pid" || server_rc=$?
  server_pid=""
  port=$((port + 1))
  if [[ $client_rc -ne 0 || $server_rc -ne 0 ]]; then
    echo "--- server:"; cat "$raw/$name.server.txt"
    echo "--- client:"; cat "$raw/$name.txt"
    die "$tool $* exited $client_rc (client), $server_rc (server)"
  fi
}

# ours NAME FILTER MIN_TIME: pandora-transport-bench against the daemon, JSON
# in raw/NAME.json. Each benchmark first runs 0.5 s unmeasured: the first one
# of a process was up to 2x slower than later ones (the previous process'
# teardown still running on the one vCPU, TCG translating new code).
ours() {
  local name="$1" filter="$2" min="$3" rc=0
  timeout 600 "$tbench" --backend verbs --spin --rdma-device "$device" --rdma-gid-index "$gid_index" \
    --memory-node "127.0.0.1:$memd_port" --cluster-id "$cluster_id" --secret-file "$work/secret" \
    --benchmark_filter="$filter" --benchmark_min_time="$min" --benchmark_min_warmup_time=0.5 \
    --benchmark_out_format=json --benchmark_out="$raw/$name.json" >"$raw/$name.log" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]]; then
    tail -n 30 "$raw/$name.log"
    die "pandora-transport-bench exited with $rc"
  fi
  if grep -q '"error_occurred": true' "$raw/$name.json"; then
    grep -A1 '"error_occurred": true' "$raw/$name.json"
    die "pandora-transport-bench reported an error"
  fi
}

for ((r = 1; r <= rounds; r++)); do
  step "round $r/$rounds: perftest"
  perftest "r${r}_perftest_read_lat_2" ib_read_lat -s 2 -n "$lat_iters"
  perftest "r${r}_perftest_read_lat_64" ib_read_lat -s 64 -n "$lat_iters"
  perftest "r${r}_perftest_write_lat_2" ib_write_lat -s 2 -n "$lat_iters"
  perftest "r${r}_perftest_write_lat_64" ib_write_lat -s 64 -n "$lat_iters"
  # One WRITE at a time, each until its completion: the requester's view of
  # a WRITE's latency, with a passive server (ib_write_lat is a ping-pong of
  # two busy-polling processes, which one vCPU serializes).
  perftest "r${r}_perftest_write_t1_2" ib_write_bw -s 2 -t 1 -n "$lat_iters"
  perftest "r${r}_perftest_write_t1_64" ib_write_bw -s 64 -t 1 -n "$lat_iters"
  perftest "r${r}_perftest_atomic_lat_cas" ib_atomic_lat -A CMP_AND_SWAP -n "$lat_iters"
  perftest "r${r}_perftest_atomic_lat_faa" ib_atomic_lat -A FETCH_AND_ADD -n "$lat_iters"
  perftest "r${r}_perftest_read_bw_65536" ib_read_bw -s 65536 -n "$bw_iters"
  # Diagnostic: at most 16 READs in flight, as our connection allows.
  perftest "r${r}_perftest_read_bw_65536_o16" ib_read_bw -s 65536 -o 16 -n "$bw_iters"
  step "round $r/$rounds: pandora-transport-bench --backend verbs --spin"
  ours "r${r}_ours_lat" '^verbs/(read2|read64|write2v?|write64v?|casv?|faav?)/depth:1/|^verbs/(cas|faa)/depth:16/' \
    "$min_time"
  ours "r${r}_ours_bw" '^verbs/read64k/depth:(16|128)/' "$bw_min_time"
done

step "all rounds done; writing $out/perf_compare.md and perf_compare.csv"
{
  echo "# pandora verbs transport vs perftest on Soft-RoCE"
  echo
  echo "Device $device (GID index $gid_index), $(uname -r), $(nproc) vCPU(s), $rounds rounds"
  echo "(perftest and ours alternating), medians over the rounds. $(date -u +%Y-%m-%dT%H:%M:%SZ)."
  echo
} >"$out/perf_compare.md"
python3 "$script_dir/perf_compare_table.py" "$raw" "$rounds" "$out/perf_compare.csv" >>"$out/perf_compare.md" ||
  die "perf_compare_table.py failed"
cat "$out/perf_compare.md"
