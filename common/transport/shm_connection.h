// The `shm` backend: the compute process maps the memory node's region file
// itself (a CXL-style shared memory on one host) and executes one-sided
// operations with its own loads, stores and atomics.
//
// The region is never opened by path: whoever can rename files in the
// region's directory could swap in a look-alike. The daemon hands the open
// file descriptor over a Unix socket (fetch_region_fd(), protocol in
// common/wire/shm_handoff.h), and open() maps it only if fstat shows the
// device, inode and size the daemon reported on the authenticated control
// session.
//
// Semantics (beyond transport.h):
//  * Operations execute synchronously inside flush(), in posted order; their
//    completions are then ready for poll(). wait() never blocks: nothing can
//    complete without a flush.
//  * READ/WRITE copy aligned 8-byte words with single 8-byte loads/stores, so
//    a READ never sees half of a concurrent CAS/FAA/WRITE on one word (the
//    guarantee RDMA NICs and CXL give in practice, and what the protocol's
//    latch/version reads need). Bytes outside aligned words are copied
//    individually.
//  * A WRITE is persisted (pmem_persist on persistent memory, else
//    pmem_msync) before its completion is produced; a CAS/FAA persists its
//    word. The daemon's is_pmem verdict decides, since it owns the region.
//  * [0, data_offset) is mapped read-only: a stray store into the daemon's
//    header or fence bitmap faults instead of corrupting them.
//  * Fencing: before every operation the connection reads its own bit in the
//    region's fence bitmap (acquire). Once set, that operation and every
//    later one completes with kFenced. This check alone leaves a race (an
//    operation that passed the check just before the bit was set), which is
//    closed by the daemon killing the fenced process through a pidfd before
//    fence() returns; the daemon finds our pid through the control session,
//    which this connection keeps open for its whole life.
//  * If that control session ends (daemon stopped or crashed), the daemon can
//    no longer kill us when fencing, so the connection breaks: every later
//    operation completes with kDisconnected, as on tcp. This is detected in
//    flush() (checked at most once per millisecond).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "common/status.h"
#include "common/transport/ring_queue.h"
#include "common/transport/socket_util.h"
#include "common/transport/transport.h"
#include "common/wire/control.h"

namespace pandora {

class ShmConnection final : public Connection {
 public:
  // Obtains the region's file descriptor from the daemon: connects to
  // shm.socket_path and presents shm.token (single use). Errors: the
  // daemon's refusal (e.g. kFenced, kAuthFailed for an unknown token),
  // kDisconnected/kTimeout when the hand-off socket does not answer,
  // kProtocol for a malformed reply or one without a descriptor.
  static Result<net::UniqueFd> fetch_region_fd(const wire::ShmInfo& shm, std::chrono::milliseconds timeout);

  // Maps `region_fd` (from fetch_region_fd) as the region described by `shm`
  // (the daemon's reply to SetupShm on the control session `control_fd`,
  // whose HelloOk described `region`) and takes over that session.
  // `compute_id` selects the fence bit to watch. kMismatch when the
  // descriptor is not the file the daemon described (device, inode, size,
  // header), kIo when it cannot be mapped. The descriptor is closed either
  // way (the mapping keeps the file).
  static Result<std::unique_ptr<Connection>> open(net::UniqueFd control_fd, const wire::RegionInfo& region,
                                                  const wire::ShmInfo& shm, net::UniqueFd region_fd,
                                                  uint16_t compute_id);
  ~ShmConnection() override;

  void post_read(uint64_t remote, void* local, uint32_t len, uint64_t wr_id) override;
  void post_write(uint64_t remote, const void* local, uint32_t len, uint64_t wr_id,
                  Durability d = Durability::kPersistent) override;
  void post_cas(uint64_t remote, uint64_t expected, uint64_t desired, uint64_t wr_id,
                Durability d = Durability::kPersistent) override;
  void post_faa(uint64_t remote, uint64_t add, uint64_t wr_id, Durability d = Durability::kPersistent) override;
  void flush() override;
  size_t poll(std::span<Completion> out) override;
  size_t wait(std::span<Completion> out, std::chrono::milliseconds timeout) override;
  size_t outstanding() const override { return posted_.size() + done_.size(); }
  Errc health() const override { return health_; }
  uint64_t data_begin() const override { return lo_; }
  uint64_t data_end() const override { return hi_; }
  std::string_view backend() const override { return "shm"; }

  // Stores this connection has flushed to persistence (one per kPersistent
  // WRITE, successful CAS and FAA; kVisible ones are not flushed).
  uint64_t persists() const { return persists_; }

 private:
  struct PostedOp {
    OpType op = OpType::kRead;
    uint32_t len = 0;
    uint64_t remote = 0;
    void* local = nullptr;  // READ destination / WRITE source
    uint64_t a = 0;         // CAS expected, FAA addend
    uint64_t b = 0;         // CAS desired
    uint64_t wr_id = 0;
    Durability durability = Durability::kPersistent;  // WRITE/CAS/FAA: flush the stored line(s)?
  };

  ShmConnection(net::UniqueFd control_fd, const wire::RegionInfo& region, uint8_t* base, size_t mapped_len,
                bool is_pmem, uint16_t compute_id);

  void post(const PostedOp& op) { posted_.push_back(op); }
  // Runs one operation against the mapping; returns its completion.
  Completion execute(const PostedOp& op);
  bool fenced() const;
  void persist(const void* addr, size_t len);
  void check_control_session();

  net::UniqueFd control_fd_;
  uint8_t* base_;
  size_t mapped_len_;
  bool is_pmem_;
  uint64_t lo_, hi_;
  const uint64_t* fence_word_;
  uint64_t fence_mask_;
  Errc health_ = Errc::kOk;
  uint64_t persists_ = 0;
  std::chrono::steady_clock::time_point next_session_check_{};
  transport_detail::RingQueue<PostedOp> posted_;
  transport_detail::RingQueue<Completion> done_;
};

}  // namespace pandora
