#include "compute/txn/commit.h"

#include <fmt/format.h>

#include "common/slot_layout.h"
#include "compute/table_geometry.h"
#include "compute/txn/abort.h"
#include "compute/txn/latching.h"

namespace pandora::txn {

namespace {

// Readers copy a slot in ascending address order (latch, version, meta,
// value), and the version is written last, so a reader that sees the new
// version also sees the whole new value; one that sees the old version next
// to a partly new value fails validation (the writer still holds the latch,
// or the version has moved). One WRITE of [version|meta|value] would let a
// reader pair the new version with a torn value and pass validation.
void post_commit_writes(TxnContext& ctx) {
  for (Item& it : ctx.items) {
    if (!it.installs()) continue;
    const TableEntry& t = *it.t;
    const uint64_t version = it.old_version + 1;
    const bool has_value = it.access != Access::kDelete;
    it.commit_buf.resize(16);
    store_u64(it.commit_buf.data(), version);
    store_u64(it.commit_buf.data() + 8, make_slot_meta(has_value ? kSlotOccupied : 0, t.value_size));
    for (uint16_t n : it.replicas) {
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

}  // namespace

AbortReason commit_writes(TxnContext& ctx) {
  post_commit_writes(ctx);
  ctx.ops.wait_all();
  if (ctx.all_ok()) return AbortReason::kNone;
  // Some replicas may hold the new image: keep the latches (the object must
  // not move until recovery decides from the log) and report.
  leave_undecided(ctx, AbortReason::kTransport,
                  Status(ctx.ops.first_error(), "commit WRITE failed; latches kept for recovery"));
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

bool release_failed(const TxnContext& ctx) {
  for (RemoteOps::OpId id : ctx.releases) {
    if (ctx.ops.done(id) && ctx.ops.status(id) != Errc::kOk) return true;
  }
  return false;
}

bool collect_releases(TxnContext& ctx) {
  bool ok = true;
  for (RemoteOps::OpId id : ctx.releases) {
    if (!ctx.ops.done(id) || ctx.ops.status(id) != Errc::kOk) {
      ok = false;
      ctx.detail = Status(ctx.ops.done(id) ? ctx.ops.status(id) : Errc::kIo,
                          fmt::format("coordinator {} could not release a latch it holds (transaction {}); this "
                                      "compute node must be recovered before it runs more",
                                      ctx.coordinator, ctx.seq));
      break;
    }
  }
  ctx.releases.clear();
  if (!ok) ctx.needs_recovery = true;
  return ok;
}

}  // namespace pandora::txn
