// A transaction plan: the steps commit() runs, in order, and the few hooks
// the execution and abort phases call. Each protocol builds its plan
// (compute/txn/protocol_*.cc); in test builds the mutation layer
// (compute/txn/mutations.h) may reorder or replace steps to re-create a
// FORD bug. commit() only walks the list:
//
//   pandora:  settle-latches -> post-validation -> check-validation ->
//             post-log -> await-log -> commit-writes -> report -> unlatch
//
// A step returns kNone to go on, or the reason the transaction aborts.
// report is the point of no return (the transaction counts as committed);
// steps after it cannot abort it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "compute/txn.h"

namespace pandora::txn {

struct TxnContext;
struct Item;

enum class Step : uint8_t {
  kSettleLatches,    // every latch CAS (blind writes too) completed and is held
  kPostValidation,   // validation READs posted
  kCheckValidation,  // ... completed and checked (read versions, latches, insert paths)
  kPostLog,          // the log record posted to the f+1 log nodes
  kAwaitLog,         // every WRITE posted so far (log record, ford undo records) completed
  kCommitWrites,     // every replica of every written object holds the new value
  kReport,           // counted as committed (no abort after this)
  kUnlatch,          // own latches released (posted; collected at the next begin())
  kLast = kUnlatch,
};
inline constexpr size_t kStepKinds = static_cast<size_t>(Step::kLast) + 1;

std::string_view step_name(Step s);  // "settle-latches", ...

using StepFn = AbortReason (*)(TxnContext&);
// Called on one item; kNone to go on.
using ItemHook = AbortReason (*)(TxnContext&, Item&);
// Releases what an aborting transaction holds of one written item.
using ReleaseFn = void (*)(TxnContext&, Item&);

struct PlanStep {
  Step step;
  StepFn run;
};

class TxnPlan {
 public:
  // The longest plan: every step kind once.
  static constexpr size_t kMaxSteps = kStepKinds;

  std::span<const PlanStep> steps() const { return {steps_.data(), size_}; }
  void append(Step s, StepFn run);
  // The step of kind `s`, or null.
  PlanStep* find(Step s);
  // Moves step `moved` to just before `anchor` (both must be present;
  // otherwise nothing changes and false is returned).
  bool move_before(Step moved, Step anchor);
  // "settle-latches -> post-validation -> ..."
  std::string to_string() const;

  // Execution: before a blind write posts its latch CAS (null: nothing).
  ItemHook before_blind_latch = nullptr;
  // Abort: how one written item's latches are released.
  ReleaseFn abort_release = nullptr;

 private:
  std::array<PlanStep, kMaxSteps> steps_{};
  size_t size_ = 0;
};

}  // namespace pandora::txn
