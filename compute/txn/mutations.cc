// Built only with PANDORA_BUG_SWITCHES (compute/CMakeLists.txt).
#include "compute/txn/mutations.h"

#include <algorithm>

#include "common/slot_layout.h"
#include "compute/table_geometry.h"
#include "compute/txn/context.h"
#include "compute/txn/latching.h"
#include "compute/txn/logging.h"
#include "compute/txn/validation.h"

namespace pandora::txn {

namespace {

// complicit-abort: every replica's latch word of every written slot is
// zeroed, whether this transaction took it or not.
void release_every_latch(TxnContext& ctx, Item& it) {
  for (size_t r = 0; r < it.latches.size(); ++r) {
    if (it.latches[r].state == LatchState::kHeld || it.slot != 0) post_release(ctx, it.replicas[r], it.slot);
    it.latches[r] = ReplicaLatch{};
  }
}

// missing-insert-log.
AbortReason post_log_without_inserts(TxnContext& ctx) {
  if (!ctx.has_writes || ctx.logged) return AbortReason::kNone;
  LogRecord rec = build_log_record(ctx);
  std::erase_if(rec.entries, [](const LogEntry& e) { return e.op == LogOp::kInsert; });
  return post_log_record(ctx, rec);
}

// covert-latches.
AbortReason check_validation_ignoring_latches(TxnContext& ctx) {
  return check_validation_with(ctx, ReadLatches::kIgnored);
}

// logging-without-latching: the record goes out before the latch is known
// to be ours; it needs the value it logs as undo image, read unlatched.
AbortReason take_unlatched_pre_image(TxnContext& ctx, Item& it) {
  if (it.image.empty()) {
    it.image.resize(it.t->slot_bytes);
    ctx.ops.read(it.replicas[0], it.slot, it.image.data(), static_cast<uint32_t>(it.t->slot_bytes));
    ctx.ops.wait_all();
    if (!ctx.all_ok()) return AbortReason::kTransport;
  }
  it.pre_image = it.image;
  return AbortReason::kNone;
}

AbortReason post_log_from_unlatched_images(TxnContext& ctx) {
  if (!ctx.has_writes || ctx.logged) return AbortReason::kNone;
  LogRecord rec = build_log_record(ctx);
  size_t e = 0;
  for (const Item& it : ctx.items) {
    if (!it.installs()) continue;
    LogEntry& entry = rec.entries[e++];
    const bool unlatched = it.latches.size() == 1 && it.latches[0].state != LatchState::kHeld;
    if (it.pre_image.empty() || !unlatched || entry.op == LogOp::kInsert) continue;
    SlotView v(it.pre_image.data());
    entry.old_version = v.version();
    entry.undo_image.assign(v.value(), v.value() + it.t->value_size);
  }
  return post_log_record(ctx, rec);
}

void replace(TxnPlan& p, Step s, StepFn run) {
  if (PlanStep* step = p.find(s)) step->run = run;
}

constexpr Mutation kMutations[] = {
    {&BugSwitches::complicit_abort, "abort releases every write-set latch word, held or not",
     [](TxnPlan& p) { p.abort_release = release_every_latch; }},
    {&BugSwitches::missing_insert_log, "post-log leaves inserts out of the record",
     [](TxnPlan& p) { replace(p, Step::kPostLog, post_log_without_inserts); }},
    {&BugSwitches::covert_latches, "check-validation ignores latches on read objects",
     [](TxnPlan& p) { replace(p, Step::kCheckValidation, check_validation_ignoring_latches); }},
    {&BugSwitches::relaxed_latches, "post-validation moves before settle-latches",
     [](TxnPlan& p) { p.move_before(Step::kPostValidation, Step::kSettleLatches); }},
    {&BugSwitches::lost_decision, "post-log, await-log move before post-validation",
     [](TxnPlan& p) {
       p.move_before(Step::kPostLog, Step::kPostValidation);
       p.move_before(Step::kAwaitLog, Step::kPostValidation);
     }},
    {&BugSwitches::logging_without_latching,
     "blind writes read their slot unlatched; post-log moves first and logs those images as undo",
     [](TxnPlan& p) {
       p.before_blind_latch = take_unlatched_pre_image;
       replace(p, Step::kPostLog, post_log_from_unlatched_images);
       p.move_before(Step::kPostLog, Step::kSettleLatches);
     }},
};

}  // namespace

std::span<const Mutation> mutations() { return kMutations; }

void apply_mutations(const BugSwitches& bugs, TxnPlan& plan) {
  for (const Mutation& m : kMutations) {
    if (bugs.*m.flag) m.apply(plan);
  }
}

}  // namespace pandora::txn
