// The transaction engine: compute/txn.h implemented over one coordinator's
// RemoteOps, for the three protocol modes (ARCHITECTURE.md 4).
//
// Mode `pandora`:
//  * Execution. Read-only item: READ the slot on the primary (first replica
//    of its shard), remember its version; abort kLatched if a live owner
//    holds the latch (a latch whose pid is in failed-ids counts as free).
//    Written item (update/write/remove): CAS latch 0 -> encode_latch({pid,
//    coordinator, seq}) on the primary and READ the slot behind it on the
//    same connection (ordered, one doorbell). A failed CAS whose observed pid
//    is in failed-ids is retried as a steal (CAS observed -> mine, READ
//    again); any other failed CAS aborts kLatched. After latching, the slot
//    must still hold the key (the address cache is only a hint); otherwise
//    the latch is released and the key is looked up again along its path.
//    Blind writes post their CAS+READ and return at once; commit() settles
//    them before anything else.
//  * Inserts. Memory nodes share the table geometry but hold different
//    shards, so a slot free on the key's primary may hold another shard's
//    key on one of its backups. An insert therefore reads its whole probe
//    path on the primary (absent-key check), then takes the first slot that
//    is unoccupied there by CAS-latching it on EVERY replica and reading each
//    replica's slot header: a slot occupied on any replica is released and
//    the next one tried. The row's version becomes max(replica versions)+1,
//    so all replicas agree from then on. Two inserts of the same key can pick
//    different slots when other rows move concurrently, so at validation the
//    insert re-reads its path: the key committed elsewhere -> kDuplicate;
//    another unoccupied slot on the path latched by a live owner (possibly an
//    insert of the same key) -> kValidationFailed.
//  * Deletes latch the slot on every replica too: a delete frees it on each,
//    and a backup whose slot is free but unlatched could be taken by another
//    shard's insert before a crashed delete is rolled back, leaving the key
//    without its backup (tests/compute/crash_test.cc).
//  * Validation only after every latch CAS completed: one 16-byte READ
//    (latch+version) per read-only item; abort if latched by a live owner or
//    the version moved.
//  * Logging only after validation: one LogRecord (updates, inserts,
//    deletes, with undo images and old versions), ONE WRITE to each of the
//    f+1 log nodes of this pid into this coordinator's lane (lane_map.h);
//    wait for all.
//  * Commit: to every replica of every written object, as ordered WRITEs on
//    one connection: the key (inserts only), the value, then version+1 and
//    meta last, so a reader that sees the new version sees the whole new
//    value; the latch word is never overwritten. Wait; report committed;
//    then release own latches by WRITE 0 (only the owner writes its latch).
//  * Abort releases exactly the latches this transaction acquired.
//
// Mode `ford`: latches carry no owner: every latch is kFordLatch (pid 0), so
// they can never be recognised as stray nor stolen. Each written object gets
// an undo record (a one-entry LogRecord) written during execution, right
// after its latch+READ, to this coordinator's lane on EACH replica of that
// object (appended at a per-node cursor); there is no logging phase. An
// abort zeroes the head of each lane it wrote before releasing its latches
// (FORD's lost-decision bug otherwise). Recovery for this mode is
// stop-the-world: ford_recovery.h.
//
// Mode `log-a-latch`: pandora plus, before every latch acquisition, a
// 64-byte latch-intent WRITE to the f+1 log nodes (at the tail of the lane,
// growing down), waited for before the CAS is posted.
//
// Bug switches (compute_config.h) re-create FORD's bugs in the pandora path.
//
// Test hooks: set_crash_injector() attaches crash points
// (compute/crash_points.h; a null check when detached, and with an armed
// injector multi-target steps are posted one target at a time);
// set_observer() receives a TxnTrace (compute/txn_trace.h) of every
// transaction at commit or abort (built only while attached).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "common/latch.h"
#include "common/latch_intent.h"
#include "common/log_record.h"
#include "common/logger.h"
#include "compute/address_cache.h"
#include "compute/cluster.h"
#include "compute/crash_points.h"
#include "compute/remote_ops.h"
#include "compute/txn.h"
#include "compute/txn_trace.h"

namespace pandora {

// FORD mode's latch value: owner-less (pid 0, coordinator 0, seq 1). Pid 0 is
// never issued, so no failed-ids entry ever matches it.
inline constexpr uint64_t kFordLatch = encode_latch({0, 0, 1});


inline constexpr size_t kAbortReasons = 9;

struct TxnCounters {
  uint64_t commits = 0;
  std::array<uint64_t, kAbortReasons> aborts{};  // by AbortReason
  OpCounters committed_ops;                      // remote ops of committed transactions
  OpCounters all_ops;                            // of every transaction

  uint64_t total_aborts() const {
    uint64_t n = 0;
    for (uint64_t a : aborts) n += a;
    return n;
  }
  TxnCounters& operator+=(const TxnCounters& o);
};

class TxnEngine final : public Txn {
 public:
  // `coordinator`: the coordinator id (latch field, lane).
  TxnEngine(Cluster& cluster, RemoteOps& ops, AddressCache& cache, uint16_t coordinator);

  void begin() override;
  ItemResult<std::span<const uint8_t>> read(uint32_t table, uint64_t key) override;
  ItemResult<std::span<uint8_t>> update(uint32_t table, uint64_t key) override;
  AbortReason write(uint32_t table, uint64_t key, std::span<const uint8_t> value) override;
  AbortReason insert(uint32_t table, uint64_t key, std::span<const uint8_t> value) override;
  AbortReason remove(uint32_t table, uint64_t key) override;
  CommitOutcome commit() override;
  void abort() override;

