#!/usr/bin/env bash
# The failure detector's leader and a compute node die together (one host
# that ran both): how long until the survivors hear of the dead compute
# node? Per round, a fresh local cluster (2 memory daemons, ZooKeeper, 3
# pandora-fd replicas) runs two SmallBank processes; the leading replica and
# one process are SIGKILLed at the same instant. A new leader must take over
# before anyone recovers the process: by deposing the silent leader after
# --leader-timeout-ms, or, with 0, once the dead leader's ZooKeeper session
# expires (--zk-session-ms). Measured from the kill to the survivor's
# announcement of the recovered pid, and to the new leader's "recovered pid"
# line. Rounds alternate A and B (two leader timeouts) and the summary gives
# the medians and the pair ratios.
#
#   bash deploy/failover/leader_takeover.sh [--rounds 5] [--a-ms 500] [--b-ms 0]
set -euo pipefail

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"

usage() {
  cat <<USAGE
Usage: bash deploy/failover/leader_takeover.sh [options]

Options:
  --rounds N          rounds, each one A and one B                          [5]
  --a-ms MS           pandora-fd --leader-timeout-ms of variant A            [500]
  --b-ms MS           ... of variant B (0: wait for the session to expire)   [0]
  --zk-session-ms MS  the replicas' ZooKeeper session timeout               [4000]
  --build DIR         Release build with the binaries                       [build/release]
  --fd-timeout-us US  the detector's timeout                                [50000]
  --out DIR           rounds.txt, summary.txt             [/tmp/pandora-leader-takeover]
  --keep-logs         keep every round's detector and bench logs in OUT/round-R-V/
  -h, --help          this help
USAGE
}

die() { echo "leader_takeover.sh: error: $*" >&2; exit 1; }

rounds=5
a_ms=500
b_ms=0
zk_session_ms=4000
build="$root/build/release"
fd_timeout_us=50000
out="/tmp/pandora-leader-takeover"
keep_logs=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="${2:?--rounds needs a value}"; shift 2 ;;
    --a-ms) a_ms="${2:?--a-ms needs a value}"; shift 2 ;;
    --b-ms) b_ms="${2:?--b-ms needs a value}"; shift 2 ;;
    --zk-session-ms) zk_session_ms="${2:?--zk-session-ms needs a value}"; shift 2 ;;
    --build) build="${2:?--build needs a value}"; shift 2 ;;
    --fd-timeout-us) fd_timeout_us="${2:?--fd-timeout-us needs a value}"; shift 2 ;;
    --out) out="${2:?--out needs a value}"; shift 2 ;;
    --keep-logs) keep_logs=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option '$1'" ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]{0,2}$ ]] || die "--rounds must be 1..999, got '$rounds'"
