// What a --load needs from the memory daemons, worked out before anything
// connects: the log-lane size (the largest log record of the workloads
// loaded, unless --lane-bytes chose one) and the bytes of each daemon's
// region the tables take. `pandora-bench --plan` prints it, so scripts and
// users size --size from the planner itself instead of per-row constants.
//
//   Result<LoadPlan> p = plan_load(workloads, cfg.compute.lane_bytes, cfg.lane_bytes_given);
//   fmt::print("{}", format_load_plan(*p, 16 << 20));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/table_directory.h"
#include "workloads/bench/workload.h"

namespace pandora::workloads {

struct LoadPlan {
  std::vector<std::string> workloads;  // in load order
  TableDirectory directory;            // as create_tables() would lay it out (lanes = 0: set at load)
  uint32_t lane_bytes = 0;
  std::string lanes_sized_for;         // the workload whose log record chose lane_bytes; empty: default or given
  // Region offset of the first byte after the tables: the region must hold
  // this, rounded up to 4 KiB, plus the daemon's --log-size.
  uint64_t tables_end = 0;

  // The smallest pandora-memd --size that holds the tables and a log area of
  // `log_size` bytes (a multiple of 4 KiB).
  uint64_t region_bytes(uint64_t log_size) const;
};

// kInvalidArgument when `lane_bytes_given` and `lane_bytes` is below a
// workload's largest log record (the message names it and the size needed),
// or when the tables cannot be laid out. Without `lane_bytes_given`, lanes
// are max(lane_bytes, every workload's min_log_lane_bytes()).
Result<LoadPlan> plan_load(const std::vector<std::unique_ptr<Workload>>& workloads, uint32_t lane_bytes,
                           bool lane_bytes_given);

// The plan for people (one line per table, the lane size and why, the
// region --size for a log area of `log_size`), ending with one line of
// key=value pairs for scripts:
//   plan: table_bytes=N lane_bytes=N region_bytes_without_log=N
std::string format_load_plan(const LoadPlan& plan, uint64_t log_size);

}  // namespace pandora::workloads
