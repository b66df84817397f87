// Transaction log records (ARCHITECTURE.md 3, "Log area").
//
// A committing transaction writes ONE record to each of its f+1 log nodes,
// with ONE write per node, after validation succeeded (the logging phase).
// The record lives in the coordinator's lane; the next transaction of the
// same coordinator overwrites it. Layout, little-endian:
//
//   LogRecordHeader (32 bytes)
//   entry_count x { LogEntryHeader (40 bytes) | undo image | new image }
//     (each image value_len bytes, the pair padded to a multiple of 8)
//
// A record is valid iff its magic, version, sizes and crc32c check out. A
// record torn by a crash mid-write fails the checksum and is ignored: the
// transaction had not finished logging, so it had not started to commit.
// `lane_seq` increases with every record written to a lane, so recovery can
// also tell the current record from an older one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace pandora {

inline constexpr uint32_t kLogMagic = 0x474f4c50;  // bytes "PLOG"
inline constexpr uint16_t kLogLayoutVersion = 1;

struct LogRecordHeader {
  uint32_t magic;        // kLogMagic
  uint16_t version;      // kLogLayoutVersion
  uint16_t entry_count;
  uint64_t txn_id;       // encode_latch({pid, coordinator, seq}): same triple as its latches
  uint64_t lane_seq;     // per lane, strictly increasing
  uint32_t total_bytes;  // whole record, header included
  uint32_t checksum;     // crc32c of the record with this field zero
};
static_assert(sizeof(LogRecordHeader) == 32);
static_assert(offsetof(LogRecordHeader, txn_id) == 8);
static_assert(offsetof(LogRecordHeader, lane_seq) == 16);
static_assert(offsetof(LogRecordHeader, checksum) == 28);

enum class LogOp : uint8_t { kUpdate = 1, kInsert = 2, kDelete = 3 };

struct LogEntryHeader {
  uint32_t table_id;
  uint8_t op;            // LogOp
  uint8_t reserved[3];
  uint64_t key;
  uint64_t slot_offset;  // region offset of the slot on the primary
  uint64_t old_version;  // version before this transaction; it writes old+1
  uint32_t value_len;    // bytes in each image
  uint32_t shard;        // placement shard (replicas derive from it)
};
static_assert(sizeof(LogEntryHeader) == 40);
static_assert(offsetof(LogEntryHeader, key) == 8);
static_assert(offsetof(LogEntryHeader, old_version) == 24);

struct LogEntry {
  uint32_t table_id = 0;
  LogOp op = LogOp::kUpdate;
  uint64_t key = 0;
  uint64_t slot_offset = 0;
  uint64_t old_version = 0;
  uint32_t shard = 0;
  std::vector<uint8_t> undo_image;  // value before (empty for an insert into a free slot)
  std::vector<uint8_t> new_image;   // value after (empty for a delete)
};

struct LogRecord {
  uint64_t txn_id = 0;
  uint64_t lane_seq = 0;
  std::vector<LogEntry> entries;
};

// Bytes encode_log_record() will produce.
size_t encoded_log_record_size(const LogRecord& r);

// Appends the encoded record to `out`. Images of one entry may differ in
// length (insert/delete); value_len is the larger and the shorter image is
// zero-padded, its true emptiness being implied by the op.
void encode_log_record(const LogRecord& r, std::string& out);

// Decodes and validates the record at the start of `in`. kCorrupt for a torn
// or garbage record (including an all-zero lane), with the reason.
Result<LogRecord> decode_log_record(std::span<const uint8_t> in);

}  // namespace pandora
