#!/usr/bin/env bash
# Runs one pandora-bench run as N compute processes (locally, or over ssh on
# the hosts of a file), started together, and merges their reports with one
# end-of-run check for all of them. See usage below and
# workloads/bench/README.md ("Runs of several processes").
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash deploy/bench/run.sh --processes N --out DIR [options] -- PANDORA_BENCH_FLAGS...

Runs pandora-bench as N compute processes against one cluster, each with its
own compute id, starting their runs at one wall-clock instant (--start-at),
then merges their reports (pandora-bench --merge): counts and latency
histograms summed, throughput summed over the window common to every
process, and the end-of-run check run once against the invariant captured
before any process started.

Steps (every command's output goes to DIR/*.log):
  1. baseline: pandora-bench FLAGS --seconds 0 [--load] --report DIR/baseline.json
  2. process i (0..N-1): pandora-bench FLAGS --no-check --start-at T
       --report DIR/p<i>.json --timeline-csv DIR/p<i>.csv   (all launched, then waited for)
  3. merge: pandora-bench FLAGS --merge DIR/p0.json,... --baseline-report DIR/baseline.json
       --report DIR/merged.json --timeline-csv DIR/merged.csv

Compute ids: with --zookeeper among FLAGS the registry assigns every
process's pid; otherwise process i is --compute-id FIRST+i, and the
baseline and the merge's check use FIRST (before and after the run).

Options:
  --processes N          compute processes (default 1)
  --out DIR              where reports, CSVs and logs go (created)
  --bench PATH           pandora-bench binary (default: build/release/workloads/bench/pandora-bench
                         of this checkout); remote hosts use the same path
  --hosts FILE           one user@host per line ('#' comments); process i runs on host i mod H
                         over ssh (same binary path, DIR created there, reports copied back with
                         scp). Without it every process runs on this machine. The baseline and
                         the merge always run here.
  --first-compute-id ID  first compute id without --zookeeper (default 1)
  --coordinators-total K split K coordinators over the processes (each runs --threads 1
                         --coordinators K/N, the first K%N one more); without it every process
                         runs the FLAGS' --threads x --coordinators
  --load                 create and load the tables in the baseline step
  --start-margin S       seconds from launching to --start-at (default 5): time for every
                         process to connect and start its workers; a process not ready by then
                         says so ("starting late") and the merge measures only the overlap
  --dry-run              print the commands instead of running them
  -h, --help             this text

The runner owns --report, --timeline-csv, --start-at, --merge,
--baseline-report, --compute-id, --no-check, --load and --history; FLAGS
must not contain them. Exit status: that of the merge (0: merged and the
check passed), 1 if a process failed, 2 for a bad command line.
USAGE
}

die() { echo "run.sh: error: $*" >&2; exit 2; }

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/../.." && pwd -P)"

