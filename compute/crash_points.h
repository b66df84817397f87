// Named crash points of a compute node and of log recovery, and the
// CrashInjector that kills the process at one of them (litmus testing with
// crash injection, seed chapter 5: "we randomly inject crashes after every
// statement in a transaction").
//
// The engine (TxnEngine::set_crash_injector) and log recovery (the optional
// last argument of recover_logs / truncate_lanes / sweep_stray_latches) call
// hit(point) right after the step the point names has COMPLETED (its remote
// operations were waited for), so a crash there leaves memory exactly as
// that step left it. Without an injector the hooks are a null check.
//
// When an armed injector fires it stores the point id where the driver told
// it to (a word in a MAP_SHARED page and/or a file descriptor), then
// raise(SIGKILL): no destructor, no flush, no goodbye to the memory nodes -
// the same as a machine losing power. Hit counters (for coverage) are
// atomics the driver may also place in shared memory, so they survive the
// kill.
//
// An armed injector changes one thing in the engine: steps that normally
// post several remote writes at once (log WRITEs to f+1 nodes, commit WRITEs
// to every replica, latch releases) are then posted and waited for one at a
// time, so that a crash can fall between any two of them. The protocol's
// ordering guarantees are the same either way (it only waits more).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace pandora {

enum class CrashPoint : uint16_t {
  // Execution.
  kAfterLatchCas = 0,      // a latch CAS (and the READ behind it) completed and is held
  kAfterExecRead,          // an execution READ of a read-only item completed
  kAfterLatchIntent,       // log-a-latch: the latch-intent WRITEs completed
  kAfterFordUndo,          // ford: an undo record was posted
  kInsertAfterPathRead,    // insert: the probe path was read (absent-key check)
  kInsertAfterLatch,       // insert: the candidate slot is latched on every replica
  kInsertAfterSlotCheck,   // insert: the slot was found free on every replica (chosen)
  // Commit.
  kAfterSettle,            // every latch CAS of the transaction completed (before validation)
  kAfterValidation,        // validation succeeded, before logging
  kAfterLogWrite,          // one log WRITE (to one log node) completed
  kAfterCommitWrite,       // one replica's commit WRITEs (key, value, version) completed
  kBeforeUnlatch,          // every commit WRITE done (reported committed), no latch released yet
  kAfterUnlatch,           // one latch released after commit
  kAfterAbortRelease,      // abort: one latch release completed
  // Log recovery (recovery coordinator).
  kRecoveryAfterRead,      // the failed pid's lanes were read
  kRecoveryAfterRollback,  // one roll-back WRITE batch (one record) completed
  kBeforeTruncate,
  kAfterTruncate,
  kBeforeSweep,
  kAfterSweep,
  kCount
};

inline constexpr size_t kCrashPointCount = static_cast<size_t>(CrashPoint::kCount);

std::string_view crash_point_name(CrashPoint p);  // "after-latch-cas", ...
std::optional<CrashPoint> parse_crash_point(std::string_view name);
// Whether the point lies in log recovery (fires in a recovery process, not
// in a compute node).
bool is_recovery_point(CrashPoint p);

class CrashInjector {
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

  // Where the fired point id is recorded before the kill. `note` receives
  // static_cast<int32_t>(point) (the driver initialises it to -1); `fd`
  // receives the point's name and a newline. Either may be absent.
  void set_note(std::atomic<int32_t>* note) { note_ = note; }
  void set_note_fd(int fd) { note_fd_ = fd; }
  // Replaces raise(SIGKILL) (unit tests of the injector itself).
  void set_fire_action(std::function<void(CrashPoint)> action) { action_ = std::move(action); }

  // The hook. Counts the hit; fires if armed and chosen.
  void hit(CrashPoint p);

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
