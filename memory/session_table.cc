#include "memory/session_table.h"

#include <poll.h>

#include <utility>

#include <fmt/format.h>

namespace pandora::memd {

struct SessionTable::State {
  struct Entry {
    uint64_t id;
    uint64_t incarnation;
    uint32_t generation;
    int fd;
  };
  mutable std::mutex mu;
  std::unordered_map<uint16_t, std::vector<Entry>> by_compute_id;
  uint64_t next_id = 1;
};

namespace {

// Whether the peer of `fd` has closed or reset its side. A process that
// exited (or was killed) has closed every socket it had.
bool peer_gone(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) < 0) return false;  // cannot tell: count it as alive
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace

SessionTable::SessionTable() : state_(std::make_shared<State>()) {}

SessionTable::Lease::Lease(Lease&& o) noexcept
    : state_(std::move(o.state_)), compute_id_(o.compute_id_), id_(o.id_) {
  o.state_.reset();
}

SessionTable::Lease& SessionTable::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release();
    state_ = std::move(o.state_);
    compute_id_ = o.compute_id_;
    id_ = o.id_;
    o.state_.reset();
  }
  return *this;
}

void SessionTable::Lease::release() {
  if (!state_) return;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->by_compute_id.find(compute_id_);
    if (it != state_->by_compute_id.end()) {
      auto& v = it->second;
      std::erase_if(v, [&](const State::Entry& e) { return e.id == id_; });
      if (v.empty()) state_->by_compute_id.erase(it);
    }
  }
  state_.reset();
}

Result<SessionTable::Lease> SessionTable::acquire(uint16_t compute_id, uint64_t incarnation, uint32_t generation,
                                                  int fd) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto& sessions = state_->by_compute_id[compute_id];
  for (const State::Entry& e : sessions) {
    if (e.incarnation == incarnation || e.generation != generation) continue;
    if (peer_gone(e.fd)) continue;
    return Status(Errc::kInvalidArgument,
                  fmt::format("compute id {} is in use by another live compute process (its connections to this "
                              "memory node have another incarnation); every compute process needs its own compute "
                              "id",
                              compute_id));
  }
  Lease lease;
  lease.state_ = state_;
  lease.compute_id_ = compute_id;
  lease.id_ = state_->next_id++;
  sessions.push_back(State::Entry{lease.id_, incarnation, generation, fd});
  return lease;
}

size_t SessionTable::sessions(uint16_t compute_id) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->by_compute_id.find(compute_id);
  return it == state_->by_compute_id.end() ? 0 : it->second.size();
}

}  // namespace pandora::memd
