// Where a coordinator's log lane lives (ARCHITECTURE.md 3 "Log area" and 5).
//
// Every memory node's log area [log_offset, region_size) is cut into
// `lanes` lanes of `lane_bytes` (both recorded in the table directory, so
// every compute node and the recovery coordinator agree). A compute node
// writes its records into a *lane slot*: a run of consecutive lanes it
// leases when it registers, one lane per coordinator:
//
//   lane(slot, coordinator) = slot.first + coordinator     (coordinator < slot.count)
//   address on node n       = log_offset(n) + lane * lane_bytes
//
// Lane slots are not pids. A registry (ZooKeeper, recovery/registry.h)
// leases a slot sized for the node's coordinators and takes it back as soon
// as a failed node's lanes are truncated, while the pid itself stays retired
// until no latch can carry it. Without a registry (tests, single tools) a
// node uses its *fixed slot*, kFixedSlotLanes lanes at (pid - 1) x
// kFixedSlotLanes: simple, but it binds pids to the log area's size.
//
// The map is the same on every node; a pid's records are written only to
// its f+1 log nodes (Placement::log_nodes_of), so its lanes elsewhere stay
// unused. Recovery reads exactly the failed node's slot and, as a second
// guard, ignores records whose txn id names another pid.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace pandora {

// Coordinators one compute node may run (threads x coordinators): the
// coordinator field of a latch word is 16 bits; lanes are the real bound.
inline constexpr uint32_t kMaxCoordinatorsPerCompute = 4096;
// Lanes of the fixed slot used without a registry.
inline constexpr uint32_t kFixedSlotLanes = 64;

// Smallest lane: a record header, one entry header and some value bytes.
inline constexpr uint32_t kMinLaneBytes = 1024;
// Lanes start on cache lines (records are written whole; no lane shares a line).
inline constexpr uint32_t kLaneAlign = 64;

// The lanes [first, first + count) of one compute node.
struct LaneSlot {
  uint32_t first = 0;
  uint32_t count = 0;

  bool empty() const { return count == 0; }
  uint64_t end() const { return uint64_t{first} + count; }
  bool overlaps(const LaneSlot& o) const { return first < o.end() && o.first < end(); }
  bool operator==(const LaneSlot&) const = default;
  std::string to_string() const;  // "lanes 64..127"
};

class LaneMap {
 public:
  LaneMap() = default;
  LaneMap(uint32_t lane_bytes, uint32_t lanes) : lane_bytes_(lane_bytes), lanes_(lanes) {}

  uint32_t lane_bytes() const { return lane_bytes_; }
  uint32_t lanes() const { return lanes_; }
  // Pids whose fixed slot fits: 1..max_fixed_pid().
  uint32_t max_fixed_pid() const { return lanes_ / kFixedSlotLanes; }

  // The fixed slot of `pid` (pid >= 1); it may not fit: check_slot says.
  static LaneSlot fixed_slot(uint16_t pid) { return LaneSlot{uint32_t{pid - 1u} * kFixedSlotLanes, kFixedSlotLanes}; }

  // kInvalidArgument, saying what --log-size would be needed, when `slot`
  // is empty or does not fit the log area.
  Status check_slot(const LaneSlot& slot) const;

  // Lane index of `coordinator` in `slot`; kInvalidArgument when it does
  // not fit the slot or the area.
  Result<uint32_t> lane_index(const LaneSlot& slot, uint32_t coordinator) const;

  // Offset of lane `lane` in a node whose log area starts at `log_offset`.
  uint64_t lane_offset(uint64_t log_offset, uint32_t lane) const {
    return log_offset + uint64_t{lane} * lane_bytes_;
  }

 private:
  uint32_t lane_bytes_ = 0;
  uint32_t lanes_ = 0;
};

}  // namespace pandora
