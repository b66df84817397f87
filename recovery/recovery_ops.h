// Small helpers shared by the recovery routines (log_recovery.cc,
// ford_recovery.cc); not an API.
#pragma once

#include <chrono>
#include <span>

#include "common/transport/transport.h"
#include "compute/cluster.h"
#include "compute/step_hook.h"

namespace pandora::recovery_ops {

// conns[i], or null when node i is down (no connection, or beyond the
// span) or failed over (out of the configuration: whatever it held - log
// lanes, undo records, latches - went with it; its connection may still be
// open and only fail).
inline Connection* live(const Cluster& cluster, std::span<Connection* const> conns, size_t i) {
  return i < conns.size() && !cluster.failed_over(i) ? conns[i] : nullptr;
}

// Recovery batches may carry many ops: a generous multiple of the op timeout.
inline std::chrono::milliseconds batch_timeout(const Cluster& c) { return c.config().op_timeout * 4; }

inline void hit(StepHook* crash, CrashPoint p) {
  if (crash) crash->hit(p);
}

}  // namespace pandora::recovery_ops
