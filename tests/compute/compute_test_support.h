// Shared set-up for compute tests: a few real pandora-memd daemons, configs
// for compute nodes of a given pid/backend/protocol, and raw inspection of
// slots (latch words, versions) through bootstrap connections.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/log_record.h"
#include "common/logger.h"
#include "common/table_directory.h"
#include "compute/cluster.h"
#include "compute/compute_config.h"
#include "compute/txn.h"
#include "tests/support/memd_cluster.h"
#include "tests/support/memd_process.h"

namespace pandora::testing {

// A quiet logger for tests (warnings and errors only).
Logger test_logger();

// Connects a compute node and, when `specs` is non-empty, creates the tables.
std::unique_ptr<Cluster> connect_cluster(const ComputeConfig& cfg, const std::vector<TableSpec>& specs = {});

// connect_cluster() with one table `table` ("accounts", 8-byte values) of
// keys 0..rows-1, each loaded with the signed value `start`. Null on failure.
std::unique_ptr<Cluster> connect_with_accounts(const ComputeConfig& cfg, uint32_t table, uint64_t rows, int64_t start);

// Raw view of a key's slot on its primary: finds the key along its path.
struct RawSlot {
  bool found = false;
  uint64_t offset = 0;
  uint64_t latch = 0;
  uint64_t version = 0;
  std::vector<uint8_t> value;
};
RawSlot raw_find(Cluster& cluster, uint32_t table, uint64_t key, size_t replica = 0);
// The log entry a coordinator writes for updating `key` of `table` from
// `undo` to `redo`, where `s` is the key's slot on its primary (raw_find).
LogEntry log_entry_for(Cluster& cluster, uint32_t table, uint64_t key, const RawSlot& s, std::vector<uint8_t> undo,
                       std::vector<uint8_t> redo);
uint64_t raw_latch(Cluster& cluster, size_t node, uint64_t slot);
// CAS on a latch word through the bootstrap connection; returns the old word.
uint64_t raw_cas_latch(Cluster& cluster, size_t node, uint64_t slot, uint64_t expected, uint64_t desired);

// Every held latch word in every table of every node: (node, slot, word).
struct HeldLatch {
  size_t node;
  uint64_t slot;
  uint64_t word;
};
std::vector<HeldLatch> scan_latches(Cluster& cluster);

// Number of occupied slots holding `key` in `table` on node `node`.
size_t count_rows(Cluster& cluster, size_t node, uint32_t table, uint64_t key);

// Fences `pid` on every daemon of `memds` (gtest assertions on failure).
void fence_everywhere(MemdCluster& memds, uint16_t pid);

// Forks a compute process `config` that moves 7 between two random keys of
// `table` (keys 0..rows-1, 8-byte signed values) in each of its
// coordinators, waits (bounded) until it has committed `commits`
// transactions, SIGKILLs it mid-run and fences its pid everywhere.
void kill_mid_transfers(MemdCluster& memds, const ComputeConfig& config, uint32_t table, uint64_t rows,
                        uint64_t commits);

int64_t as_i64(std::span<const uint8_t> v);
std::vector<uint8_t> i64_value(int64_t x, size_t size = 8);

// Counters in a MAP_SHARED page, visible to forked children.
class SharedCounters {
 public:
  explicit SharedCounters(size_t n = 64);
  ~SharedCounters();
  std::atomic<uint64_t>& operator[](size_t i) { return words_[i]; }

 private:
  std::atomic<uint64_t>* words_;
  size_t n_;
};

}  // namespace pandora::testing
