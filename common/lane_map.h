// Where a coordinator's log lane lives (ARCHITECTURE.md 3, "Log area").
//
// Every memory node's log area [log_offset, region_size) is cut into
// `lanes` lanes of `lane_bytes` (both recorded in the table directory, so
// every compute node and the recovery coordinator agree). Lanes are grouped
// into compute slots of kLanesPerCompute consecutive lanes:
//
//   lane(pid, coordinator) = (pid - 1) * kLanesPerCompute + coordinator
//   address on node n      = log_offset(n) + lane * lane_bytes
//
// The map is the same on every node; a pid's records are written only to
// its f+1 log nodes (Placement::log_nodes_of), so its lanes on the other
// nodes stay unused. A pid whose lanes would fall outside the area is
// refused at start with an error saying how large the log area must be. The
// recovery side reads exactly lanes [lane(pid, 0), lane(pid, 0) +
// kLanesPerCompute) and, as a second guard, ignores records whose txn id
// names another pid.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace pandora {

// Coordinators one compute node may run (threads x coordinators per thread).
inline constexpr uint32_t kLanesPerCompute = 64;

// Smallest lane: a record header, one entry header and some value bytes.
inline constexpr uint32_t kMinLaneBytes = 1024;
// Lanes start on cache lines (records are written whole; no lane shares a line).
inline constexpr uint32_t kLaneAlign = 64;

class LaneMap {
 public:
  LaneMap() = default;
  LaneMap(uint32_t lane_bytes, uint32_t lanes) : lane_bytes_(lane_bytes), lanes_(lanes) {}

  uint32_t lane_bytes() const { return lane_bytes_; }
  uint32_t lanes() const { return lanes_; }
  // Compute pids that fit: 1..max_pid().
  uint32_t max_pid() const { return lanes_ / kLanesPerCompute; }

  static uint64_t first_lane(uint16_t pid) { return uint64_t{pid - 1u} * kLanesPerCompute; }

  // Lane index of (pid, coordinator); kInvalidArgument when it does not fit.
  Result<uint32_t> lane_index(uint16_t pid, uint32_t coordinator) const;

  // Checks that every coordinator of `pid` has a lane (start-up check).
  Status check_fits(uint16_t pid, uint32_t coordinators) const;

  // Offset of lane `lane` in a node whose log area starts at `log_offset`.
  uint64_t lane_offset(uint64_t log_offset, uint32_t lane) const {
    return log_offset + uint64_t{lane} * lane_bytes_;
  }

 private:
  uint32_t lane_bytes_ = 0;
  uint32_t lanes_ = 0;
};

}  // namespace pandora
