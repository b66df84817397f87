// State the litmus driver shares with its forked compute processes and
// recovery leaders: one MAP_SHARED anonymous mapping created before any
// fork, so it survives a SIGKILL of any of them.
//
// failed-ids push: the recovery leader sets the dead pid's bit in
// `failed_words` and bumps `failed_generation` (release) after truncating
// the pid's lanes; every compute process checks the generation before each
// transaction and merges new bits into its Cluster's FailedIds. This stands
// in for the failure detector's direct push to compute nodes
// (ARCHITECTURE.md 5, step 5).
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <new>

#include "common/failed_ids.h"
#include "compute/step_hook.h"

namespace pandora::litmus {

inline constexpr size_t kMaxChildren = 64;
inline constexpr size_t kMaxViolationRecords = 32;

struct ViolationRecord {
  std::atomic<uint32_t> ready{0};
  uint32_t instance = 0;
  uint16_t pid = 0;             // compute pid that saw it (0: the driver's final assert)
  int32_t last_crash = -1;      // last crash point fired before it (-1: none)
  uint64_t since_crash_ns = 0;  // time from that crash to the violation
  uint64_t at_ns = 0;           // CLOCK_MONOTONIC
  uint8_t present[8] = {};
  uint64_t values[8] = {};
};

struct ChildSlot {
  std::atomic<int32_t> crash_note{-1};  // the point a child fired before dying
  // Stop-the-world (ford): the pause epoch this child has acknowledged, set
  // once every one of its coordinators sits between transactions.
  std::atomic<uint32_t> parked_epoch{0};
};

struct SharedPage {
  std::atomic<uint64_t> failed_words[FailedIds::kBits / 64];
  std::atomic<uint64_t> failed_generation{0};
  std::atomic<uint32_t> stop{0};
  // Stop-the-world (ford recovery): non-zero while the driver wants every
  // compute process parked between transactions; the value is the epoch
  // children acknowledge in ChildSlot::parked_epoch.
  std::atomic<uint32_t> pause_epoch{0};
  std::atomic<uint64_t> commits{0};  // litmus transactions
  std::atomic<uint64_t> aborts{0};
  std::atomic<uint64_t> asserts{0};  // committed assert transactions
  std::atomic<uint64_t> asserts_inconclusive{0};
  std::atomic<uint64_t> hits[kCrashPointCount];
  std::atomic<int32_t> last_crash{-1};
  std::atomic<uint64_t> last_crash_ns{0};
  std::atomic<uint32_t> violations{0};
  ViolationRecord records[kMaxViolationRecords];
  ChildSlot children[kMaxChildren];
  std::atomic<int32_t> recovery_note{-1};
  // Summed over recovery leaders (a crashed leader's partial work is counted
  // again by its replacement).
  std::atomic<uint64_t> rec_records{0}, rec_rolled_back{0}, rec_rolled_forward{0}, rec_swept{0};

  SharedPage() {
    for (auto& w : failed_words) w.store(0, std::memory_order_relaxed);
    for (auto& h : hits) h.store(0, std::memory_order_relaxed);
  }

  void publish_failed(uint16_t pid) {
    failed_words[pid / 64].fetch_or(uint64_t{1} << (pid % 64), std::memory_order_release);
    failed_generation.fetch_add(1, std::memory_order_acq_rel);
  }
  // Merges published pids into `ids` when the generation moved past *seen.
  void merge_failed(FailedIds& ids, uint64_t* seen) const {
    const uint64_t g = failed_generation.load(std::memory_order_acquire);
    if (g == *seen) return;
    for (size_t w = 0; w < FailedIds::kBits / 64; ++w) {
      uint64_t bits = failed_words[w].load(std::memory_order_acquire);
      while (bits) {
        const int b = __builtin_ctzll(bits);
        bits &= bits - 1;
        ids.add(static_cast<uint16_t>(w * 64 + b));
      }
    }
    *seen = g;
  }
};

// Owns the mapping (munmap in the creating process only: children _exit).
class SharedMapping {
 public:
  SharedMapping() {
    void* p = mmap(nullptr, sizeof(SharedPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) page_ = new (p) SharedPage();
  }
  ~SharedMapping() {
    if (page_) {
      page_->~SharedPage();
      munmap(page_, sizeof(SharedPage));
    }
  }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  SharedPage* get() const { return page_; }

 private:
  SharedPage* page_ = nullptr;
};

}  // namespace pandora::litmus
