#include "compute/txn_engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "common/log_record.h"
#include "common/slot_layout.h"
#include "compute/table_geometry.h"

namespace pandora {

namespace {

// Attempts at taking one latch (first CAS plus steals of stray words that
// keep changing under us) before giving up with kLatched.
constexpr int kLatchRounds = 8;
// Unoccupied slots of the probe path an insert tries before kTableFull.
constexpr int kInsertCandidates = 16;

uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// First 8 bytes of a value, little-endian (shorter values zero-extended).
uint64_t prefix8(const std::vector<uint8_t>& v) {
  uint64_t x = 0;
  if (!v.empty()) std::memcpy(&x, v.data(), std::min<size_t>(8, v.size()));
  return x;
}

}  // namespace

TxnCounters& TxnCounters::operator+=(const TxnCounters& o) {
  commits += o.commits;
  for (size_t i = 0; i < aborts.size(); ++i) aborts[i] += o.aborts[i];
  committed_ops += o.committed_ops;
  all_ops += o.all_ops;
  return *this;
}

TxnEngine::TxnEngine(Cluster& cluster, RemoteOps& ops, AddressCache& cache, uint16_t coordinator)
    : cluster_(cluster),
      dir_(cluster.directory()),
      ops_(ops),
      cache_(cache),
      coordinator_(coordinator),
      pid_(cluster.config().compute_id),
      mode_(cluster.config().protocol),
      bugs_(cluster.config().bugs) {
  Result<uint32_t> lane = cluster.lanes().lane_index(cluster.lane_slot(), coordinator);
  // Cluster::load_directory checked that every coordinator of this node has
  // a lane; a coordinator id beyond that is a scheduler bug.
  lane_ = lane ? *lane : UINT32_MAX;
  log_nodes_ = cluster.log_node_indexes(pid_);
  ford_cursor_.assign(cluster.node_count(), 0);
  // lane_seq must increase across restarts of a coordinator too; the wall
  // clock in ns is far ahead of any count of records written before.
  lane_seq_ = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

bool TxnEngine::live_owner(uint64_t latch) const {
  if (latch == kLatchFree) return false;
  const uint16_t pid = latch_pid(latch);
  return pid == 0 || !cluster_.failed_ids().contains(pid);
}

TxnEngine::Item* TxnEngine::find(uint32_t table, uint64_t key) {
  for (Item& it : items_) {
    if (it.table_id == table && it.key == key) return &it;
  }
  return nullptr;
}

TxnEngine::Item& TxnEngine::add_item(uint32_t table, const TableEntry& t, uint64_t key, Access a) {
  Item& it = items_.emplace_back();
  it.table_id = table;
  it.key = key;
  it.t = &t;
  it.shard = cluster_.placement().shard_of(table, key);
  it.replicas = cluster_.replica_indexes(it.shard);
  it.access = a;
  return it;
}

AbortReason TxnEngine::check_active() {
  if (!active_) {
    detail_ = Status(Errc::kInvalidArgument, "transaction call outside begin()..commit()");
    return AbortReason::kInvalid;
  }
  return state_;
}

AbortReason TxnEngine::fail(AbortReason r, Status detail) {
  if (!detail.is_ok()) detail_ = std::move(detail);
  return finish_abort(r);
}

AbortReason TxnEngine::transport_failure() {
  const size_t node = ops_.first_error_node();
  return fail(AbortReason::kTransport,
              Status(ops_.first_error(), fmt::format("remote operation on memory node {} failed",
                                                     cluster_.node(node).endpoint.to_string())));
}

void TxnEngine::begin() {
  if (active_ && state_ == AbortReason::kNone) finish_abort(AbortReason::kUser);
  ops_.wait_all();
  ops_.reset();
  items_.clear();
  ++seq_;
  mine_ = mode_ == ProtocolMode::kFord ? kFordLatch : encode_latch({pid_, coordinator_, seq_});
  state_ = AbortReason::kNone;
  detail_ = Status();
  active_ = true;
  logged_ = false;
  intents_ = 0;
  intent_bufs_.clear();
  std::fill(ford_cursor_.begin(), ford_cursor_.end(), 0);
  start_ops_ = ops_.counters();
  if (observer_) begin_ns_ = realtime_ns();
  if (lane_ == UINT32_MAX) {
    state_ = AbortReason::kInvalid;
    detail_ = Status(Errc::kInvalidArgument, fmt::format("coordinator {} has no log lane", coordinator_));
  }
  if (undecided_) {
    state_ = AbortReason::kTransport;
    detail_ = Status(Errc::kIo, fmt::format("coordinator {} left a logged transaction undecided after a transport "
                                            "failure; this compute node must be recovered before it runs more",
                                            coordinator_));
  }
}

// ---- locating keys ---------------------------------------------------------

std::optional<uint64_t> TxnEngine::find_in_path(const Item& it, const std::vector<uint8_t>& buf,
                                                uint32_t buckets) const {
  const TableEntry& t = *it.t;
  const uint64_t bb = bucket_bytes(t);
  const uint64_t home = home_bucket(t, it.key);
  for (uint32_t step = 0; step < buckets; ++step) {
    for (uint32_t s = 0; s < t.slots_per_bucket; ++s) {
      SlotView v(buf.data() + step * bb + uint64_t{s} * t.slot_bytes);
      if (v.occupied() && v.key() == it.key) return slot_offset(t, path_bucket(t, home, step), s);
    }
  }
  return std::nullopt;
}

AbortReason TxnEngine::read_path(Item& it, bool whole, std::vector<uint8_t>& buf) {
  const TableEntry& t = *it.t;
  const uint64_t bb = bucket_bytes(t);
  const uint64_t home = home_bucket(t, it.key);
  buf.resize(t.max_probe * bb);
  const uint32_t first = whole ? 0 : 1;  // !whole: buckets 1.. only (0 was read already)
  for (uint32_t step = first; step < t.max_probe; ++step) {
    ops_.read(it.replicas[0], bucket_offset(t, path_bucket(t, home, step)), buf.data() + step * bb,
              static_cast<uint32_t>(bb));
  }
  ops_.wait_all();
  return ops_.first_error() == Errc::kOk ? AbortReason::kNone : AbortReason::kTransport;
}

// Fills it.slot from the cache (a hint) or from the probe path on the
// primary; in the latter case it.image holds the slot as read (unlatched).
AbortReason TxnEngine::locate(Item& it) {
  if (auto cached = cache_.get(it.table_id, it.key)) {
    it.slot = *cached;
    it.from_cache = true;
    return AbortReason::kNone;
  }
  it.from_cache = false;
  const TableEntry& t = *it.t;
  const uint64_t bb = bucket_bytes(t);
  scratch_.resize(t.max_probe * bb);
  ops_.read(it.replicas[0], bucket_offset(t, home_bucket(t, it.key)), scratch_.data(), static_cast<uint32_t>(bb));
  ops_.wait_all();
  if (ops_.first_error() != Errc::kOk) return AbortReason::kTransport;
  std::optional<uint64_t> found = find_in_path(it, scratch_, 1);
  if (!found && t.max_probe > 1) {
    if (AbortReason r = read_path(it, false, scratch_); r != AbortReason::kNone) return r;
    found = find_in_path(it, scratch_, t.max_probe);
  }
  if (!found) return AbortReason::kNotFound;
  it.slot = *found;
  // Copy the slot image out of the path buffer.
  const uint64_t home = home_bucket(t, it.key);
  for (uint32_t step = 0; step < t.max_probe; ++step) {
    const uint64_t b0 = bucket_offset(t, path_bucket(t, home, step));
    if (it.slot >= b0 && it.slot < b0 + bb) {
      const uint8_t* src = scratch_.data() + step * bb + (it.slot - b0);
      it.image.assign(src, src + t.slot_bytes);
      break;
    }
  }
  cache_.put(it.table_id, it.key, it.slot);
  return AbortReason::kNone;
}

// ---- latching --------------------------------------------------------------

void TxnEngine::post_latch(Item& it, size_t r, uint32_t image_len) {
  ReplicaLatch& l = it.latches[r];
  const size_t node = it.replicas[r];
  l.cas_op = ops_.cas(node, it.slot + kSlotLatchOffset, l.expected, mine_);
  l.read_op = ops_.read(node, it.slot, it.image.data() + r * it.t->slot_bytes, image_len);
  l.state = LatchState::kPosted;
}

void TxnEngine::refresh_latch(Item& it, size_t r) {
  ReplicaLatch& l = it.latches[r];
  if (l.state != LatchState::kPosted || !ops_.done(l.cas_op)) return;
  if (ops_.status(l.cas_op) != Errc::kOk) {
    l.state = LatchState::kFailed;  // unknown: the transport failed (the connection is dead anyway)
    l.observed = 0;
    return;
  }
  if (ops_.value(l.cas_op) == l.expected) {
    l.state = LatchState::kHeld;
  } else {
    l.state = LatchState::kFailed;
    l.observed = ops_.value(l.cas_op);
  }
}

AbortReason TxnEngine::settle_latches(Item& it, uint32_t image_len) {
  for (int round = 0; round < kLatchRounds; ++round) {
    ops_.wait_all();
    if (ops_.first_error() != Errc::kOk) return AbortReason::kTransport;
    bool again = false;
    for (size_t r = 0; r < it.latches.size(); ++r) {
      refresh_latch(it, r);
      ReplicaLatch& l = it.latches[r];
      if (l.state != LatchState::kFailed) continue;
      if (live_owner(l.observed)) return AbortReason::kLatched;
      // Stray latch of a failed pid (or freed meanwhile): steal the exact
      // word we saw, then read again behind it.
      l.expected = l.observed;
      post_latch(it, r, image_len);
      again = true;
    }
    if (!again) return AbortReason::kNone;
  }
  return AbortReason::kLatched;
}

void TxnEngine::release_item(Item& it, bool complicit) {
  for (size_t r = 0; r < it.latches.size(); ++r) {
    ReplicaLatch& l = it.latches[r];
    const bool held = l.state == LatchState::kHeld;
    if (held || (complicit && it.slot != 0)) {
      ops_.write(it.replicas[r], it.slot + kSlotLatchOffset, &zero_, sizeof zero_);
    }
    l = ReplicaLatch{};
  }
}

AbortReason TxnEngine::write_intent(const Item& it) {
  const uint32_t lane_bytes = cluster_.lanes().lane_bytes();
  if ((intents_ + 1) * kLatchIntentBytes > lane_bytes / 2) {
    detail_ = Status(Errc::kInvalidArgument, "too many latches for the lane's latch-intent area (raise --lane-bytes)");
    return AbortReason::kInvalid;
  }
  auto& buf = intent_bufs_.emplace_back();
  LatchIntent li{};
  li.magic = kLatchIntentMagic;
  li.table_id = it.table_id;
  li.txn_id = encode_latch({pid_, coordinator_, seq_});
  li.key = it.key;
  li.slot = it.slot;
  std::memcpy(buf.data(), &li, sizeof li);
  ++intents_;
  for (size_t n : log_nodes_) {
    ops_.write(n, cluster_.lane_address(n, lane_) + latch_intent_offset(lane_bytes, intents_), buf.data(),
               kLatchIntentBytes);
  }
  ops_.wait_all();
  if (ops_.first_error() != Errc::kOk) return AbortReason::kTransport;
  crash(CrashPoint::kAfterLatchIntent);
  return AbortReason::kNone;
}

AbortReason TxnEngine::log_ford_undo(Item& it) {
  LogRecord rec;
  rec.txn_id = encode_latch({pid_, coordinator_, seq_});
  rec.lane_seq = ++lane_seq_;
  LogEntry& e = rec.entries.emplace_back();
  e.table_id = it.table_id;
  e.key = it.key;
  e.slot_offset = it.slot;
  e.old_version = it.old_version;
  e.shard = it.shard;
  e.op = it.access == Access::kInsert ? LogOp::kInsert : it.access == Access::kDelete ? LogOp::kDelete : LogOp::kUpdate;
  if (it.access != Access::kInsert) e.undo_image = it.undo;
  it.ford_undo.clear();
  encode_log_record(rec, it.ford_undo);
  const uint64_t size = (it.ford_undo.size() + kCacheLine - 1) / kCacheLine * kCacheLine;
  const uint32_t lane_bytes = cluster_.lanes().lane_bytes();
  for (uint16_t n : it.replicas) {
    if (ford_cursor_[n] + size > lane_bytes) {
      detail_ = Status(Errc::kInvalidArgument, "FORD undo records overflow the log lane (raise --lane-bytes)");
      return AbortReason::kInvalid;
    }
  }
  for (uint16_t n : it.replicas) {
    ops_.write(n, cluster_.lane_address(n, lane_) + ford_cursor_[n], it.ford_undo.data(),
               static_cast<uint32_t>(it.ford_undo.size()));
    ford_cursor_[n] += size;
  }
  crash(CrashPoint::kAfterFordUndo);
  return AbortReason::kNone;
}

// ford: the undo records of a transaction that aborts must not outlive its
// latches, or recovery would take them for an undecided transaction's and
// undo a later committed write of the same object (FORD's lost decision,
// ford_recovery.h). Zero the head of every lane written - wait, since the
// lanes and the latches are on different connections - then release.
bool TxnEngine::hide_ford_undo() {
  static constexpr uint8_t kZeros[sizeof(LogRecordHeader)] = {};
  for (size_t n = 0; n < ford_cursor_.size(); ++n) {
    if (ford_cursor_[n] != 0) ops_.write(n, cluster_.lane_address(n, lane_), kZeros, sizeof kZeros);
  }
  ops_.wait_all();
  return ops_.first_error() == Errc::kOk;
}

// Latches an existing key's slot on its primary and checks the slot still
// holds the key; a stale cached address is dropped and the path searched.
AbortReason TxnEngine::acquire_existing(Item& it) {
  const TableEntry& t = *it.t;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (it.slot == 0) {
      if (AbortReason r = locate(it); r != AbortReason::kNone) return r;
    }
    if (mode_ == ProtocolMode::kLogALatch) {
      if (AbortReason r = write_intent(it); r != AbortReason::kNone) return r;
    }
    it.latches.assign(1, ReplicaLatch{});
    it.image.resize(t.slot_bytes);
    post_latch(it, 0, static_cast<uint32_t>(t.slot_bytes));
    if (AbortReason r = settle_latches(it, static_cast<uint32_t>(t.slot_bytes)); r != AbortReason::kNone) return r;
    crash(CrashPoint::kAfterLatchCas);
    SlotView v(it.image.data());
    if (v.occupied() && v.key() == it.key) {
      it.old_version = v.version();
      it.undo.assign(v.value(), v.value() + t.value_size);
      if (it.access != Access::kWrite) it.value = it.undo;
      if (it.was_read && it.old_version != it.read_version) return AbortReason::kValidationFailed;
      cache_.put(it.table_id, it.key, it.slot);
      if (mode_ == ProtocolMode::kFord) return log_ford_undo(it);
      return AbortReason::kNone;
    }
    // The slot no longer holds the key: release and look again.
    release_item(it, false);
    cache_.invalidate(it.table_id, it.key);
    if (!it.from_cache) return AbortReason::kNotFound;
    it.slot = 0;  // the cache entry is gone: locate() searches the path
  }
  return AbortReason::kNotFound;
}

// A delete frees the slot on every replica, so it latches the backups too
// and keeps them until it is decided. With the primary alone latched, the
// slot would be free and unlatched on a backup once the commit WRITE lands
// there, and an insert of a key of another shard whose replicas include
// that backup (but not the primary) could take it; if the deleting
// transaction then needed to be rolled back, recovery could not put the row
// back on that backup (it only restores replicas still showing its own
// version) and the key would be left without its backup copy.
AbortReason TxnEngine::latch_backups(Item& it) {
  const size_t n = it.replicas.size();
  if (it.latches.size() >= n) return AbortReason::kNone;
  const TableEntry& t = *it.t;
  it.image.resize(n * t.slot_bytes);  // keeps the primary's image in front
  it.latches.resize(n);
  for (size_t r = 1; r < n; ++r) post_latch(it, r, sizeof(SlotHeader));
  return settle_latches(it, sizeof(SlotHeader));
}

AbortReason TxnEngine::settle_blind_write(Item& it) {
  const TableEntry& t = *it.t;
  if (AbortReason r = settle_latches(it, static_cast<uint32_t>(t.slot_bytes)); r != AbortReason::kNone) return r;
  crash(CrashPoint::kAfterLatchCas);
  SlotView v(it.image.data());
  if (v.occupied() && v.key() == it.key) {
    it.old_version = v.version();
    it.undo.assign(v.value(), v.value() + t.value_size);
    cache_.put(it.table_id, it.key, it.slot);
    if (mode_ == ProtocolMode::kFord) return log_ford_undo(it);
    return AbortReason::kNone;
  }
  release_item(it, false);
  cache_.invalidate(it.table_id, it.key);
  if (!it.from_cache) return AbortReason::kNotFound;
  it.slot = 0;
  return acquire_existing(it);
}

AbortReason TxnEngine::settle_pending() {
  ops_.wait_all();
  if (ops_.first_error() != Errc::kOk) return AbortReason::kTransport;
  for (Item& it : items_) {
    if (it.access == Access::kRead || it.access == Access::kInsert || it.latches.empty()) continue;
    const LatchState s = it.latches[0].state;
    if (s == LatchState::kPosted || s == LatchState::kFailed) {
      if (AbortReason r = settle_blind_write(it); r != AbortReason::kNone) return r;
    }
  }
  return AbortReason::kNone;
}

// ---- the API ---------------------------------------------------------------

// The start of every Txn call: the transaction is active, the table exists
// and, for calls that carry a value, the value has the table's size.
AbortReason TxnEngine::start_call(uint32_t table, const TableEntry** t, const std::span<const uint8_t>* value) {
  if (AbortReason r = check_active(); r != AbortReason::kNone) return r;
  *t = dir_.find(table);
  if (!*t) return fail(AbortReason::kInvalid, Status(Errc::kInvalidArgument, fmt::format("unknown table {}", table)));
  if (value && value->size() != (*t)->value_size) {
    return fail(AbortReason::kInvalid, Status(Errc::kInvalidArgument,
                                              fmt::format("table {} values have {} bytes, got {}", table,
                                                          (*t)->value_size, value->size())));
  }
  return AbortReason::kNone;
}

ItemResult<std::span<const uint8_t>> TxnEngine::read(uint32_t table, uint64_t key) {
  const TableEntry* t = nullptr;
  if (AbortReason r = start_call(table, &t); r != AbortReason::kNone) return r;
  if (Item* it = find(table, key)) {
    if (it->access == Access::kDelete || it->access == Access::kNoop) return fail(AbortReason::kNotFound);
    return std::span<const uint8_t>(it->value);
  }
  Item& it = add_item(table, *t, key, Access::kRead);
  if (auto cached = cache_.get(table, key)) {
    it.image.resize(t->slot_bytes);
    ops_.read(it.replicas[0], *cached, it.image.data(), static_cast<uint32_t>(t->slot_bytes));
    ops_.wait_all();
    if (ops_.first_error() != Errc::kOk) return transport_failure();
    SlotView v(it.image.data());
    if (v.occupied() && v.key() == key) {
      it.slot = *cached;
    } else {
      cache_.invalidate(table, key);
    }
  }
  if (it.slot == 0) {
    if (AbortReason r = locate(it); r != AbortReason::kNone) {
      return r == AbortReason::kTransport ? transport_failure() : fail(r);
    }
  }
  SlotView v(it.image.data());
  if (live_owner(v.latch())) return fail(AbortReason::kLatched);
  it.read_version = v.version();
  it.value.assign(v.value(), v.value() + t->value_size);
  crash(CrashPoint::kAfterExecRead);
  return std::span<const uint8_t>(it.value);
}

ItemResult<std::span<uint8_t>> TxnEngine::update(uint32_t table, uint64_t key) {
  const TableEntry* t = nullptr;
  if (AbortReason r = start_call(table, &t); r != AbortReason::kNone) return r;
  Item* it = find(table, key);
  if (it) {
    switch (it->access) {
      case Access::kRead:
        it->access = Access::kUpdate;
        it->was_read = true;
        break;
      case Access::kUpdate:
      case Access::kWrite:
      case Access::kInsert:
        return std::span<uint8_t>(it->value);
      case Access::kDelete:
      case Access::kNoop:
        return fail(AbortReason::kNotFound);
    }
  } else {
    it = &add_item(table, *t, key, Access::kUpdate);
  }
  if (AbortReason r = acquire_existing(*it); r != AbortReason::kNone) {
    return r == AbortReason::kTransport ? transport_failure() : fail(r);
  }
  return std::span<uint8_t>(it->value);
}

AbortReason TxnEngine::write(uint32_t table, uint64_t key, std::span<const uint8_t> value) {
  const TableEntry* t = nullptr;
  if (AbortReason r = start_call(table, &t, &value); r != AbortReason::kNone) return r;
  Item* it = find(table, key);
  if (it) {
    switch (it->access) {
      case Access::kRead: {
        it->access = Access::kWrite;
        it->was_read = true;
        it->value.assign(value.begin(), value.end());
        if (AbortReason r = acquire_existing(*it); r != AbortReason::kNone) {
          return r == AbortReason::kTransport ? transport_failure() : fail(r);
        }
        return AbortReason::kNone;
      }
      case Access::kUpdate:
      case Access::kWrite:
      case Access::kInsert:
        it->value.assign(value.begin(), value.end());
        return AbortReason::kNone;
      case Access::kDelete:
      case Access::kNoop:
        return fail(AbortReason::kNotFound);
    }
  }
  Item& w = add_item(table, *t, key, Access::kWrite);
  w.value.assign(value.begin(), value.end());
  if (AbortReason r = locate(w); r != AbortReason::kNone) {
    return r == AbortReason::kTransport ? transport_failure() : fail(r);
  }
  if (bugs_.logging_without_latching) {
    // The bug logs before the latch is known; it needs the value it would
    // log as undo image, taken from an unlatched read.
    if (w.image.empty()) {
      w.image.resize(t->slot_bytes);
      ops_.read(w.replicas[0], w.slot, w.image.data(), static_cast<uint32_t>(t->slot_bytes));
      ops_.wait_all();
      if (ops_.first_error() != Errc::kOk) return transport_failure();
    }
    w.pre_image = w.image;
  }
  if (mode_ == ProtocolMode::kLogALatch) {
    if (AbortReason r = write_intent(w); r != AbortReason::kNone) {
      return r == AbortReason::kTransport ? transport_failure() : fail(r);
    }
  }
  if (mode_ == ProtocolMode::kFord) {
    // FORD's undo record needs the latched image before commit; settle now.
    if (AbortReason r = acquire_existing(w); r != AbortReason::kNone) {
      return r == AbortReason::kTransport ? transport_failure() : fail(r);
    }
    return AbortReason::kNone;
  }
  // Post the latch CAS + READ and return: commit() settles it.
  w.latches.assign(1, ReplicaLatch{});
  w.image.resize(t->slot_bytes);
  post_latch(w, 0, static_cast<uint32_t>(t->slot_bytes));
  ops_.flush();
  return AbortReason::kNone;
}

AbortReason TxnEngine::insert(uint32_t table, uint64_t key, std::span<const uint8_t> value) {
  const TableEntry* t = nullptr;
  if (AbortReason r = start_call(table, &t, &value); r != AbortReason::kNone) return r;
  if (Item* it = find(table, key)) {
    switch (it->access) {
      case Access::kDelete:  // delete then insert: the row stays, with the new value
        it->access = Access::kUpdate;
        it->value.assign(value.begin(), value.end());
        return AbortReason::kNone;
      case Access::kNoop:  // insert, remove, insert: latches are still held
        it->access = Access::kInsert;
        it->value.assign(value.begin(), value.end());
        return AbortReason::kNone;
      default:
        return fail(AbortReason::kDuplicate);
    }
  }
  Item& it = add_item(table, *t, key, Access::kInsert);
  it.value.assign(value.begin(), value.end());
  if (AbortReason r = read_path(it, true, scratch_); r != AbortReason::kNone) return transport_failure();
  if (find_in_path(it, scratch_, t->max_probe)) return fail(AbortReason::kDuplicate);
  crash(CrashPoint::kInsertAfterPathRead);

  // Unoccupied slots of the path on the primary, in path order.
  std::vector<uint64_t> candidates;
  const uint64_t bb = bucket_bytes(*t);
  const uint64_t home = home_bucket(*t, key);
  for (uint32_t step = 0; step < t->max_probe && candidates.size() < kInsertCandidates; ++step) {
    for (uint32_t s = 0; s < t->slots_per_bucket && candidates.size() < kInsertCandidates; ++s) {
      SlotView v(scratch_.data() + step * bb + uint64_t{s} * t->slot_bytes);
      if (!v.occupied()) candidates.push_back(slot_offset(*t, path_bucket(*t, home, step), s));
    }
  }
  const size_t replicas = it.replicas.size();
  for (uint64_t slot : candidates) {
    it.slot = slot;
    if (mode_ == ProtocolMode::kLogALatch) {
      if (AbortReason r = write_intent(it); r != AbortReason::kNone) {
        return r == AbortReason::kTransport ? transport_failure() : fail(r);
      }
    }
    it.latches.assign(replicas, ReplicaLatch{});
    it.image.assign(replicas * t->slot_bytes, 0);
    for (size_t r = 0; r < replicas; ++r) post_latch(it, r, sizeof(SlotHeader));
    if (AbortReason r = settle_latches(it, sizeof(SlotHeader)); r != AbortReason::kNone) {
      return r == AbortReason::kTransport ? transport_failure() : fail(r);
    }
    crash(CrashPoint::kInsertAfterLatch);
    bool free_everywhere = true;
    uint64_t max_version = 0;
    for (size_t r = 0; r < replicas; ++r) {
      SlotView v(it.image.data() + r * t->slot_bytes);
      if (v.occupied()) {
        if (r == 0 && v.key() == key) return fail(AbortReason::kDuplicate);
        free_everywhere = false;
      }
      max_version = std::max(max_version, v.version());
    }
    if (free_everywhere) {
      it.old_version = max_version;
      crash(CrashPoint::kInsertAfterSlotCheck);
      if (mode_ == ProtocolMode::kFord) {
        if (AbortReason r = log_ford_undo(it); r != AbortReason::kNone) return fail(r);
      }
      return AbortReason::kNone;
    }
    release_item(it, false);  // another shard's row lives here on a backup
  }
  it.slot = 0;
  return fail(AbortReason::kTableFull);
}

AbortReason TxnEngine::remove(uint32_t table, uint64_t key) {
  const TableEntry* t = nullptr;
  if (AbortReason r = start_call(table, &t); r != AbortReason::kNone) return r;
  Item* it = find(table, key);
  if (it) {
    switch (it->access) {
      case Access::kRead:
        it->access = Access::kDelete;
        it->was_read = true;
        break;
      case Access::kUpdate:
      case Access::kWrite:
        it->access = Access::kDelete;
        break;
      case Access::kInsert:
        it->access = Access::kNoop;
        return AbortReason::kNone;
      case Access::kDelete:
      case Access::kNoop:
        return fail(AbortReason::kNotFound);
    }
  } else {
    it = &add_item(table, *t, key, Access::kDelete);
  }
  AbortReason r = AbortReason::kNone;
  if (it->latches.empty() || it->latches[0].state != LatchState::kHeld) {
    // New, read before, or a blind write whose latch is still pending.
    r = it->latches.empty() ? acquire_existing(*it) : settle_blind_write(*it);
  }
  if (r == AbortReason::kNone) r = latch_backups(*it);
  if (r != AbortReason::kNone) return r == AbortReason::kTransport ? transport_failure() : fail(r);
  return AbortReason::kNone;
}

// ---- commit ----------------------------------------------------------------

AbortReason TxnEngine::validate_post() {
  for (Item& it : items_) {
    if (it.access == Access::kRead) {
      it.validate_op = ops_.read(it.replicas[0], it.slot + kSlotLatchOffset, it.validate_buf, sizeof it.validate_buf);
    } else if (it.access == Access::kInsert) {
      const TableEntry& t = *it.t;
      const uint64_t bb = bucket_bytes(t);
      const uint64_t home = home_bucket(t, it.key);
      it.path.resize(t.max_probe * bb);
      for (uint32_t step = 0; step < t.max_probe; ++step) {
        ops_.read(it.replicas[0], bucket_offset(t, path_bucket(t, home, step)), it.path.data() + step * bb,
                  static_cast<uint32_t>(bb));
      }
    }
  }
  ops_.flush();
  return AbortReason::kNone;
}

AbortReason TxnEngine::validate_check() {
  for (Item& it : items_) {
    if (it.access == Access::kRead) {
      const uint64_t latch = load_u64(it.validate_buf);
      const uint64_t version = load_u64(it.validate_buf + 8);
      if (!bugs_.covert_latches && live_owner(latch)) return AbortReason::kValidationFailed;
      if (version != it.read_version) return AbortReason::kValidationFailed;
    } else if (it.access == Access::kInsert) {
      const TableEntry& t = *it.t;
      const uint64_t bb = bucket_bytes(t);
      const uint64_t home = home_bucket(t, it.key);
      for (uint32_t step = 0; step < t.max_probe; ++step) {
        for (uint32_t s = 0; s < t.slots_per_bucket; ++s) {
          const uint64_t off = slot_offset(t, path_bucket(t, home, step), s);
          bool mine = false;
          for (const Item& o : items_) mine |= o.table_id == it.table_id && o.slot == off && is_write(o);
          if (mine) continue;
          SlotView v(it.path.data() + step * bb + uint64_t{s} * t.slot_bytes);
          if (v.occupied() && v.key() == it.key) return AbortReason::kDuplicate;
          if (!v.occupied() && live_owner(v.latch())) return AbortReason::kValidationFailed;
        }
      }
    }
  }
  return AbortReason::kNone;
}

AbortReason TxnEngine::build_and_post_log() {
  LogRecord rec;
  rec.txn_id = encode_latch({pid_, coordinator_, seq_});
  rec.lane_seq = ++lane_seq_;
  for (const Item& it : items_) {
    if (it.access == Access::kRead || it.access == Access::kNoop) continue;
    if (it.access == Access::kInsert && bugs_.missing_insert_log) continue;
    LogEntry& e = rec.entries.emplace_back();
    e.table_id = it.table_id;
    e.key = it.key;
    e.slot_offset = it.slot;
    e.shard = it.shard;
    e.old_version = it.old_version;
    std::vector<uint8_t> undo = it.undo;
    if (!it.pre_image.empty() && it.latches.size() == 1 && it.latches[0].state != LatchState::kHeld) {
      // logging-without-latching: the latch is not known to be ours yet.
      SlotView v(it.pre_image.data());
      e.old_version = v.version();
      undo.assign(v.value(), v.value() + it.t->value_size);
    }
    switch (it.access) {
      case Access::kInsert:
        e.op = LogOp::kInsert;
        e.new_image = it.value;
        break;
      case Access::kDelete:
        e.op = LogOp::kDelete;
        e.undo_image = std::move(undo);
        break;
      default:
        e.op = LogOp::kUpdate;
        e.undo_image = std::move(undo);
        e.new_image = it.value;
        break;
    }
  }
  log_buf_.clear();
  encode_log_record(rec, log_buf_);
  const uint32_t capacity = cluster_.lanes().lane_bytes() - intents_ * kLatchIntentBytes;
  if (lane_ == UINT32_MAX || log_buf_.size() > capacity) {
    detail_ = Status(Errc::kInvalidArgument,
                     fmt::format("the transaction's log record ({} bytes) does not fit its log lane ({} bytes); raise "
                                 "--lane-bytes when loading",
                                 log_buf_.size(), capacity));
    return AbortReason::kInvalid;
  }
  logged_ = true;
  if (stepwise()) {
    for (size_t n : log_nodes_) {
      ops_.write(n, cluster_.lane_address(n, lane_), log_buf_.data(), static_cast<uint32_t>(log_buf_.size()));
      ops_.wait_all();
      if (ops_.first_error() != Errc::kOk) return AbortReason::kTransport;
      crash(CrashPoint::kAfterLogWrite);
    }
    return AbortReason::kNone;
  }
  for (size_t n : log_nodes_) {
    ops_.write(n, cluster_.lane_address(n, lane_), log_buf_.data(), static_cast<uint32_t>(log_buf_.size()));
  }
  ops_.flush();
  // Not armed: the hook only counts (coverage); nothing can fire here.
  for (size_t i = 0; i < log_nodes_.size(); ++i) crash(CrashPoint::kAfterLogWrite);
  return AbortReason::kNone;
}

void TxnEngine::post_commit_writes() {
  // Per replica: [key (inserts)] -> value -> version+meta, as separate WRITEs
  // on one connection, so they land in that order. Readers copy a slot in
  // ascending address order (latch, version, meta, value), and the version
  // is written last, so a reader that sees the new version also sees the
  // whole new value; one that sees the old version next to a partly new
  // value fails validation (the writer still holds the latch, or the
  // version has moved). One WRITE of [version|meta|value] would let a
  // reader pair the new version with a torn value and pass validation.
  for (Item& it : items_) {
    if (it.access == Access::kRead || it.access == Access::kNoop) continue;
    const TableEntry& t = *it.t;
    const uint64_t version = it.old_version + 1;
    const bool has_value = it.access != Access::kDelete;
    it.commit_buf.resize(16);
    store_u64(it.commit_buf.data(), version);
    store_u64(it.commit_buf.data() + 8, make_slot_meta(has_value ? kSlotOccupied : 0, t.value_size));
    for (uint16_t n : it.replicas) {
      // Key first: a reader never sees the occupied flag with the slot's
      // previous key.
      if (it.access == Access::kInsert) ops_.write(n, it.slot, &it.key, sizeof it.key);
      if (has_value) ops_.write(n, it.slot + sizeof(SlotHeader), it.value.data(), t.value_size);
      ops_.write(n, it.slot + kSlotVersionOffset, it.commit_buf.data(), 16);
      if (stepwise()) {
        // One replica at a time, so a crash can leave some replicas new and
        // others old. A failure shows in first_error() for the caller.
        ops_.wait_all();
        if (ops_.first_error() == Errc::kOk) crash(CrashPoint::kAfterCommitWrite);
      } else {
        crash(CrashPoint::kAfterCommitWrite);  // counts only (not armed)
      }
    }
  }
}

CommitOutcome TxnEngine::commit() {
  if (!active_) {
    return CommitOutcome{false, AbortReason::kInvalid,
                         Status(Errc::kInvalidArgument, "commit() without begin()")};
  }
  if (state_ != AbortReason::kNone) {
    active_ = false;
    return CommitOutcome{false, state_, detail_};
  }
  auto aborted = [&](AbortReason r) {
    if (r == AbortReason::kTransport && detail_.is_ok()) transport_failure();
    else finish_abort(r);
    active_ = false;
    return CommitOutcome{false, state_, detail_};
  };
  bool has_writes = false;
  bool has_reads = false;
  for (const Item& it : items_) {
    has_writes |= it.access != Access::kRead && it.access != Access::kNoop;
    has_reads |= it.access == Access::kRead;
  }

  // Bug: the record goes out while latch CASes are still in flight.
  if (bugs_.logging_without_latching && has_writes) {
    if (AbortReason r = build_and_post_log(); r != AbortReason::kNone) return aborted(r);
  }
  // Validation strictly after every latch CAS completed (relaxed-latches
  // posts the validation READs first instead).
  if (!bugs_.relaxed_latches) {
    if (AbortReason r = settle_pending(); r != AbortReason::kNone) return aborted(r);
    crash(CrashPoint::kAfterSettle);
  }
  // Bug: log before the decision.
  if (bugs_.lost_decision && has_writes && !logged_) {
    if (AbortReason r = build_and_post_log(); r != AbortReason::kNone) return aborted(r);
    ops_.wait_all();
  }
  if (has_reads || has_writes) {
    validate_post();
    if (bugs_.relaxed_latches) {
      if (AbortReason r = settle_pending(); r != AbortReason::kNone) return aborted(r);
    }
    ops_.wait_all();
    if (ops_.first_error() != Errc::kOk) return aborted(AbortReason::kTransport);
    if (AbortReason r = validate_check(); r != AbortReason::kNone) return aborted(r);
    crash(CrashPoint::kAfterValidation);
  }
  // Logging phase: only after validation succeeded (ford has none).
  if (has_writes && !logged_ && mode_ != ProtocolMode::kFord) {
    if (AbortReason r = build_and_post_log(); r != AbortReason::kNone) return aborted(r);
  }
  ops_.wait_all();
  if (ops_.first_error() != Errc::kOk) return aborted(AbortReason::kTransport);

  // Commit: every replica of every written object.
  post_commit_writes();
  ops_.wait_all();
  if (ops_.first_error() != Errc::kOk) {
    // Some replicas may hold the new image: keep the latches (the object
    // must not move until recovery decides from the log) and report.
    leave_undecided(AbortReason::kTransport,
                    Status(ops_.first_error(), "commit WRITE failed; latches kept for recovery"));
    active_ = false;
    return CommitOutcome{false, state_, detail_};
  }
  for (Item& it : items_) {
    if (it.access == Access::kInsert) cache_.put(it.table_id, it.key, it.slot);
  }
  crash(CrashPoint::kBeforeUnlatch);
  // Committed. Release own latches.
  const bool step = stepwise();
  for (Item& it : items_) {
    if (!is_write(it)) continue;
    release_item(it, false);
    if (step) ops_.wait_all();
    crash(CrashPoint::kAfterUnlatch);
  }
  ops_.wait_all();
  account_finish(true, AbortReason::kNone);
  active_ = false;
  return CommitOutcome{true, AbortReason::kNone, {}};
}

void TxnEngine::abort() {
  if (!active_) return;
  if (state_ == AbortReason::kNone) finish_abort(AbortReason::kUser);
  active_ = false;
}

AbortReason TxnEngine::finish_abort(AbortReason r) {
  if (state_ != AbortReason::kNone) return state_;  // already aborted
  ops_.wait_all();  // every CAS outcome must be known before deciding what is ours
  const bool ford_logged =
      mode_ == ProtocolMode::kFord && std::any_of(ford_cursor_.begin(), ford_cursor_.end(), [](uint64_t c) { return c; });
  bool keep = r == AbortReason::kTransport && (logged_ || ford_logged);
  if (!keep && ford_logged) keep = !hide_ford_undo();
  if (keep) {
    // A record of this transaction may sit on a log node that we can no
    // longer reach (or clear). Releasing the latches would let others move
    // these objects, and recovery would later undo their writes from the
    // record.
    leave_undecided(r, Status(ops_.first_error() == Errc::kOk ? Errc::kIo : ops_.first_error(),
                              fmt::format("{}; the transaction was logged, so its latches are kept for recovery",
                                          detail_.is_ok() ? std::string("remote operation failed")
                                                          : detail_.message())));
    return r;
  }
  for (Item& it : items_) {
    for (size_t i = 0; i < it.latches.size(); ++i) refresh_latch(it, i);
  }
  const bool step = stepwise();
  for (Item& it : items_) {
    if (!is_write(it)) continue;
    bool held = false;
    for (const ReplicaLatch& l : it.latches) held |= l.state == LatchState::kHeld;
    release_item(it, bugs_.complicit_abort);
    if (step) ops_.wait_all();
    if (held) crash(CrashPoint::kAfterAbortRelease);
  }
  ops_.wait_all();
  state_ = r;
  account_finish(false, r);
  return r;
}

// Ends the transaction with its latches still held, for recovery to decide
// from its log record, and stops this coordinator: its next record would
// overwrite the undecided one. The node is fenced or has lost a memory
// node, so it needs recovery either way.
void TxnEngine::leave_undecided(AbortReason r, Status detail) {
  undecided_ = true;
  detail_ = std::move(detail);
  state_ = r;
  account_finish(false, r);
}

void TxnEngine::account_finish(bool committed, AbortReason r) {
  last_ops_ = ops_.counters() - start_ops_;
  counters_.all_ops += last_ops_;
  if (committed) {
    ++counters_.commits;
    counters_.committed_ops += last_ops_;
  } else {
    ++counters_.aborts[static_cast<size_t>(r)];
  }
  if (observer_) emit_trace(committed, r);
}

void TxnEngine::emit_trace(bool committed, AbortReason r) {
  TxnTrace trace;
  trace.pid = pid_;
  trace.coordinator = coordinator_;
  trace.seq = seq_;
  trace.begin_ns = begin_ns_;
  trace.end_ns = realtime_ns();
  trace.committed = committed;
  trace.reason = r;
  trace.items.reserve(items_.size());
  for (const Item& it : items_) {
    TraceItem ti;
    ti.table = it.table_id;
    ti.key = it.key;
    ti.slot = it.slot;
    switch (it.access) {
      case Access::kRead:
        ti.op = TraceOp::kRead;
        ti.present = !it.value.empty();  // a read that found no key has no value
        ti.read_version = it.read_version;
        ti.read_value = prefix8(it.value);
        break;
      case Access::kUpdate:
      case Access::kWrite:
        ti.op = TraceOp::kUpdate;
        // The version seen under the latch (equal to read_version when the
        // item was read first, else the transaction aborted).
        ti.read_version = it.old_version;
        ti.write_version = it.old_version + 1;
        ti.read_value = prefix8(it.undo);
        ti.write_value = prefix8(it.value);
        break;
      case Access::kInsert:
        ti.op = TraceOp::kInsert;
        ti.present = false;
        ti.write_version = it.old_version + 1;
        ti.write_value = prefix8(it.value);
        break;
      case Access::kDelete:
        ti.op = TraceOp::kDelete;
        ti.read_version = it.old_version;
        ti.write_version = it.old_version + 1;
        ti.read_value = prefix8(it.undo);
        break;
      case Access::kNoop:
        continue;  // inserted and removed again: nothing installed
    }
    // An aborted transaction installed nothing (and may not even know the
    // version it would have installed).
    if (!committed) ti.write_version = 0;
    trace.items.push_back(ti);
  }
  observer_->on_txn_end(trace);
}

}  // namespace pandora
