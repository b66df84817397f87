// pandora-pg-bench's command line, parsed and validated in one place, so
// every mistake is reported (exit 2) before anything connects.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "workloads/peers/postgres/pg_workload.h"
#include "workloads/peers/postgres/tatp_pg.h"
#include "workloads/peers/postgres/tpcc_pg.h"
#include "workloads/smallbank/smallbank.h"

namespace pandora::workloads::pg {

struct PgBenchConfig {
  std::string conninfo;        // libpq connection string (from --conninfo or --pg-dir DIR/conninfo)
  std::string workload = "smallbank";
  bool load = false;
  uint64_t threads = 1;        // one connection (one concurrent transaction) each
  uint64_t seconds = 10;
  uint64_t warmup_seconds = 1;
  uint64_t seed = 1;
  std::string report_path;
  bool check = true;
  SmallBankOptions smallbank;
  TatpOptions tatp;
  TpccOptions tpcc;
};

struct PgBenchArgs {
  enum class Outcome { kRun, kHelp, kError };
  Outcome outcome = Outcome::kError;
  std::string message;  // help text, or the error naming the flag
  PgBenchConfig config;
};

const std::vector<std::string>& pg_workload_names();
PgBenchArgs parse_pg_bench_args(int argc, const char* const* argv);
// The workload `cfg.workload` names, with its options.
Result<std::unique_ptr<PgWorkload>> make_pg_workload(const PgBenchConfig& cfg);

}  // namespace pandora::workloads::pg
