#!/usr/bin/env bash
# Installs Pandora's build dependencies (Debian packages) and builds it.
#
#   bash deploy/setup.sh [debug|release|all]     (default: all)
#
#   debug   -> build/debug    clang, Debug: ASan + UBSan, tests, libFuzzer targets
#   release -> build/release  clang, Release: daemons, demo, benchmarks (no tests)
#
# Idempotent: packages are installed only when dpkg reports one missing, and
# an existing build directory is re-configured and built incrementally.
# All paths are derived from this script's location, never from the caller's
# working directory.
set -euo pipefail

usage() {
  cat <<USAGE
Usage: bash deploy/setup.sh [debug|release|all]

Installs the Debian packages Pandora needs (only when one is missing; uses
sudo when not run as root) and configures + builds with clang and Ninja:

  debug    build/debug    Debug: AddressSanitizer + UBSan, tests, fuzz targets
  release  build/release  Release: pandora-memd, demo and benchmarks (tests off)
  all      both (default)

Environment:
  PANDORA_JOBS   parallel build jobs (default: nproc)
USAGE
}

# Exactly the packages the build needs; see cmake/PandoraDependencies.cmake.
readonly PACKAGES=(
  cmake ninja-build clang libclang-rt-14-dev pkg-config libibverbs-dev librdmacm-dev
  libboost-dev libboost-context-dev libzookeeper-mt-dev zookeeper libpmem-dev
  libbenchmark-dev libfmt-dev libgtest-dev libssl-dev nlohmann-json3-dev
)

die() { echo "setup.sh: error: $*" >&2; exit 1; }

mode="all"
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") ;;
  debug|release|all) mode="$1" ;;
  *) usage >&2; die "unknown build type '$1' (expected debug, release or all)" ;;
esac
[[ $# -le 1 ]] || { usage >&2; die "too many arguments"; }

script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
root="$(cd -- "$script_dir/.." && pwd -P)"
jobs="${PANDORA_JOBS:-$(nproc)}"

# shellcheck source=deploy/lib/debian_packages.sh
source "$script_dir/lib/debian_packages.sh"
install_packages() { ensure_debian_packages setup.sh "${PACKAGES[@]}" || exit 1; }

# configure_and_build NAME BUILD_TYPE EXTRA_CMAKE_ARGS...
configure_and_build() {
  local name="$1" type="$2"
  shift 2
  local dir="$root/build/$name"
  # A build dir configured with another generator cannot be re-used; say so
  # instead of letting cmake fail with a less obvious message.
  if [[ -f "$dir/CMakeCache.txt" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt"; then
    die "$dir was configured with another generator; remove it (rm -rf '$dir') and re-run"
  fi
  echo "==> configuring $name ($type) in build/$name"
  cmake -S "$root" -B "$dir" -G Ninja \
    -DCMAKE_BUILD_TYPE="$type" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    "$@" >"$dir.configure.log" 2>&1 || {
      cat "$dir.configure.log" >&2
      die "cmake configure of build/$name failed (log: $dir.configure.log)"
    }
  echo "==> building $name with $jobs job(s)…"
  cmake --build "$dir" --parallel "$jobs" || die "build of build/$name failed"
  echo "==> $name build ready: build/$name"
}

install_packages
mkdir -p "$root/build"
case "$mode" in
  debug)   configure_and_build debug Debug ;;
  release) configure_and_build release Release -DPANDORA_BUILD_TESTS=OFF ;;
  all)
    configure_and_build debug Debug
    configure_and_build release Release -DPANDORA_BUILD_TESTS=OFF
    ;;
esac
