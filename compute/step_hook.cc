#include "compute/step_hook.h"

#include <array>

namespace pandora {

namespace {

constexpr std::array<std::string_view, kCrashPointCount> kNames = {
    "after-latch-cas",        "after-exec-read",        "after-latch-intent",   "after-ford-undo",
    "insert-after-path-read", "insert-after-latch",     "insert-after-slot-check",
    "after-settle",           "after-validation",       "after-log-write",      "after-commit-write",
    "before-unlatch",         "after-unlatch",          "after-abort-release",  "recovery-after-read",
    "recovery-after-rollback", "before-truncate",       "after-truncate",       "before-sweep",
    "after-sweep",            "memory-failover-paused", "memory-replace-paused",
};

}  // namespace

std::string_view crash_point_name(CrashPoint p) {
  const auto i = static_cast<size_t>(p);
  return i < kNames.size() ? kNames[i] : std::string_view("none");
}

std::optional<CrashPoint> parse_crash_point(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<CrashPoint>(i);
  }
  return std::nullopt;
}

bool is_recovery_point(CrashPoint p) { return p >= CrashPoint::kRecoveryAfterRead && p < CrashPoint::kCount; }

}  // namespace pandora
