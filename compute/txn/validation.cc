#include "compute/txn/validation.h"

#include "common/slot_layout.h"
#include "compute/table_geometry.h"
#include "compute/txn/locate.h"

namespace pandora::txn {

namespace {

bool validates(const TxnContext& ctx) { return ctx.has_reads || ctx.has_writes || !ctx.absent.empty(); }

// Posts the READs of `key`'s whole probe path on its primary into `path`.
void post_path_read(TxnContext& ctx, const TableEntry& t, uint16_t primary, uint64_t key,
                    std::vector<uint8_t>& path) {
  path.resize(t.max_probe * bucket_bytes(t));
  post_path_buckets(ctx, primary, t, home_bucket(t, key), 0, t.max_probe, path.data());
}

// A path as re-read, for an insert of `key` or a read that found it absent:
// no slot may hold the key (kDuplicate), and no unoccupied slot may be
// latched by a live owner (kValidationFailed); this transaction's own
// written slots do not count.
AbortReason check_path(const TxnContext& ctx, const TableEntry& t, uint32_t table_id, uint64_t key,
                       const std::vector<uint8_t>& path) {
  const uint64_t bb = bucket_bytes(t);
  const uint64_t home = home_bucket(t, key);
  for (uint32_t step = 0; step < t.max_probe; ++step) {
    for (uint32_t s = 0; s < t.slots_per_bucket; ++s) {
      const uint64_t off = slot_offset(t, path_bucket(t, home, step), s);
      bool mine = false;
      for (const Item& o : ctx.items) mine |= o.table_id == table_id && o.slot == off && o.is_write();
      if (mine) continue;
      SlotView v(path.data() + step * bb + uint64_t{s} * t.slot_bytes);
      if (v.occupied() && v.key() == key) return AbortReason::kDuplicate;
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
      post_path_read(ctx, *it.t, it.replicas[0], it.key, it.path);
    }
  }
  for (AbsentKey& a : ctx.absent) post_path_read(ctx, *a.t, a.primary, a.key, a.path);
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
      if (AbortReason r = check_path(ctx, *it.t, it.table_id, it.key, it.path); r != AbortReason::kNone) return r;
    }
  }
  for (const AbsentKey& a : ctx.absent) {
    // Present now (committed by another transaction): the absence read is stale.
    if (check_path(ctx, *a.t, a.table_id, a.key, a.path) != AbortReason::kNone) return AbortReason::kValidationFailed;
  }
  ctx.crash(CrashPoint::kAfterValidation);
  return AbortReason::kNone;
}

}  // namespace pandora::txn
