// pandora-pg-bench's results: the text summary and the JSON report. JSON
// keys are pandora-bench's where they mean the same (workloads/bench/
// README.md), plus "system", "isolation", "retries", "retry_rate",
// "latency_with_retries_us" and "server" (version and the settings that
// decide durability).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "workloads/peers/postgres/pg_bench_config.h"
#include "workloads/peers/postgres/pg_runner.h"

namespace pandora::workloads::pg {

struct PgSummary {
  const PgBenchConfig* config = nullptr;
  const PgWorkload* workload = nullptr;
  nlohmann::json server;             // {"version": ..., "settings": {...}}
  std::optional<PgRunStats> stats;   // absent with --seconds 0
  std::optional<PgCheck> check;      // absent with --no-check
  std::optional<int64_t> invariant_before;
  double load_seconds = 0;           // 0 without --load
  uint64_t rows_loaded = 0;
};

std::string format_pg_text(const PgSummary& s);
nlohmann::json format_pg_json(const PgSummary& s);

}  // namespace pandora::workloads::pg
