// Recovery of a failed compute node running the `ford` baseline: the
// stop-the-world recovery Pandora exists to avoid (seed 4.3.1).
//
// FORD's latches carry no owner (kFordLatch), so a latch the dead node left
// behind cannot be told from one a live node holds, and its latches taken
// but not yet logged are found only by scanning all memory. Hence:
//
//   // every live compute node has finished or aborted its transactions
//   // and holds no latch (the caller stopped the world); the dead pids are
//   // fenced everywhere.
//   for (d : dead) recover_ford_logs(cluster, conns, d.pid, d.slot, logger);   // repair data
//   for (d : dead) truncate_ford_lanes(cluster, conns, d.slot);
//   release_all_latches(cluster, conns, logger);    // the scan: every held latch is stray
//   // resume the world
//
// FORD writes each written object's undo record (a one-entry LogRecord)
// during execution to the coordinator's lane on each replica of that
// object, appended from the start of the lane, so recovery reads the pid's
// lanes on EVERY node. A lane's current records are the run from its start
// that shares the first record's txn id (a shorter transaction leaves older
// records behind the run; their txn ids differ). Records of one transaction
// are merged and decided as one (log_recovery.h decide_and_repair): every
// live replica of every object at >= old+1 -> it completed its commit
// writes; otherwise roll back the replicas showing old+1.
//
// That rule needs every record in a lane to belong to a transaction that
// committed or was still in flight (latched) at the crash. FORD as
// published also leaves the records of transactions that aborted after
// logging (the "lost decision" bug, seed Table 5.1): recovery would then
// undo another transaction's committed write of the same version. The
// engine's ford mode therefore zeroes the head of every lane it wrote
// before an abort releases its latches (one extra WRITE per replica node,
// on aborts only), which hides the aborted run.
//
// Every step is idempotent while the world stays stopped, so a recovery
// leader that dies is replaced and re-runs everything.
#pragma once

#include <cstdint>
#include <span>

#include "common/logger.h"
#include "common/status.h"
#include "common/transport/transport.h"
#include "compute/cluster.h"
#include "compute/step_hook.h"
#include "recovery/latch_scan.h"
#include "recovery/log_recovery.h"

namespace pandora {

// Decides and repairs every transaction whose records are in `pid`'s lanes
// (report.latch_sites stays empty: the scan releases latches).
// `slot`: the lanes the pid wrote (its leased slot, or LaneMap::fixed_slot).
Result<LogRecoveryReport> recover_ford_logs(const Cluster& cluster, std::span<Connection* const> conns, uint16_t pid,
                                            const LaneSlot& slot, const Logger& logger,
                                            StepHook* crash = nullptr);

// Zeroes the head of each lane of `slot` on every live node.
Status truncate_ford_lanes(const Cluster& cluster, std::span<Connection* const> conns, const LaneSlot& slot,
                           StepHook* crash = nullptr);


// Reads every slot of every table on every live node and releases (CAS to
// 0) each held latch. Only correct while no live transaction holds a latch.
// Logs progress at info level per node. Crash points kBeforeSweep and
// kAfterSweep bracket it.
Result<LatchScanReport> release_all_latches(const Cluster& cluster, std::span<Connection* const> conns,
                                            const Logger& logger, StepHook* crash = nullptr);

}  // namespace pandora
