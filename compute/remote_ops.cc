#include "compute/remote_ops.h"

namespace pandora {

RemoteOps::OpId RemoteOps::add(size_t node) {
  ops_.push_back(Op{static_cast<uint32_t>(node), false, Errc::kOk, 0});
  ++outstanding_;
  dirty_[node] = true;
  return static_cast<OpId>(ops_.size() - 1);
}

RemoteOps::OpId RemoteOps::read(size_t node, uint64_t remote, void* local, uint32_t len) {
  const OpId id = add(node);
  ++counters_.reads;
  conns_[node]->post_read(remote, local, len, wr_id(id));
  return id;
}

RemoteOps::OpId RemoteOps::write(size_t node, uint64_t remote, const void* local, uint32_t len, Durability d) {
  const OpId id = add(node);
  ++counters_.writes;
  conns_[node]->post_write(remote, local, len, wr_id(id), d);
  return id;
}

RemoteOps::OpId RemoteOps::cas(size_t node, uint64_t remote, uint64_t expected, uint64_t desired, Durability d) {
  const OpId id = add(node);
  ++counters_.cas;
  conns_[node]->post_cas(remote, expected, desired, wr_id(id), d);
  return id;
}

RemoteOps::OpId RemoteOps::faa(size_t node, uint64_t remote, uint64_t add_value) {
  const OpId id = add(node);
  ++counters_.faa;
  conns_[node]->post_faa(remote, add_value, wr_id(id));
  return id;
}

void RemoteOps::flush() {
  for (size_t n = 0; n < conns_.size(); ++n) {
    if (dirty_[n]) {
      conns_[n]->flush();
      dirty_[n] = false;
    }
  }
}

void RemoteOps::wait_all() {
  flush();
  while (outstanding_ > 0) suspender_.suspend();
}

bool RemoteOps::complete(const Completion& c) {
  const auto id = static_cast<OpId>(c.wr_id & 0xffffffffu);
  if (id >= ops_.size() || ops_[id].done) return false;  // stale: cannot happen after reset(), guarded anyway
  Op& op = ops_[id];
  op.done = true;
  op.status = c.status;
  op.value = c.value;
  if (c.status != Errc::kOk) {
    if (first_error_ == Errc::kOk) {
      first_error_ = c.status;
      first_error_node_ = op.node;
    }
    if (is_lost_link(c.status)) {
      if (op.node < 64) lost_nodes_ |= uint64_t{1} << op.node;
    } else {
      other_failure_ = true;
    }
  }
  --outstanding_;
  return outstanding_ == 0;
}

void RemoteOps::reset() {
  ops_.clear();
  clear_failures();
}

void RemoteOps::clear_failures() {
  first_error_ = Errc::kOk;
  first_error_node_ = 0;
  lost_nodes_ = 0;
  other_failure_ = false;
}

}  // namespace pandora
