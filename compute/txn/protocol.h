// The protocol policy: everything in which pandora, ford and log-a-latch
// differ (ARCHITECTURE.md 4), asked by the phases at the points where they
// differ. One object per mode, chosen at run time from
// ComputeConfig::protocol; each mode reads top to bottom in its own file:
//
//   compute/txn/protocol_pandora.cc      pid-carrying latches, logging phase after validation
//   compute/txn/protocol_ford.cc         owner-less latches, per-object undo records during execution
//   compute/txn/protocol_log_a_latch.cc  pandora + a latch intent before every latch CAS
#pragma once

#include "compute/compute_config.h"
#include "compute/txn.h"
#include "compute/txn/plan.h"

namespace pandora::txn {

struct TxnContext;
struct Item;

class Protocol {
 public:
  virtual ~Protocol() = default;

  virtual ProtocolMode mode() const = 0;
  // commit()'s steps and the hooks (compute/txn/plan.h).
  virtual TxnPlan plan() const = 0;
  // The latch word this transaction CASes in (ctx.seq is already the new one).
  virtual uint64_t latch_word(const TxnContext& ctx) const = 0;
  // Before a latch CAS on `it` (it.slot set) is posted.
  virtual AbortReason before_latch(TxnContext& ctx, const Item& it) const { return AbortReason::kNone; }
  // After `it` was latched on every replica it needs and its slot verified.
  virtual AbortReason after_latched_read(TxnContext& ctx, Item& it) const { return AbortReason::kNone; }
  // A blind write latches at once (true) or posts its CAS and lets commit
  // settle it (false).
  virtual bool latch_blind_writes_at_once() const { return false; }
  // Abort, before any latch is released, all operations completed: true
  // when the latches must be kept for recovery (a record of the transaction
  // may survive on a log node it cannot reach or clear).
  virtual bool keep_latches_on_abort(TxnContext& ctx, AbortReason r) const = 0;
  // Whether the transaction's outcome is commit, should a memory node fail
  // under it now (compute/txn/failover.h): from here on it can only be
  // completed on the live replicas, never undone. pandora and log-a-latch:
  // once its record may be on a log node (recovery would roll it forward).
  virtual bool decided_to_commit(const TxnContext& ctx) const;
};

const Protocol& protocol_for(ProtocolMode mode);
const Protocol& pandora_protocol();
const Protocol& ford_protocol();
const Protocol& log_a_latch_protocol();

// Shared by pandora and log-a-latch.
TxnPlan pandora_plan();
bool keep_latches_if_logged(const TxnContext& ctx, AbortReason r);

}  // namespace pandora::txn
