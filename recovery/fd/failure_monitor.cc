#include "recovery/fd/failure_monitor.h"

#include <algorithm>

namespace pandora::fd {

void FailureMonitor::watch(NodeKey key, uint64_t now) { watched_.try_emplace(key, now); }

void FailureMonitor::unwatch(NodeKey key) {
  watched_.erase(key);
  // A peer's old report must not count if the node is watched again later
  // (e.g. a memory node that comes back under the same id).
  for (auto& [who, r] : reports_) {
    if (who.second == key.kind) r.ids.erase(key.id);
  }
}

bool FailureMonitor::heard(NodeKey key, uint64_t now) {
  auto it = watched_.find(key);
  if (it == watched_.end()) return false;
  // Heartbeats handled by different threads may arrive with times slightly
  // out of order; keep the latest.
  if (now > it->second) it->second = now;
  return true;
}

std::optional<uint64_t> FailureMonitor::last_heard(NodeKey key) const {
  auto it = watched_.find(key);
  if (it == watched_.end()) return std::nullopt;
  return it->second;
}

std::vector<NodeKey> FailureMonitor::local_suspects(uint64_t now) const {
  std::vector<NodeKey> out;
  for (const auto& [key, last] : watched_) {
    if (suspected_here(key, last, now)) out.push_back(key);
  }
  return out;
}

std::vector<NodeKey> FailureMonitor::suspected_within(uint64_t now, uint64_t within_ns, wire::SenderKind kind) const {
  std::vector<NodeKey> out;
  for (const auto& [key, last] : watched_) {
    if (key.kind == kind && suspected_here(key, last, now + within_ns)) out.push_back(key);
  }
  return out;
}

uint64_t FailureMonitor::next_suspicion(uint64_t now) const {
  uint64_t next = UINT64_MAX;
  for (const auto& [key, last] : watched_) {
    if (!suspected_here(key, last, now)) next = std::min(next, last + timeout_of(key) + 1);
  }
  return next;
}

void FailureMonitor::report(uint32_t replica_id, wire::SenderKind kind, std::span<const uint32_t> ids, uint64_t now) {
  if (replica_id == options_.self || replica_id == 0 || replica_id > options_.replicas) return;
  if (ids.empty()) {
    reports_.erase({replica_id, kind});
    return;
  }
  Report& r = reports_[{replica_id, kind}];
  r.ids = std::set<uint32_t>(ids.begin(), ids.end());
  r.at = now;
}

uint32_t FailureMonitor::votes(NodeKey key, uint64_t now) const {
  auto it = watched_.find(key);
  uint32_t n = it != watched_.end() && suspected_here(key, it->second, now) ? 1 : 0;
  for (const auto& [who, r] : reports_) {
    if (who.second == key.kind && fresh(r, now) && r.ids.contains(key.id)) ++n;
  }
  return n;
}

std::vector<NodeKey> FailureMonitor::failed(uint64_t now) const {
  std::vector<NodeKey> out;
  for (const auto& [key, last] : watched_) {
    if (2 * votes(key, now) > options_.replicas) out.push_back(key);
  }
  return out;
}

}  // namespace pandora::fd
