// Mode `ford` (FORD as published, seed 4.2.3, with its lost decision fixed
// in the abort path):
//  * latches carry no owner: every latch is kFordLatch (pid 0), so they can
//    never be recognised as stray nor stolen;
//  * each written object gets an undo record (a one-entry LogRecord) during
//    execution, right after its latch+READ, to this coordinator's lane on
//    EACH replica of that object (appended at a per-node cursor); a blind
//    write therefore latches at once (its record needs the latched image);
//  * there is no logging phase: commit is settle -> validate -> await the
//    undo records -> commit WRITEs -> report -> unlatch;
//  * an abort zeroes the head of each lane it wrote before releasing its
//    latches (otherwise recovery takes the records for an undecided
//    transaction's: FORD's lost decision). Recovery is stop-the-world
//    (recovery/ford_recovery.h).
#include "common/log_record.h"
#include "common/slot_layout.h"
#include "compute/txn/abort.h"
#include "compute/txn/commit.h"
#include "compute/txn/context.h"
#include "compute/txn/failover.h"
#include "compute/txn/latching.h"
#include "compute/txn/logging.h"
#include "compute/txn/protocol.h"
#include "compute/txn/report.h"
#include "compute/txn/validation.h"
#include "compute/txn_engine.h"

namespace pandora::txn {

namespace {

// Posts `it`'s undo record to its lane on every replica of `it`.
AbortReason post_undo_record(TxnContext& ctx, Item& it) {
  LogRecord rec;
  rec.txn_id = ctx.txn_id();
  rec.lane_seq = ++ctx.lane_seq;
  LogEntry& e = rec.entries.emplace_back(log_entry_header(it));
  if (it.access != Access::kInsert) e.undo_image = it.undo;  // an insert's undo is "absent"
  it.ford_undo.clear();
  encode_log_record(rec, it.ford_undo);
  const uint64_t size = (it.ford_undo.size() + kCacheLine - 1) / kCacheLine * kCacheLine;
  const uint32_t lane_bytes = ctx.cluster.lanes().lane_bytes();
  for (uint16_t n : it.replicas) {
    if (ctx.ford_cursor[n] + size > lane_bytes) {
      ctx.detail = Status(Errc::kInvalidArgument, "FORD undo records overflow the log lane (raise --lane-bytes)");
      return AbortReason::kInvalid;
    }
  }
  for (uint16_t n : it.replicas) {
    ctx.ops.write(n, ctx.cluster.lane_address(n, ctx.lane) + ctx.ford_cursor[n], it.ford_undo.data(),
                  static_cast<uint32_t>(it.ford_undo.size()));
    ctx.ford_cursor[n] += size;
  }
  ctx.crash(CrashPoint::kAfterFordUndo);
  return AbortReason::kNone;
}

// The undo records of a transaction that aborts must not outlive its
// latches, or recovery would take them for an undecided transaction's and
// undo a later committed write of the same object. Zero the head of every
// lane written - wait, since the lanes and the latches are on different
// connections. False: the zeroing failed.
bool hide_undo_records(TxnContext& ctx) {
  static constexpr uint8_t kZeros[sizeof(LogRecordHeader)] = {};
  for (size_t n = 0; n < ctx.ford_cursor.size(); ++n) {
    if (ctx.ford_cursor[n] != 0) ctx.ops.write(n, ctx.cluster.lane_address(n, ctx.lane), kZeros, sizeof kZeros);
  }
  ctx.ops.wait_all();
  return ctx.all_ok();
}

class Ford final : public Protocol {
 public:
  ProtocolMode mode() const override { return ProtocolMode::kFord; }

  TxnPlan plan() const override {
    TxnPlan p;
    p.append(Step::kSettleLatches, settle_latches);
    p.append(Step::kPostValidation, post_validation);
    p.append(Step::kCheckValidation, check_validation);
    p.append(Step::kAwaitLog, await_log);  // the undo records posted during execution
    p.append(Step::kCommitWrites, commit_writes);
    p.append(Step::kReport, report_committed);
    p.append(Step::kUnlatch, unlatch);
    p.abort_release = release_held;
    return p;
  }

  uint64_t latch_word(const TxnContext&) const override { return kFordLatch; }

  AbortReason after_latched_read(TxnContext& ctx, Item& it) const override { return post_undo_record(ctx, it); }

  bool latch_blind_writes_at_once() const override { return true; }

  // No logging phase: validated, its undo records in place, the commit
  // WRITEs begun - a reader may see a new value, so the transaction can
  // only be completed. Before that an abort hides its undo records.
  bool decided_to_commit(const TxnContext& ctx) const override { return ctx.commit_started; }

  bool keep_latches_on_abort(TxnContext& ctx, AbortReason r) const override {
    bool wrote = false;
    for (uint64_t c : ctx.ford_cursor) wrote |= c != 0;
    if (!wrote) return false;
    // Unreachable lanes may still hold the records: keep the latches.
    if (r == AbortReason::kTransport) return true;
    if (hide_undo_records(ctx)) return false;
    // A zeroing WRITE failed: harmless only if the node it went to was
    // failed over meanwhile (its lane went with it; the others are zeroed).
    return absorb_memory_failures(ctx) == 0;
  }
};

}  // namespace

const Protocol& ford_protocol() {
  static const Ford p;
  return p;
}

}  // namespace pandora::txn
