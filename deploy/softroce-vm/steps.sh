#!/usr/bin/env bash
# Runs several checks one after the other in one Soft-RoCE VM, so that they
# share one boot (under TCG a boot costs about half a minute of a core):
#
#   bash deploy/softroce-vm/run.sh -- deploy/softroce-vm/steps.sh \
#     --step NAME COMMAND [ARGS...] [--step NAME COMMAND [ARGS...]]...
#
# Every step runs, even after one failed, so one run shows them all; each
# gets a header, its exit code and its time, and a summary follows. Exits 0
# when every step exited 0, 1 otherwise (2: bad usage). The word --step
# separates steps, so no command may take it as an argument.
set -uo pipefail

usage() {
  sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

names=()
words=()   # every step's command words, one after the other
starts=()  # index in words of each step's first word
counts=()  # number of words of each step
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --step)
      [[ $# -ge 3 && -n "$2" && "$3" != --step ]] || { echo "steps.sh: --step needs a NAME and a COMMAND" >&2; exit 2; }
      [[ "$2" =~ ^[A-Za-z0-9._-]+$ ]] || { echo "steps.sh: step name '$2': letters, digits, '.', '_', '-' only" >&2; exit 2; }
      names+=("$2")
      starts+=("${#words[@]}")
      counts+=(0)
      shift 2 ;;
    *)
      [[ ${#names[@]} -gt 0 ]] || { echo "steps.sh: '$1' before the first --step (see --help)" >&2; exit 2; }
      words+=("$1")
      counts[-1]=$((counts[-1] + 1))
      shift ;;
  esac
done
[[ ${#names[@]} -gt 0 ]] || { echo "steps.sh: no --step given (see --help)" >&2; exit 2; }

results=()
failed=0
for i in "${!names[@]}"; do
  argv=("${words[@]:${starts[i]}:${counts[i]}}")
  echo "==> step $((i + 1))/${#names[@]}: ${names[i]}: ${argv[*]}"
  start=$SECONDS
  "${argv[@]}"
  rc=$?
  took=$((SECONDS - start))
  if [[ $rc -eq 0 ]]; then
    results+=("${names[i]}: passed (${took} s)")
  else
    results+=("${names[i]}: FAILED with exit code $rc (${took} s)")
    failed=$((failed + 1))
  fi
  echo "==> step ${names[i]}: exit $rc after ${took} s"
done
echo "==> summary: $((${#names[@]} - failed)) of ${#names[@]} step(s) passed"
for r in "${results[@]}"; do echo "    $r"; done
[[ $failed -eq 0 ]]
