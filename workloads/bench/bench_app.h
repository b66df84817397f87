// pandora-bench as a function: connect, optionally load, audit, run, check,
// report. main() only parses the command line and calls this.
#pragma once

#include "workloads/bench/bench_config.h"

namespace pandora::workloads {

// Exit status: 0 success, 1 failure (connection, load, run, or a failed
// consistency check), 2 options the workload rejects, kExitFenced (6) this
// node was declared failed and fenced by the failure detector (--zookeeper)
// or by hand, kExitNeedsRecovery (7) below.
inline constexpr int kExitFenced = 6;
// A transaction was left undecided (a transport failure after logging):
// this node must be recovered (the failure detector does it; without one,
// pandora-ctl recover PID). Checks and reports still ran.
inline constexpr int kExitNeedsRecovery = 7;
int run_bench(const BenchConfig& config);

}  // namespace pandora::workloads
