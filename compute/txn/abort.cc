#include "compute/txn/abort.h"

#include <fmt/format.h>

#include "compute/txn/commit.h"
#include "compute/txn/latching.h"
#include "compute/txn/protocol.h"
#include "compute/txn/report.h"

namespace pandora::txn {

namespace {

std::string why(const TxnContext& ctx) {
  return ctx.detail.is_ok() ? std::string("remote operation failed") : ctx.detail.message();
}

Errc failure_code(const TxnContext& ctx) {
  if (!ctx.detail.is_ok()) return ctx.detail.code();
  return ctx.all_ok() ? Errc::kIo : ctx.ops.first_error();
}

// Folds every completed CAS into its latch state; true when one of them
// may or may not have landed.
bool refresh_all_latches(TxnContext& ctx) {
  bool unknown = false;
  for (Item& it : ctx.items) {
    for (size_t r = 0; r < it.latches.size(); ++r) {
      refresh_latch(ctx, it, r);
      unknown |= it.latches[r].state == LatchState::kUnknown;
    }
  }
  return unknown;
}

}  // namespace

AbortReason abort_transaction(TxnContext& ctx, AbortReason r) {
  if (ctx.state != AbortReason::kNone) return ctx.state;  // already ended
  ctx.ops.wait_all();  // every CAS outcome must be known before deciding what is ours
  if (ctx.protocol->keep_latches_on_abort(ctx, r)) {
    // Releasing the latches would let others move these objects, and
    // recovery would later undo their writes from the record.
    leave_undecided(ctx, r,
                    Status(ctx.all_ok() ? Errc::kIo : ctx.ops.first_error(),
                           fmt::format("{}; the transaction was logged, so its latches are kept for recovery", why(ctx))));
    return r;
  }
  const bool unknown = refresh_all_latches(ctx);
  const bool step = ctx.stepwise();
  for (Item& it : ctx.items) {
    if (!it.is_write()) continue;
    bool held = false;
    for (const ReplicaLatch& l : it.latches) held |= l.state == LatchState::kHeld;
    ctx.plan.abort_release(ctx, it);
    if (step) ctx.ops.wait_all();
    if (held) ctx.crash(CrashPoint::kAfterAbortRelease);
  }
  ctx.ops.wait_all();
  if (unknown) {
    ctx.needs_recovery = true;
    ctx.detail = Status(failure_code(ctx),
                        fmt::format("{}; a latch CAS of the transaction may still land, so this compute node must be "
                                    "recovered before it runs more",
                                    why(ctx)));
  }
  collect_releases(ctx);  // a failed release also halts the coordinator
  ctx.state = r;
  account_finish(ctx, false, r);
  return r;
}

void leave_undecided(TxnContext& ctx, AbortReason r, Status detail) {
  ctx.needs_recovery = true;
  ctx.undecided = true;
  ctx.detail = std::move(detail);
  ctx.state = r;
  account_finish(ctx, false, r);
}

}  // namespace pandora::txn
