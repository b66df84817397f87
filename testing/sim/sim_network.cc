#include "testing/sim/sim_network.h"

#include <algorithm>
#include <cstring>

#include "common/region_layout.h"
#include "common/transport/op_check.h"

namespace pandora::sim {

SimNetwork::SimNetwork(uint64_t cluster_id, uint64_t seed, std::vector<SimNodeSpec> nodes)
    : fenced_(kMaxComputeIds, 0), rng_(seed) {
  for (const SimNodeSpec& n : nodes) {
    Region r;
    r.info.cluster_id = cluster_id;
    r.info.node_id = n.node_id;
    r.info.layout_version = kRegionLayoutVersion;
    r.info.data_offset = kDataOffset;
    r.info.table_offset = kDataOffset;
    r.info.log_offset = kDataOffset + n.table_bytes;
    r.info.log_size = n.log_bytes;
    r.info.region_size = r.info.log_offset + n.log_bytes;
    // Zeroed, as a freshly formatted region's data area is.
    r.words = std::make_unique<uint64_t[]>(r.info.region_size / 8 + 1);
    regions_.push_back(std::move(r));
  }
}

SimNetwork::~SimNetwork() {
  for (SimConnection* c : conns_) c->net_ = nullptr;
}

std::span<const uint8_t> SimNetwork::region(size_t index) const {
  return {regions_[index].bytes(), regions_[index].info.region_size};
}

std::unique_ptr<SimConnection> SimNetwork::open(uint16_t pid, size_t index) {
  std::unique_ptr<SimConnection> c(new SimConnection(*this, pid, index));
  attach(c.get());
  return c;
}

void SimNetwork::attach(SimConnection* c) { conns_.push_back(c); }

void SimNetwork::detach(SimConnection* c) { std::erase(conns_, c); }

size_t SimNetwork::in_flight() const {
  size_t n = 0;
  for (const SimConnection* c : conns_) n += c->inflight_.size() + c->ghosts_.size();
  return n;
}

bool SimNetwork::apply_one() {
  size_t candidates = 0;
  for (const SimConnection* c : conns_) candidates += c->has_in_flight() ? 1 : 0;
  if (candidates == 0) return false;
  uint64_t pick = rng_.below(candidates);
  for (SimConnection* c : conns_) {
    if (!c->has_in_flight()) continue;
    if (pick-- == 0) {
      c->land(!c->ghosts_.empty());
      return true;
    }
  }
  return false;
}

void SimNetwork::crash(uint16_t pid) {
  for (SimConnection* c : conns_) {
    if (c->pid_ != pid) continue;
    c->crashed_ = true;
    c->lost_ = c->unflushed_.size() + c->inflight_.size() + c->done_.size();
    // The machine stops: what was already on the wire (a prefix of each
    // connection's queue, of the scheduler's choosing) may still land; the
    // rest never leaves the NIC.
    const size_t keep = rng_.below(c->inflight_.size() + 1);
    stats_.dropped += c->inflight_.size() - keep;
    c->inflight_.resize(keep);
    for (auto& op : c->inflight_) SimConnection::detach(op);
    stats_.dropped += c->unflushed_.size();
    c->unflushed_.clear();
    c->done_.clear();
  }
}

void SimNetwork::fence(uint16_t pid) {
  fenced_[pid] = 1;
  for (SimConnection* c : conns_) {
    if (c->pid_ != pid) continue;
    // Nothing the pid sent lands any more; a live owner learns of the fence
    // from its outstanding operations.
    stats_.dropped += c->inflight_.size() + c->ghosts_.size();
    c->ghosts_.clear();
    if (!c->crashed_) {
      for (const auto& op : c->inflight_) c->done_.push_back(Completion{op.wr_id, op.type, Errc::kFenced, 0});
      for (const auto& op : c->unflushed_) c->done_.push_back(Completion{op.wr_id, op.type, Errc::kFenced, 0});
    }
    c->inflight_.clear();
    c->unflushed_.clear();
    if (c->health_ == Errc::kOk) c->health_ = Errc::kFenced;
  }
}

bool SimNetwork::fenced(uint16_t pid) const { return fenced_[pid] != 0; }

void SimNetwork::disconnect(SimConnection& c) {
  if (c.health_ != Errc::kOk) return;
  c.health_ = Errc::kDisconnected;
  // A prefix of what was sent may still land; the owner sees all of it fail.
  const size_t keep = rng_.below(c.inflight_.size() + 1);
  for (size_t i = 0; i < c.inflight_.size(); ++i) {
    SimConnection::Op& op = c.inflight_[i];
    if (!c.crashed_) c.done_.push_back(Completion{op.wr_id, op.type, Errc::kDisconnected, 0});
    if (i >= keep) {
      ++stats_.dropped;
      continue;
    }
    SimConnection::detach(op);
    c.ghosts_.push_back(std::move(op));
  }
  c.inflight_.clear();
  for (const auto& op : c.unflushed_) {
    if (!c.crashed_) c.done_.push_back(Completion{op.wr_id, op.type, Errc::kDisconnected, 0});
  }
  c.unflushed_.clear();
}

// ---- SimConnection -----------------------------------------------------------

SimConnection::SimConnection(SimNetwork& net, uint16_t pid, size_t node) : net_(&net), pid_(pid), node_(node) {
  if (net.fenced(pid)) health_ = Errc::kFenced;
}

SimConnection::~SimConnection() {
  if (net_) net_->detach(this);
}

uint64_t SimConnection::data_begin() const { return net_->regions_[node_].info.data_offset; }
uint64_t SimConnection::data_end() const { return net_->regions_[node_].info.region_size; }

void SimConnection::detach(Op& op) {
  if (op.detached) return;
  op.detached = true;
  if (op.type == OpType::kWrite) {
    const auto* p = static_cast<const uint8_t*>(op.local);
    op.payload.assign(p, p + op.len);
  }
  op.local = nullptr;
}

void SimConnection::post(const Op& op) {
  if (crashed_) {
    // The process is gone; nothing leaves it, and nothing ever completes
    // (code of a crashed node that still runs waits forever).
    ++lost_;
    return;
  }
  if (health_ != Errc::kOk) {
    done_.push_back(Completion{op.wr_id, op.type, health_, 0});
    return;
  }
  const Errc bad = transport_detail::check_op(op.type, op.remote, op.type == OpType::kRead || op.type == OpType::kWrite
                                                                      ? op.len
                                                                      : 8,
                                              data_begin(), data_end());
  if (bad != Errc::kOk) {
    done_.push_back(Completion{op.wr_id, op.type, bad, 0});
    return;
  }
  unflushed_.push_back(op);
}

void SimConnection::post_read(uint64_t remote, void* local, uint32_t len, uint64_t wr_id) {
  post(Op{OpType::kRead, remote, local, len, 0, 0, wr_id, {}, false});
}

void SimConnection::post_write(uint64_t remote, const void* local, uint32_t len, uint64_t wr_id, Durability) {
  // In-process regions do not lose power: every write is as durable.
  post(Op{OpType::kWrite, remote, const_cast<void*>(local), len, 0, 0, wr_id, {}, false});
}

void SimConnection::post_cas(uint64_t remote, uint64_t expected, uint64_t desired, uint64_t wr_id, Durability) {
  post(Op{OpType::kCas, remote, nullptr, 8, expected, desired, wr_id, {}, false});
}

void SimConnection::post_faa(uint64_t remote, uint64_t add, uint64_t wr_id, Durability) {
  post(Op{OpType::kFaa, remote, nullptr, 8, add, 0, wr_id, {}, false});
}

void SimConnection::flush() {
  while (!unflushed_.empty()) {
    inflight_.push_back(unflushed_.front());
    unflushed_.pop_front();
  }
}

void SimConnection::execute(const Op& op, Completion& c) {
  uint8_t* base = net_->regions_[node_].bytes();
  c.wr_id = op.wr_id;
  c.op = op.type;
  c.status = Errc::kOk;
  c.value = 0;
  switch (op.type) {
    case OpType::kRead:
      if (!op.detached) std::memcpy(op.local, base + op.remote, op.len);
      break;
    case OpType::kWrite:
      std::memcpy(base + op.remote, op.detached ? op.payload.data() : op.local, op.len);
      break;
    case OpType::kCas: {
      uint64_t word;
      std::memcpy(&word, base + op.remote, 8);
      c.value = word;
      if (word == op.expected_or_add) std::memcpy(base + op.remote, &op.desired, 8);
      break;
    }
    case OpType::kFaa: {
      uint64_t word;
      std::memcpy(&word, base + op.remote, 8);
      c.value = word;
      word += op.expected_or_add;
      std::memcpy(base + op.remote, &word, 8);
      break;
    }
  }
  ++net_->stats_.landed[static_cast<size_t>(op.type)];
}

void SimConnection::land(bool ghost) {
  std::deque<Op>& q = ghost ? ghosts_ : inflight_;
  const Op op = std::move(q.front());
  q.pop_front();
  Completion c;
  if (net_->fenced(pid_)) {
    ++net_->stats_.dropped;
    c = Completion{op.wr_id, op.type, Errc::kFenced, 0};
  } else {
    execute(op, c);
  }
  if (!ghost && !crashed_) done_.push_back(c);
}

size_t SimConnection::poll(std::span<Completion> out) {
  size_t n = 0;
  while (n < out.size() && !done_.empty()) {
    out[n++] = done_.front();
    done_.pop_front();
  }
  return n;
}

size_t SimConnection::wait(std::span<Completion> out, std::chrono::milliseconds /*timeout*/) {
  if (done_.empty() && outstanding() > 0) {
    if (wait_hook_) {
      wait_hook_();
    } else {
      flush();
      while (done_.empty() && has_in_flight()) land(!ghosts_.empty());
    }
  }
  return poll(out);
}

}  // namespace pandora::sim
