#include "compute/txn/latching.h"

#include "common/slot_layout.h"
#include "compute/table_geometry.h"
#include "compute/txn/locate.h"
#include "compute/txn/protocol.h"

namespace pandora::txn {

namespace {

// Attempts at taking one latch (first CAS plus steals of stray words that
// keep changing under us) before giving up with kLatched.
constexpr int kLatchRounds = 8;

// The slot image behind a held primary latch: still the key's? Then take
// its version and value (the undo image).
bool take_latched_image(TxnContext& ctx, Item& it) {
  const TableEntry& t = *it.t;
  SlotView v(it.image.data());
  if (!v.occupied() || v.key() != it.key) return false;
  it.old_version = v.version();
  it.undo.assign(v.value(), v.value() + t.value_size);
  ctx.cache.put(it.table_id, it.key, it.slot);
  return true;
}

// The slot no longer holds the key: release it and forget the cached
// address. False when the address came from the path (the key is gone).
bool drop_stale_slot(TxnContext& ctx, Item& it) {
  release_held(ctx, it);
  ctx.cache.invalidate(it.table_id, it.key);
  if (!it.from_cache) return false;
  it.slot = 0;  // the cache entry is gone: locate() searches the path
  return true;
}

}  // namespace

void post_latch(TxnContext& ctx, Item& it, size_t r, uint32_t image_len) {
  ReplicaLatch& l = it.latches[r];
  const size_t node = it.replicas[r];
  // Latch words go kVisible (transport.h): only running nodes read them.
  l.cas_op = ctx.ops.cas(node, it.slot + kSlotLatchOffset, l.expected, ctx.mine, Durability::kVisible);
  l.read_op = ctx.ops.read(node, it.slot, it.image.data() + r * it.t->slot_bytes, image_len);
  l.state = LatchState::kPosted;
}

void refresh_latch(TxnContext& ctx, Item& it, size_t r) {
  ReplicaLatch& l = it.latches[r];
  if (l.state != LatchState::kPosted || !ctx.ops.done(l.cas_op)) return;
  if (ctx.ops.status(l.cas_op) != Errc::kOk) {
    // A timed-out CAS may still land at the daemon: nobody knows whether
    // this transaction owns the word.
    l.state = LatchState::kUnknown;
    l.observed = 0;
    return;
  }
  if (ctx.ops.value(l.cas_op) == l.expected) {
    l.state = LatchState::kHeld;
  } else {
    l.state = LatchState::kFailed;
    l.observed = ctx.ops.value(l.cas_op);
  }
}

AbortReason settle_item_latches(TxnContext& ctx, Item& it, uint32_t image_len) {
  for (int round = 0; round < kLatchRounds; ++round) {
    ctx.ops.wait_all();
    if (!ctx.all_ok()) return AbortReason::kTransport;
    bool again = false;
    for (size_t r = 0; r < it.latches.size(); ++r) {
      refresh_latch(ctx, it, r);
      ReplicaLatch& l = it.latches[r];
      if (l.state != LatchState::kFailed) continue;
      if (ctx.live_owner(l.observed)) return AbortReason::kLatched;
      // Stray latch of a failed pid (or freed meanwhile): steal the exact
      // word we saw, then read again behind it.
      l.expected = l.observed;
      post_latch(ctx, it, r, image_len);
      again = true;
    }
    if (!again) return AbortReason::kNone;
  }
  return AbortReason::kLatched;
}

AbortReason acquire_existing(TxnContext& ctx, Item& it) {
  const TableEntry& t = *it.t;
  const auto slot_bytes = static_cast<uint32_t>(t.slot_bytes);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (it.slot == 0) {
      if (AbortReason r = locate(ctx, it); r != AbortReason::kNone) return r;
    }
    if (AbortReason r = ctx.protocol->before_latch(ctx, it); r != AbortReason::kNone) return r;
    it.latches.assign(1, ReplicaLatch{});
    it.image.resize(t.slot_bytes);
    post_latch(ctx, it, 0, slot_bytes);
    if (AbortReason r = settle_item_latches(ctx, it, slot_bytes); r != AbortReason::kNone) return r;
    ctx.crash(CrashPoint::kAfterLatchCas);
    if (take_latched_image(ctx, it)) {
      if (it.access != Access::kWrite) it.value = it.undo;
      if (it.was_read && it.old_version != it.read_version) return AbortReason::kValidationFailed;
      return ctx.protocol->after_latched_read(ctx, it);
    }
    if (!drop_stale_slot(ctx, it)) return AbortReason::kNotFound;
  }
  return AbortReason::kNotFound;
}

