// The CrashInjector: a StepHook (compute/step_hook.h) that kills the
// process at a chosen step - litmus testing with crash injection (seed
// chapter 5), the crash tests, and pandora-fd's --crash-at for the
// fail-over tests. Test machinery, in its own library
// (pandora_crash_injector) that no release binary links: Debug builds of
// pandora-fd, pandora-litmus and the tests do.
//
// When an armed injector fires it stores the point id where the driver told
// it to (a word in a MAP_SHARED page and/or a file descriptor), then
// raise(SIGKILL): no destructor, no flush, no goodbye to the memory nodes -
// the same as a machine losing power. Hit counters (for coverage) are
// atomics the driver may also place in shared memory, so they survive the
// kill. An armed injector asks for single steps (StepHook::single_steps), so
// that a crash can fall between any two writes of one step.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>

#include "compute/step_hook.h"

namespace pandora {

class CrashInjector final : public StepHook {
 public:
  using Counters = std::span<std::atomic<uint64_t>, kCrashPointCount>;

  // Hits are counted in `counters` when given (e.g. a MAP_SHARED page owned
  // by a litmus driver), else in the injector itself.
  CrashInjector();
  explicit CrashInjector(Counters counters);
  CrashInjector(const CrashInjector&) = delete;
  CrashInjector& operator=(const CrashInjector&) = delete;

  // Fire at the `nth` hit (1-based, counted from this call) of `point`,
  // then at each later hit with `probability` (0 = only the nth). nth = 0:
  // every hit fires with `probability`.
  void arm_point(CrashPoint point, uint64_t nth = 1, double probability = 0.0, uint64_t seed = 1);
  // Fire at any hit of any point in `scope` with `probability`.
  enum class Scope : uint8_t { kAll, kCompute, kRecovery };
  void arm_random(double probability, uint64_t seed, Scope scope = Scope::kAll);
  void disarm() { mode_.store(Mode::kOff, std::memory_order_relaxed); }
  bool armed() const { return mode_.load(std::memory_order_relaxed) != Mode::kOff; }
  // An armed injector wants every multi-target step one target at a time.
  bool single_steps() const override { return armed(); }

  // Where the fired point id is recorded before the kill. `note` receives
  // static_cast<int32_t>(point) (the driver initialises it to -1); `fd`
  // receives the point's name and a newline. Either may be absent.
  void set_note(std::atomic<int32_t>* note) { note_ = note; }
  void set_note_fd(int fd) { note_fd_ = fd; }
  // Replaces raise(SIGKILL) (unit tests of the injector itself).
  void set_fire_action(std::function<void(CrashPoint)> action) { action_ = std::move(action); }

  // The hook. Counts the hit; fires if armed and chosen.
  void hit(CrashPoint p) override;

  uint64_t hits(CrashPoint p) const { return counters_[static_cast<size_t>(p)].load(std::memory_order_relaxed); }

 private:
  enum class Mode : uint8_t { kOff, kPoint, kRandom };
  bool chosen(CrashPoint p);
  double draw();
  void fire(CrashPoint p);

  std::array<std::atomic<uint64_t>, kCrashPointCount> own_{};
  Counters counters_;
  std::atomic<Mode> mode_{Mode::kOff};
  CrashPoint point_ = CrashPoint::kCount;
  Scope scope_ = Scope::kAll;
  uint64_t nth_ = 1;
  double probability_ = 0.0;
  uint64_t seed_ = 1;
  std::atomic<uint64_t> point_hits_{0};  // hits of point_ since arming
  std::atomic<uint64_t> draws_{0};
  std::atomic<int32_t>* note_ = nullptr;
  int note_fd_ = -1;
  std::function<void(CrashPoint)> action_;
};

}  // namespace pandora
