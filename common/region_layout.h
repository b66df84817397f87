// Layout of a memory node's persistent region. Defined once, here.
//
//   [0, 4 KiB)                 RegionHeader (immutable after format, checksummed)
//   [4 KiB, 8 KiB)             RegionState  (mutable: clean-shutdown marker)
//   [8 KiB, 16 KiB)            fence bitmap, one bit per compute id (64Ki bits)
//   [16 KiB, 64 KiB)           reserved for later control structures
//   [64 KiB, log_offset)       table area   (layout owned by compute/, issue 4)
//   [log_offset, region_size)  log area     (lanes owned by compute/, issue 4)
//
// Compute nodes may touch only [data_offset, region_size) with one-sided
// operations; everything below data_offset is the memory daemon's. All
// addresses on the wire are byte offsets from the start of the region, never
// virtual addresses, so the same address means the same byte on every
// transport.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pandora {

inline constexpr uint64_t kRegionMagic = 0x3141524f444e4150ull;  // bytes "PANDORA1"
inline constexpr uint32_t kRegionLayoutVersion = 1;

inline constexpr uint64_t kRegionHeaderOffset = 0;
inline constexpr uint64_t kRegionStateOffset = 4096;
inline constexpr uint64_t kFenceBitmapOffset = 8192;
inline constexpr uint64_t kFenceBitmapBytes = 8192;  // 65536 compute ids
inline constexpr uint64_t kDataOffset = 64 * 1024;
inline constexpr uint64_t kMinRegionSize = 1024 * 1024;
inline constexpr uint64_t kDefaultLogAreaSize = 16 * 1024 * 1024;

// Compute ids are 16 bits; 0 is never issued (a latch word of 0 means free).
inline constexpr uint32_t kMaxComputeIds = 65536;

struct RegionHeader {
  uint64_t magic;             // kRegionMagic
  uint32_t layout_version;    // kRegionLayoutVersion
  uint32_t header_size;       // sizeof(RegionHeader), for forward compatibility
  uint64_t region_size;       // bytes, whole file
  uint64_t cluster_id;        // the cluster this region belongs to (never 0)
  uint32_t node_id;           // memory-node id within the cluster
  uint32_t reserved0;
  uint64_t fence_offset;      // kFenceBitmapOffset
  uint64_t fence_bytes;       // kFenceBitmapBytes
  uint64_t data_offset;       // first byte compute nodes may access
  uint64_t table_offset;      // == data_offset: start of the table area
  uint64_t log_offset;        // start of the log area
  uint64_t log_size;          // bytes of the log area (ends at region_size)
  uint64_t format_time_ns;    // CLOCK_REALTIME at format, for operators
  uint64_t reserved[3];
  uint64_t checksum;          // crc32c of every byte before this field
};
static_assert(sizeof(RegionHeader) == 128);
static_assert(offsetof(RegionHeader, magic) == 0);
static_assert(offsetof(RegionHeader, layout_version) == 8);
static_assert(offsetof(RegionHeader, region_size) == 16);
static_assert(offsetof(RegionHeader, cluster_id) == 24);
static_assert(offsetof(RegionHeader, node_id) == 32);
static_assert(offsetof(RegionHeader, data_offset) == 56);
static_assert(offsetof(RegionHeader, log_offset) == 72);
static_assert(offsetof(RegionHeader, checksum) == 120);

// Mutable state, written by the daemon only; not covered by the header
// checksum. A daemon that starts and finds kStateRunning knows the previous
// one did not shut down cleanly (data written through the persistence path is
// still valid; the marker is for operators and statistics).
inline constexpr uint64_t kStateClean = 0x4e41454c43ull;          // bytes "CLEAN"
inline constexpr uint64_t kStateRunning = 0x474e494e4e5552ull;  // bytes "RUNNING"

struct RegionState {
  uint64_t state;            // kStateClean or kStateRunning
  uint64_t start_count;      // incremented on every daemon start
  uint64_t unclean_starts;   // starts that found kStateRunning
  uint64_t last_start_ns;
};
static_assert(sizeof(RegionState) == 32);
static_assert(kRegionStateOffset + sizeof(RegionState) <= kFenceBitmapOffset);
static_assert(kFenceBitmapOffset + kFenceBitmapBytes <= kDataOffset);
static_assert(kFenceBitmapBytes * 8 == kMaxComputeIds);
static_assert(kDataOffset % 4096 == 0, "data area must be page aligned for mprotect");

// Byte and bit of compute id `id` in the fence bitmap.
inline constexpr uint64_t fence_word_offset(uint32_t id) { return kFenceBitmapOffset + (id / 64) * 8; }
inline constexpr uint64_t fence_bit_mask(uint32_t id) { return uint64_t{1} << (id % 64); }

}  // namespace pandora
