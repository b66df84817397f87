// pandora-bench's results: the human-readable summary and the JSON report.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "workloads/bench/bench_config.h"
#include "workloads/bench/runner.h"
#include "workloads/bench/workload.h"

namespace pandora::workloads {

struct BenchSummary {
  const BenchConfig* config = nullptr;
  std::vector<std::string> txn_types;
  std::optional<RunStats> stats;    // absent when nothing ran (--seconds 0)
  std::optional<CheckResult> check; // absent with --no-check, or when the run stopped early
  std::string check_skipped = "--no-check";  // why check is absent (the text summary says it)
  std::optional<int64_t> invariant_before;
  double load_seconds = 0;          // 0 without --load
  uint64_t rows_loaded = 0;
};

// The end-of-run summary (several lines, ends with a newline).
std::string format_text(const BenchSummary& s);
// One JSON object (keys documented in workloads/bench/README.md).
std::string format_json(const BenchSummary& s);

}  // namespace pandora::workloads
