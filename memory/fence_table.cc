#include "memory/fence_table.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <thread>

namespace pandora::memd {
namespace {

// Raw syscalls: glibc wrappers for pidfd appeared only in 2.36.
int sys_pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
int sys_pidfd_send_signal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

bool pidfd_exited(int pidfd, int timeout_ms) {
  pollfd p{pidfd, POLLIN, 0};
  int rc = ::poll(&p, 1, timeout_ms);
  return rc > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

}  // namespace

FenceTable::FenceTable(Region& region, size_t data_threads, Logger log)
    : region_(region), log_(std::move(log)), slots_(new QuiescenceSlot[data_threads]), nslots_(data_threads) {}

FenceTable::~FenceTable() {
  for (auto& c : shm_) ::close(c.pidfd);
}

uint64_t FenceTable::fenced_count() const {
  uint64_t n = 0;
  for (uint64_t off = 0; off < kFenceBitmapBytes; off += 8) {
    n += static_cast<uint64_t>(
        std::popcount(__atomic_load_n(region_.word(kFenceBitmapOffset + off), __ATOMIC_RELAXED)));
  }
  return n;
}

void FenceTable::prune_exited_locked() {
  for (size_t i = 0; i < shm_.size();) {
    if (pidfd_exited(shm_[i].pidfd, 0)) {
      log_.debug("shm client pid {} (compute {}) has exited", shm_[i].pid, shm_[i].compute_id);
      ::close(shm_[i].pidfd);
      shm_[i] = shm_.back();
      shm_.pop_back();
    } else {
      ++i;
    }
  }
}

Status FenceTable::register_shm_client(uint16_t compute_id, pid_t pid) {
  if (pid <= 1 || pid == ::getpid()) {
    return Status(Errc::kInvalidArgument, "pid " + std::to_string(pid) + " cannot be an shm client");
  }
  int fd = sys_pidfd_open(pid);
  if (fd < 0) {
    int e = errno;
    if (e == ESRCH) {
      return Status(Errc::kInvalidArgument, "no process with pid " + std::to_string(pid) +
                                                " on the memory node's host; shm works only for local clients");
    }
    return Status(Errc::kIo, std::string("pidfd_open failed: ") + strerror(e));
  }
  return register_shm_client(compute_id, pid, fd);
}

Status FenceTable::register_shm_client(uint16_t compute_id, pid_t pid, int pidfd) {
  if (pid <= 1 || pid == ::getpid()) {
    ::close(pidfd);
    return Status(Errc::kInvalidArgument, "pid " + std::to_string(pid) + " cannot be an shm client");
  }
  std::lock_guard<std::mutex> lock(shm_mu_);
  // Checked under the lock: fence() sets the bit before it takes the lock to
  // collect registrations, so either it sees this one or we see the bit.
  if (is_fenced(compute_id)) {
    ::close(pidfd);
    return Status(Errc::kFenced, "compute node " + std::to_string(compute_id) + " is fenced");
  }
  prune_exited_locked();
  if (shm_.size() >= kMaxShmClients) {
    ::close(pidfd);
    return Status(Errc::kIo, "too many shm clients registered (" + std::to_string(kMaxShmClients) + ")");
  }
  shm_.push_back(ShmClient{compute_id, pid, pidfd});
  return Status::ok();
}

size_t FenceTable::shm_clients() {
  std::lock_guard<std::mutex> lock(shm_mu_);
  prune_exited_locked();
  return shm_.size();
}

void FenceTable::wait_for_quiescence() {
  for (size_t t = 0; t < nslots_; ++t) {
    QuiescenceSlot& s = slots_[t];
    uint64_t c0 = s.batches.load(std::memory_order_seq_cst);
    if (s.in_batch.load(std::memory_order_seq_cst) == 0) continue;
    // The thread is in a batch that may have started before the bit was
    // set. Batches are short (bounded by the input buffer and non-blocking
    // I/O), so spin politely until it ends.
    auto start = std::chrono::steady_clock::now();
    auto next_warning = start + std::chrono::seconds(1);
    for (uint64_t spins = 0;; ++spins) {
      if (s.batches.load(std::memory_order_seq_cst) != c0 || s.in_batch.load(std::memory_order_seq_cst) == 0) {
        break;
      }
      if (spins < 64) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      if (std::chrono::steady_clock::now() > next_warning) {
        log_.warn("fence: data-plane thread {} has been in one batch for {} ms; still waiting", t,
                  std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)
                      .count());
        next_warning += std::chrono::seconds(1);
      }
    }
  }
}

Status FenceTable::unfence(uint16_t compute_id) {
  if (compute_id == 0) return Status(Errc::kInvalidArgument, "compute id 0 is never issued");
  if (!is_fenced(compute_id)) return Status::ok();
  generations_[compute_id].fetch_add(1, std::memory_order_seq_cst);
  const uint64_t mask = fence_bit_mask(compute_id);
  const uint64_t before = __atomic_fetch_and(word(compute_id), ~mask, __ATOMIC_SEQ_CST);
  region_.persist(fence_word_offset(compute_id), 8);
  if (before & mask) log_.info("unfenced compute id {} for reuse (its earlier sessions stay refused)", compute_id);
  return Status::ok();
}

Status FenceTable::fence(uint16_t compute_id) { return fence(std::span<const uint16_t>(&compute_id, 1)); }

Status FenceTable::fence(std::span<const uint16_t> compute_ids) {
  if (compute_ids.empty()) return Status(Errc::kInvalidArgument, "a fence names at least one compute id");
  for (uint16_t id : compute_ids) {
    if (id == 0) return Status(Errc::kInvalidArgument, "compute id 0 is never issued and cannot be fenced");
  }
  // Every bit first, then one wait: a batch that began before the last bit
  // was set has ended when the wait returns, for all the ids at once.
  for (uint16_t id : compute_ids) {
    const uint64_t mask = fence_bit_mask(id);
    const uint64_t before = __atomic_fetch_or(word(id), mask, __ATOMIC_SEQ_CST);
    region_.persist(fence_word_offset(id), 8);
    if ((before & mask) == 0) log_.info("fencing compute node {}", id);
    else log_.info("fencing compute node {} again (already fenced)", id);
  }

  wait_for_quiescence();
  if (revoker_) {
    for (uint16_t id : compute_ids) revoker_(id);
  }

  std::vector<ShmClient> victims;
  {
    std::lock_guard<std::mutex> lock(shm_mu_);
    for (size_t i = 0; i < shm_.size();) {
      if (std::find(compute_ids.begin(), compute_ids.end(), shm_[i].compute_id) != compute_ids.end()) {
        victims.push_back(shm_[i]);
        shm_[i] = shm_.back();
        shm_.pop_back();
      } else {
        ++i;
      }
    }
  }
  Status result = Status::ok();
  auto deadline = std::chrono::steady_clock::now() + kKillWait;
  std::vector<ShmClient> survivors;
  // Every victim is killed before any is waited for: they die in parallel.
  for (const ShmClient& v : victims) {
    if (sys_pidfd_send_signal(v.pidfd, SIGKILL) != 0 && errno != ESRCH) {
      log_.warn("fence: cannot kill shm client pid {} (compute {}): {}", v.pid, v.compute_id, strerror(errno));
    }
  }
  for (const ShmClient& v : victims) {
    bool gone = false;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      gone = pidfd_exited(v.pidfd, static_cast<int>(std::max<int64_t>(0, left.count())));
      if (gone || left.count() <= 0) break;
    }
    if (gone) {
      log_.info("fence: shm client pid {} of compute node {} killed and exited", v.pid, v.compute_id);
      ::close(v.pidfd);
    } else {
      log_.error("fence: shm client pid {} of compute node {} did not exit within {} ms of SIGKILL", v.pid,
                 v.compute_id, kKillWait.count());
      survivors.push_back(v);
      result = Status(Errc::kTimeout, "shm client pid " + std::to_string(v.pid) +
                                          " did not exit after SIGKILL; the fence is not complete yet, retry it");
    }
  }
  if (!survivors.empty()) {
    // Keep them so a retried fence kills and waits again.
    std::lock_guard<std::mutex> lock(shm_mu_);
    shm_.insert(shm_.end(), survivors.begin(), survivors.end());
  }
  return result;
}

}  // namespace pandora::memd