  // The latch word of the current transaction (kFordLatch in ford mode).
  uint64_t latch_word() const { return mine_; }
  uint16_t coordinator() const { return coordinator_; }
  // Remote ops of the last finished transaction, by type.
  const OpCounters& last_txn_ops() const { return last_ops_; }
  const TxnCounters& counters() const { return counters_; }
  // Detail of the last kTransport / kInvalid abort.
  const Status& last_detail() const { return detail_; }

  // Receives a TxnTrace of every transaction that ends (commit or abort)
  // from now on; null detaches. The trace is only built while attached.
  void set_observer(TxnObserver* observer) { observer_ = observer; }
  // Crash points (compute/crash_points.h); null detaches. Not owned.
  void set_crash_injector(CrashInjector* crash) { crash_ = crash; }

  // A logged transaction of this coordinator failed on the transport and
  // was left, latches held, for recovery: it runs no more transactions.
  bool halted() const { return undecided_; }

 private:
  enum class Access : uint8_t { kRead, kUpdate, kWrite, kInsert, kDelete, kNoop };
  enum class LatchState : uint8_t { kNone, kPosted, kHeld, kFailed };

  struct ReplicaLatch {
    LatchState state = LatchState::kNone;
    uint64_t expected = 0;  // what the CAS expects (0, or the stray word being stolen)
    uint64_t observed = 0;  // the word seen by a failed CAS
    RemoteOps::OpId cas_op = 0;
    RemoteOps::OpId read_op = 0;
  };

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
    std::vector<uint8_t> pre_image;           // logging-without-latching: unlatched slot read
    std::string ford_undo;                    // ford: encoded undo record (WRITE source)
    uint8_t validate_buf[16] = {};            // latch|version validation READ target
    std::vector<uint8_t> path;                // insert validation: path re-read
    RemoteOps::OpId validate_op = 0;
  };

  bool is_write(const Item& it) const { return it.access != Access::kRead; }
  bool live_owner(uint64_t latch) const;
  Item* find(uint32_t table, uint64_t key);
  Item& add_item(uint32_t table, const TableEntry& t, uint64_t key, Access a);
  AbortReason check_active();
  AbortReason start_call(uint32_t table, const TableEntry** t, const std::span<const uint8_t>* value = nullptr);
  AbortReason fail(AbortReason r, Status detail = {});
  AbortReason transport_failure();

  // Probe path of it.key on the primary into scratch_; first_only = home
  // bucket only. Returns the slot offset holding the key, or 0.
  AbortReason read_path(Item& it, bool whole, std::vector<uint8_t>& buf);
  std::optional<uint64_t> find_in_path(const Item& it, const std::vector<uint8_t>& buf, uint32_t buckets) const;
  AbortReason locate(Item& it);  // fills it.slot (cache or path)

  // Latching.
  void post_latch(Item& it, size_t r, uint32_t image_len);
  void refresh_latch(Item& it, size_t r);
  AbortReason settle_latches(Item& it, uint32_t image_len);  // waits, steals; kNone when all held
  AbortReason acquire_existing(Item& it);                    // latch + verify (+ relocate)
  AbortReason latch_backups(Item& it);                       // deletes: every replica, not just the primary
  void release_item(Item& it, bool complicit);
  AbortReason write_intent(const Item& it);                  // log-a-latch
  AbortReason log_ford_undo(Item& it);                       // ford
  bool hide_ford_undo();                                     // ford: abort hides its undo records (false: failed)
  AbortReason settle_blind_write(Item& it);
  AbortReason settle_pending();

  AbortReason validate_post();
  AbortReason validate_check();
  AbortReason build_and_post_log();
  void post_commit_writes();

  AbortReason finish_abort(AbortReason r);
  void leave_undecided(AbortReason r, Status detail);  // latches kept for recovery
  void account_finish(bool committed, AbortReason r);
  void emit_trace(bool committed, AbortReason r);

  // Crash-point hook: a null check when no injector is attached.
  void crash(CrashPoint p) {
    if (crash_) crash_->hit(p);
  }
  // Post multi-target steps one target at a time (an armed injector can
  // then stop the node between any two of them).
  bool stepwise() const { return crash_ && crash_->armed(); }

  Cluster& cluster_;
  const TableDirectory& dir_;
  RemoteOps& ops_;
  AddressCache& cache_;
  uint16_t coordinator_;
  uint16_t pid_;
  ProtocolMode mode_;
  BugSwitches bugs_;
  uint32_t lane_ = 0;
  std::vector<size_t> log_nodes_;

  std::deque<Item> items_;
  bool active_ = false;
  bool logged_ = false;
  bool undecided_ = false;  // a logged transaction failed on the transport: no more transactions
  AbortReason state_ = AbortReason::kNone;
  Status detail_;
  uint32_t seq_ = 0;
  uint64_t mine_ = 0;
  uint64_t lane_seq_ = 0;
  uint32_t intents_ = 0;
  std::vector<uint64_t> ford_cursor_;  // per node index, bytes used in this lane
  std::deque<std::array<uint8_t, kLatchIntentBytes>> intent_bufs_;  // stable while WRITEs fly
  std::string log_buf_;
  std::vector<uint8_t> scratch_;
  OpCounters start_ops_;
  OpCounters last_ops_;
  TxnCounters counters_;
  const uint64_t zero_ = 0;
  TxnObserver* observer_ = nullptr;
  CrashInjector* crash_ = nullptr;
  uint64_t begin_ns_ = 0;
};

}  // namespace pandora
