// The time the transaction engine reads (trace timestamps, the log lanes'
// starting sequence). Production code uses system_time(); the
// deterministic simulation (testing/sim) hands every compute node its
// virtual clock, so that one seed replays one run to the nanosecond.
#pragma once

#include <cstdint>

namespace pandora {

class TimeSource {
 public:
  virtual ~TimeSource() = default;
  // Nanoseconds since the epoch (CLOCK_REALTIME for the system clock).
  virtual uint64_t realtime_ns() const = 0;
};

// CLOCK_REALTIME. A process-wide immutable object, safe from every thread.
const TimeSource& system_time();

}  // namespace pandora
