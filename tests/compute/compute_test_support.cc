#include "tests/compute/compute_test_support.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "common/slot_layout.h"
#include "compute/loader.h"
#include "compute/op_batch.h"
#include "compute/scheduler.h"
#include "compute/table_geometry.h"
#include "tests/transport/child_process.h"

namespace pandora::testing {

Logger test_logger() { return Logger("test", LogLevel::kWarn); }

std::unique_ptr<Cluster> connect_cluster(const ComputeConfig& cfg, const std::vector<TableSpec>& specs) {
  auto c = Cluster::connect(cfg, test_logger());
  if (!c) {
    ADD_FAILURE() << c.status().to_string();
    return nullptr;
  }
  if (!specs.empty()) {
    Status s = create_tables(**c, specs);
    if (!s) {
      ADD_FAILURE() << s.to_string();
      return nullptr;
    }
  }
  return std::move(*c);
}

LogEntry log_entry_for(Cluster& cluster, uint32_t table, uint64_t key, const RawSlot& s, std::vector<uint8_t> undo,
                       std::vector<uint8_t> redo) {
  LogEntry e;
  e.table_id = table;
  e.key = key;
  e.slot_offset = s.offset;
  e.shard = cluster.placement().shard_of(table, key);
  e.old_version = s.version;
  e.undo_image = std::move(undo);
  e.new_image = std::move(redo);
  return e;
}

RawSlot raw_find(Cluster& cluster, uint32_t table, uint64_t key, size_t replica) {
  RawSlot out;
  const TableEntry& t = *cluster.directory().find(table);
  const size_t node = cluster.replica_indexes(cluster.placement().shard_of(table, key))[replica];
  const uint64_t home = home_bucket(t, key);
  std::vector<uint8_t> buf(t.slot_bytes);
  OpBatch b(cluster.bootstrap_connections(), std::chrono::seconds(10));
  for (uint32_t step = 0; step < t.max_probe; ++step) {
    for (uint32_t s = 0; s < t.slots_per_bucket; ++s) {
      const uint64_t off = slot_offset(t, path_bucket(t, home, step), s);
      b.clear();
      b.read(node, off, buf.data(), static_cast<uint32_t>(t.slot_bytes));
      EXPECT_TRUE(b.run());
      SlotView v(buf.data());
      if (v.occupied() && v.key() == key) {
        out.found = true;
        out.offset = off;
        out.latch = v.latch();
        out.version = v.version();
        out.value.assign(v.value(), v.value() + t.value_size);
        return out;
      }
    }
  }
  return out;
}

uint64_t raw_latch(Cluster& cluster, size_t node, uint64_t slot) {
  uint64_t w = 0;
  OpBatch b(cluster.bootstrap_connections(), std::chrono::seconds(10));
  b.read(node, slot + kSlotLatchOffset, &w, sizeof w);
  EXPECT_TRUE(b.run());
  return w;
}

uint64_t raw_cas_latch(Cluster& cluster, size_t node, uint64_t slot, uint64_t expected, uint64_t desired) {
  OpBatch b(cluster.bootstrap_connections(), std::chrono::seconds(10));
  size_t op = b.cas(node, slot + kSlotLatchOffset, expected, desired);
  EXPECT_TRUE(b.run());
  return b.value(op);
}

std::vector<HeldLatch> scan_latches(Cluster& cluster) {
  std::vector<HeldLatch> out;
  OpBatch b(cluster.bootstrap_connections(), std::chrono::seconds(30));
  for (const TableEntry& t : cluster.directory().tables) {
    const uint64_t bytes = t.bucket_count * bucket_bytes(t);
    for (size_t n = 0; n < cluster.node_count(); ++n) {
      std::vector<uint8_t> area(bytes);
      for (uint64_t at = 0; at < bytes; at += (1 << 20)) {
        b.read(n, t.offset + at, area.data() + at, static_cast<uint32_t>(std::min<uint64_t>(1 << 20, bytes - at)));
      }
      EXPECT_TRUE(b.run());
      b.clear();
      for (uint64_t off = 0; off < bytes; off += t.slot_bytes) {
        SlotView v(area.data() + off);
        if (v.latch() != 0) out.push_back(HeldLatch{n, t.offset + off, v.latch()});
      }
    }
  }
  return out;
}

size_t count_rows(Cluster& cluster, size_t node, uint32_t table, uint64_t key) {
  const TableEntry& t = *cluster.directory().find(table);
  const uint64_t bytes = t.bucket_count * bucket_bytes(t);
  std::vector<uint8_t> area(bytes);
  OpBatch b(cluster.bootstrap_connections(), std::chrono::seconds(30));
  for (uint64_t at = 0; at < bytes; at += (1 << 20)) {
    b.read(node, t.offset + at, area.data() + at, static_cast<uint32_t>(std::min<uint64_t>(1 << 20, bytes - at)));
  }
  EXPECT_TRUE(b.run());
  size_t n = 0;
  for (uint64_t off = 0; off < bytes; off += t.slot_bytes) {
    SlotView v(area.data() + off);
    n += v.occupied() && v.key() == key;
  }
  return n;
}

std::unique_ptr<Cluster> connect_with_accounts(const ComputeConfig& cfg, uint32_t table, uint64_t rows, int64_t start) {
  auto c = connect_cluster(cfg, {{table, "accounts", 8, rows}});
  if (!c) return nullptr;
  TableLoader loader(*c);
  for (uint64_t k = 0; k < rows; ++k) {
    if (!loader.add(table, k, i64_value(start))) return nullptr;
  }
  if (!loader.finish()) return nullptr;
  return c;
}

void fence_everywhere(MemdCluster& memds, uint16_t pid) {
  for (size_t i = 0; i < memds.size(); ++i) {
    auto admin = ControlClient::connect(memds.memd(i).endpoint(), memds.memd(i).identity(0), std::chrono::seconds(5));
    ASSERT_TRUE(admin) << admin.status().to_string();
    ASSERT_TRUE((*admin)->fence(pid));
  }
}

namespace {

// The child's body: transfers until killed; returns only on a setup error.
int transfers_forever(const ComputeConfig& config, uint32_t table, uint64_t rows, SharedCounters& progress) {
  auto c = Cluster::connect(config, test_logger());
  if (!c || !(*c)->load_directory()) return 2;
  auto sched = Scheduler::create(**c);
  if (!sched) return 3;
  (*sched)->run([&](Coordinator& co) {
    std::mt19937_64 rng(co.id() + 1);
    for (;;) {
      Txn& t = co.txn();
      t.begin();
      const uint64_t a = rng() % rows, b = (a + 1 + rng() % (rows - 1)) % rows;
      auto va = t.update(table, a);
      auto vb = va ? t.update(table, b) : va;
      if (va && vb) {
        const int64_t x = as_i64(*va) - 7, y = as_i64(*vb) + 7;
        std::memcpy((*va).data(), &x, 8);
        std::memcpy((*vb).data(), &y, 8);
        if (t.commit().committed) progress[0].fetch_add(1);
      } else {
        t.abort();
      }
    }
  });
  return 4;
}

}  // namespace

void kill_mid_transfers(MemdCluster& memds, const ComputeConfig& config, uint32_t table, uint64_t rows,
                        uint64_t commits) {
  SharedCounters progress;
  ChildProcess child =
      ChildProcess::run([&] { return transfers_forever(config, table, rows, progress); });
  ASSERT_GT(child.pid(), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (progress[0].load() < commits && std::chrono::steady_clock::now() < deadline && !child.try_wait()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_GE(progress[0].load(), commits) << "the compute process made no progress";
  child.kill_and_reap();
  ASSERT_NO_FATAL_FAILURE(fence_everywhere(memds, config.compute_id));
}

int64_t as_i64(std::span<const uint8_t> v) {
  int64_t x = 0;  // a row that was not found has no value: 0 (the caller's EXPECTs say more)
  std::memcpy(&x, v.data(), std::min(v.size(), sizeof x));
  return x;
}

std::vector<uint8_t> i64_value(int64_t x, size_t size) {
  std::vector<uint8_t> v(size, 0);
  std::memcpy(v.data(), &x, sizeof x);
  return v;
}

SharedCounters::SharedCounters(size_t n) : n_(n) {
  void* p = mmap(nullptr, n * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  words_ = static_cast<std::atomic<uint64_t>*>(p);
  for (size_t i = 0; i < n; ++i) new (&words_[i]) std::atomic<uint64_t>(0);
}

SharedCounters::~SharedCounters() { munmap(words_, n_ * sizeof(uint64_t)); }

}  // namespace pandora::testing
