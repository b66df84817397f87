// Scans every slot of every table on every live node and releases the held
// latches a predicate calls stray, each by CAS of the exact word it read (a
// latch that changed meanwhile is left alone). The memory-wide scan that
// Pandora's implicit latch logging keeps off the critical path: FORD's
// stop-the-world recovery runs it with every latch stray (ford_recovery.h),
// pid recycling with the latches of retired pids (recycler.h).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "common/logger.h"
#include "common/status.h"
#include "common/transport/transport.h"
#include "compute/cluster.h"

namespace pandora {

struct LatchScanReport {
  uint64_t slots = 0;       // slots scanned, over all nodes
  uint64_t bytes = 0;       // bytes read
  uint32_t released = 0;    // stray latches found and released
};

// `stray(word)` is asked for every held latch word. Logs progress at info
// level per node.
Result<LatchScanReport> release_latches_where(const Cluster& cluster, std::span<Connection* const> conns,
                                              const std::function<bool(uint64_t)>& stray, const Logger& logger);

}  // namespace pandora
