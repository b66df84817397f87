#include "compute/txn/locate.h"

#include <algorithm>

#include "common/slot_layout.h"
#include "compute/table_geometry.h"

namespace pandora::txn {

std::optional<uint64_t> find_in_path(const Item& it, const std::vector<uint8_t>& buf, uint32_t buckets) {
  const TableEntry& t = *it.t;
  const uint64_t bb = bucket_bytes(t);
  const uint64_t home = home_bucket(t, it.key);
  for (uint32_t step = 0; step < buckets; ++step) {
    for (uint32_t s = 0; s < t.slots_per_bucket; ++s) {
      SlotView v(buf.data() + step * bb + uint64_t{s} * t.slot_bytes);
      if (v.occupied() && v.key() == it.key) return slot_offset(t, path_bucket(t, home, step), s);
    }
  }
  return std::nullopt;
}

void post_path_buckets(TxnContext& ctx, uint16_t node, const TableEntry& t, uint64_t home, uint32_t first,
                       uint32_t end, uint8_t* dst) {
  const uint64_t bb = bucket_bytes(t);
  const uint64_t per_read = std::max<uint64_t>(1, kMaxPathReadBytes / bb);
  for (uint32_t step = first; step < end;) {
    const uint64_t b = path_bucket(t, home, step);
    const uint32_t run = static_cast<uint32_t>(std::min({uint64_t{end - step}, t.bucket_count - b, per_read}));
    ctx.ops.read(node, bucket_offset(t, b), dst + step * bb, static_cast<uint32_t>(run * bb));
    step += run;
  }
}

AbortReason read_path(TxnContext& ctx, const Item& it, bool whole, std::vector<uint8_t>& buf) {
  const TableEntry& t = *it.t;
  buf.resize(t.max_probe * bucket_bytes(t));
  post_path_buckets(ctx, it.replicas[0], t, home_bucket(t, it.key), whole ? 0 : 1, t.max_probe, buf.data());
  ctx.ops.wait_all();
  return ctx.all_ok() ? AbortReason::kNone : AbortReason::kTransport;
}

AbortReason locate(TxnContext& ctx, Item& it) {
  if (auto cached = ctx.cache.get(it.table_id, it.key)) {
    it.slot = *cached;
    it.from_cache = true;
    return AbortReason::kNone;
  }
  it.from_cache = false;
  const TableEntry& t = *it.t;
  const uint64_t bb = bucket_bytes(t);
  std::vector<uint8_t>& path = ctx.scratch;
  path.resize(t.max_probe * bb);
  ctx.ops.read(it.replicas[0], bucket_offset(t, home_bucket(t, it.key)), path.data(), static_cast<uint32_t>(bb));
  ctx.ops.wait_all();
  if (!ctx.all_ok()) return AbortReason::kTransport;
  std::optional<uint64_t> found = find_in_path(it, path, 1);
  if (!found && t.max_probe > 1) {
    if (AbortReason r = read_path(ctx, it, false, path); r != AbortReason::kNone) return r;
    found = find_in_path(it, path, t.max_probe);
  }
  if (!found) return AbortReason::kNotFound;
  it.slot = *found;
  // Copy the slot image out of the path buffer.
  const uint64_t home = home_bucket(t, it.key);
  for (uint32_t step = 0; step < t.max_probe; ++step) {
    const uint64_t b0 = bucket_offset(t, path_bucket(t, home, step));
    if (it.slot >= b0 && it.slot < b0 + bb) {
      const uint8_t* src = path.data() + step * bb + (it.slot - b0);
      it.image.assign(src, src + t.slot_bytes);
      break;
    }
  }
  ctx.cache.put(it.table_id, it.key, it.slot);
  return AbortReason::kNone;
}

}  // namespace pandora::txn
