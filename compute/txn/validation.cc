#include "compute/txn/validation.h"

#include "common/slot_layout.h"
#include "compute/table_geometry.h"

namespace pandora::txn {

namespace {

bool validates(const TxnContext& ctx) { return ctx.has_reads || ctx.has_writes; }

void post_path_read(TxnContext& ctx, Item& it) {
  const TableEntry& t = *it.t;
  const uint64_t bb = bucket_bytes(t);
  const uint64_t home = home_bucket(t, it.key);
  it.path.resize(t.max_probe * bb);
  for (uint32_t step = 0; step < t.max_probe; ++step) {
    ctx.ops.read(it.replicas[0], bucket_offset(t, path_bucket(t, home, step)), it.path.data() + step * bb,
                 static_cast<uint32_t>(bb));
  }
}

// An insert's path as re-read: no other slot may hold the key, and no other
// unoccupied slot may be latched by a live owner.
AbortReason check_insert_path(const TxnContext& ctx, const Item& it) {
  const TableEntry& t = *it.t;
  const uint64_t bb = bucket_bytes(t);
  const uint64_t home = home_bucket(t, it.key);
  for (uint32_t step = 0; step < t.max_probe; ++step) {
    for (uint32_t s = 0; s < t.slots_per_bucket; ++s) {
      const uint64_t off = slot_offset(t, path_bucket(t, home, step), s);
      bool mine = false;
      for (const Item& o : ctx.items) mine |= o.table_id == it.table_id && o.slot == off && o.is_write();
      if (mine) continue;
      SlotView v(it.path.data() + step * bb + uint64_t{s} * t.slot_bytes);
      if (v.occupied() && v.key() == it.key) return AbortReason::kDuplicate;
      if (!v.occupied() && ctx.live_owner(v.latch())) return AbortReason::kValidationFailed;
    }
  }
  return AbortReason::kNone;
}

}  // namespace

AbortReason post_validation(TxnContext& ctx) {
  if (!validates(ctx)) return AbortReason::kNone;
  for (Item& it : ctx.items) {
    if (it.access == Access::kRead) {
      it.validate_op =
          ctx.ops.read(it.replicas[0], it.slot + kSlotLatchOffset, it.validate_buf, sizeof it.validate_buf);
    } else if (it.access == Access::kInsert) {
      post_path_read(ctx, it);
    }
  }
  ctx.ops.flush();
  return AbortReason::kNone;
}

AbortReason check_validation(TxnContext& ctx) { return check_validation_with(ctx, ReadLatches::kConflict); }

AbortReason check_validation_with(TxnContext& ctx, ReadLatches rule) {
  if (!validates(ctx)) return AbortReason::kNone;
  ctx.ops.wait_all();
  if (!ctx.all_ok()) return AbortReason::kTransport;
  for (const Item& it : ctx.items) {
    if (it.access == Access::kRead) {
      const uint64_t latch = load_u64(it.validate_buf);
      const uint64_t version = load_u64(it.validate_buf + 8);
      if (rule == ReadLatches::kConflict && ctx.live_owner(latch)) return AbortReason::kValidationFailed;
      if (version != it.read_version) return AbortReason::kValidationFailed;
    } else if (it.access == Access::kInsert) {
      if (AbortReason r = check_insert_path(ctx, it); r != AbortReason::kNone) return r;
    }
  }
  ctx.crash(CrashPoint::kAfterValidation);
  return AbortReason::kNone;
}

}  // namespace pandora::txn
