#include "compute/txn/report.h"

#include <algorithm>
#include <cstring>

namespace pandora {

TxnCounters& TxnCounters::operator+=(const TxnCounters& o) {
  commits += o.commits;
  for (size_t i = 0; i < aborts.size(); ++i) aborts[i] += o.aborts[i];
  committed_ops += o.committed_ops;
  all_ops += o.all_ops;
  memory_failovers += o.memory_failovers;
  return *this;
}

namespace txn {

namespace {

// First 8 bytes of a value, little-endian (shorter values zero-extended).
uint64_t prefix8(const std::vector<uint8_t>& v) {
  uint64_t x = 0;
  if (!v.empty()) std::memcpy(&x, v.data(), std::min<size_t>(8, v.size()));
  return x;
}

void emit_trace(TxnContext& ctx, bool committed, AbortReason r) {
  TxnTrace trace;
  trace.pid = ctx.pid;
  trace.coordinator = ctx.coordinator;
  trace.seq = ctx.seq;
  trace.begin_ns = ctx.acct.begin_ns;
  trace.end_ns = ctx.cluster.time().realtime_ns();
  trace.committed = committed;
  trace.reason = r;
  trace.items.reserve(ctx.items.size());
  for (const Item& it : ctx.items) {
    TraceItem ti;
    ti.table = it.table_id;
    ti.key = it.key;
    ti.slot = it.slot;
    switch (it.access) {
      case Access::kRead:
        ti.op = TraceOp::kRead;
        ti.present = !it.value.empty();  // a read that found no key has no value
        ti.read_version = it.read_version;
        ti.read_value = prefix8(it.value);
        break;
      case Access::kUpdate:
      case Access::kWrite:
        ti.op = TraceOp::kUpdate;
        // The version seen under the latch (equal to read_version when the
        // item was read first, else the transaction aborted).
        ti.read_version = it.old_version;
        ti.write_version = it.old_version + 1;
        ti.read_value = prefix8(it.undo);
        ti.write_value = prefix8(it.value);
        break;
      case Access::kInsert:
        ti.op = TraceOp::kInsert;
        ti.present = false;
        ti.write_version = it.old_version + 1;
        ti.write_value = prefix8(it.value);
        break;
      case Access::kDelete:
        ti.op = TraceOp::kDelete;
        ti.read_version = it.old_version;
        ti.write_version = it.old_version + 1;
        ti.read_value = prefix8(it.undo);
        break;
      case Access::kNoop:
        continue;  // inserted and removed again: nothing installed
    }
    // An aborted transaction installed nothing (and may not even know the
    // version it would have installed).
    if (!committed) ti.write_version = 0;
    trace.items.push_back(ti);
  }
  ctx.acct.observer->on_txn_end(trace);
}

}  // namespace

void start_accounting(TxnContext& ctx) {
  ctx.acct.start_ops = ctx.ops.counters();
  if (ctx.acct.observer) ctx.acct.begin_ns = ctx.cluster.time().realtime_ns();
}

void account_finish(TxnContext& ctx, bool committed, AbortReason r) {
  TxnAccounting& a = ctx.acct;
  a.last_ops = ctx.ops.counters() - a.start_ops;
  a.counters.all_ops += a.last_ops;
  if (committed) {
    ++a.counters.commits;
    a.counters.committed_ops += a.last_ops;
  } else {
    ++a.counters.aborts[abort_reason_index(r)];
  }
  if (a.observer) emit_trace(ctx, committed, r);
}

AbortReason report_committed(TxnContext& ctx) {
  for (const Item& it : ctx.items) {
    if (it.access == Access::kInsert) ctx.cache.put(it.table_id, it.key, it.slot);
  }
  ctx.crash(CrashPoint::kBeforeUnlatch);
  return AbortReason::kNone;
}

}  // namespace txn
}  // namespace pandora
