// Locating keys: where an item's slot is on its primary, from the address
// cache (a hint, verified once latched or read) or from the key's probe
// path (compute/table_geometry.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compute/txn/context.h"

namespace pandora::txn {

// The most one READ of a probe path asks for (at least one bucket): the
// paths of ordinary tables (buckets of up to 8 KiB) stay one READ, while a
// table of 64 KiB rows does not turn into 512 KiB READs, which the verbs
// transport could not stage (it registers the buffer of any operation
// above 64 KiB for that operation alone).
inline constexpr uint64_t kMaxPathReadBytes = 64 * 1024;

// Posts READs of steps [first, end) of the probe path from bucket `home` on
// memory node `node`, bucket `step` landing at dst + step * bucket bytes.
// A path's buckets are consecutive in the region except where it wraps
// past the table's last bucket, so this is one READ, or two when it wraps,
// not one per bucket - for buckets of big rows, one per kMaxPathReadBytes.
void post_path_buckets(TxnContext& ctx, uint16_t node, const TableEntry& t, uint64_t home, uint32_t first,
                       uint32_t end, uint8_t* dst);

// Reads it.key's probe path on the primary into `buf` (whole: every bucket;
// otherwise buckets 1.., bucket 0 being there already). kTransport on a
// failed READ.
AbortReason read_path(TxnContext& ctx, const Item& it, bool whole, std::vector<uint8_t>& buf);

// The slot offset holding it.key within the first `buckets` buckets of a
// path read into `buf`.
std::optional<uint64_t> find_in_path(const Item& it, const std::vector<uint8_t>& buf, uint32_t buckets);

// Fills it.slot from the cache or, on a miss, from the probe path on the
// primary; in the latter case it.image holds the slot as read (unlatched).
// kNotFound when the key is not on its path.
AbortReason locate(TxnContext& ctx, Item& it);

}  // namespace pandora::txn
