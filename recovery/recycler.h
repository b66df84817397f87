// Pid recycling (ARCHITECTURE.md 5; seed 4.3.1.2 "Recycling process-ids"):
// a failed pid may be issued again only once no latch anywhere carries it
// and no live member still treats it as failed. Run by the failure
// detector's leader when 95% of the pid space is in use.
//
//   1. announce the pids (<root>/recycle: generation, pids): every member
//      drops them from its failed-ids and acknowledges;
//   2. scan every slot of every memory node and release (CAS of the exact
//      word) every latch carrying one of them - they are fenced and their
//      recovery is published, so each such latch is stray;
//   3. wait for every registered member's acknowledgement;
//   4. unfence the pids at every memory node (sessions they had before the
//      fence stay refused: memd's fence generation);
//   5. finish, in one ZooKeeper multi: failed/ and recovery records removed,
//      the pids appended to alloc.reuse, the announcement removed.
// After 2 no latch of these pids can appear again (their owners are
// fenced until 4, and 4 happens only after every member dropped them), so
// a re-issued pid's new latches are never mistaken for stray ones. A
// leader dying anywhere leaves the announcement; the next leader starts
// over with a new generation (every step may repeat).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/logger.h"
#include "common/status.h"
#include "compute/cluster.h"
#include "recovery/registry.h"

namespace pandora {

struct RecycleOptions {
  std::string secret;                         // admin sessions that unfence
  double threshold = 0.95;                    // of alloc.pid_limit in use
  std::chrono::milliseconds ack_timeout{10000};
  std::chrono::milliseconds control_timeout{2000};
};

struct RecycleReport {
  uint32_t pids = 0;          // pids made reusable
  uint32_t released = 0;      // stray latches of theirs released by the scan
  uint64_t slots = 0;         // slots scanned
  uint64_t scan_us = 0, total_us = 0;
};

// Whether alloc's in-use pids reached the threshold.
bool recycling_due(const AllocRecord& alloc, double threshold);

// Recycles every pid in failed/ whose recovery is done. `cluster`: the
// leader's data plane (its own failed-ids are updated directly; `self` is
// its pid, which does not acknowledge). kUnavailable when some member did
// not acknowledge in time (the announcement is withdrawn; retry later).
Result<RecycleReport> recycle_pids(Registry& registry, Cluster& cluster, uint16_t self, const RecycleOptions& options,
                                   const Logger& logger);

}  // namespace pandora
