// Persistent and wire layouts shared by the transaction engine: latch word,
// slot, failed-ids, log records.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "common/failed_ids.h"
#include "common/latch.h"
#include "common/log_record.h"
#include "common/slot_layout.h"

namespace pandora {
namespace {

TEST(Latch, RoundTripsEveryFieldAtItsExtremes) {
  for (uint16_t pid : {uint16_t{1}, uint16_t{0x8000}, uint16_t{0xFFFF}}) {
    for (uint16_t coord : {uint16_t{0}, uint16_t{1}, uint16_t{0xFFFF}}) {
      for (uint32_t seq : {0u, 1u, 0x80000000u, 0xFFFFFFFFu}) {
        const uint64_t w = encode_latch({pid, coord, seq});
        EXPECT_NE(w, kLatchFree);
        EXPECT_EQ(latch_pid(w), pid);
        EXPECT_EQ(decode_latch(w), (LatchOwner{pid, coord, seq}));
        EXPECT_TRUE(latch_is_well_formed(w));
      }
    }
  }
}

TEST(Latch, PidZeroIsNeverAWellFormedHeldLatch) {
  EXPECT_TRUE(latch_is_well_formed(kLatchFree));
  EXPECT_FALSE(latch_is_well_formed(encode_latch({0, 3, 9})));
}

TEST(SlotLayout, MetaPacksFlagsAndLength) {
  const uint64_t m = make_slot_meta(kSlotOccupied, 671);
  EXPECT_EQ(slot_meta_flags(m), kSlotOccupied);
  EXPECT_EQ(slot_meta_len(m), 671u);
  for (uint32_t v : {0u, 1u, 16u, 32u, 48u, 100u, 671u}) {
    EXPECT_EQ(slot_size(v) % kCacheLine, 0u);
    EXPECT_GE(slot_size(v), sizeof(SlotHeader) + v);
    EXPECT_LT(slot_size(v), sizeof(SlotHeader) + v + kCacheLine);
  }
}

TEST(FailedIds, AddContainsRemoveCountOverWholeRange) {
  FailedIds ids;
  EXPECT_EQ(ids.count(), 0u);
  for (uint32_t p : {1u, 63u, 64u, 65535u}) {
    EXPECT_FALSE(ids.contains(static_cast<uint16_t>(p)));
    ids.add(static_cast<uint16_t>(p));
    EXPECT_TRUE(ids.contains(static_cast<uint16_t>(p)));
  }
  EXPECT_EQ(ids.count(), 4u);
  EXPECT_FALSE(ids.contains(2));
  EXPECT_FALSE(ids.contains(65534));
  ids.remove(64);
  EXPECT_FALSE(ids.contains(64));
  EXPECT_TRUE(ids.contains(63));
  EXPECT_EQ(ids.count(), 3u);
}

LogRecord sample_record() {
  LogRecord r;
  r.txn_id = encode_latch({12, 3, 77});
  r.lane_seq = 1234;
  LogEntry upd;
  upd.table_id = 2;
  upd.op = LogOp::kUpdate;
  upd.key = 0xDEADBEEFull;
  upd.slot_offset = 65536 + 640;
  upd.old_version = 41;
  upd.shard = 5;
  upd.undo_image.assign(48, 0xAA);
  upd.new_image.assign(48, 0xBB);
  LogEntry ins;
  ins.table_id = 3;
  ins.op = LogOp::kInsert;
  ins.key = 7;
  ins.old_version = 0;
  ins.undo_image.assign(13, 0);
  ins.new_image.assign(13, 0x11);
  LogEntry del;
  del.table_id = 3;
  del.op = LogOp::kDelete;
  del.key = 8;
  del.old_version = 9;
  del.undo_image.assign(13, 0x22);
  del.new_image.assign(13, 0);
  r.entries = {upd, ins, del};
  return r;
}

TEST(LogRecord, RoundTrip) {
  const LogRecord r = sample_record();
  std::string buf;
  encode_log_record(r, buf);
  ASSERT_EQ(buf.size(), encoded_log_record_size(r));
  ASSERT_EQ(buf.size() % 8, 0u);
  auto d = decode_log_record({reinterpret_cast<const uint8_t*>(buf.data()), buf.size()});
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->txn_id, r.txn_id);
  EXPECT_EQ(d->lane_seq, r.lane_seq);
  ASSERT_EQ(d->entries.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(d->entries[i].table_id, r.entries[i].table_id);
    EXPECT_EQ(d->entries[i].op, r.entries[i].op);
    EXPECT_EQ(d->entries[i].key, r.entries[i].key);
    EXPECT_EQ(d->entries[i].slot_offset, r.entries[i].slot_offset);
    EXPECT_EQ(d->entries[i].old_version, r.entries[i].old_version);
    EXPECT_EQ(d->entries[i].shard, r.entries[i].shard);
    EXPECT_EQ(d->entries[i].undo_image, r.entries[i].undo_image);
    EXPECT_EQ(d->entries[i].new_image, r.entries[i].new_image);
  }
}

TEST(LogRecord, ChecksumCatchesEverySingleBitFlip) {
  std::string buf;
  encode_log_record(sample_record(), buf);
  for (size_t byte = 0; byte < buf.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = buf;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      auto d = decode_log_record({reinterpret_cast<const uint8_t*>(bad.data()), bad.size()});
      ASSERT_FALSE(d) << "flip of bit " << bit << " in byte " << byte << " went unnoticed";
      EXPECT_EQ(d.status().code(), Errc::kCorrupt);
    }
  }
}

