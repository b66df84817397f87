// pandora-transport-bench: one-sided operation throughput and latency of each
// transport backend, against a private pandora-memd started here.
//
// Benchmarks are named  <backend>/<op>/depth:<n>  with op in read64, write64,
// cas, faa, read4k, write4k and depth 1 (one operation per doorbell: the
// latency case) or 16 (16 per doorbell: the throughput case). One benchmark
// iteration posts `depth` operations, rings the doorbell once and waits for
// all of them. Reported:
//   items_per_second   operations per second (SetItemsProcessed)
//   p50_ns p99_ns p999_ns   per-operation latency, from the doorbell to the
//                           moment its completion was returned by wait()
//
// Median of 5 runs:
//   pandora-transport-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Extra flags (before or after the benchmark flags):
//   --memd=PATH      pandora-memd to start (default: the one built with this binary)
//   --memd-arg=ARG   one more argument for the daemon (repeatable), e.g.
//                    --memd-arg=--busy-poll-us --memd-arg=50
#include <signal.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "common/status.h"
#include "common/transport/client.h"
#include "common/transport/transport.h"
#include "common/latency_histogram.h"
#include "memory/local_memd.h"

#ifndef PANDORA_MEMD_PATH
#error "PANDORA_MEMD_PATH must name the pandora-memd binary (set by CMake)"
#endif

namespace pandora {
namespace {

using Clock = std::chrono::steady_clock;

enum class BenchOp { kRead64, kWrite64, kCas, kFaa, kRead4k, kWrite4k };

struct OpSpec {
  BenchOp op;
  std::string_view name;
  uint32_t len;  // bytes moved per operation (8 for CAS/FAA)
};

constexpr std::array<OpSpec, 6> kOps = {{
    {BenchOp::kRead64, "read64", 64},
    {BenchOp::kWrite64, "write64", 64},
    {BenchOp::kCas, "cas", 8},
    {BenchOp::kFaa, "faa", 8},
    {BenchOp::kRead4k, "read4k", 4096},
    {BenchOp::kWrite4k, "write4k", 4096},
}};
constexpr std::array<uint32_t, 2> kDepths = {1, 16};
// Operations rotate over this many distinct targets, so consecutive
// operations touch different cache lines (and 4 KiB ones different pages).
constexpr uint64_t kTargets = 256;
constexpr uint64_t kWordArea = kTargets * 64;  // CAS/FAA words, one per cache line

// What every benchmark needs: the daemon's address and an identity. Owned by
// main(); benchmarks get it by reference through their registration lambda.
struct BenchContext {
  Endpoint endpoint;
  ClientIdentity identity;
};

void run_benchmark(benchmark::State& state, const BenchContext& ctx, Backend backend, OpSpec spec,
                   uint32_t depth) {
  ConnectOptions options;
  options.backend = backend;
  auto conn_or = open_connection(ctx.endpoint, ctx.identity, options);
  if (!conn_or) {
    state.SkipWithError(("connect: " + conn_or.status().to_string()).c_str());
    return;
  }
  Connection& conn = **conn_or;

  // Layout from the first aligned page of the data area: words for CAS/FAA,
  // then kTargets 4 KiB blocks for READ/WRITE of either size.
  const uint64_t base = (conn.data_begin() + 4095) & ~uint64_t{4095};
  const uint64_t words = base;
  const uint64_t blocks = base + kWordArea;
  if (conn.data_end() < blocks + kTargets * 4096) {
    state.SkipWithError("data area too small for the benchmark (needs ~1.1 MiB)");
    return;
  }

  // One buffer per in-flight operation: a buffer is not reused before its
  // operation completed.
  std::vector<std::vector<unsigned char>> bufs(depth, std::vector<unsigned char>(spec.len, 0x5a));
  std::vector<Completion> completions(depth);
  std::vector<uint64_t> cas_shadow(kTargets, 0);
  // CAS needs the current word to succeed: read the words once.
  if (spec.op == BenchOp::kCas) {
    for (uint64_t i = 0; i < kTargets; ++i) conn.post_faa(words + i * 64, 0, i);
    conn.flush();
    uint64_t got = 0;
    while (got < kTargets) {
      const size_t n = conn.wait(completions, std::chrono::milliseconds(1000));
      if (n == 0) {
        state.SkipWithError("timeout reading the CAS words");
        return;
      }
      for (size_t k = 0; k < n; ++k) {
        if (completions[k].status != Errc::kOk) {
          state.SkipWithError(std::string("FAA: ").append(errc_name(completions[k].status)).c_str());
          return;
        }
        cas_shadow[completions[k].wr_id] = completions[k].value;
      }
      got += n;
    }
  }

  LatencyHistogram hist;
  uint64_t next = 0;
  std::vector<uint64_t> targets(depth);
  bool failed = false;
  for (auto _ : state) {
    for (uint32_t k = 0; k < depth; ++k) {
      const uint64_t t = next++ % kTargets;
      targets[k] = t;
      switch (spec.op) {
        case BenchOp::kRead64:
          conn.post_read(blocks + t * 4096, bufs[k].data(), 64, k);
          break;
        case BenchOp::kRead4k:
          conn.post_read(blocks + t * 4096, bufs[k].data(), 4096, k);
          break;
        case BenchOp::kWrite64:
          conn.post_write(blocks + t * 4096, bufs[k].data(), 64, k);
          break;
        case BenchOp::kWrite4k:
          conn.post_write(blocks + t * 4096, bufs[k].data(), 4096, k);
          break;
        case BenchOp::kCas:
          // Targets within one batch are distinct (depth <= kTargets), so
          // each CAS sees the value this loop last installed and succeeds.
          conn.post_cas(words + t * 64, cas_shadow[t], cas_shadow[t] + 1, k);
          cas_shadow[t] += 1;
          break;
        case BenchOp::kFaa:
          conn.post_faa(words + t * 64, 1, k);
          break;
      }
    }
    const auto rang = Clock::now();
    conn.flush();
    uint32_t remaining = depth;
    while (remaining > 0) {
      const size_t n = conn.wait(std::span(completions.data(), remaining), std::chrono::milliseconds(5000));
      const auto now = Clock::now();
      if (n == 0) {
        state.SkipWithError(fmt::format("no completion within 5 s ({} outstanding, health {})", remaining,
                                        errc_name(conn.health()))
                                .c_str());
        failed = true;
        break;
      }
      const auto ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - rang).count());
      for (size_t i = 0; i < n; ++i) {
        const Completion& c = completions[i];
        if (c.status != Errc::kOk) {
          state.SkipWithError(fmt::format("{} failed: {}", op_name(c.op), errc_name(c.status)).c_str());
          failed = true;
          break;
        }
        if (spec.op == BenchOp::kCas && c.value + 1 != cas_shadow[targets[c.wr_id]]) {
          state.SkipWithError("CAS observed an unexpected word (another writer?)");
          failed = true;
          break;
        }
        hist.record(ns);
      }
      if (failed) break;
      remaining -= static_cast<uint32_t>(n);
    }
    if (failed) break;
  }
  if (failed) return;

  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * depth);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * depth * spec.len);
  state.counters["p50_ns"] = static_cast<double>(hist.percentile(0.50));
  state.counters["p99_ns"] = static_cast<double>(hist.percentile(0.99));
  state.counters["p999_ns"] = static_cast<double>(hist.percentile(0.999));
}

