// The state of one coordinator's transaction engine, shared by the phases
// (compute/txn/*.h): what the transaction touched (items and their latches),
// where it logs, and the hooks the protocol policy and the test mutations
// plug into. TxnEngine (compute/txn_engine.h) owns one TxnContext and drives
// the phases over it; nothing else holds one.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "common/latch.h"
#include "common/latch_intent.h"
#include "compute/address_cache.h"
#include "compute/cluster.h"
#include "compute/step_hook.h"
#include "compute/remote_ops.h"
#include "compute/txn.h"
#include "compute/txn/counters.h"
#include "compute/txn/plan.h"

namespace pandora {

namespace txn {

class Protocol;

enum class Access : uint8_t { kRead, kUpdate, kWrite, kInsert, kDelete, kNoop };

enum class LatchState : uint8_t {
  kNone,
  kPosted,   // CAS (and the READ behind it) posted, outcome not looked at yet
  kHeld,     // the CAS succeeded: this transaction owns the word
  kFailed,   // the CAS saw another word (`observed`)
  kUnknown,  // the CAS completed with a transport error: it may still land
};

struct ReplicaLatch {
  LatchState state = LatchState::kNone;
  uint64_t expected = 0;  // what the CAS expects (0, or the stray word being stolen)
  uint64_t observed = 0;  // the word seen by a failed CAS
  RemoteOps::OpId cas_op = 0;
  RemoteOps::OpId read_op = 0;
};

// A key a read found absent (Txn::read_if_present). Validation re-reads its
// probe path: the read holds if the key is still on no slot of it and no
// free slot of it is latched by a live owner (an insert in progress).
struct AbsentKey {
  const TableEntry* t = nullptr;
  uint32_t table_id = 0;
  uint64_t key = 0;
  uint16_t primary = 0;       // node index
  std::vector<uint8_t> path;  // the re-read, max_probe buckets
};

// One object the transaction touched.
struct Item {
  uint32_t table_id = 0;
  uint64_t key = 0;
  const TableEntry* t = nullptr;
  uint32_t shard = 0;
  std::span<const uint16_t> replicas;
  Access access = Access::kRead;
  uint64_t slot = 0;
  bool from_cache = false;
  bool was_read = false;       // read before it was written: its version must not move
  uint64_t read_version = 0;
  uint64_t old_version = 0;    // version before this txn (max over replicas for inserts)
  std::vector<ReplicaLatch> latches;        // [0] primary; every replica for inserts, deletes
  std::vector<uint8_t> image;               // slot image(s): replicas x slot_bytes
  std::vector<uint8_t> value;               // current value (new image for writes)
  std::vector<uint8_t> undo;                // value before this txn (updates, deletes)
  std::vector<uint8_t> commit_buf;          // version|meta|value, WRITE source at commit
  std::vector<uint8_t> pre_image;           // test mutation logging-without-latching: unlatched slot read
  std::string ford_undo;                    // ford: encoded undo record (WRITE source)
  uint8_t validate_buf[16] = {};            // latch|version validation READ target
  std::vector<uint8_t> path;                // insert validation: path re-read
  RemoteOps::OpId validate_op = 0;

  bool is_write() const { return access != Access::kRead; }
  // Written at commit (a noop item was inserted and removed again).
  bool installs() const { return access != Access::kRead && access != Access::kNoop; }

  // Back to a fresh Item, keeping its buffers' capacity (ItemList).
  void recycle();
};

// The items of the current transaction: a deque (an Item's address holds
// while the transaction adds more) whose Items are recycled across
// transactions. clear() keeps them and their buffers, so a warmed-up
// coordinator allocates nothing per item (perf: malloc and free were 7-9%
// of a shm run when every transaction freed its items' buffers).
class ItemList {
 public:
  using iterator = std::deque<Item>::iterator;
  using const_iterator = std::deque<Item>::const_iterator;

