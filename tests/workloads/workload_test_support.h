// Shared set-up for the workload tests: two real pandora-memd daemons,
// compute configurations for them, and a runner that executes a workload in
// forked compute processes and brings their committed deltas back.
#pragma once

#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/logger.h"
#include "compute/cluster.h"
#include "compute/compute_config.h"
#include "tests/support/memd_cluster.h"
#include "workloads/bench/workload.h"

namespace pandora::testing {

// A quiet logger for tests (warnings and errors only).
Logger quiet_logger();

// What each forked compute process reports back (in a MAP_SHARED page).
struct ProcessReport {
  int32_t status = -1;  // 0 ok; else which step failed
  int64_t delta = 0;
  uint64_t commits = 0;
  uint64_t attempts = 0;
  uint64_t uncertain = 0;
  char error[200] = {};
};

struct ChildRunSpec {
  int processes = 2;
  uint16_t first_pid = 2;
  uint32_t threads = 1;
  uint32_t coordinators = 4;
  std::chrono::milliseconds duration{1000};
  uint64_t seed = 7;
};

// Runs `workload` in spec.processes forked compute processes (pids
// first_pid..) built from `base` (its compute_id is replaced), each with its
// own cluster, scheduler and workloads::run_workload, and waits (bounded) for
// all of them; a straggler is killed by pid. Returns one report per process
// (status -1 if it never reported).
std::vector<ProcessReport> run_in_children(const ComputeConfig& base, const workloads::Workload& workload,
                                           const ChildRunSpec& spec);

}  // namespace pandora::testing