int bench_main(int argc, char** argv) {
  // Our own flag is taken out before Google Benchmark sees argv (it rejects
  // flags it does not know).
  std::string memd_path = PANDORA_MEMD_PATH;
  std::vector<std::string> memd_args;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    std::string_view a(argv[i]);
    if (i > 0 && a.starts_with("--memd=")) {
      memd_path = std::string(a.substr(7));
    } else if (i > 0 && a.starts_with("--memd-arg=")) {
      memd_args.emplace_back(a.substr(11));
    } else {
      args.push_back(argv[i]);
    }
  }
  int bargc = static_cast<int>(args.size());
  benchmark::Initialize(&bargc, args.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, args.data())) return 2;

  // The compute side maps the region for shm; treat the /dev/shm file as PM
  // (same flush path as real PM), as the daemon does.
  ::setenv("PMEM_IS_PMEM_FORCE", "1", 0);
  // A closed tcp connection must surface as an error, not kill the process.
  ::signal(SIGPIPE, SIG_IGN);

  // The daemon's region is in a private directory on /dev/shm (in memory,
  // which PMEM_IS_PMEM_FORCE=1 assumes; on disk the numbers would be the
  // disk's), with a random secret; see memory/local_memd.h.
  LocalMemdOptions launch;
  launch.binary = memd_path;
  launch.cluster_id = 0xbe7c4;
  launch.size = "64M";
  launch.log_size = "1M";
  launch.threads = 1;
  launch.log_level = "warn";  // the daemon's info lines are no benchmark output
  launch.extra_args = memd_args;
  launch.start_timeout = std::chrono::seconds(30);
  launch.stop_timeout = std::chrono::seconds(10);
  LocalMemd memd(launch);
  if (Status s = memd.start(); !s) {
    fmt::print(stderr, "pandora-transport-bench: cannot start pandora-memd: {}\n", s.to_string());
    return 1;
  }
  fmt::print(stderr, "pandora-transport-bench: pandora-memd pid {} on {} (region in {})\n", memd.pid(),
             memd.endpoint().to_string(), memd.dir());

  const BenchContext ctx{memd.endpoint(), memd.identity(/*compute_id=*/1)};
  for (Backend backend : {Backend::kShm, Backend::kTcp}) {
    for (const OpSpec& spec : kOps) {
      for (uint32_t depth : kDepths) {
        const std::string name = fmt::format("{}/{}/depth:{}", backend_name(backend), spec.name, depth);
        benchmark::RegisterBenchmark(name.c_str(), [&ctx, backend, spec, depth](benchmark::State& st) {
          run_benchmark(st, ctx, backend, spec, depth);
        })->UseRealTime();
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const int status = memd.stop();
  if (status != 0) {
    fmt::print(stderr, "pandora-transport-bench: pandora-memd exited with {}{}{}\n", status,
               memd.last_error().empty() ? "" : ": ", memd.last_error());
  }
  return 0;
}

}  // namespace
}  // namespace pandora

int main(int argc, char** argv) { return pandora::bench_main(argc, argv); }
