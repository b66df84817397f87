// Fencing: revoking one compute node's access to this memory node.
//
// The fence state is the region's fence bitmap (common/region_layout.h), one
// bit per compute id, so a fence survives daemon restarts: a fenced node
// stays fenced, and the control server refuses its new Hellos.
//
// What fence(id) guarantees when it returns Ok ("nothing the fenced node sent
// earlier can still change memory"), per transport:
//
//  * tcp: every data-plane request is executed by a data-plane thread inside
//    a *batch*. A thread announces a batch with a seq_cst store of its
//    `in_batch` flag, then checks the requester's fence bit (seq_cst load)
//    before executing each request, and persists the batch's stores before
//    it leaves the batch (clearing `in_batch`, bumping `batches`). fence()
//    sets the bit (seq_cst atomic OR, persisted) and then waits until every
//    data-plane thread is either outside a batch or has finished the batch
//    it was in. By the seq_cst total order, any batch that starts after that
//    point sees the bit; any batch that was running has completed. So after
//    fence() returns, no tcp request of the fenced node can modify memory,
//    and everything it did modify earlier is persistent.
//
//  * shm: the compute process maps the region itself, so the daemon cannot
//    interpose on its stores. The client checks its own fence bit before
//    each operation, but that check and the store that follows are not
//    atomic: a client that passed the check just before the bit was set
//    could still store afterwards. To close that window, fence() kills every
//    process that registered for shm under the fenced id (SIGKILL through a
//    pidfd, so a recycled pid is never hit) and waits (bounded, 5 s) until
//    the process has exited. The process is the one the kernel names as the
//    peer of the shm hand-off socket (memory/shm_fd_server.h) - the one that
//    received the region's descriptor - never a pid a message claims, so a
//    client cannot make the daemon kill a process of its choosing. Caveats,
//    stated plainly: (1) stores the killed process made but never flushed
//    are visible to everyone (caches are coherent) but only durable on
//    platforms with eADR; (2) a process that passed the descriptor or the
//    mapping on (e.g. to a forked child) is the only one killed; (3) if the process does
//    not exit within the bound (e.g. stuck in uninterruptible sleep), fence()
//    returns kTimeout and the guarantee does not hold yet.
//
//  * verbs: the NIC executes the node's operations without the daemon, so
//    the bit alone stops nothing. fence() calls the revoker (set by the
//    verbs server, memory/verbs_server.h) after setting the bit, which
//    deregisters the node's registration of the region: once that returns,
//    the device refuses every operation of that node.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/logger.h"
#include "common/status.h"
#include "memory/region.h"

namespace pandora::memd {

// Published by one data-plane thread; read by fence(). Cache-line sized so
// threads do not false-share.
struct alignas(64) QuiescenceSlot {
  std::atomic<uint64_t> in_batch{0};
  std::atomic<uint64_t> batches{0};
};

// RAII for one batch on one data-plane thread. Everything between
// construction and destruction (fence check, memory effects, persistence)
// counts as one batch.
class BatchScope {
 public:
  explicit BatchScope(QuiescenceSlot& slot) : slot_(slot) {
    slot_.in_batch.store(1, std::memory_order_seq_cst);
  }
  // Both seq_cst so fence() can reason in one total order (two locked
  // instructions per batch, not per request).
  ~BatchScope() {
    slot_.in_batch.store(0, std::memory_order_seq_cst);
    slot_.batches.fetch_add(1, std::memory_order_seq_cst);
  }
  BatchScope(const BatchScope&) = delete;
  BatchScope& operator=(const BatchScope&) = delete;

 private:
  QuiescenceSlot& slot_;
};

class FenceTable {
 public:
  // How long fence() waits for a killed shm client to exit.
  static constexpr std::chrono::milliseconds kKillWait{5000};
  // Most shm registrations kept at once (each holds a pidfd).
  static constexpr size_t kMaxShmClients = 4096;

  // `data_threads` quiescence slots are created, one per data-plane thread.
  FenceTable(Region& region, size_t data_threads, Logger log);
  ~FenceTable();
  FenceTable(const FenceTable&) = delete;
  FenceTable& operator=(const FenceTable&) = delete;

  QuiescenceSlot& slot(size_t thread) { return slots_[thread]; }

  // Whether `compute_id` is fenced. seq_cst: pairs with BatchScope (see above).
  bool is_fenced(uint16_t compute_id) const {
    return __atomic_load_n(word(compute_id), __ATOMIC_SEQ_CST) & fence_bit_mask(compute_id);
  }
  // Number of fenced compute ids (bits set).
  uint64_t fenced_count() const;

  // Bumped by every unfence of a fenced id. A session records it at login and
  // is served only while it is unchanged, so a session from before a
  // fence never comes back to life when the id is unfenced for reuse.
  // Not persistent: sessions do not survive a daemon restart either.
  uint32_t generation(uint16_t compute_id) const {
    return generations_[compute_id].load(std::memory_order_seq_cst);
  }
  // Whether a session that logged in at `generation` may still act.
  bool refuses(uint16_t compute_id, uint32_t generation) const {
    return is_fenced(compute_id) || this->generation(compute_id) != generation;
  }

  // Clears the fence bit (persisted) after bumping the generation: every
  // request of an older session sees the bit or the new generation. An id
  // that is not fenced is left alone, its sessions too (they are not from
  // before a fence): unfencing is then a no-op, so a caller may unfence
  // every id that must be able to log in without cutting live sessions.
  // kInvalidArgument for id 0.
  Status unfence(uint16_t compute_id);

  // Remembers that process `pid` maps the region as compute node
  // `compute_id`, so a later fence can kill it. Opens a pidfd now. Errors:
  // kInvalidArgument (pid 0/1/self, or no such process), kIo (too many
  // registrations, pidfd_open failed). The pid must come from the kernel
  // (the peer of a Unix socket), never from a message.
  Status register_shm_client(uint16_t compute_id, pid_t pid);
  // The same with a pidfd the caller already holds (from SO_PEERPIDFD,
  // which names the connecting process itself, immune to pid reuse); takes
  // ownership of `pidfd` (closed on error too). `pid` is for the log.
  Status register_shm_client(uint16_t compute_id, pid_t pid, int pidfd);
  // Registered shm processes still alive (prunes exited ones).
  size_t shm_clients();

  // Called by fence() with the id, after the bit is set (verbs). Set once,
  // before any fence can run.
  void set_revoker(std::function<void(uint16_t)> revoke) { revoker_ = std::move(revoke); }

  // Blocking; see the file comment. Idempotent. Safe to call from any thread
  // except a data-plane thread. kInvalidArgument for id 0, kTimeout when a
  // killed shm client did not exit in time.
  Status fence(uint16_t compute_id);
  // The same for several ids at once (compute nodes that failed together):
  // every bit is set before the one wait for the data plane, and every
  // killed shm client is waited for under one deadline.
  Status fence(std::span<const uint16_t> compute_ids);

 private:
  struct ShmClient {
    uint16_t compute_id;
    pid_t pid;
    int pidfd;
  };

  uint64_t* word(uint16_t compute_id) const { return region_.word(fence_word_offset(compute_id)); }
  void wait_for_quiescence();
  void prune_exited_locked();

  Region& region_;
  Logger log_;
  std::unique_ptr<QuiescenceSlot[]> slots_;
  size_t nslots_;
  std::function<void(uint16_t)> revoker_;
  std::mutex shm_mu_;
  std::vector<ShmClient> shm_;
  std::unique_ptr<std::atomic<uint32_t>[]> generations_{new std::atomic<uint32_t>[65536]()};
};

}  // namespace pandora::memd
