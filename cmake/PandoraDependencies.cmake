# Finds every external dependency. Each one missing stops configure with the
# name of the Debian bookworm package that provides it; deploy/setup.sh
# installs all of them.

set(PANDORA_MISSING "")

macro(pandora_missing what package)
  list(APPEND PANDORA_MISSING "${what} (Debian package: ${package})")
endmacro()

find_package(Threads REQUIRED)
find_package(PkgConfig)
if(NOT PkgConfig_FOUND)
  message(FATAL_ERROR "pkg-config not found. Install the Debian package 'pkg-config' (or run deploy/setup.sh).")
endif()

find_package(fmt CONFIG QUIET)
if(NOT fmt_FOUND)
  pandora_missing("fmt" "libfmt-dev")
endif()

find_package(Boost 1.74 CONFIG QUIET COMPONENTS context)
if(NOT Boost_FOUND)
  pandora_missing("Boost.Context / Coroutine2" "libboost-dev libboost-context-dev")
endif()

pkg_check_modules(PMEM QUIET IMPORTED_TARGET libpmem)
if(NOT PMEM_FOUND)
  pandora_missing("libpmem (PMDK)" "libpmem-dev")
endif()

# libcrypto: SHA-256 and HMAC-SHA256 for authentication (common/checksum.h).
# Security primitives come from a reviewed library, never written by hand.
find_package(OpenSSL QUIET COMPONENTS Crypto)
if(NOT OpenSSL_FOUND OR NOT TARGET OpenSSL::Crypto)
  pandora_missing("OpenSSL libcrypto" "libssl-dev")
endif()

# nlohmann-json: JSON for pandora-bench's reports and the history tools
# (litmus/history/json.h): parsing and printing come from a maintained
# library, not hand-written code.
find_package(nlohmann_json 3.10 CONFIG QUIET)
if(NOT nlohmann_json_FOUND)
  pandora_missing("nlohmann-json" "nlohmann-json3-dev")
endif()

find_library(IBVERBS_LIBRARY ibverbs)
find_path(IBVERBS_INCLUDE_DIR infiniband/verbs.h)
if(NOT IBVERBS_LIBRARY OR NOT IBVERBS_INCLUDE_DIR)
  pandora_missing("libibverbs" "libibverbs-dev")
endif()

find_library(RDMACM_LIBRARY rdmacm)
find_path(RDMACM_INCLUDE_DIR rdma/rdma_cma.h)
if(NOT RDMACM_LIBRARY OR NOT RDMACM_INCLUDE_DIR)
  pandora_missing("librdmacm" "librdmacm-dev")
endif()

find_library(ZOOKEEPER_LIBRARY zookeeper_mt)
find_path(ZOOKEEPER_INCLUDE_DIR zookeeper/zookeeper.h)
if(NOT ZOOKEEPER_LIBRARY OR NOT ZOOKEEPER_INCLUDE_DIR)
  pandora_missing("ZooKeeper C client" "libzookeeper-mt-dev")
endif()

if(PANDORA_BUILD_TESTS)
  find_package(GTest CONFIG QUIET)
  if(NOT GTest_FOUND)
    pandora_missing("GoogleTest" "libgtest-dev")
  endif()
endif()

if(PANDORA_BUILD_BENCHMARKS)
  find_package(benchmark CONFIG QUIET)
  if(NOT benchmark_FOUND)
    pandora_missing("Google Benchmark" "libbenchmark-dev")
  endif()
endif()

# libpq (nlohmann-json is required above): pandora-pg-bench, the PostgreSQL peer
# (workloads/peers/postgres/). Optional: without it that one binary is skipped
# with a message, everything else builds.
pkg_check_modules(LIBPQ QUIET IMPORTED_TARGET libpq)
set(PANDORA_HAVE_LIBPQ OFF)
if(NOT LIBPQ_FOUND)
  set(PANDORA_LIBPQ_MISSING "libpq not found (Debian package: libpq-dev)")
else()
  set(PANDORA_HAVE_LIBPQ ON)
endif()

if(PANDORA_MISSING)
  list(JOIN PANDORA_MISSING "\n  " missing_text)
  message(FATAL_ERROR "Missing dependencies:\n  ${missing_text}\n"
                      "Install them with apt-get, or run deploy/setup.sh which installs everything.")
endif()

# libFuzzer needs clang; with another compiler the fuzz targets are built as
# corpus replayers (they still run their seeds and generated inputs).
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(PANDORA_LIBFUZZER ON)
else()
  set(PANDORA_LIBFUZZER OFF)
endif()
