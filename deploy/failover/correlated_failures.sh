#!/usr/bin/env bash
# Several compute nodes dying at once (a host that ran several compute
# processes): per round, a fresh local cluster (2 memory daemons, ZooKeeper,
# 3 pandora-fd replicas) runs VICTIMS + 1 SmallBank processes, SIGKILLs the
# victims at once, and measures from the leader's first detection to the
# surviving process holding every victim's pid (its push announcements),
# and to the last recovery marked done. Prints each round and the medians.
# --fd-b runs every round again with another pandora-fd (A B A B), e.g. one
# built at an older commit, and prints the pair ratios; --build-b does so
# with every binary of another build (needed when the wire protocols differ).
#
#   bash deploy/failover/correlated_failures.sh [--rounds 5] [--victims 3] [--fd-b OLD/pandora-fd | --build-b OLD]
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"

usage() {
  cat <<USAGE
Usage: bash deploy/failover/correlated_failures.sh [options]

Options:
  --rounds N          rounds (pairs with --fd-b)                           [5]
  --victims K         processes SIGKILLed at once (one more survives)      [3]
  --build DIR         Release build with the binaries                      [build/release]
  --fd-b PATH         a second pandora-fd to compare with (run A B A B)
  --build-b DIR       a second Release build to compare with: every binary of it (run A B A B)
  --fd-timeout-us US  the detector's timeout                               [50000]
  --stagger-ms MS     kill the victims one by one, MS milliseconds apart   [0: at once]
  --out DIR           rounds.txt, summary.txt (and kept logs)  [/tmp/pandora-correlated-failures]
  --keep-logs         keep every round's detector and bench logs in OUT/round-R-V/
  -h, --help          this help
USAGE
}

die() { echo "correlated_failures.sh: error: $*" >&2; exit 1; }

rounds=5
victims=3
build="$root/build/release"
fd_b=""
build_b=""
keep_logs=0
stagger_ms=0
fd_timeout_us=50000
out="/tmp/pandora-correlated-failures"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="${2:?--rounds needs a value}"; shift 2 ;;
    --victims) victims="${2:?--victims needs a value}"; shift 2 ;;
    --build) build="${2:?--build needs a value}"; shift 2 ;;
    --fd-b) fd_b="${2:?--fd-b needs a value}"; shift 2 ;;
    --build-b) build_b="${2:?--build-b needs a value}"; shift 2 ;;
    --keep-logs) keep_logs=1; shift ;;
    --stagger-ms) stagger_ms="${2:?--stagger-ms needs a value}"; shift 2 ;;
    --fd-timeout-us) fd_timeout_us="${2:?--fd-timeout-us needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer, got '$rounds'"
