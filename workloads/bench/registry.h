// Builds a workload by name from the bench configuration.
#pragma once

#include <memory>
#include <string_view>

#include "workloads/bench/bench_config.h"
#include "workloads/bench/workload.h"

namespace pandora::workloads {

// kInvalidArgument for an unknown name or options the workload rejects.
Result<std::unique_ptr<Workload>> make_workload(std::string_view name, const BenchConfig& config);

}  // namespace pandora::workloads
