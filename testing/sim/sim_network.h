// The deterministic simulation's memory nodes and network: in-process
// regions, a `sim` backend behind the Connection interface
// (common/transport/transport.h), and one seeded scheduler that decides when
// every posted operation lands. Everything runs on one thread; a seed fixes
// the whole run.
//
//   SimNetwork net(cluster_id, seed, {{.node_id = 1}, {.node_id = 2}});
//   auto conn = net.open(pid, node_index);   // owned by a simulated compute node
//   ... the engine posts and flushes as usual ...
//   while (net.apply_one()) {}               // lands one operation of one connection
//
// The model is that of RDMA RC queue pairs as the transport contract states
// it, made adversarial where the contract allows:
//  * An operation leaves its connection at flush() and lands when the
//    scheduler picks it: operations on one connection land in the order
//    posted, those on different connections (so on different memory nodes,
//    or of different compute nodes) in any order. A batch posted to several
//    nodes can therefore be applied in part when a compute node dies.
//  * A WRITE reads the caller's buffer, and a READ fills it, when the
//    operation lands, not when it is posted (as a NIC's DMA does).
//  * crash(pid): the compute node is gone. What it had not flushed is lost;
//    of what it had flushed, a prefix per connection (the scheduler's
//    choice: what was on the wire) may still land, until fence(pid) drops
//    it, and the rest is lost - so a batch to several nodes lands in part.
//  * disconnect(): the link of one connection breaks. The caller sees every
//    outstanding operation fail with kDisconnected, yet a prefix of those
//    already sent may still land until the pid is fenced (a tcp timeout
//    while the daemon still executes the CAS).
//  * fence(pid) at every memory node: in-flight operations of the pid are
//    dropped and later ones complete with kFenced.
// Completions of one connection are delivered in order.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "common/time_source.h"
#include "common/transport/transport.h"
#include "common/wire/control.h"

namespace pandora::sim {

// A small, portable PRNG (splitmix64): the same sequence on every platform
// and standard library, which std::uniform_int_distribution does not promise.
class SimRng {
 public:
  explicit SimRng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (n > 0; the modulo bias is irrelevant at these n).
  uint64_t below(uint64_t n) { return next() % n; }
  // True with probability p.
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

 private:
  uint64_t state_;
};

// The simulation's time: advanced by the scheduler, read by the engine
// through Cluster::time(). Starts at a fixed epoch so traces look like
// wall-clock ones.
class SimClock final : public TimeSource {
 public:
  uint64_t realtime_ns() const override { return kEpochNs + now_; }
  uint64_t elapsed_ns() const { return now_; }
  void advance(uint64_t ns) { now_ += ns; }

 private:
  static constexpr uint64_t kEpochNs = 1'700'000'000'000'000'000ULL;
  uint64_t now_ = 0;
};

struct SimNodeSpec {
  uint32_t node_id = 1;
  uint64_t table_bytes = 1 << 20;  // table area (starts at kDataOffset)
  uint64_t log_bytes = 1 << 20;    // log area (after the table area)
};

class SimConnection;

class SimNetwork {
 public:
  SimNetwork(uint64_t cluster_id, uint64_t seed, std::vector<SimNodeSpec> nodes);
  ~SimNetwork();
  SimNetwork(const SimNetwork&) = delete;
  SimNetwork& operator=(const SimNetwork&) = delete;

  size_t node_count() const { return regions_.size(); }
  // What a memory daemon would report for node `index` (wire::RegionInfo).
  const wire::RegionInfo& region_info(size_t index) const { return regions_[index].info; }
  // The region's bytes (for checks after a run).
  std::span<const uint8_t> region(size_t index) const;

  // A data connection of compute node `pid` to memory node `index`.
  std::unique_ptr<SimConnection> open(uint16_t pid, size_t index);

  // Operations sent and not yet landed (any connection).
  size_t in_flight() const;
  // Lands the oldest in-flight operation of one connection, chosen by the
  // seeded scheduler among those with one. False when none is in flight.
  bool apply_one();

  void crash(uint16_t pid);
  void fence(uint16_t pid);
  bool fenced(uint16_t pid) const;
  // Breaks `conn`'s link (see the header comment).
  void disconnect(SimConnection& conn);

