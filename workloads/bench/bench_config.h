// pandora-bench's command line: ComputeConfig's shared options, the driver's
// own options and every workload's options, parsed and validated in one
// place so that every mistake is reported before anything connects.
//
//   BenchArgs a = parse_bench_args(argc, argv);
//   switch (a.outcome) { kHelp: print a.message, exit 0; kError: print, exit 2; kRun: ... }
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/logger.h"
#include "compute/compute_config.h"
#include "workloads/micro/micro.h"
#include "workloads/smallbank/smallbank.h"
#include "workloads/tpcc/tpcc.h"
#include "workloads/tatp/tatp.h"

namespace pandora::workloads {

struct BenchConfig {
  ComputeConfig compute;
  std::string workload = "micro";          // what runs
  bool load = false;                        // create tables + load rows first
  std::vector<std::string> load_workloads;  // whose tables --load creates (always contains `workload`)
  bool replace = false;                     // --load over existing tables
  // --lane-bytes was given. Otherwise a --load sizes the log lanes for the
  // largest log record of the workloads it loads (at least the default).
  bool lane_bytes_given = false;
  // --plan: print what a --load of load_workloads needs from each memory
  // daemon, for daemons with a log area of plan_log_size, and exit.
  bool plan = false;
  uint64_t plan_log_size = uint64_t{16} << 20;
  uint64_t seconds = 10;                    // measured run (0: no run)
  uint64_t warmup_seconds = 1;              // before the measured run, not reported
  uint64_t timeline_ms = 100;
  uint64_t seed = 1;
  std::string report_path;                  // JSON report (empty: none)
  std::string history_path;                 // transaction history, JSON lines (empty: none)
  bool check = true;                        // end-of-run consistency check
  LogLevel log_level = LogLevel::kWarn;
  MicroOptions micro;
  SmallBankOptions smallbank;
  TatpOptions tatp;
  TpccOptions tpcc;

  // Results as files and multi-process runs (deploy/bench/run.sh).
  std::string timeline_csv_path;            // CSV timeline (empty: none)
  uint64_t start_at_ms = 0;                 // start the run at this CLOCK_REALTIME (ms since the epoch); 0: at once
  std::vector<std::string> merge_paths;     // --merge: merge these reports (and check once) instead of running
  std::string baseline_report;              // --baseline-report: the report holding invariant_before for --merge
  std::vector<std::pair<std::string, std::string>> flag_values;  // every flag as parsed, for the report
};

struct BenchArgs {
  enum class Outcome { kRun, kHelp, kError };
  Outcome outcome = Outcome::kError;
  std::string message;  // help text, or the error (naming the flag)
  BenchConfig config;
};

// The workloads pandora-bench knows, in --help order.
const std::vector<std::string>& bench_workload_names();

BenchArgs parse_bench_args(int argc, const char* const* argv);

}  // namespace pandora::workloads
