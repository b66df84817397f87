#!/usr/bin/env bash
# The transactional workloads use the store only through its public API
# (include/pandora/): every quoted #include of their sources must be a
# public header, another file of the workloads, or one of the two
# utilities they share with every tool (the flag parser, and the alias of
# the public Status). The pandora-bench driver (workloads/bench/, apart
# from the Workload interface and its helpers) and the peers may go deeper.
#
#   bash public_api_only_test.sh SOURCE_DIR
set -euo pipefail
src="${1:?usage: public_api_only_test.sh SOURCE_DIR}"
cd "$src"

files=$(ls workloads/micro/*.{h,cc} workloads/smallbank/*.{h,cc} workloads/tatp/*.{h,cc} \
           workloads/tpcc/*.{h,cc} 2>/dev/null
        ls workloads/bench/{workload,rng,zipf,flag_values}.{h,cc} 2>/dev/null || true)
[[ -n "$files" ]] || { echo "no workload sources found under $src/workloads" >&2; exit 1; }

allowed='^(pandora/[a-z_]+\.h|common/options\.h|common/status\.h|workloads/(micro|smallbank|tatp|tpcc)/[a-z_]+\.h|workloads/bench/(workload|rng|zipf|flag_values)\.h)$'
bad=0
checked=0
while IFS= read -r f; do
  checked=$((checked + 1))
  while IFS= read -r inc; do
    if [[ ! "$inc" =~ $allowed ]]; then
      echo "$f includes \"$inc\": not the public API (include/pandora/)" >&2
      bad=$((bad + 1))
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done <<<"$files"

if ((bad > 0)); then
  echo "FAILED: $bad include(s) of internals in the workloads" >&2
  exit 1
fi
echo "ok: $checked workload sources include only the public API"
