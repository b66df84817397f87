#include "compute/crash_injector.h"

#include <signal.h>
#include <unistd.h>

#include <string>

namespace pandora {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

CrashInjector::CrashInjector() : counters_(own_) {}
CrashInjector::CrashInjector(Counters counters) : counters_(counters) {}

void CrashInjector::arm_point(CrashPoint point, uint64_t nth, double probability, uint64_t seed) {
  point_ = point;
  nth_ = nth;
  probability_ = probability;
  seed_ = seed;
  point_hits_.store(0, std::memory_order_relaxed);
  mode_.store(Mode::kPoint, std::memory_order_relaxed);
}

void CrashInjector::arm_random(double probability, uint64_t seed, Scope scope) {
  probability_ = probability;
  seed_ = seed;
  scope_ = scope;
  mode_.store(Mode::kRandom, std::memory_order_relaxed);
}

// A stateless counter-based generator: coordinators of several threads may
// hit points concurrently, and a draw must not need a lock.
double CrashInjector::draw() {
  const uint64_t n = draws_.fetch_add(1, std::memory_order_relaxed);
  return static_cast<double>(splitmix64(seed_ ^ splitmix64(n)) >> 11) * 0x1.0p-53;
}

bool CrashInjector::chosen(CrashPoint p) {
  switch (mode_.load(std::memory_order_relaxed)) {
    case Mode::kOff:
      return false;
    case Mode::kPoint: {
      if (p != point_) return false;
      const uint64_t n = point_hits_.fetch_add(1, std::memory_order_relaxed) + 1;
      if (nth_ != 0 && n == nth_) return true;
      return n > nth_ && probability_ > 0 && draw() < probability_;
    }
    case Mode::kRandom:
      if (scope_ == Scope::kCompute && is_recovery_point(p)) return false;
      if (scope_ == Scope::kRecovery && !is_recovery_point(p)) return false;
      return draw() < probability_;
  }
  return false;
}

void CrashInjector::hit(CrashPoint p) {
  counters_[static_cast<size_t>(p)].fetch_add(1, std::memory_order_relaxed);
  if (chosen(p)) fire(p);
}

void CrashInjector::fire(CrashPoint p) {
  if (note_) note_->store(static_cast<int32_t>(p), std::memory_order_release);
  if (note_fd_ >= 0) {
    std::string line(crash_point_name(p));
    line += '\n';
    // Best effort: the kill follows whether or not the note was written.
    [[maybe_unused]] ssize_t n = ::write(note_fd_, line.data(), line.size());
  }
  if (action_) {
    action_(p);
    return;
  }
  ::raise(SIGKILL);
}

}  // namespace pandora
