#include "compute/txn/execution.h"

#include <algorithm>

#include "common/slot_layout.h"
#include "compute/table_geometry.h"
#include "compute/txn/latching.h"
#include "compute/txn/locate.h"
#include "compute/txn/protocol.h"

namespace pandora::txn {

namespace {

// Unoccupied slots of the path an insert tries before kTableFull.
constexpr size_t kInsertCandidates = 16;

Item& add_item(TxnContext& ctx, uint32_t table, const TableEntry& t, uint64_t key, Access a) {
  Item& it = ctx.items.emplace_back();
  it.table_id = table;
  it.key = key;
  it.t = &t;
  it.shard = ctx.cluster.placement().shard_of(table, key);
  it.replicas = ctx.cluster.replica_indexes(it.shard);
  it.access = a;
  return it;
}

// Unoccupied slots of the probe path read into ctx.scratch, in path order.
std::vector<uint64_t> free_slots_on_path(const TxnContext& ctx, const TableEntry& t, uint64_t key) {
  std::vector<uint64_t> out;
  const uint64_t bb = bucket_bytes(t);
  const uint64_t home = home_bucket(t, key);
  for (uint32_t step = 0; step < t.max_probe && out.size() < kInsertCandidates; ++step) {
    for (uint32_t s = 0; s < t.slots_per_bucket && out.size() < kInsertCandidates; ++s) {
      SlotView v(ctx.scratch.data() + step * bb + uint64_t{s} * t.slot_bytes);
      if (!v.occupied()) out.push_back(slot_offset(t, path_bucket(t, home, step), s));
    }
  }
  return out;
}

// Latches candidate slot it.slot on every replica. kNone with *taken set
// when it is free everywhere (it.old_version = max of the replicas').
AbortReason try_insert_slot(TxnContext& ctx, Item& it, bool* taken) {
  const TableEntry& t = *it.t;
  const size_t replicas = it.replicas.size();
  *taken = false;
  if (AbortReason r = ctx.protocol->before_latch(ctx, it); r != AbortReason::kNone) return r;
  it.latches.assign(replicas, ReplicaLatch{});
  it.image.assign(replicas * t.slot_bytes, 0);
  for (size_t r = 0; r < replicas; ++r) post_latch(ctx, it, r, sizeof(SlotHeader));
  if (AbortReason r = settle_item_latches(ctx, it, sizeof(SlotHeader)); r != AbortReason::kNone) return r;
  ctx.crash(CrashPoint::kInsertAfterLatch);
  uint64_t max_version = 0;
  bool free_everywhere = true;
  for (size_t r = 0; r < replicas; ++r) {
    SlotView v(it.image.data() + r * t.slot_bytes);
    if (v.occupied()) {
      if (r == 0 && v.key() == it.key) return AbortReason::kDuplicate;
      free_everywhere = false;
    }
    max_version = std::max(max_version, v.version());
  }
  if (!free_everywhere) {
    release_held(ctx, it);  // another shard's row lives here on a backup
    return AbortReason::kNone;
  }
  it.old_version = max_version;
  *taken = true;
  ctx.crash(CrashPoint::kInsertAfterSlotCheck);
  return ctx.protocol->after_latched_read(ctx, it);
}

}  // namespace

Item* find_item(TxnContext& ctx, uint32_t table, uint64_t key) {
  for (Item& it : ctx.items) {
    if (it.table_id == table && it.key == key) return &it;
  }
  return nullptr;
}

AbortReason execute_read(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key, Item** out) {
  if (Item* it = find_item(ctx, table, key)) {
    if (it->access == Access::kDelete || it->access == Access::kNoop) return AbortReason::kNotFound;
    *out = it;
    return AbortReason::kNone;
  }
  Item& it = add_item(ctx, table, t, key, Access::kRead);
  if (auto cached = ctx.cache.get(table, key)) {
    it.image.resize(t.slot_bytes);
    ctx.ops.read(it.replicas[0], *cached, it.image.data(), static_cast<uint32_t>(t.slot_bytes));
    ctx.ops.wait_all();
    if (!ctx.all_ok()) return AbortReason::kTransport;
    SlotView v(it.image.data());
    if (v.occupied() && v.key() == key) {
      it.slot = *cached;
    } else {
      ctx.cache.invalidate(table, key);
    }
  }
  if (it.slot == 0) {
    if (AbortReason r = locate(ctx, it); r != AbortReason::kNone) return r;
  }
  SlotView v(it.image.data());
  if (ctx.live_owner(v.latch())) return AbortReason::kLatched;
  it.read_version = v.version();
  it.value.assign(v.value(), v.value() + t.value_size);
  ctx.crash(CrashPoint::kAfterExecRead);
  *out = &it;
  return AbortReason::kNone;
}

AbortReason execute_read_if_present(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key, Item** out) {
  const size_t items = ctx.items.size();
  const AbortReason r = execute_read(ctx, t, table, key, out);
  if (r != AbortReason::kNotFound) return r;
  *out = nullptr;
  // No item added: this transaction removed the key (it holds the latch),
  // so it is absent in its view.
  if (ctx.items.size() == items) return AbortReason::kNone;
  // execute_read added the item it could not place: remember the absence
  // for validation instead.
  AbsentKey& a = ctx.absent.emplace_back();
  a.t = &t;
  a.table_id = table;
  a.key = key;
  a.primary = ctx.items.back().replicas[0];
  ctx.items.pop_back();
  return AbortReason::kNone;
}

AbortReason execute_update(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key, Item** out) {
  Item* it = find_item(ctx, table, key);
  if (it) {
    switch (it->access) {
      case Access::kRead:
        it->access = Access::kUpdate;
        it->was_read = true;
        break;
      case Access::kUpdate:
      case Access::kWrite:
      case Access::kInsert:
        *out = it;
        return AbortReason::kNone;
      case Access::kDelete:
      case Access::kNoop:
        return AbortReason::kNotFound;
    }
  } else {
    it = &add_item(ctx, table, t, key, Access::kUpdate);
  }
  *out = it;
  return acquire_existing(ctx, *it);
}

AbortReason execute_write(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key,
                          std::span<const uint8_t> value) {
  if (Item* it = find_item(ctx, table, key)) {
    switch (it->access) {
      case Access::kRead:
        it->access = Access::kWrite;
        it->was_read = true;
        it->value.assign(value.begin(), value.end());
        return acquire_existing(ctx, *it);
      case Access::kUpdate:
      case Access::kWrite:
      case Access::kInsert:
        it->value.assign(value.begin(), value.end());
        return AbortReason::kNone;
      case Access::kDelete:
      case Access::kNoop:
        return AbortReason::kNotFound;
    }
  }
  Item& w = add_item(ctx, table, t, key, Access::kWrite);
  w.value.assign(value.begin(), value.end());
  if (AbortReason r = locate(ctx, w); r != AbortReason::kNone) return r;
  return latch_blind_write(ctx, w);
}

AbortReason execute_insert(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key,
                           std::span<const uint8_t> value) {
  if (Item* it = find_item(ctx, table, key)) {
    switch (it->access) {
      case Access::kDelete:  // delete then insert: the row stays, with the new value
        it->access = Access::kUpdate;
        it->value.assign(value.begin(), value.end());
        return AbortReason::kNone;
      case Access::kNoop:  // insert, remove, insert: latches are still held
        it->access = Access::kInsert;
        it->value.assign(value.begin(), value.end());
        return AbortReason::kNone;
      default:
        return AbortReason::kDuplicate;
    }
  }
  Item& it = add_item(ctx, table, t, key, Access::kInsert);
  it.value.assign(value.begin(), value.end());
  if (read_path(ctx, it, true, ctx.scratch) != AbortReason::kNone) return AbortReason::kTransport;
  if (find_in_path(it, ctx.scratch, t.max_probe)) return AbortReason::kDuplicate;
  ctx.crash(CrashPoint::kInsertAfterPathRead);
  for (uint64_t slot : free_slots_on_path(ctx, t, key)) {
    it.slot = slot;
    bool taken = false;
    if (AbortReason r = try_insert_slot(ctx, it, &taken); r != AbortReason::kNone || taken) return r;
  }
  it.slot = 0;
  return AbortReason::kTableFull;
}

AbortReason execute_remove(TxnContext& ctx, const TableEntry& t, uint32_t table, uint64_t key) {
  Item* it = find_item(ctx, table, key);
  if (it) {
    switch (it->access) {
      case Access::kRead:
        it->access = Access::kDelete;
        it->was_read = true;
        break;
      case Access::kUpdate:
      case Access::kWrite:
        it->access = Access::kDelete;
        break;
      case Access::kInsert:
        it->access = Access::kNoop;
        return AbortReason::kNone;
      case Access::kDelete:
      case Access::kNoop:
        return AbortReason::kNotFound;
    }
  } else {
    it = &add_item(ctx, table, t, key, Access::kDelete);
  }
  if (it->latches.empty() || it->latches[0].state != LatchState::kHeld) {
    // New, read before, or a blind write whose latch is still pending.
    AbortReason r = it->latches.empty() ? acquire_existing(ctx, *it) : settle_blind_write(ctx, *it);
    if (r != AbortReason::kNone) return r;
  }
  return latch_backups(ctx, *it);
}

}  // namespace pandora::txn