// With the primary alone latched, a deleted slot would be free and
// unlatched on a backup once the commit WRITE lands there, and an insert of
// a key of another shard whose replicas include that backup (but not the
// primary) could take it; if the deleting transaction then needed to be
// rolled back, recovery could not put the row back on that backup (it only
// restores replicas still showing its own version) and the key would be
// left without its backup copy (tests/compute/crash_test.cc).
AbortReason latch_backups(TxnContext& ctx, Item& it) {
  const size_t n = it.replicas.size();
  if (it.latches.size() >= n) return AbortReason::kNone;
  const TableEntry& t = *it.t;
  it.image.resize(n * t.slot_bytes);  // keeps the primary's image in front
  it.latches.resize(n);
  for (size_t r = 1; r < n; ++r) post_latch(ctx, it, r, sizeof(SlotHeader));
  return settle_item_latches(ctx, it, sizeof(SlotHeader));
}

AbortReason latch_blind_write(TxnContext& ctx, Item& it) {
  if (ctx.plan.before_blind_latch) {
    if (AbortReason r = ctx.plan.before_blind_latch(ctx, it); r != AbortReason::kNone) return r;
  }
  if (ctx.protocol->latch_blind_writes_at_once()) return acquire_existing(ctx, it);
  if (AbortReason r = ctx.protocol->before_latch(ctx, it); r != AbortReason::kNone) return r;
  it.latches.assign(1, ReplicaLatch{});
  it.image.resize(it.t->slot_bytes);
  post_latch(ctx, it, 0, static_cast<uint32_t>(it.t->slot_bytes));
  ctx.ops.flush();
  return AbortReason::kNone;
}

AbortReason settle_blind_write(TxnContext& ctx, Item& it) {
  const auto slot_bytes = static_cast<uint32_t>(it.t->slot_bytes);
  if (AbortReason r = settle_item_latches(ctx, it, slot_bytes); r != AbortReason::kNone) return r;
  ctx.crash(CrashPoint::kAfterLatchCas);
  if (take_latched_image(ctx, it)) return ctx.protocol->after_latched_read(ctx, it);
  if (!drop_stale_slot(ctx, it)) return AbortReason::kNotFound;
  return acquire_existing(ctx, it);
}

AbortReason settle_latches(TxnContext& ctx) {
  ctx.ops.wait_all();
  if (!ctx.all_ok()) return AbortReason::kTransport;
  for (Item& it : ctx.items) {
    if (it.access == Access::kRead || it.access == Access::kInsert || it.latches.empty()) continue;
    const LatchState s = it.latches[0].state;
    if (s == LatchState::kPosted || s == LatchState::kFailed) {
      if (AbortReason r = settle_blind_write(ctx, it); r != AbortReason::kNone) return r;
    }
  }
  ctx.crash(CrashPoint::kAfterSettle);
  return AbortReason::kNone;
}

void post_release(TxnContext& ctx, size_t node, uint64_t slot) {
  ctx.releases.push_back(
      ctx.ops.write(node, slot + kSlotLatchOffset, &ctx.zero, sizeof ctx.zero, Durability::kVisible));
}

void release_held(TxnContext& ctx, Item& it) {
  for (size_t r = 0; r < it.latches.size(); ++r) {
    ReplicaLatch& l = it.latches[r];
    if (l.state == LatchState::kHeld) post_release(ctx, it.replicas[r], it.slot);
    l = ReplicaLatch{};
  }
}

}  // namespace pandora::txn