[[ "$victims" =~ ^[1-9][0-9]?$ ]] || die "--victims must be 1..99, got '$victims'"
[[ "$stagger_ms" =~ ^[0-9]{1,4}$ ]] || die "--stagger-ms must be 0..9999, got '$stagger_ms'"
[[ "$fd_timeout_us" =~ ^[1-9][0-9]*$ ]] || die "--fd-timeout-us must be a positive integer, got '$fd_timeout_us'"
[[ -z "$fd_b" || -z "$build_b" ]] || die "--fd-b and --build-b exclude each other"
# shellcheck source=deploy/lib/private_dir.sh
source "$script_dir/../lib/private_dir.sh"
# shellcheck source=deploy/lib/smallbank_cluster.sh
source "$script_dir/../lib/smallbank_cluster.sh"
mapfile -t bin_a < <(smallbank_binaries "$build")
[[ ${#bin_a[@]} -eq 4 ]] || exit 1
bin_b=()
if [[ -n "$build_b" ]]; then
  mapfile -t bin_b < <(smallbank_binaries "$build_b")
  [[ ${#bin_b[@]} -eq 4 ]] || exit 1
elif [[ -n "$fd_b" ]]; then
  [[ -x "$fd_b" ]] || die "$fd_b not found"
  [[ "${fd_b##*/}" == pandora-fd ]] || die "--fd-b must name a program called pandora-fd (cluster.sh stops the detector by that name), got '$fd_b'"
  bin_b=("${bin_a[@]:0:3}" "$fd_b")
fi
command -v python3 >/dev/null 2>&1 || die "python3 not found"
private_dir "$out" "output directory" || exit 2
out="$(cd -- "$out" && pwd -P)"
export PMEM_IS_PMEM_FORCE=1

trap smallbank_cleanup EXIT

# round FD: one round with that pandora-fd; prints "TOLD_MS DONE_MS" or
# "incomplete". Runs in this shell (not in a command substitution), so an
# interrupted run's trap stops what the round started.
round() {
  local memd="$1" bench="$2" ctl="$3" fd="$4" keep="$5" n deadline
  work="$(mktemp -d "${TMPDIR:-/tmp}/pandora-correlated.XXXXXX")"
  bench_pids=()
  smallbank_cluster "$work" "$memd" "$ctl" "$bench" "$fd" "$fd_timeout_us"
  smallbank_benches "$work" "$bench" $((victims + 1))
  sleep 1
  if [[ "$stagger_ms" == 0 ]]; then
    kill -9 "${bench_pids[@]:1}"
  else
    # One process after another (a host whose processes do not all die at
    # the same instant): python sleeps precisely enough between the kills.
    python3 -c 'import os, signal, sys, time
gap = int(sys.argv[1]) / 1000.0
for i, p in enumerate(sys.argv[2:]):
    if i:
        time.sleep(gap)
    os.kill(int(p), signal.SIGKILL)' "$stagger_ms" "${bench_pids[@]:1}"
  fi
  # Until the survivor was told every victim and the leader marked them done.
  deadline=$((SECONDS + 30))
  while :; do
    n="$(sed -n 's/.*announced \([0-9]*\) recovered pid.*/\1/p' "$work/b0.log" | awk '{s += $1} END {print s + 0}')"
    local done_n
    done_n="$(cat "$work/c"/fd*.log | grep -c "recovered pid" || true)"
    [[ "$n" -lt "$victims" || "$done_n" -lt "$victims" ]] || break
    [[ $SECONDS -lt $deadline ]] || break
    sleep 0.1
  done
  python3 - "$work" "$victims" <<'PY' || true
import datetime, glob, re, sys
d, k = sys.argv[1], int(sys.argv[2])
def ts(line):
    m = re.match(r'(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z', line)
    return datetime.datetime.fromisoformat(m.group(1)).timestamp() if m else None
fd = [l for f in glob.glob(d + '/c/fd*.log') for l in open(f, errors='replace')]
det = [t for t in (ts(l) for l in fd if re.search(r'pid \d+ missed by a majority', l)) if t]
done = [t for t in (ts(l) for l in fd if 'recovered pid' in l) if t]
told, n = None, 0
for l in open(d + '/b0.log', errors='replace'):
    m = re.search(r'announced (\d+) recovered pid', l)
    if m:
        n += int(m.group(1))
        if n >= k and told is None:
            told = ts(l)
if not det or told is None or len(done) < k:
    print('incomplete')
else:
    print(f'{1000 * (told - min(det)):.1f} {1000 * (max(done) - min(det)):.1f}')
PY
  smallbank_end_round "$keep"
}

: >"$out/rounds.txt"
for ((r = 1; r <= rounds; r++)); do
  for variant in a b; do
    if [[ "$variant" == a ]]; then
      round "${bin_a[@]}" "$([[ $keep_logs == 1 ]] && echo "$out/round-$r-a")" >"$out/round.out"
    elif [[ ${#bin_b[@]} -eq 4 ]]; then
      round "${bin_b[@]}" "$([[ $keep_logs == 1 ]] && echo "$out/round-$r-b")" >"$out/round.out"
    else
      continue
    fi
    echo "round $r $variant: $(cat "$out/round.out")" | tee -a "$out/rounds.txt"
  done
done

python3 - "$out/rounds.txt" "$victims" <<'PY' | tee "$out/summary.txt"
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    head, _, rest = line.partition(': ')
    _, r, v = head.split()
    vals = rest.split()
    if len(vals) == 2:
        rows.setdefault(v, {})[int(r)] = tuple(map(float, vals))
k = sys.argv[2]
for v, name in (('a', 'A'), ('b', 'B (--fd-b / --build-b)')):
    if v not in rows:
        continue
    told = [x[0] for x in rows[v].values()]
    done = [x[1] for x in rows[v].values()]
    print(f'{name}: {len(told)} rounds; first detection -> survivor told all {k} pids: median {statistics.median(told):.1f} ms '
          f'[{min(told):.1f}..{max(told):.1f}]; -> last recovery done: median {statistics.median(done):.1f} ms')
if 'a' in rows and 'b' in rows:
    ratios = [rows['b'][r][0] / rows['a'][r][0] for r in rows['a'] if r in rows['b'] and rows['a'][r][0] > 0]
    if ratios:
        print(f'pair ratios B/A (told): median {statistics.median(ratios):.2f}x [{min(ratios):.2f}..{max(ratios):.2f}]')
PY
