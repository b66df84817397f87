// Synchronous batches of one-sided operations over several connections, for
// code that runs outside the coroutine scheduler: bootstrap (directory
// reads), the loader, log recovery, sweeps and tests.
//
//   OpBatch b(conns, std::chrono::seconds(5));   // conns[i] = node index i (may be null)
//   size_t r = b.read(0, addr, buf, 64);
//   size_t c = b.cas(1, latch_addr, 0, word);
//   Status s = b.run();                          // flushes every connection, waits for all
//   if (s && b.value(c) == 0) ...                // CAS succeeded
//
// run() fails with the first failed operation's error (after every posted
// operation has completed or the deadline passed), naming node and op.
// Buffers must stay valid until run() returns. A batch can be reused after
// run() (clear() drops the previous ops).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "common/transport/transport.h"

namespace pandora {

class OpBatch {
 public:
  OpBatch(std::span<Connection* const> conns, std::chrono::milliseconds timeout)
      : conns_(conns.begin(), conns.end()), timeout_(timeout) {}

  size_t read(size_t node, uint64_t remote, void* local, uint32_t len);
  size_t write(size_t node, uint64_t remote, const void* local, uint32_t len);
  size_t cas(size_t node, uint64_t remote, uint64_t expected, uint64_t desired);
  size_t faa(size_t node, uint64_t remote, uint64_t add);

  // Flushes and waits for every op posted since the last clear().
  Status run();
  void clear() { ops_.clear(); }

  size_t size() const { return ops_.size(); }
  Errc status(size_t op) const { return ops_[op].status; }
  uint64_t value(size_t op) const { return ops_[op].value; }

 private:
  struct Op {
    size_t node;
    OpType type;
    uint64_t remote;
    bool done = false;
    Errc status = Errc::kOk;
    uint64_t value = 0;
  };
  Connection* conn(size_t node);
  size_t add(size_t node, OpType type, uint64_t remote);
  // Records completions of this run; returns how many were new.
  size_t absorb(std::span<const Completion> comps);

  std::vector<Connection*> conns_;
  std::chrono::milliseconds timeout_;
  std::vector<Op> ops_;
  uint64_t base_ = 0;  // wr_ids of this batch are base_ + index; bumped per run
};

}  // namespace pandora
