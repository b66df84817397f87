#include "memory/pending_handshakes.h"

#include <algorithm>

namespace pandora::memd {

PendingHandshakes::PendingHandshakes(size_t max_total, size_t max_per_peer)
    : max_total_(std::max<size_t>(max_total, 1)), max_per_peer_(std::max<size_t>(max_per_peer, 1)) {}

std::optional<uint64_t> PendingHandshakes::victim_for(std::string_view addr) const {
  if (auto it = by_addr_.find(std::string(addr)); it != by_addr_.end() && it->second.size() >= max_per_peer_) {
    return it->second.front();
  }
  if (size() >= max_total_) return busiest_oldest();
  return std::nullopt;
}

std::optional<uint64_t> PendingHandshakes::busiest_oldest() const {
  const std::deque<uint64_t>* best = nullptr;
  for (const auto& [addr, ids] : by_addr_) {
    if (best == nullptr || ids.size() > best->size() ||
        (ids.size() == best->size() && ids.front() < best->front())) {
      best = &ids;
    }
  }
  if (best == nullptr) return std::nullopt;
  return best->front();
}

void PendingHandshakes::add(uint64_t id, std::string_view addr) {
  auto [it, fresh] = addr_of_.try_emplace(id, addr);
  if (!fresh) return;  // already recorded
  by_addr_[it->second].push_back(id);
}

void PendingHandshakes::remove(uint64_t id) {
  auto it = addr_of_.find(id);
  if (it == addr_of_.end()) return;
  auto a = by_addr_.find(it->second);
  if (a != by_addr_.end()) {
    std::deque<uint64_t>& ids = a->second;
    if (auto at = std::find(ids.begin(), ids.end(), id); at != ids.end()) ids.erase(at);
    if (ids.empty()) by_addr_.erase(a);
  }
  addr_of_.erase(it);
}

size_t PendingHandshakes::count(std::string_view addr) const {
  auto it = by_addr_.find(std::string(addr));
  return it == by_addr_.end() ? 0 : it->second.size();
}

}  // namespace pandora::memd
