#include "common/log_record.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/checksum.h"

namespace pandora {
namespace {

constexpr size_t pad8(size_t n) { return (n + 7) & ~size_t{7}; }

size_t entry_value_len(const LogEntry& e) { return std::max(e.undo_image.size(), e.new_image.size()); }

size_t entry_bytes(size_t value_len) { return sizeof(LogEntryHeader) + pad8(2 * value_len); }

}  // namespace

size_t encoded_log_record_size(const LogRecord& r) {
  size_t n = sizeof(LogRecordHeader);
  for (const auto& e : r.entries) n += entry_bytes(entry_value_len(e));
  return n;
}

void encode_log_record(const LogRecord& r, std::string& out) {
  const size_t start = out.size();
  const size_t total = encoded_log_record_size(r);
  out.resize(start + total, '\0');
  auto* base = reinterpret_cast<uint8_t*>(out.data() + start);

  LogRecordHeader h{};
  h.magic = kLogMagic;
  h.version = kLogLayoutVersion;
  h.entry_count = static_cast<uint16_t>(r.entries.size());
  h.txn_id = r.txn_id;
  h.lane_seq = r.lane_seq;
  h.total_bytes = static_cast<uint32_t>(total);
  h.checksum = 0;

  size_t pos = sizeof(LogRecordHeader);
  for (const auto& e : r.entries) {
    const size_t vlen = entry_value_len(e);
    LogEntryHeader eh{};
    eh.table_id = e.table_id;
    eh.op = static_cast<uint8_t>(e.op);
    eh.key = e.key;
    eh.slot_offset = e.slot_offset;
    eh.old_version = e.old_version;
    eh.value_len = static_cast<uint32_t>(vlen);
    eh.shard = e.shard;
    std::memcpy(base + pos, &eh, sizeof eh);
    pos += sizeof eh;
    if (!e.undo_image.empty()) std::memcpy(base + pos, e.undo_image.data(), e.undo_image.size());
    if (!e.new_image.empty()) std::memcpy(base + pos + vlen, e.new_image.data(), e.new_image.size());
    pos += pad8(2 * vlen);
  }
  std::memcpy(base, &h, sizeof h);
  const uint32_t crc = crc32c(base, total);
  std::memcpy(base + offsetof(LogRecordHeader, checksum), &crc, sizeof crc);
}

Result<LogRecord> decode_log_record(std::span<const uint8_t> in) {
  if (in.size() < sizeof(LogRecordHeader)) {
    return Result<LogRecord>(Errc::kCorrupt, fmt::format("log record needs {} bytes, lane has {}",
                                                         sizeof(LogRecordHeader), in.size()));
  }
  LogRecordHeader h;
  std::memcpy(&h, in.data(), sizeof h);
  if (h.magic != kLogMagic) return Result<LogRecord>(Errc::kCorrupt, "no log record (bad magic)");
  if (h.version != kLogLayoutVersion) {
    return Result<LogRecord>(Errc::kCorrupt, fmt::format("log record version {} (expected {})", h.version,
                                                         kLogLayoutVersion));
  }
  if (h.total_bytes < sizeof(LogRecordHeader) || h.total_bytes > in.size()) {
    return Result<LogRecord>(Errc::kCorrupt, fmt::format("log record claims {} bytes, lane has {}",
                                                         h.total_bytes, in.size()));
  }
  // Verify the checksum before trusting any entry field.
  std::vector<uint8_t> copy(in.begin(), in.begin() + h.total_bytes);
  std::memset(copy.data() + offsetof(LogRecordHeader, checksum), 0, sizeof(uint32_t));
  if (crc32c(copy.data(), copy.size()) != h.checksum) {
    return Result<LogRecord>(Errc::kCorrupt, "log record checksum mismatch (torn or stale write)");
  }

  LogRecord r;
  r.txn_id = h.txn_id;
  r.lane_seq = h.lane_seq;
  r.entries.reserve(h.entry_count);
  size_t pos = sizeof(LogRecordHeader);
  for (uint16_t i = 0; i < h.entry_count; ++i) {
    if (h.total_bytes - pos < sizeof(LogEntryHeader)) {
      return Result<LogRecord>(Errc::kCorrupt, fmt::format("log entry {} truncated", i));
    }
    LogEntryHeader eh;
    std::memcpy(&eh, copy.data() + pos, sizeof eh);
    pos += sizeof eh;
    const size_t images = pad8(2 * size_t{eh.value_len});
    if (h.total_bytes - pos < images) {
      return Result<LogRecord>(Errc::kCorrupt, fmt::format("log entry {} images truncated", i));
    }
    if (eh.op < static_cast<uint8_t>(LogOp::kUpdate) || eh.op > static_cast<uint8_t>(LogOp::kDelete)) {
      return Result<LogRecord>(Errc::kCorrupt, fmt::format("log entry {} has unknown op {}", i, eh.op));
    }
    LogEntry e;
    e.table_id = eh.table_id;
    e.op = static_cast<LogOp>(eh.op);
    e.key = eh.key;
    e.slot_offset = eh.slot_offset;
    e.old_version = eh.old_version;
    e.shard = eh.shard;
    e.undo_image.assign(copy.data() + pos, copy.data() + pos + eh.value_len);
    e.new_image.assign(copy.data() + pos + eh.value_len, copy.data() + pos + 2 * size_t{eh.value_len});
    pos += images;
    r.entries.push_back(std::move(e));
  }
  if (pos != h.total_bytes) {
    return Result<LogRecord>(Errc::kCorrupt, "log record has trailing bytes");
  }
  return r;
}

}  // namespace pandora
