#include "recovery/latch_scan.h"

#include <algorithm>
#include <chrono>

#include "common/latch.h"
#include "common/slot_layout.h"
#include "compute/op_batch.h"
#include "compute/table_geometry.h"
#include "recovery/recovery_ops.h"

namespace pandora {

using recovery_ops::batch_timeout;
using recovery_ops::live;

namespace {

// Bytes a scan READ covers at most (whole buckets).
constexpr uint64_t kScanChunk = 1 << 20;

}  // namespace

Result<LatchScanReport> release_latches_where(const Cluster& cluster, std::span<Connection* const> conns,
                                              const std::function<bool(uint64_t)>& stray, const Logger& logger) {
  LatchScanReport report;
  const TableDirectory& dir = cluster.directory();
  std::vector<uint8_t> buf;
  OpBatch batch(conns, batch_timeout(cluster));
  for (size_t n = 0; n < cluster.node_count(); ++n) {
    if (!live(cluster, conns, n)) continue;
    const auto start = std::chrono::steady_clock::now();
    const uint64_t bytes_before = report.bytes;
    const uint32_t released_before = report.released;
    for (const TableEntry& t : dir.tables) {
      const uint64_t bb = bucket_bytes(t);
      const uint64_t per_read = std::max<uint64_t>(1, kScanChunk / bb);  // buckets per READ
      for (uint64_t b0 = 0; b0 < t.bucket_count; b0 += per_read) {
        const uint64_t nb = std::min<uint64_t>(per_read, t.bucket_count - b0);
        buf.resize(nb * bb);
        batch.clear();
        batch.read(n, bucket_offset(t, b0), buf.data(), static_cast<uint32_t>(buf.size()));
        if (Status s = batch.run(); !s) return Status(s.code(), "latch scan READ: " + s.message());
        report.bytes += buf.size();
        batch.clear();
        std::vector<uint64_t> held;
        for (uint64_t i = 0; i < nb * t.slots_per_bucket; ++i) {
          ++report.slots;
          const uint64_t word = load_u64(buf.data() + i * t.slot_bytes + kSlotLatchOffset);
          if (word == kLatchFree || !stray(word)) continue;
          batch.cas(n, bucket_offset(t, b0) + i * t.slot_bytes + kSlotLatchOffset, word, kLatchFree);
          held.push_back(word);
        }
        if (held.empty()) continue;
        if (Status s = batch.run(); !s) return Status(s.code(), "latch scan CAS: " + s.message());
        for (size_t i = 0; i < held.size(); ++i) report.released += batch.value(i) == held[i];
      }
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    logger.info("latch scan of node {}: {} MiB in {:.1f} ms, {} latches released", n,
                (report.bytes - bytes_before) >> 20, ms, report.released - released_before);
  }
  return report;
}

}  // namespace pandora
