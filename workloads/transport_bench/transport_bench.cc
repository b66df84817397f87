// pandora-transport-bench: one-sided operation throughput and latency of each
// transport backend, against a private pandora-memd started here (or a
// running daemon, --memory-node).
//
// Benchmarks are named  <backend>/<op>/depth:<n>  with op in read2, read64,
// write2, write64, cas, faa, read4k, write4k, read64k, and write2v,
// write64v, casv, faav (the same posted Durability::kVisible: no durability
// READ on verbs, no flush on shm; tcp persists anyway), and depth 1 (one
// operation per doorbell: the latency case), 16 (16 per doorbell: the
// throughput case) and, for read64k, 128 (perftest's ib_read_bw default:
// 64 KiB READs, tx-depth 128). read2/write2 are the default message size of
// perftest's ib_read_lat/ib_write_lat. One benchmark iteration posts `depth`
// operations, rings the doorbell once and waits for all of them. Reported:
//   items_per_second   operations per second (SetItemsProcessed)
//   p50_ns p99_ns p999_ns   per-operation latency, from the doorbell to the
//                           moment its completion was returned by wait()
//                           (or poll(), with --spin)
//
// Median of 5 runs:
//   pandora-transport-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Flags of this binary (before or after Google Benchmark's --benchmark_*
// flags, which go to the library; --help lists them all):
//   --backend LIST   shm, tcp, verbs, comma-separated, or all (default shm,tcp)
//   --rdma-device/--rdma-port/--rdma-gid-index/--rdma-mtu   verbs: as for pandora-memd
//   --spin           busy-poll completions (Connection::poll) instead of
//                    sleeping in wait(): how the compute scheduler and
//                    perftest wait
//   --memory-node HOST:PORT --cluster-id N --secret-file F [--compute-id N]
//                    use a running daemon instead of starting one
//   --memd=PATH      pandora-memd to start (default: the one built with this binary)
//   --memd-arg=ARG   one more argument for the daemon (repeatable), e.g.
//                    --memd-arg=--busy-poll-us --memd-arg=50
#include <signal.h>

#include <algorithm>
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

#include "common/options.h"
#include "common/secret.h"
#include "common/status.h"
#include "common/transport/client.h"
#include "common/transport/transport.h"
#include "common/latency_histogram.h"
#include "testing/local_memd.h"

#ifndef PANDORA_MEMD_PATH
#error "PANDORA_MEMD_PATH must name the pandora-memd binary (set by CMake)"
#endif

