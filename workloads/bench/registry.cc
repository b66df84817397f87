#include "workloads/bench/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace pandora::workloads {

Result<std::unique_ptr<Workload>> make_workload(std::string_view name, const BenchConfig& config) {
  if (name == "micro") {
    auto w = MicroWorkload::create(config.micro);
    if (!w) return w.status();
    return std::unique_ptr<Workload>(std::move(*w));
  }
  if (name == "smallbank") {
    auto w = SmallBankWorkload::create(config.smallbank);
    if (!w) return w.status();
    return std::unique_ptr<Workload>(std::move(*w));
  }
  if (name == "tpcc") {
    auto w = TpccWorkload::create(config.tpcc);
    if (!w) return w.status();
    return std::unique_ptr<Workload>(std::move(*w));
  }
  if (name == "tatp") {
    auto w = TatpWorkload::create(config.tatp);
    if (!w) return w.status();
    return std::unique_ptr<Workload>(std::move(*w));
  }
  return Status(Errc::kInvalidArgument, fmt::format("unknown workload '{}' (expected {})", name,
                                                    fmt::join(bench_workload_names(), ", ")));
}

}  // namespace pandora::workloads
