// pandora-bench as a function: connect, optionally load, audit, run, check,
// report. main() only parses the command line and calls this.
#pragma once

#include "workloads/bench/bench_config.h"

namespace pandora::workloads {

// Exit status: 0 success, 1 failure (connection, load, run, or a failed
// consistency check), 2 options the workload rejects, kExitFenced (6) this
// node was declared failed and fenced by the failure detector (--zookeeper)
// or by hand, kExitNeedsRecovery (7) and kExitMemoryNodeLost (8) below.
// When several apply, the first of 6, 8, 7 wins. With 6 and 8 the run
// stopped at once (every coordinator), the summary and --report still
// cover what ran, and the consistency check was skipped (it cannot read
// every row).
inline constexpr int kExitFenced = 6;
// A transaction was left undecided (a transport failure after logging):
// this node must be recovered (the failure detector does it; without one,
// pandora-ctl recover PID). Checks and reports still ran.
inline constexpr int kExitNeedsRecovery = 7;
// The connection to a memory node broke during the run (its daemon died or
// the link failed): nothing could commit any more, so the run stopped. The
// message names the memory node, and says whether transactions were left
// undecided for recovery as with 7.
inline constexpr int kExitMemoryNodeLost = 8;
int run_bench(const BenchConfig& config);

}  // namespace pandora::workloads
