#include "compute/txn/commit.h"

#include <fmt/format.h>

#include "common/slot_layout.h"
#include "compute/table_geometry.h"
#include "compute/txn/abort.h"
#include "compute/txn/failover.h"
#include "compute/txn/latching.h"
#include "compute/txn/protocol.h"

namespace pandora::txn {

// Readers copy a slot in ascending address order (latch, version, meta,
// value), and the version is written last, so a reader that sees the new
// version also sees the whole new value; one that sees the old version next
// to a partly new value fails validation (the writer still holds the latch,
// or the version has moved). One WRITE of [version|meta|value] would let a
// reader pair the new version with a torn value and pass validation.
void post_commit_writes(TxnContext& ctx, uint64_t skip_nodes) {
  for (Item& it : ctx.items) {
    if (!it.installs()) continue;
    const TableEntry& t = *it.t;
    const uint64_t version = it.old_version + 1;
    const bool has_value = it.access != Access::kDelete;
    it.commit_buf.resize(16);
    store_u64(it.commit_buf.data(), version);
    store_u64(it.commit_buf.data() + 8, make_slot_meta(has_value ? kSlotOccupied : 0, t.value_size));
    for (uint16_t n : it.replicas) {
      if ((skip_nodes >> n) & 1) continue;
      // Key first: a reader never sees the occupied flag with the slot's
      // previous key.
      if (it.access == Access::kInsert) ctx.ops.write(n, it.slot, &it.key, sizeof it.key);
      if (has_value) ctx.ops.write(n, it.slot + sizeof(SlotHeader), it.value.data(), t.value_size);
      ctx.ops.write(n, it.slot + kSlotVersionOffset, it.commit_buf.data(), 16);
      if (ctx.stepwise()) {
        // One replica at a time, so a crash can leave some replicas new and
        // others old. A failure shows in first_error() for the caller.
        ctx.ops.wait_all();
        if (ctx.all_ok()) ctx.crash(CrashPoint::kAfterCommitWrite);
      } else {
        ctx.crash(CrashPoint::kAfterCommitWrite);  // counts only (not armed)
      }
    }
  }
}

AbortReason commit_writes(TxnContext& ctx) {
  ctx.commit_started = true;
  post_commit_writes(ctx);
  ctx.ops.wait_all();
  if (ctx.all_ok()) return AbortReason::kNone;
  // Some replicas may hold the new image: the transaction is logged, so the
  // engine keeps the latches (the object must not move until recovery
  // decides from the log) unless a memory node's fail-over decides it
  // (txn/failover.h).
  ctx.detail = Status(ctx.ops.first_error(), "commit WRITE failed");
  return AbortReason::kTransport;
}

AbortReason unlatch(TxnContext& ctx) {
  const bool step = ctx.stepwise();
  for (Item& it : ctx.items) {
    if (!it.is_write()) continue;
    release_held(ctx, it);
    if (step) ctx.ops.wait_all();
    ctx.crash(CrashPoint::kAfterUnlatch);
  }
  ctx.ops.flush();
  return AbortReason::kNone;
}

namespace {

// A release that failed as a lost link does, on a node that may yet be
// declared failed: its latch then goes with the node.
bool may_fail_over(const TxnContext& ctx, Errc e) {
  return ctx.cluster.config().memory_failover_wait.count() > 0 && is_lost_link(e);
}

}  // namespace

bool release_failed(const TxnContext& ctx) {
  for (RemoteOps::OpId id : ctx.releases) {
    if (ctx.ops.done(id) && ctx.ops.status(id) != Errc::kOk && !may_fail_over(ctx, ctx.ops.status(id))) return true;
  }
  return false;
}

bool collect_releases(TxnContext& ctx) {
  bool ok = true;
  uint64_t lost = 0;
  for (RemoteOps::OpId id : ctx.releases) {
    const Errc e = ctx.ops.done(id) ? ctx.ops.status(id) : Errc::kIo;
    if (e == Errc::kOk) continue;
    if (ctx.ops.done(id) && may_fail_over(ctx, e)) {
      lost |= uint64_t{1} << ctx.ops.node_of(id);
      continue;
    }
    ok = false;
    ctx.detail = Status(e, fmt::format("coordinator {} could not release a latch it holds (transaction {}); this "
                                       "compute node must be recovered before it runs more",
                                       ctx.coordinator, ctx.seq));
    break;
  }
  if (ok && lost != 0 && !await_memory_declaration(ctx, lost)) {
    ok = false;
    ctx.detail = Status(Errc::kDisconnected,
                        fmt::format("coordinator {} could not release a latch it holds (transaction {}) and its "
                                    "memory node was not declared failed; this compute node must be recovered "
                                    "before it runs more",
                                    ctx.coordinator, ctx.seq));
  }
  ctx.releases.clear();
  if (!ok) ctx.needs_recovery = true;
  return ok;
}

}  // namespace pandora::txn
