// pandora-bench: see workloads/bench/bench_config.cc (--help) and bench_app.h.
#include <fmt/format.h>

#include "workloads/bench/bench_app.h"
#include "workloads/bench/bench_config.h"

int main(int argc, char** argv) {
  using pandora::workloads::BenchArgs;
  BenchArgs args = pandora::workloads::parse_bench_args(argc, argv);
  switch (args.outcome) {
    case BenchArgs::Outcome::kHelp:
      fmt::print("{}", args.message);
      return 0;
    case BenchArgs::Outcome::kError:
      fmt::print(stderr, "pandora-bench: {}\n", args.message);
      fmt::print(stderr, "pandora-bench: run with --help for the options\n");
      return 2;
    case BenchArgs::Outcome::kRun:
      break;
  }
  return pandora::workloads::run_bench(args.config);
}