  Item& emplace_back() {
    if (used_ == store_.size()) {
      store_.emplace_back();
    } else {
      store_[used_].recycle();
    }
    return store_[used_++];
  }
  void pop_back() { --used_; }
  void clear() { used_ = 0; }
  bool empty() const { return used_ == 0; }
  size_t size() const { return used_; }
  Item& back() { return store_[used_ - 1]; }
  iterator begin() { return store_.begin(); }
  iterator end() { return store_.begin() + static_cast<std::ptrdiff_t>(used_); }
  const_iterator begin() const { return store_.begin(); }
  const_iterator end() const { return store_.begin() + static_cast<std::ptrdiff_t>(used_); }

 private:
  std::deque<Item> store_;
  size_t used_ = 0;
};

struct TxnContext {
  TxnContext(Cluster& cluster, RemoteOps& ops, AddressCache& cache, uint16_t coordinator);

  // Who and where.
  Cluster& cluster;
  const TableDirectory& dir;
  RemoteOps& ops;
  AddressCache& cache;
  const uint16_t coordinator;
  const uint16_t pid;
  uint32_t lane = 0;                 // UINT32_MAX: this coordinator has no lane
  std::vector<size_t> log_nodes;     // the live log nodes of this pid (f+1 until a memory node fails)
  uint64_t memory_config = 0;        // Cluster::memory_config_version() log_nodes was read at
  const Protocol* protocol = nullptr;
  TxnPlan plan;

  // The current transaction.
  ItemList items;
  std::vector<AbsentKey> absent;
  uint32_t seq = 0;
  uint64_t mine = 0;                 // the latch word this transaction CASes in
  bool has_reads = false;            // set at commit()
  bool has_writes = false;           // set at commit()
  bool logged = false;               // a record of this transaction may be on a log node
  bool commit_started = false;       // its commit WRITEs were posted (or are being)
  AbortReason state = AbortReason::kNone;
  Status detail;
  uint64_t lane_seq = 0;
  uint32_t intents = 0;              // log-a-latch: intents written this transaction
  std::deque<std::array<uint8_t, kLatchIntentBytes>> intent_bufs;  // stable while WRITEs fly
  std::vector<uint64_t> ford_cursor;  // ford: per node index, bytes used in this lane
  std::string log_buf;
  std::vector<uint8_t> scratch;
  const uint64_t zero = 0;           // WRITE source of a latch release

  // Latch releases posted and not yet known to have landed (commit does
  // not wait for them; the next begin() collects them).
  std::vector<RemoteOps::OpId> releases;
  // This coordinator left state only recovery can clean up (a logged
  // transaction undecided, or latches it could not release for sure).
  bool needs_recovery = false;
  // Of those, a logged transaction whose outcome recovery decides (its
  // commit may or may not have happened): the one case that is uncertain.
  bool undecided = false;

  TxnAccounting acct;
  StepHook* step_hook = nullptr;

  // The transaction's id in log records and intents (the pandora latch word,
  // also in ford mode).
  uint64_t txn_id() const { return encode_latch({pid, coordinator, seq}); }
  // A latch held by a live transaction (pid 0 - ford's - is always live; a
  // pid in failed-ids counts as free).
  bool live_owner(uint64_t latch) const {
    if (latch == kLatchFree) return false;
    const uint16_t owner = latch_pid(latch);
    return owner == 0 || !cluster.failed_ids().contains(owner);
  }
  // The step hook: a null check when none is attached.
  void crash(CrashPoint p) {
    if (step_hook) step_hook->hit(p);
  }
  // Post multi-target steps one target at a time (a crash injector can
  // then stop the node between any two of them).
  bool stepwise() const { return step_hook && step_hook->single_steps(); }
  // Every operation posted so far completed without error.
  bool all_ok() const { return ops.first_error() == Errc::kOk; }
};

}  // namespace txn
}  // namespace pandora