processes=1
out=""
bench="$root/build/release/workloads/bench/pandora-bench"
hosts_file=""
first_id=1
coord_total=0
load=0
margin=5
dry_run=0
flags=()

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --processes) [[ $# -ge 2 ]] || die "--processes needs a value"; processes="$2"; shift 2 ;;
    --out) [[ $# -ge 2 ]] || die "--out needs a value"; out="$2"; shift 2 ;;
    --bench) [[ $# -ge 2 ]] || die "--bench needs a value"; bench="$2"; shift 2 ;;
    --hosts) [[ $# -ge 2 ]] || die "--hosts needs a value"; hosts_file="$2"; shift 2 ;;
    --first-compute-id) [[ $# -ge 2 ]] || die "--first-compute-id needs a value"; first_id="$2"; shift 2 ;;
    --coordinators-total) [[ $# -ge 2 ]] || die "--coordinators-total needs a value"; coord_total="$2"; shift 2 ;;
    --load) load=1; shift ;;
    --start-margin) [[ $# -ge 2 ]] || die "--start-margin needs a value"; margin="$2"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; flags=("$@"); break ;;
    *) die "unknown option '$1' (pandora-bench flags go after --; see --help)" ;;
  esac
done

is_uint "$processes" && [[ "$processes" -ge 1 ]] || die "--processes must be a positive integer, got '$processes'"
is_uint "$first_id" && [[ "$first_id" -ge 1 ]] || die "--first-compute-id must be a positive integer"
is_uint "$coord_total" || die "--coordinators-total must be a non-negative integer"
is_uint "$margin" || die "--start-margin must be whole seconds"
[[ -n "$out" ]] || die "--out DIR is required"
[[ "$dry_run" -eq 1 || -x "$bench" ]] || die "pandora-bench not found at $bench (build it, or pass --bench)"

# The flags the runner owns, and the values it needs from the others.
zookeeper=0
seconds=10
warmup=1
for ((i = 0; i < ${#flags[@]}; i++)); do
  f="${flags[$i]}"
  name="${f%%=*}"
  case "$name" in
    --report|--timeline-csv|--start-at|--merge|--baseline-report|--compute-id|--no-check|--load|--history|--load-workloads)
      die "$name is set by the runner (or not allowed in a multi-process run); remove it from the flags" ;;
    --zookeeper) zookeeper=1 ;;
    --seconds|--warmup-seconds)
      if [[ "$f" == *=* ]]; then v="${f#*=}"; else v="${flags[$((i + 1))]:-}"; fi
      is_uint "$v" || die "$name: '$v' is not whole seconds"
      [[ "$name" == --seconds ]] && seconds="$v" || warmup="$v" ;;
    --threads|--coordinators)
      [[ "$coord_total" -eq 0 ]] || die "$name and --coordinators-total exclude each other" ;;
  esac
done
[[ "$seconds" -ge 1 ]] || die "--seconds must be at least 1 for a run"
if [[ "$coord_total" -gt 0 && "$coord_total" -lt "$processes" ]]; then
  die "--coordinators-total $coord_total is fewer than one per process ($processes processes)"
fi

hosts=()
if [[ -n "$hosts_file" ]]; then
  [[ -r "$hosts_file" ]] || die "--hosts: cannot read $hosts_file"
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line%%#*}"
    line="$(echo "$line" | tr -d '[:space:]')"
    [[ -z "$line" ]] && continue
    [[ "$line" =~ ^[A-Za-z0-9._-]+@[A-Za-z0-9._:-]+$ ]] || die "--hosts: '$line' is not user@host"
    hosts+=("$line")
  done < "$hosts_file"
  [[ ${#hosts[@]} -gt 0 ]] || die "--hosts: $hosts_file lists no host"
fi

# shellcheck source=deploy/lib/private_dir.sh
source "$script_dir/../lib/private_dir.sh"
[[ "$dry_run" -eq 1 ]] || private_dir "$out" "output directory" || exit 2
out="$(cd -- "$out" 2>/dev/null && pwd -P || echo "$out")"

# One line, quoted so it can be pasted into a shell.
quote() { printf '%q ' "$@"; }
show() { echo "+ $*"; }

# Runs a local pandora-bench step to completion, output in its log.
run_local_step() {
  local log="$1"
  shift
  show "$(quote "$@")> $log 2>&1"
  [[ "$dry_run" -eq 1 ]] && return 0
  "$@" > "$log" 2>&1
}

id_flags() {  # id_flags OFFSET
  [[ "$zookeeper" -eq 1 ]] || echo "--compute-id $((first_id + $1))"
}

# 1. The baseline, captured once before any process starts.
base_cmd=("$bench" "${flags[@]}")
# shellcheck disable=SC2207
base_cmd+=($(id_flags 0) --seconds 0 --report "$out/baseline.json")
[[ "$load" -eq 1 ]] && base_cmd+=(--load)
if ! run_local_step "$out/baseline.log" "${base_cmd[@]}"; then
  echo "run.sh: the baseline step failed; its output:" >&2
  cat "$out/baseline.log" >&2
  exit 1
fi

# 2. The processes, launched back to back, starting their runs at start_at.
now_ms=$(($(date +%s%N) / 1000000))
start_at=$((now_ms + margin * 1000))
limit=$((seconds + warmup + margin + 120))
pids=()
remote=()
cleanup() {
  local p
  for p in "${pids[@]}"; do
    kill -TERM "$p" 2>/dev/null || true
  done
}
trap cleanup INT TERM
for ((i = 0; i < processes; i++)); do
  cmd=(timeout --signal=TERM --kill-after=10 "$limit" "$bench" "${flags[@]}")
  # shellcheck disable=SC2207
  cmd+=($(id_flags "$i"))
  if [[ "$coord_total" -gt 0 ]]; then
    share=$((coord_total / processes + (i < coord_total % processes ? 1 : 0)))
    cmd+=(--threads 1 --coordinators "$share")
  fi
  cmd+=(--no-check --start-at "$start_at" --report "$out/p$i.json" --timeline-csv "$out/p$i.csv")
  log="$out/p$i.log"
  if [[ ${#hosts[@]} -gt 0 ]]; then
    host="${hosts[$((i % ${#hosts[@]}))]}"
    remote_cmd="mkdir -p $(quote "$out")&& exec $(quote "${cmd[@]}")> $(quote "$log") 2>&1"
    show "ssh -o BatchMode=yes $host $(quote "$remote_cmd")"
    remote+=("$host")
    if [[ "$dry_run" -eq 0 ]]; then
      ssh -o BatchMode=yes "$host" "$remote_cmd" &
      pids+=($!)
    fi
  else
    show "$(quote "${cmd[@]}")> $log 2>&1 &"
    remote+=("")
    if [[ "$dry_run" -eq 0 ]]; then
      "${cmd[@]}" > "$log" 2>&1 &
      pids+=($!)
    fi
  fi
done

failed=0
for ((i = 0; i < ${#pids[@]}; i++)); do
  rc=0
  wait "${pids[$i]}" || rc=$?
  if [[ "$rc" -ne 0 ]]; then
    echo "run.sh: process $i exited with status $rc${remote[$i]:+ on ${remote[$i]}}" >&2
    failed=1
  fi
done
pids=()
trap - INT TERM
for ((i = 0; i < processes; i++)); do
  if [[ -n "${remote[$i]}" ]]; then
    # Copied aside, then renamed: where DIR is one shared file system (NFS
    # homes), the source is the destination, and scp would truncate the
    # file it is reading; a copy cut short never looks like a report.
    for f in "p$i.json" "p$i.csv" "p$i.log"; do
      part="$out/.$f.part"
      show "scp -q -o BatchMode=yes ${remote[$i]}:$(quote "$out/$f") $(quote "$part") && mv -f $(quote "$part") $(quote "$out/$f")"
      if [[ "$dry_run" -eq 0 ]]; then
        { scp -q -o BatchMode=yes "${remote[$i]}:$out/$f" "$part" && mv -f "$part" "$out/$f"; } || failed=1
      fi
    done
  fi
done
if [[ "$failed" -ne 0 ]]; then
  for ((i = 0; i < processes; i++)); do
    echo "---- $out/p$i.log (last lines) ----" >&2
    tail -n 15 "$out/p$i.log" >&2 2>/dev/null || true
  done
  exit 1
fi

# 3. The merge, with the check run once for every process.
reports=""
for ((i = 0; i < processes; i++)); do reports+="${reports:+,}$out/p$i.json"; done
merge_cmd=("$bench" "${flags[@]}")
# shellcheck disable=SC2207
merge_cmd+=($(id_flags 0) --merge "$reports" --baseline-report "$out/baseline.json" --report "$out/merged.json"
            --timeline-csv "$out/merged.csv")
rc=0
run_local_step "$out/merged.log" "${merge_cmd[@]}" || rc=$?
[[ "$dry_run" -eq 1 ]] || cat "$out/merged.log"
exit "$rc"
