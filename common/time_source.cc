#include "common/time_source.h"

#include <ctime>

namespace pandora {

namespace {

class SystemTime final : public TimeSource {
 public:
  uint64_t realtime_ns() const override {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
  }
};

}  // namespace

const TimeSource& system_time() {
  static const SystemTime source;
  return source;
}

}  // namespace pandora
