#include "common/lane_map.h"

#include <fmt/format.h>

namespace pandora {

std::string LaneSlot::to_string() const {
  if (empty()) return "no lanes";
  return fmt::format("lanes {}..{}", first, end() - 1);
}

Status LaneMap::check_slot(const LaneSlot& slot) const {
  if (slot.empty()) return Status(Errc::kInvalidArgument, "a compute node needs at least one log lane");
  if (slot.end() > lanes_) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("{} do not fit the log area, which holds {} lanes of {} bytes; start the memory daemons "
                              "with --log-size of at least {} bytes, or run fewer coordinators, or use a registry "
                              "(pandora-fd with --zookeeper) so that lanes are leased instead of fixed per compute id",
                              slot.to_string(), lanes_, lane_bytes_, slot.end() * lane_bytes_));
  }
  return Status::ok();
}

Result<uint32_t> LaneMap::lane_index(const LaneSlot& slot, uint32_t coordinator) const {
  if (coordinator >= slot.count) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("coordinator {} has no lane: this compute node's lane slot holds {} lanes "
                              "(threads x coordinators, plus one for a blocking client)",
                              coordinator, slot.count));
  }
  if (Status s = check_slot(slot); !s) return s;
  return slot.first + coordinator;
}

}  // namespace pandora
