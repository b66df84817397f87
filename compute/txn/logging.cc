#include "compute/txn/logging.h"

#include <fmt/format.h>

namespace pandora::txn {

namespace {

LogOp log_op(Access a) {
  switch (a) {
    case Access::kInsert: return LogOp::kInsert;
    case Access::kDelete: return LogOp::kDelete;
    default: return LogOp::kUpdate;
  }
}

}  // namespace

LogEntry log_entry_header(const Item& it) {
  LogEntry e;
  e.table_id = it.table_id;
  e.key = it.key;
  e.slot_offset = it.slot;
  e.shard = it.shard;
  e.old_version = it.old_version;
  e.op = log_op(it.access);
  return e;
}

LogEntry log_entry(const Item& it) {
  LogEntry e = log_entry_header(it);
  if (it.access != Access::kInsert) e.undo_image = it.undo;
  if (it.access != Access::kDelete) e.new_image = it.value;
  return e;
}

LogRecord build_log_record(TxnContext& ctx) {
  LogRecord rec;
  rec.txn_id = ctx.txn_id();
  rec.lane_seq = ++ctx.lane_seq;
  for (const Item& it : ctx.items) {
    if (it.installs()) rec.entries.push_back(log_entry(it));
  }
  return rec;
}

AbortReason post_log_record(TxnContext& ctx, const LogRecord& rec) {
  ctx.log_buf.clear();
  encode_log_record(rec, ctx.log_buf);
  const uint32_t capacity = ctx.cluster.lanes().lane_bytes() - ctx.intents * kLatchIntentBytes;
  if (ctx.lane == UINT32_MAX || ctx.log_buf.size() > capacity) {
    ctx.detail =
        Status(Errc::kInvalidArgument,
               fmt::format("the transaction's log record ({} bytes) does not fit its log lane ({} bytes); raise "
                           "--lane-bytes when loading",
                           ctx.log_buf.size(), capacity));
    return AbortReason::kInvalid;
  }
  ctx.logged = true;
  const auto len = static_cast<uint32_t>(ctx.log_buf.size());
  if (ctx.stepwise()) {
    for (size_t n : ctx.log_nodes) {
      ctx.ops.write(n, ctx.cluster.lane_address(n, ctx.lane), ctx.log_buf.data(), len);
      ctx.ops.wait_all();
      if (!ctx.all_ok()) return AbortReason::kTransport;
      ctx.crash(CrashPoint::kAfterLogWrite);
    }
    return AbortReason::kNone;
  }
  for (size_t n : ctx.log_nodes) ctx.ops.write(n, ctx.cluster.lane_address(n, ctx.lane), ctx.log_buf.data(), len);
  ctx.ops.flush();
  // Not armed: the hook only counts (coverage); nothing can fire here.
  for (size_t i = 0; i < ctx.log_nodes.size(); ++i) ctx.crash(CrashPoint::kAfterLogWrite);
  return AbortReason::kNone;
}

AbortReason post_log(TxnContext& ctx) {
  if (!ctx.has_writes || ctx.logged) return AbortReason::kNone;
  return post_log_record(ctx, build_log_record(ctx));
}

AbortReason await_log(TxnContext& ctx) {
  ctx.ops.wait_all();
  return ctx.all_ok() ? AbortReason::kNone : AbortReason::kTransport;
}

}  // namespace pandora::txn