  SimRng& rng() { return rng_; }
  SimClock& clock() { return clock_; }
  const SimClock& clock() const { return clock_; }

  struct Stats {
    uint64_t landed[5] = {};  // by OpType (index 1..4)
    uint64_t dropped = 0;     // fenced or lost with a crash
    uint64_t landed_total() const { return landed[1] + landed[2] + landed[3] + landed[4]; }
  };
  const Stats& stats() const { return stats_; }

 private:
  friend class SimConnection;
  struct Region {
    wire::RegionInfo info;
    std::unique_ptr<uint64_t[]> words;  // 8-byte aligned, for CAS/FAA
    uint8_t* bytes() const { return reinterpret_cast<uint8_t*>(words.get()); }
  };
  void attach(SimConnection* c);
  void detach(SimConnection* c);

  std::vector<Region> regions_;
  std::vector<SimConnection*> conns_;  // in creation order (the scheduler's order)
  std::vector<uint8_t> fenced_;        // by pid
  SimRng rng_;
  SimClock clock_;
  Stats stats_;
};

class SimConnection final : public Connection {
 public:
  ~SimConnection() override;

  void post_read(uint64_t remote, void* local, uint32_t len, uint64_t wr_id) override;
  void post_write(uint64_t remote, const void* local, uint32_t len, uint64_t wr_id,
                  Durability d = Durability::kPersistent) override;
  void post_cas(uint64_t remote, uint64_t expected, uint64_t desired, uint64_t wr_id,
                Durability d = Durability::kPersistent) override;
  void post_faa(uint64_t remote, uint64_t add, uint64_t wr_id, Durability d = Durability::kPersistent) override;
  void flush() override;
  size_t poll(std::span<Completion> out) override;
  // Without a wait hook (code outside the simulated schedule: loading,
  // checks) lands this connection's own operations until one completes.
  // With one, calls the hook - which lets the rest of the simulation run -
  // and returns what completed meanwhile, possibly nothing. Never sleeps:
  // `timeout` is meaningless in simulated time.
  size_t wait(std::span<Completion> out, std::chrono::milliseconds timeout) override;
  size_t outstanding() const override {
    return crashed_ ? lost_ : unflushed_.size() + inflight_.size() + done_.size();
  }
  Errc health() const override { return health_; }
  uint64_t data_begin() const override;
  uint64_t data_end() const override;
  std::string_view backend() const override { return "sim"; }

  uint16_t pid() const { return pid_; }
  // Completions waiting to be polled.
  size_t completions() const { return done_.size(); }
  // Operations sent and not landed yet.
  size_t in_flight() const { return inflight_.size() + ghosts_.size(); }
  size_t node() const { return node_; }
  // Called by wait() while nothing has completed (see wait()).
  void set_wait_hook(std::function<void()> hook) { wait_hook_ = std::move(hook); }

 private:
  friend class SimNetwork;
  struct Op {
    OpType type;
    uint64_t remote;
    void* local;  // READ destination / WRITE source
    uint32_t len;
    uint64_t expected_or_add;
    uint64_t desired;
    uint64_t wr_id;
    // Once the caller has given the operation up (its process crashed or
    // its link broke), the operation may still land but must not touch the
    // caller's memory again, as a NIC does not after it flushed a queue
    // pair: a WRITE carries a copy of its bytes, a READ lands nowhere.
    std::vector<uint8_t> payload;
    bool detached = false;
  };
  static void detach(Op& op);
  SimConnection(SimNetwork& net, uint16_t pid, size_t node);
  void post(const Op& op);
  // Lands inflight_.front() (or ghosts_.front() when `ghost`).
  void land(bool ghost);
  void execute(const Op& op, Completion& c);
  bool has_in_flight() const { return !inflight_.empty() || !ghosts_.empty(); }

  SimNetwork* net_;
  uint16_t pid_;
  size_t node_;
  Errc health_ = Errc::kOk;
  bool crashed_ = false;
  size_t lost_ = 0;  // after a crash: every operation posted, outstanding for ever
  std::deque<Op> unflushed_;
  std::deque<Op> inflight_;  // sent, will complete
  std::deque<Op> ghosts_;    // sent before a disconnect: may land, never complete
  std::deque<Completion> done_;
  std::function<void()> wait_hook_;
};

}  // namespace pandora::sim