namespace pandora {
namespace {

using Clock = std::chrono::steady_clock;

enum class BenchOp { kRead, kWrite, kCas, kFaa };

struct OpSpec {
  BenchOp op;
  std::string_view name;
  uint32_t len;  // bytes moved per operation (8 for CAS/FAA)
  uint32_t max_depth;  // registered for the depths in kDepths up to this one
  Durability durability = Durability::kPersistent;  // WRITE/CAS/FAA
};

constexpr auto kVisible = Durability::kVisible;
constexpr std::array<OpSpec, 13> kOps = {{
    {BenchOp::kRead, "read2", 2, 16},
    {BenchOp::kRead, "read64", 64, 16},
    {BenchOp::kWrite, "write2", 2, 16},
    {BenchOp::kWrite, "write64", 64, 16},
    {BenchOp::kCas, "cas", 8, 16},
    {BenchOp::kFaa, "faa", 8, 16},
    {BenchOp::kRead, "read4k", 4096, 16},
    {BenchOp::kWrite, "write4k", 4096, 16},
    {BenchOp::kRead, "read64k", 65536, 128},
    {BenchOp::kWrite, "write2v", 2, 16, kVisible},
    {BenchOp::kWrite, "write64v", 64, 16, kVisible},
    {BenchOp::kCas, "casv", 8, 16, kVisible},
    {BenchOp::kFaa, "faav", 8, 16, kVisible},
}};
constexpr std::array<uint32_t, 3> kDepths = {1, 16, 128};
// Operations rotate over this many distinct targets, so consecutive
// operations touch different cache lines (and 4 KiB ones different pages).
constexpr uint64_t kTargets = 256;
constexpr uint64_t kWordArea = kTargets * 64;  // CAS/FAA words, one per cache line
// READ/WRITE targets: kTargets blocks of 4 KiB, or for larger operations
// kBigTargets blocks of their own size.
constexpr uint64_t kBigTargets = 32;

// What every benchmark needs: the daemon's address and an identity. Owned by
// main(); benchmarks get it by reference through their registration lambda.
struct BenchContext {
  Endpoint endpoint;
  ClientIdentity identity;
  VerbsOptions verbs;
  bool spin = false;
};

void run_benchmark(benchmark::State& state, const BenchContext& ctx, Backend backend, OpSpec spec,
                   uint32_t depth) {
  ConnectOptions options;
  options.backend = backend;
  options.verbs = ctx.verbs;
  auto conn_or = open_connection(ctx.endpoint, ctx.identity, options);
  if (!conn_or) {
    state.SkipWithError(("connect: " + conn_or.status().to_string()).c_str());
    return;
  }
  Connection& conn = **conn_or;

  // Layout from the first aligned page of the data area: words for CAS/FAA,
  // then kTargets 4 KiB blocks for READ/WRITE up to 4 KiB, or kBigTargets
  // blocks of the operation's size for larger ones.
  const uint64_t base = (conn.data_begin() + 4095) & ~uint64_t{4095};
  const uint64_t words = base;
  const uint64_t blocks = base + kWordArea;
  const uint64_t stride = spec.len <= 4096 ? 4096 : (uint64_t{spec.len} + 4095) & ~uint64_t{4095};
  const uint64_t block_targets = spec.len <= 4096 ? kTargets : kBigTargets;
  if (conn.data_end() < blocks + block_targets * stride) {
    state.SkipWithError(fmt::format("data area too small for the benchmark (needs {} KiB)",
                                    (blocks + block_targets * stride - conn.data_begin()) / 1024)
                            .c_str());
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
        case BenchOp::kRead:
          conn.post_read(blocks + (t % block_targets) * stride, bufs[k].data(), spec.len, k);
          break;
        case BenchOp::kWrite:
          conn.post_write(blocks + (t % block_targets) * stride, bufs[k].data(), spec.len, k, spec.durability);
          break;
        case BenchOp::kCas:
          // Targets within one batch are distinct (depth <= kTargets), so
          // each CAS sees the value this loop last installed and succeeds.
          conn.post_cas(words + t * 64, cas_shadow[t], cas_shadow[t] + 1, k, spec.durability);
          cas_shadow[t] += 1;
          break;
        case BenchOp::kFaa:
          conn.post_faa(words + t * 64, 1, k, spec.durability);
          break;
      }
    }
    const auto rang = Clock::now();
    conn.flush();
    uint32_t remaining = depth;
    while (remaining > 0) {
      size_t n = 0;
      auto now = Clock::now();
      if (ctx.spin) {
        // Busy-poll, as the compute scheduler and perftest do; give up after
        // the same 5 s as wait().
        const auto give_up = rang + std::chrono::seconds(5);
        while ((n = conn.poll(std::span(completions.data(), remaining))) == 0 && conn.health() == Errc::kOk &&
               now < give_up) {
          now = Clock::now();
        }
        now = Clock::now();
      } else {
        n = conn.wait(std::span(completions.data(), remaining), std::chrono::milliseconds(5000));
        now = Clock::now();
      }
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

struct BenchFlags {
  std::string backend = "shm,tcp";
  VerbsFlags rdma;
  bool spin = false;
  std::string memory_node;
  uint64_t cluster_id = 0;
  std::string secret_file;
  uint64_t compute_id = 1;
};

// "shm,tcp", "verbs", "all" (= shm,tcp,verbs).
Result<std::vector<Backend>> parse_backends(std::string_view text) {
  if (text == "all") return std::vector<Backend>{Backend::kShm, Backend::kTcp, Backend::kVerbs};
  std::vector<Backend> out;
  for (size_t pos = 0; pos <= text.size();) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    Result<Backend> b = parse_backend(text.substr(pos, comma - pos));
    if (!b) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("--backend '{}': expected shm, tcp, verbs (comma-separated) or all", text));
    }
    if (std::find(out.begin(), out.end(), *b) == out.end()) out.push_back(*b);
    pos = comma + 1;
  }
  return out;
}

