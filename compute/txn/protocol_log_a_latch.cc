// Mode `log-a-latch`: pandora, plus an explicit log of every latch before
// it is taken - a 64-byte latch intent (common/latch_intent.h) WRITTEN to
// the f+1 log nodes at the tail of this coordinator's lane (growing down,
// below the record), waited for before the latch CAS is posted. Recovery
// releases every latch its intents name. The comparison point for implicit
// latch logging: one more round trip per latch.
#include <cstring>

#include "compute/txn/context.h"
#include "compute/txn/protocol.h"

namespace pandora::txn {

namespace {

AbortReason write_latch_intent(TxnContext& ctx, const Item& it) {
  const uint32_t lane_bytes = ctx.cluster.lanes().lane_bytes();
  if ((ctx.intents + 1) * kLatchIntentBytes > lane_bytes / 2) {
    ctx.detail =
        Status(Errc::kInvalidArgument, "too many latches for the lane's latch-intent area (raise --lane-bytes)");
    return AbortReason::kInvalid;
  }
  auto& buf = ctx.intent_bufs.emplace_back();
  LatchIntent li{};
  li.magic = kLatchIntentMagic;
  li.table_id = it.table_id;
  li.txn_id = ctx.txn_id();
  li.key = it.key;
  li.slot = it.slot;
  std::memcpy(buf.data(), &li, sizeof li);
  ++ctx.intents;
  for (size_t n : ctx.log_nodes) {
    ctx.ops.write(n, ctx.cluster.lane_address(n, ctx.lane) + latch_intent_offset(lane_bytes, ctx.intents),
                  buf.data(), kLatchIntentBytes);
  }
  ctx.ops.wait_all();
  if (!ctx.all_ok()) return AbortReason::kTransport;
  ctx.crash(CrashPoint::kAfterLatchIntent);
  return AbortReason::kNone;
}

class LogALatch final : public Protocol {
 public:
  ProtocolMode mode() const override { return ProtocolMode::kLogALatch; }
  TxnPlan plan() const override { return pandora_plan(); }
  uint64_t latch_word(const TxnContext& ctx) const override { return ctx.txn_id(); }
  AbortReason before_latch(TxnContext& ctx, const Item& it) const override { return write_latch_intent(ctx, it); }
  bool keep_latches_on_abort(TxnContext& ctx, AbortReason r) const override { return keep_latches_if_logged(ctx, r); }
};

}  // namespace

const Protocol& log_a_latch_protocol() {
  static const LogALatch p;
  return p;
}

}  // namespace pandora::txn
