// failed-ids: the set of compute pids whose recovery has completed (seed
// 4.3.1.2). Consulted on every observed latch; updated by the notification
// path while coordinators read it, hence atomic words. A 64Ki-bit bitset keeps
// the check O(1) however many nodes have failed.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace pandora {

class FailedIds {
 public:
  static constexpr uint32_t kBits = 65536;

  FailedIds() {
    for (auto& w : words_) w.store(0, std::memory_order_relaxed);
  }
  FailedIds(const FailedIds&) = delete;
  FailedIds& operator=(const FailedIds&) = delete;

  // Release ordering: a coordinator that sees the bit also sees everything
  // the recovery path wrote before publishing it.
  void add(uint16_t pid) { words_[pid / 64].fetch_or(bit(pid), std::memory_order_release); }
  void remove(uint16_t pid) { words_[pid / 64].fetch_and(~bit(pid), std::memory_order_release); }
  bool contains(uint16_t pid) const {
    return (words_[pid / 64].load(std::memory_order_acquire) & bit(pid)) != 0;
  }
  uint32_t count() const {
    uint32_t n = 0;
    for (const auto& w : words_) n += static_cast<uint32_t>(__builtin_popcountll(w.load(std::memory_order_relaxed)));
    return n;
  }

 private:
  static constexpr uint64_t bit(uint16_t pid) { return uint64_t{1} << (pid % 64); }
  std::array<std::atomic<uint64_t>, kBits / 64> words_;
};

}  // namespace pandora
