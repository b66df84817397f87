#include "common/lane_map.h"

#include <fmt/format.h>

namespace pandora {

Result<uint32_t> LaneMap::lane_index(uint16_t pid, uint32_t coordinator) const {
  if (pid == 0) return Status(Errc::kInvalidArgument, "pid 0 is never issued and has no log lanes");
  if (coordinator >= kLanesPerCompute) {
    return Status(Errc::kInvalidArgument, fmt::format("coordinator {} has no lane: a compute node has at most {} "
                                                      "coordinators (threads x coordinators)",
                                                      coordinator, kLanesPerCompute));
  }
  const uint64_t lane = first_lane(pid) + coordinator;
  if (lane >= lanes_) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("compute id {} has no log lanes: the log area holds {} lanes of {} bytes, enough for "
                              "compute ids 1..{}; start the memory daemons with --log-size of at least {} bytes "
                              "(or use a smaller compute id or --lane-bytes)",
                              pid, lanes_, lane_bytes_, max_pid(),
                              uint64_t{pid} * kLanesPerCompute * lane_bytes_));
  }
  return static_cast<uint32_t>(lane);
}

Status LaneMap::check_fits(uint16_t pid, uint32_t coordinators) const {
  if (coordinators == 0) return Status(Errc::kInvalidArgument, "a compute node needs at least one coordinator");
  if (coordinators > kLanesPerCompute) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("{} coordinators (threads x coordinators) exceed the {} log lanes of a compute node",
                              coordinators, kLanesPerCompute));
  }
  Result<uint32_t> last = lane_index(pid, kLanesPerCompute - 1);
  return last.status();
}

}  // namespace pandora
