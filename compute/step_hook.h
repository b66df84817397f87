// Named steps of a compute node's transactions and of log recovery, and the
// hook that is told when one has completed: where tests crash a process
// (compute/crash_injector.h, litmus testing with crash injection, seed
// chapter 5: "we randomly inject crashes after every statement in a
// transaction") and where a simulation may stop a simulated node
// (litmus/sim).
//
// The engine (TxnEngine::set_step_hook) and log recovery (the optional last
// argument of recover_logs / truncate_lanes / sweep_stray_latches) call
// hit(point) right after the step the point names has COMPLETED (its remote
// operations were waited for), so a crash there leaves memory exactly as
// that step left it. Without a hook the calls are a null check.
//
// single_steps(): while true, steps that normally post several remote
// writes at once (log WRITEs to f+1 nodes, commit WRITEs to every replica,
// latch releases, roll-back batches) are posted and waited for one at a
// time, so that a crash can fall between any two of them. The protocol's
// ordering guarantees are the same either way (it only waits more). A
// simulation that lands a batch in part itself needs no such mode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
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
  kRecoveryAfterRollback,  // one batch of roll-back WRITEs completed (one WRITE with single steps)
  kBeforeTruncate,
  kAfterTruncate,
  kBeforeSweep,
  kAfterSweep,
  // A memory node's fail-over (recovery coordinator): the record and the
  // pause are written, no acknowledgement awaited yet. Never reached by the
  // litmus driver (it fails no memory node).
  kMemoryFailoverPaused,
  // A memory node's replacement (recovery coordinator): its pause is
  // written, nothing copied yet. Never reached by the litmus driver either.
  kMemoryReplacePaused,
  kCount
};

inline constexpr size_t kCrashPointCount = static_cast<size_t>(CrashPoint::kCount);

std::string_view crash_point_name(CrashPoint p);  // "after-latch-cas", ...
std::optional<CrashPoint> parse_crash_point(std::string_view name);
// Whether the point lies in log recovery (fires in a recovery process, not
// in a compute node).
bool is_recovery_point(CrashPoint p);

class StepHook {
 public:
  virtual ~StepHook() = default;
  // Step `p` has completed.
  virtual void hit(CrashPoint p) = 0;
  // Post multi-target steps one target at a time (see above).
  virtual bool single_steps() const = 0;
};

}  // namespace pandora