TEST(LogRecord, TornWriteOverAnOlderRecordIsDetected) {
  // The lane held record A; a crash tore the write of the longer record B
  // after `cut` bytes. Whatever the cut, recovery must not accept the mix.
  LogRecord a = sample_record();
  a.entries.resize(1);
  LogRecord b = sample_record();
  b.lane_seq = a.lane_seq + 1;
  b.txn_id = encode_latch({12, 3, 78});
  std::string ea, eb;
  encode_log_record(a, ea);
  encode_log_record(b, eb);
  std::string lane(eb.size() + 64, '\0');
  std::memcpy(lane.data(), ea.data(), ea.size());
  for (size_t cut = 1; cut < eb.size(); ++cut) {
    std::string torn = lane;
    std::memcpy(torn.data(), eb.data(), cut);
    auto d = decode_log_record({reinterpret_cast<const uint8_t*>(torn.data()), torn.size()});
    if (!d) continue;
    // Accepting a record is only right when the lane really holds all of its
    // bytes: B when the missing tail happened to equal what was there (zero
    // padding over zeros), or A when the cut left A whole.
    if (d->lane_seq == b.lane_seq) {
      EXPECT_EQ(d->txn_id, b.txn_id);
      EXPECT_EQ(torn.substr(0, eb.size()), eb) << "cut " << cut << " accepted a partial B";
    } else {
      EXPECT_EQ(d->lane_seq, a.lane_seq) << "cut " << cut;
      EXPECT_EQ(d->txn_id, a.txn_id);
      EXPECT_EQ(torn.substr(0, ea.size()), ea) << "cut " << cut << " accepted a partial A";
    }
  }
}

TEST(LogRecord, ZeroedAndShortLanesAreNotRecords) {
  std::string zeros(4096, '\0');
  EXPECT_FALSE(decode_log_record({reinterpret_cast<const uint8_t*>(zeros.data()), zeros.size()}));
  std::string buf;
  encode_log_record(sample_record(), buf);
  for (size_t len = 0; len < buf.size(); ++len) {
    EXPECT_FALSE(decode_log_record({reinterpret_cast<const uint8_t*>(buf.data()), len})) << len;
  }
}

TEST(LogRecord, RandomGarbageNeverDecodes) {
  std::mt19937_64 rng(42);
  std::string buf(512, '\0');
  for (int i = 0; i < 2000; ++i) {
    for (auto& c : buf) c = static_cast<char>(rng());
    // Keep the magic and version right half of the time so the checksum
    // path is what rejects them.
    if (i % 2 == 0) {
      uint32_t m = kLogMagic;
      uint16_t v = kLogLayoutVersion;
      std::memcpy(buf.data(), &m, 4);
      std::memcpy(buf.data() + 4, &v, 2);
    }
    EXPECT_FALSE(decode_log_record({reinterpret_cast<const uint8_t*>(buf.data()), buf.size()}));
  }
}

}  // namespace
}  // namespace pandora
