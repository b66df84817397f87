// The remote-operation API of one coordinator.
//
// A coordinator posts READ/WRITE/CAS/FAA to memory nodes (by node index)
// and then calls wait_all(): every connection it touched is flushed (one
// doorbell per connection per round) and the coordinator's coroutine is
// suspended until each of its posted operations has completed. The worker
// thread routes completions back by wr_id = (coordinator slot << 32) | op id.
//
// Operations posted without a wait (a blind write's latch CAS) simply stay
// outstanding; the next wait_all() covers them too. Op ids are valid until
// reset(), which the transaction calls at begin() once nothing is
// outstanding. Counters count posted operations by type, cumulatively.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "common/transport/transport.h"

namespace pandora {

struct OpCounters {
  uint64_t reads = 0, writes = 0, cas = 0, faa = 0;
  uint64_t total() const { return reads + writes + cas + faa; }
  OpCounters operator-(const OpCounters& o) const {
    return {reads - o.reads, writes - o.writes, cas - o.cas, faa - o.faa};
  }
  OpCounters& operator+=(const OpCounters& o) {
    reads += o.reads, writes += o.writes, cas += o.cas, faa += o.faa;
    return *this;
  }
};

// Suspends the calling coordinator until the worker resumes it (implemented
// by the scheduler's coroutine machinery).
class Suspender {
 public:
  virtual ~Suspender() = default;
  virtual void suspend() = 0;
  // Lets the other coordinators run and returns soon even when nothing
  // completed (for waits on something other than own operations).
  virtual void yield() = 0;
  // The memory configuration moved (Cluster::memory_config_version): the
  // worker replaces its connections to nodes restored to it. Called between
  // transactions only.
  virtual Status refresh_connections() { return Status::ok(); }
};

// An operation failed as a lost link does (disconnected, timed out, I/O):
// the memory node may have crashed. Anything else (fenced, a bad address)
// says nothing about the node's health.
constexpr bool is_lost_link(Errc e) { return e == Errc::kDisconnected || e == Errc::kTimeout || e == Errc::kIo; }

class RemoteOps {
 public:
  using OpId = uint32_t;

  // `slot`: the coordinator's index within its worker (high half of wr_id).
  RemoteOps(uint32_t slot, std::span<Connection* const> conns, Suspender& suspender)
      : slot_(slot), conns_(conns), dirty_(conns.size(), false), suspender_(suspender) {}

  size_t node_count() const { return conns_.size(); }
  // Suspender::refresh_connections (nothing of this coordinator in flight).
  Status refresh_connections() { return suspender_.refresh_connections(); }

  OpId read(size_t node, uint64_t remote, void* local, uint32_t len);
  // `d`: see Durability in transport.h (latch words go kVisible).
  OpId write(size_t node, uint64_t remote, const void* local, uint32_t len,
             Durability d = Durability::kPersistent);
  OpId cas(size_t node, uint64_t remote, uint64_t expected, uint64_t desired,
           Durability d = Durability::kPersistent);
  OpId faa(size_t node, uint64_t remote, uint64_t add);

  // Rings the doorbell of every touched connection without waiting.
  void flush();
  // Flushes touched connections and suspends until nothing is outstanding.
  void wait_all();

  bool done(OpId id) const { return ops_[id].done; }
  Errc status(OpId id) const { return ops_[id].status; }
  uint64_t value(OpId id) const { return ops_[id].value; }
  size_t outstanding() const { return outstanding_; }
  // The state of the connection to `node` (Connection::health): kOk while
  // usable; a broken one never recovers (kFenced, kDisconnected, ...).
  Errc link_health(size_t node) const { return conns_[node]->health(); }
  // First failed operation since reset() (kOk if none), with its node.
  Errc first_error() const { return first_error_; }
  size_t first_error_node() const { return first_error_node_; }
  size_t node_of(OpId id) const { return ops_[id].node; }
  // Since reset() or clear_failures(): the nodes (bit = node index) where an
  // operation failed as a lost link does (is_lost_link), and whether any
  // failed otherwise: only the former can be a memory node's crash
  // (compute/txn/failover.h).
  uint64_t lost_node_mask() const { return lost_nodes_; }
  bool other_failure() const { return other_failure_; }
  // Forgets the failures seen so far (the operations keep their status):
  // first_error() is kOk again. For a coordinator that accounted for them.
  void clear_failures();
  // Lets the other coordinators of this worker run (Suspender::yield).
  void yield() { suspender_.yield(); }

  // Forgets all ops; only when nothing is outstanding.
  void reset();

  const OpCounters& counters() const { return counters_; }

  // Called by the worker for a completion addressed to this coordinator.
  // Returns true when this completion left nothing outstanding.
  bool complete(const Completion& c);

 private:
  struct Op {
    uint32_t node;
    bool done;
    Errc status;
    uint64_t value;
  };
  OpId add(size_t node);
  uint64_t wr_id(OpId id) const { return (uint64_t{slot_} << 32) | id; }

  uint32_t slot_;
  std::span<Connection* const> conns_;
  std::vector<bool> dirty_;
  Suspender& suspender_;
  std::vector<Op> ops_;
  size_t outstanding_ = 0;
  Errc first_error_ = Errc::kOk;
  size_t first_error_node_ = 0;
  uint64_t lost_nodes_ = 0;
  bool other_failure_ = false;
  OpCounters counters_;
};

}  // namespace pandora
