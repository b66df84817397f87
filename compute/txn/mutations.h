// Test-only mutations of a transaction plan, each re-creating one FORD bug
// of seed Table 5.1 in the pandora plan so the litmus suite can prove it
// catches it (ARCHITECTURE.md 4). Compiled only into builds that define
// PANDORA_BUG_SWITCHES (Debug; compute/CMakeLists.txt): a release binary
// carries neither this table nor any mutated step.
//
//   switch                    what it changes in the plan
//   complicit-abort           abort releases every write-set latch word, held or not
//   missing-insert-log        post-log leaves inserts out of the record
//   covert-latches            check-validation ignores latches on read objects
//   relaxed-latches           post-validation moves before settle-latches
//   lost-decision             post-log, await-log move before post-validation
//   logging-without-latching  blind writes read their slot unlatched; post-log
//                             moves first and logs those images as undo
#pragma once

#ifdef PANDORA_BUG_SWITCHES

#include <span>
#include <string_view>

#include "compute/compute_config.h"
#include "compute/txn/plan.h"

namespace pandora::txn {

struct Mutation {
  bool BugSwitches::*flag;
  std::string_view changes;  // what it does to the plan, in words
  void (*apply)(TxnPlan& plan);
};

// Seed Table 5.1, one row per bug switch.
std::span<const Mutation> mutations();

// Applies the mutation of every switch set in `bugs`, in table order. Two
// switches that replace the same step: the later row's step wins.
void apply_mutations(const BugSwitches& bugs, TxnPlan& plan);

}  // namespace pandora::txn

#endif  // PANDORA_BUG_SWITCHES