int bench_main(int argc, char** argv) {
  // Google Benchmark gets argv[0] and its own --benchmark_* flags (it
  // rejects flags it does not know); --memd= and --memd-arg= are taken here
  // (--memd-arg repeats); the rest goes to this binary's OptionSet.
  std::string memd_path = PANDORA_MEMD_PATH;
  std::vector<std::string> memd_args;
  std::vector<char*> bench_args{argv[0]};
  std::vector<const char*> own_args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string_view a(argv[i]);
    if (a.starts_with("--memd=")) {
      memd_path = std::string(a.substr(7));
    } else if (a.starts_with("--memd-arg=")) {
      memd_args.emplace_back(a.substr(11));
    } else if (a.starts_with("--benchmark_") || a == "--v" || a.starts_with("--v=")) {
      bench_args.push_back(argv[i]);
    } else {
      own_args.push_back(argv[i]);
    }
  }

  BenchFlags flags;
  OptionSet opts("pandora-transport-bench",
                 "Google Benchmark of READ/WRITE/CAS/FAA per backend, op size and batch depth against a "
                 "pandora-memd it starts (or --memory-node). Also takes Google Benchmark's --benchmark_* flags "
                 "(e.g. --benchmark_filter='^verbs/', --benchmark_repetitions=5), --memd=PATH and "
                 "--memd-arg=ARG (repeatable).");
  opts.add_string("backend", &flags.backend, "backends to run: shm, tcp, verbs (comma-separated) or all");
  flags.rdma.declare(opts);
  opts.add_flag("spin", &flags.spin,
                "busy-poll for completions (Connection::poll, as the compute scheduler and perftest do) instead of "
                "sleeping in Connection::wait");
  opts.add_string("memory-node", &flags.memory_node,
                  "HOST:PORT of a running pandora-memd to use instead of starting one (then --cluster-id and "
                  "--secret-file are required)");
  opts.add_u64("cluster-id", &flags.cluster_id, "with --memory-node: the daemon's cluster id");
  opts.add_string("secret-file", &flags.secret_file, "with --memory-node: file holding the cluster secret (mode 600)");
  opts.add_u64("compute-id", &flags.compute_id, "with --memory-node: compute node id to connect as", 1, 65535);
  std::string message;
  switch (opts.parse(static_cast<int>(own_args.size()), own_args.data(), &message)) {
    case OptionSet::Outcome::kHelp:
      fmt::print("{}", message);
      return 0;
    case OptionSet::Outcome::kError:
      fmt::print(stderr, "pandora-transport-bench: {}\n", message);
      return 2;
    case OptionSet::Outcome::kRun:
      break;
  }
  Result<std::vector<Backend>> backends = parse_backends(flags.backend);
  if (!backends) {
    fmt::print(stderr, "pandora-transport-bench: {}\n", backends.status().message());
    return 2;
  }
  Result<VerbsOptions> verbs = flags.rdma.to_options();
  if (!verbs) {
    fmt::print(stderr, "pandora-transport-bench: {}\n", verbs.status().message());
    return 2;
  }
  const bool want_verbs =
      std::find(backends->begin(), backends->end(), Backend::kVerbs) != backends->end();

  int bargc = static_cast<int>(bench_args.size());
  benchmark::Initialize(&bargc, bench_args.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, bench_args.data())) return 2;

  // The compute side maps the region for shm; treat the /dev/shm file as PM
  // (same flush path as real PM), as the daemon does.
  ::setenv("PMEM_IS_PMEM_FORCE", "1", 0);
  // A closed tcp connection must surface as an error, not kill the process.
  ::signal(SIGPIPE, SIG_IGN);

  BenchContext ctx;
  ctx.verbs = *verbs;
  ctx.spin = flags.spin;
  std::unique_ptr<LocalMemd> memd;
  if (!flags.memory_node.empty()) {
    Result<Endpoint> ep = parse_endpoint(flags.memory_node);
    if (!ep) {
      fmt::print(stderr, "pandora-transport-bench: --memory-node: {}\n", ep.status().to_string());
      return 2;
    }
    if (flags.secret_file.empty() || !opts.was_set("cluster-id")) {
      fmt::print(stderr, "pandora-transport-bench: --memory-node needs --cluster-id and --secret-file\n");
      return 2;
    }
    Result<std::string> secret = read_secret_file(flags.secret_file);
    if (!secret) {
      fmt::print(stderr, "pandora-transport-bench: --secret-file: {}\n", secret.status().to_string());
      return 2;
    }
    ctx.endpoint = *ep;
    ctx.identity = ClientIdentity{flags.cluster_id, std::move(secret).value(), wire::Role::kCompute,
                                  static_cast<uint16_t>(flags.compute_id), new_incarnation()};
  } else {
    // The daemon's region is in a private directory on /dev/shm (in memory,
    // which PMEM_IS_PMEM_FORCE=1 assumes; on disk the numbers would be the
    // disk's), with a random secret; see testing/local_memd.h.
    LocalMemdOptions launch;
    launch.binary = memd_path;
    launch.cluster_id = 0xbe7c4;
    launch.size = "64M";
    launch.log_size = "1M";
    launch.threads = 1;
    launch.log_level = "warn";  // the daemon's info lines are no benchmark output
    if (want_verbs) {
      // Serve verbs or fail to start, on the device the client uses.
      launch.extra_args = {"--verbs", "on"};
      if (!flags.rdma.device.empty()) launch.extra_args.insert(launch.extra_args.end(), {"--rdma-device", flags.rdma.device});
      if (flags.rdma.port != 0) {
        launch.extra_args.insert(launch.extra_args.end(), {"--rdma-port", std::to_string(flags.rdma.port)});
      }
      launch.extra_args.insert(launch.extra_args.end(), {"--rdma-gid-index", flags.rdma.gid_index});
    }
    launch.extra_args.insert(launch.extra_args.end(), memd_args.begin(), memd_args.end());
    // Generous: in the emulated Soft-RoCE VM a start can take tens of seconds.
    launch.start_timeout = std::chrono::seconds(60);
    launch.stop_timeout = std::chrono::seconds(10);
    memd = std::make_unique<LocalMemd>(launch);
    if (Status s = memd->start(); !s) {
      fmt::print(stderr, "pandora-transport-bench: cannot start pandora-memd: {}\n", s.to_string());
      return 1;
    }
    fmt::print(stderr, "pandora-transport-bench: pandora-memd pid {} on {} (region in {})\n", memd->pid(),
               memd->endpoint().to_string(), memd->dir());
    ctx.endpoint = memd->endpoint();
    ctx.identity = memd->identity(/*compute_id=*/1);
  }

  for (Backend backend : *backends) {
    for (const OpSpec& spec : kOps) {
      for (uint32_t depth : kDepths) {
        if (depth > spec.max_depth) continue;
        const std::string name = fmt::format("{}/{}/depth:{}", backend_name(backend), spec.name, depth);
        benchmark::RegisterBenchmark(name.c_str(), [&ctx, backend, spec, depth](benchmark::State& st) {
          run_benchmark(st, ctx, backend, spec, depth);
        })->UseRealTime();
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (memd) {
    const int status = memd->stop();
    if (status != 0) {
      fmt::print(stderr, "pandora-transport-bench: pandora-memd exited with {}{}{}\n", status,
                 memd->last_error().empty() ? "" : ": ", memd->last_error());
    }
  }
  return 0;
}

}  // namespace
}  // namespace pandora

int main(int argc, char** argv) { return pandora::bench_main(argc, argv); }