[[ "$a_ms" =~ ^[0-9]{1,6}$ ]] || die "--a-ms must be 0..999999, got '$a_ms'"
[[ "$b_ms" =~ ^[0-9]{1,6}$ ]] || die "--b-ms must be 0..999999, got '$b_ms'"
[[ "$zk_session_ms" =~ ^[1-9][0-9]{2,5}$ ]] || die "--zk-session-ms must be 100..999999, got '$zk_session_ms'"
[[ "$fd_timeout_us" =~ ^[1-9][0-9]*$ ]] || die "--fd-timeout-us must be a positive integer, got '$fd_timeout_us'"
# shellcheck source=deploy/lib/private_dir.sh
source "$script_dir/../lib/private_dir.sh"
# shellcheck source=deploy/lib/smallbank_cluster.sh
source "$script_dir/../lib/smallbank_cluster.sh"
mapfile -t bins < <(smallbank_binaries "$build")
[[ ${#bins[@]} -eq 4 ]] || exit 1
memd="${bins[0]}" bench="${bins[1]}" ctl="${bins[2]}" fd="${bins[3]}"
command -v python3 >/dev/null 2>&1 || die "python3 not found"
private_dir "$out" "output directory" || exit 2
out="$(cd -- "$out" && pwd -P)"
export PMEM_IS_PMEM_FORCE=1
trap smallbank_cleanup EXIT

# round LEADER_TIMEOUT_MS KEEP: prints "TOLD_MS DONE_MS" or "incomplete: why".
# Runs in this shell, so an interrupted run's trap stops what it started.
round() {
  local leader_timeout_ms="$1" keep="$2" i leader="" deadline
  work="$(mktemp -d "${TMPDIR:-/tmp}/pandora-takeover.XXXXXX")"
  bench_pids=()
  smallbank_cluster "$work" "$memd" "$ctl" "$bench" "$fd" "$fd_timeout_us" \
    "--leader-timeout-ms=$leader_timeout_ms" "--zk-session-ms=$zk_session_ms"
  smallbank_benches "$work" "$bench" 2
  # The replica that leads has its data plane (cluster.sh start-fd waited
  # for it); the others heard it for a while.
  for i in 1 2 3; do
    if grep -q "leader data plane" "$work/c/fd$i.log" 2>/dev/null; then leader="$i"; fi
  done
  [[ -n "$leader" ]] || die "no replica leads (logs: $work/c/fd*.log)"
  sleep 1
  # Both at the same instant; the kill's wall-clock time is what the
  # survivor's and the replicas' log lines are measured from.
  python3 -c 'import os, signal, sys, time
print(f"{time.time():.6f}", flush=True)
for p in sys.argv[1:]:
    os.kill(int(p), signal.SIGKILL)' "$(cat "$work/c/fd$leader.pid")" "${bench_pids[1]}" >"$work/killed_at"
  deadline=$((SECONDS + 60))
  local victim
  victim="$(sed -n 's/.*joined the cluster as pid \([0-9]*\).*/\1/p' "$work/b1.log" | head -n 1)"
  [[ -n "$victim" ]] || die "bench 1 did not say its pid (log: $work/b1.log)"
  until grep -Eq "announced [0-9]+ recovered pid\(s\):( [0-9]+)* $victim( |\$)" "$work/b0.log" 2>/dev/null &&
        cat "$work/c"/fd*.log | grep -q "recovered pid $victim:"; do
    [[ $SECONDS -lt $deadline ]] || break
    sleep 0.1
  done
  python3 - "$work" <<'PY' || true
import datetime, glob, re, sys
d = sys.argv[1]
killed = float(open(d + '/killed_at').read())
def ts(line):
    m = re.match(r'(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z', line)
    return datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp() if m else None
joined = re.search(r'joined the cluster as pid (\d+)', open(d + '/b1.log', errors='replace').read())
victim = joined.group(1) if joined else '?'
# The survivor's announcement naming the victim (the new leader announces
# the dead leader's own data-plane pid too), and the victim's recovery.
told = next((ts(l) for l in open(d + '/b0.log', errors='replace')
             if (m := re.search(r'announced \d+ recovered pid\(s\): ([\d ]+)', l)) and victim in m.group(1).split()),
            None)
done = [t for f in glob.glob(d + '/c/fd*.log') for l in open(f, errors='replace')
        if f'recovered pid {victim}:' in l and (t := ts(l))]
deposed = any('deposing the leader' in l for f in glob.glob(d + '/c/fd*.log') for l in open(f, errors='replace'))
if told is None or not done:
    print('incomplete: no recovery within 60 s')
else:
    print(f'{1000 * (told - killed):.1f} {1000 * (min(done) - killed):.1f} {"deposed" if deposed else "expired"}')
PY
  smallbank_end_round "$keep"
}

: >"$out/rounds.txt"
for ((r = 1; r <= rounds; r++)); do
  for variant in a b; do
    ms="$a_ms"
    [[ "$variant" == a ]] || ms="$b_ms"
    round "$ms" "$([[ $keep_logs == 1 ]] && echo "$out/round-$r-$variant")" >"$out/round.out"
    echo "round $r $variant (--leader-timeout-ms $ms): $(cat "$out/round.out")" | tee -a "$out/rounds.txt"
  done
done

python3 - "$out/rounds.txt" "$a_ms" "$b_ms" "$zk_session_ms" <<'PY' | tee "$out/summary.txt"
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    head, _, rest = line.partition(': ')
    _, r, v = head.split()[:3]
    vals = rest.split()
    if len(vals) == 3 and not vals[0].startswith('incomplete'):
        rows.setdefault(v, {})[int(r)] = (float(vals[0]), float(vals[1]), vals[2])
ms = {'a': sys.argv[2], 'b': sys.argv[3]}
print(f'FD leader and a compute node SIGKILLed together; replicas\' ZooKeeper session {sys.argv[4]} ms')
for v in ('a', 'b'):
    if v not in rows:
        print(f'{v.upper()} (--leader-timeout-ms {ms[v]}): no complete round')
        continue
    told = [x[0] for x in rows[v].values()]
    done = [x[1] for x in rows[v].values()]
    how = sorted({x[2] for x in rows[v].values()})
    print(f'{v.upper()} (--leader-timeout-ms {ms[v]}): {len(told)} rounds ({"/".join(how)}); kill -> survivor told: '
          f'median {statistics.median(told):.0f} ms [{min(told):.0f}..{max(told):.0f}]; '
          f'-> recovery done: median {statistics.median(done):.0f} ms')
if 'a' in rows and 'b' in rows:
    ratios = [rows['b'][r][0] / rows['a'][r][0] for r in rows['a'] if r in rows['b'] and rows['a'][r][0] > 0]
    if ratios:
        print(f'pair ratios B/A (told): median {statistics.median(ratios):.2f}x [{min(ratios):.2f}..{max(ratios):.2f}]')
PY
