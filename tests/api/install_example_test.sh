#!/usr/bin/env bash
# ctest: the public API as an out-of-tree program sees it. Installs this
# build (cmake --install) into a temporary prefix, builds examples/ against
# it with find_package(Pandora), starts two memory daemons and runs the bank
# example (tcp, then shm on a fresh load), which exits 0 only if no money
# was made or lost, then audits the storage with the installed pandora-ctl
# verify. Everything started is stopped.
#
#   install_example_test.sh BUILD_DIR SOURCE_DIR CXX_COMPILER "EXTRA_CXX_FLAGS"
set -euo pipefail

[[ $# -eq 4 ]] || { echo "usage: $0 BUILD_DIR SOURCE_DIR CXX_COMPILER EXTRA_CXX_FLAGS" >&2; exit 2; }
build="$1" src="$2" cxx="$3" extra_flags="$4"
user="$(id -un 2>/dev/null || echo "uid$(id -u)")"

work="$(mktemp -d "${TMPDIR:-/tmp}/pandora-install.XXXXXX")"
region_dir="/dev/shm/pandora-$user/install-$$"
cleanup() {
  local rc=$?
  bash "$src/deploy/local/cluster.sh" stop --dir "$work/cluster" --region-dir "$region_dir" >/dev/null 2>&1 || true
  rm -rf -- "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== cmake --install $build --prefix $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
# What an application gets: the library, the public headers, the package
# files, and the binaries - and no internal header.
for f in lib/libpandora.so include/pandora/pandora.h lib/cmake/Pandora/PandoraConfig.cmake bin/pandora-memd \
         bin/pandora-ctl bin/pandora-fd; do
  [[ -e "$work/prefix/$f" ]] || { echo "FAIL: $f not installed" >&2; exit 1; }
done
# The PostgreSQL peer, where this build has it (libpq found).
if [[ -x "$build/workloads/peers/postgres/pandora-pg-bench" && ! -x "$work/prefix/bin/pandora-pg-bench" ]]; then
  echo "FAIL: bin/pandora-pg-bench not installed" >&2
  exit 1
fi
if find "$work/prefix/include" -name '*.h' | grep -v '/include/pandora/' | grep -q .; then
  echo "FAIL: headers outside include/pandora were installed:" >&2
  find "$work/prefix/include" -name '*.h' | grep -v '/include/pandora/' >&2
  exit 1
fi

# The library exports the public API only (client/exports.map): an
# internal symbol that leaked would let applications bind to internals.
leaked="$(nm -DC --defined-only "$work/prefix/lib/libpandora.so" | grep 'pandora::' |
  grep -v -e 'pandora::Client::' -e 'pandora::errc_name' -e 'pandora::Status::to_string' \
          -e 'pandora::abort_reason_name' -e 'pandora::dense_key(' -e 'typeinfo for pandora::\(Session\|BulkLoader\|Txn\)$' || true)"
[[ -z "$leaked" ]] || { echo "FAIL: libpandora.so exports internals:" >&2; echo "$leaked" | head >&2; exit 1; }

echo "== building examples/ against the installed package"
cmake -S "$src/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$extra_flags" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log" >&2; echo "FAIL: find_package(Pandora) did not configure" >&2; exit 1; }
cmake --build "$work/examples" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
example="$work/examples/pandora-bank-example"

export PMEM_IS_PMEM_FORCE=1
bash "$src/deploy/local/cluster.sh" start --nodes 2 --dir "$work/cluster" --region-dir "$region_dir" \
  --memd "$work/prefix/bin/pandora-memd" --size 32M --log-size 4M >/dev/null
args=(--memory-nodes "$(cat "$work/cluster/endpoints")" --cluster-id "$(cat "$work/cluster/cluster_id")"
      --secret-file "$work/cluster/secret" --accounts 200 --threads 3 --transfers 600)

run() {
  echo "== pandora-bank-example $*"
  if ! "$example" "${args[@]}" "$@" >"$work/out" 2>&1; then
    cat "$work/out" >&2
    for log in "$work/cluster"/node*.log; do echo "--- $log" >&2; tail -20 "$log" >&2; done
    echo "FAIL: the example exited non-zero" >&2
    exit 1
  fi
  cat "$work/out"
  grep -q "600 transfers done, 0 failed" "$work/out" || { echo "FAIL: not every transfer ran" >&2; exit 1; }
}
run --compute-id 1 --transport tcp
run --compute-id 2 --transport shm

# The storage under the bank, audited below the API by the installed
# pandora-ctl: every row on its replicas, identical, no latch left held.
ctl_args=(--memory-nodes "$(cat "$work/cluster/endpoints")" --cluster-id "$(cat "$work/cluster/cluster_id")"
          --secret-file "$work/cluster/secret")
echo "== pandora-ctl verify"
"$work/prefix/bin/pandora-ctl" verify "${ctl_args[@]}" --compute-id 3 | tee "$work/verify"
grep -q "table accounts (id 1): 200 rows, 0 stray latch(es) of recovered pids, ok" "$work/verify" ||
  { echo "FAIL: verify did not report the 200 accounts as consistent" >&2; exit 1; }
grep -q "verify: every table is consistent" "$work/verify" || { echo "FAIL: no verdict" >&2; exit 1; }
if "$work/prefix/bin/pandora-ctl" verify "${ctl_args[@]}" >"$work/out" 2>&1; then
  echo "FAIL: verify without --compute-id was accepted" >&2; exit 1
fi
grep -q -- "--compute-id" "$work/out" || { cat "$work/out" >&2; echo "FAIL: the error does not name --compute-id" >&2; exit 1; }

# Bad input gets a clear error, not a crash.
if "$example" "${args[@]}" --compute-id 0 >"$work/out" 2>&1; then
  echo "FAIL: compute id 0 was accepted" >&2; exit 1
fi
grep -q "compute_id" "$work/out" || { cat "$work/out" >&2; echo "FAIL: the error does not name compute_id" >&2; exit 1; }
echo "PASS"
