#include "compute/op_batch.h"

#include <array>

#include <fmt/format.h>

namespace pandora {

Connection* OpBatch::conn(size_t node) { return node < conns_.size() ? conns_[node] : nullptr; }

size_t OpBatch::add(size_t node, OpType type, uint64_t remote) {
  ops_.push_back(Op{node, type, remote});
  return ops_.size() - 1;
}

// wr_id = (run generation << 32) | op index, so a late completion of an
// earlier, timed-out run is recognised and dropped.
size_t OpBatch::read(size_t node, uint64_t remote, void* local, uint32_t len) {
  const size_t i = add(node, OpType::kRead, remote);
  if (Connection* c = conn(node)) c->post_read(remote, local, len, (base_ << 32) | i);
  return i;
}

size_t OpBatch::write(size_t node, uint64_t remote, const void* local, uint32_t len) {
  const size_t i = add(node, OpType::kWrite, remote);
  if (Connection* c = conn(node)) c->post_write(remote, local, len, (base_ << 32) | i);
  return i;
}

size_t OpBatch::cas(size_t node, uint64_t remote, uint64_t expected, uint64_t desired) {
  const size_t i = add(node, OpType::kCas, remote);
  if (Connection* c = conn(node)) c->post_cas(remote, expected, desired, (base_ << 32) | i);
  return i;
}

size_t OpBatch::faa(size_t node, uint64_t remote, uint64_t add_value) {
  const size_t i = add(node, OpType::kFaa, remote);
  if (Connection* c = conn(node)) c->post_faa(remote, add_value, (base_ << 32) | i);
  return i;
}

size_t OpBatch::absorb(std::span<const Completion> comps) {
  size_t taken = 0;
  for (const Completion& c : comps) {
    if ((c.wr_id >> 32) != base_ || (c.wr_id & 0xffffffffu) >= ops_.size()) continue;  // from an abandoned run
    Op& op = ops_[c.wr_id & 0xffffffffu];
    if (op.done) continue;
    op.done = true;
    op.status = c.status;
    op.value = c.value;
    ++taken;
  }
  return taken;
}

Status OpBatch::run() {
  size_t pending = 0;
  for (auto& op : ops_) {
    if (conn(op.node) == nullptr) {
      op.done = true;
      op.status = Errc::kDisconnected;
    } else if (!op.done) {
      ++pending;
    }
  }
  for (Connection* c : conns_) {
    if (c) c->flush();
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::array<Completion, 64> comps;
  while (pending > 0 && std::chrono::steady_clock::now() <= deadline) {
    size_t progress = 0;
    for (Connection* c : conns_) {
      if (!c || c->outstanding() == 0) continue;
      progress += absorb(std::span(comps.data(), c->poll(comps)));
    }
    pending -= progress;
    if (pending == 0 || progress > 0) continue;
    // Block briefly on one connection that still owes completions rather
    // than spinning the CPU (the others are polled right after).
    for (Connection* c : conns_) {
      if (c && c->outstanding() > 0) {
        pending -= absorb(std::span(comps.data(), c->wait(comps, std::chrono::milliseconds(1))));
        break;
      }
    }
  }
  ++base_;
  Status first;
  for (auto& op : ops_) {
    if (!op.done) {
      op.done = true;
      op.status = Errc::kTimeout;
    }
    if (op.status != Errc::kOk && first.is_ok()) {
      first = Status(op.status, fmt::format("{} at offset {:#x} on memory node index {} failed", op_name(op.type),
                                            op.remote, op.node));
    }
  }
  return first;
}

}  // namespace pandora
