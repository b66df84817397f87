// The `verbs` backend: one-sided READ, WRITE, CAS and FAA on an RDMA RC
// queue pair (libibverbs) to the memory daemon, which registered the
// region for this compute node (memory/verbs_server.h). The daemon's CPU
// takes no part in data operations.
//
// Set-up (client.cc drives it): create() opens the device and makes a queue
// pair in INIT; its address goes to the daemon in SetupVerbs on the
// authenticated control session; connect() takes the daemon's VerbsInfo,
// moves the queue pair to RTR and RTS, and keeps the control session.
//
// Semantics (beyond transport.h):
//  * post_*() checks the operation locally (op_check.h); a rejected one is
//    never sent and completes in posted order.
//  * flush() rings one doorbell for everything posted since the last one: the
//    work requests go to ibv_post_send as one chained list, and only the last
//    of the chain is signalled (selective signalling: RC completes in order,
//    so its completion covers the chain). When the send queue or the staging
//    buffer is full, the rest waits in posted order and goes out as
//    completions free room (in poll() and wait()).
//  * Order: a WRITE, CAS or FAA behind a READ that has not completed waits
//    for it (a READ whose response was lost is executed again and must not
//    see a later write of ours); see pump().
//  * Durability: a WRITE, CAS or FAA posted kPersistent completes only
//    after a READ posted behind it on the same queue pair has completed (the
//    chain ends with a READ, or an 8-byte READ is added when the chain holds
//    a kPersistent one; a chain of kVisible ones ends with its last
//    operation, as perftest's do). The responder executes requests in
//    order, so the READ's response leaves only after the earlier writes
//    were placed in the region's memory. That makes them persistent only
//    if the NIC writes to persistent memory rather than to the CPU cache:
//    with Intel DDIO on, writes land in the last-level cache, and persistent
//    memory needs DDIO off for its root port (or eADR). README, "Verbs".
//  * Buffers: the caller's buffers are not registered. Operations up to
//    kMaxStagedBytes go through a staging buffer registered once per
//    connection (READ data is copied out when it completes, WRITE data is
//    copied in when it is sent); larger ones register the caller's buffer
//    for their duration.
//  * Errors: a remote access error means the daemon deregistered our rkey,
//    which it does only when fencing: kFenced. Transport retries exhausted
//    (the daemon or the network is gone) and any other error completion:
//    kDisconnected. Either breaks the connection: the failing operation and
//    every later one complete with that error; the ones before it succeeded
//    (RC executes in order). The control session ending (daemon stopped)
//    breaks it with kDisconnected too (checked at most once a millisecond).
//  * Timeouts: an operation handed to the NIC that has not completed within
//    op_timeout breaks the connection with kTimeout (every outstanding
//    operation completes with it), as on tcp. The NIC's own retries fail
//    a dead peer after about half a second (RETRY_EXC: kDisconnected), but
//    a queue pair can also wedge without ever reporting (seen with
//    Soft-RoCE under a starved vCPU: the requester rewound for a
//    retransmission and never sent again); the deadline makes that a
//    failure instead of a hang.
//  * wait() sleeps on the completion channel (and the control session), so an
//    idle waiter uses no CPU.
//  * Not thread-safe (one connection per worker thread and memory node).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "common/transport/ring_queue.h"
#include "common/transport/socket_util.h"
#include "common/transport/transport.h"
#include "common/transport/verbs_device.h"
#include "common/wire/control.h"

namespace pandora {

class VerbsConnection final : public Connection {
 public:
  // Operations up to this size use the staging buffer.
  static constexpr uint32_t kMaxStagedBytes = 64 * 1024;
  static constexpr size_t kStagingBytes = 1 << 20;
  // Send queue depth asked for (less when the device allows less).
  static constexpr uint32_t kSendQueueDepth = 512;

  // Opens the device and creates this end (queue pair in INIT).
  // `op_timeout`: see "Timeouts" above.
  static Result<std::unique_ptr<VerbsConnection>> create(const VerbsOptions& options, const wire::RegionInfo& region,
                                                         std::chrono::milliseconds op_timeout);
  ~VerbsConnection() override;

  // What to send to the daemon.
  wire::SetupVerbs setup_request() const;
  // Connects to the daemon's queue pair described by `info` and takes over
  // the control session (kept open: its end means the daemon is gone).
  Status connect(const wire::VerbsInfo& info, net::UniqueFd control_fd);

  void post_read(uint64_t remote, void* local, uint32_t len, uint64_t wr_id) override;
  void post_write(uint64_t remote, const void* local, uint32_t len, uint64_t wr_id,
                  Durability d = Durability::kPersistent) override;
  void post_cas(uint64_t remote, uint64_t expected, uint64_t desired, uint64_t wr_id,
                Durability d = Durability::kPersistent) override;
  void post_faa(uint64_t remote, uint64_t add, uint64_t wr_id, Durability d = Durability::kPersistent) override;
  void flush() override;
  size_t poll(std::span<Completion> out) override;
  size_t wait(std::span<Completion> out, std::chrono::milliseconds timeout) override;
  size_t outstanding() const override { return outstanding_; }
  Errc health() const override { return health_; }
  uint64_t data_begin() const override { return lo_; }
  uint64_t data_end() const override { return hi_; }
  std::string_view backend() const override { return "verbs"; }

  // READs this connection added to make writes durable (see "Durability").
  uint64_t durability_reads() const { return durability_reads_; }

 private:
  struct Op {
    uint64_t wr_id = 0;
    OpType op = OpType::kRead;
    bool done = false;
    uint32_t len = 0;
    uint64_t remote = 0;
    void* user = nullptr;     // READ destination / WRITE source (the caller's)
    uint64_t a = 0, b = 0;    // CAS expected/desired, FAA addend
    bool persistent = false;  // posted Durability::kPersistent (never a READ)
    // Staging bytes held from `stage_off` (wrap padding included in
    // stage_held); 0 when none.
    size_t stage_off = 0, stage_held = 0;
    ibv_mr* own_mr = nullptr;  // a large operation's registration of `user`
    uint64_t seq = 0;          // send-queue sequence number once posted
    std::chrono::steady_clock::time_point deadline{};  // once posted
    Errc status = Errc::kOk;
    uint64_t value = 0;
  };

  VerbsConnection() = default;
  // Queues one operation (READ: `user` is the destination; WRITE: the
  // source; CAS: a expected, b desired; FAA: a the addend).
  void post(OpType type, uint64_t remote, uint32_t len, void* user, uint64_t a, uint64_t b, uint64_t wr_id,
            Durability d = Durability::kVisible);
  // Posts as much of the flushed, unsent work as the send queue and the
  // staging buffer take.
  void pump();
  // Gives `op` its local buffer; false when there is no room now.
  bool stage(Op& op);
  void release(Op& op);
  // Reads completions off the CQ and marks operations done.
  void reap();
  void complete_through(uint64_t seq);
  void fail_from(uint64_t seq, Errc first, Errc rest);
  void fail_all(Errc code);
  void check_control_session();
  // kTimeout for everything when the oldest operation the NIC holds is
  // past its deadline; returns that deadline (max() when none).
  std::chrono::steady_clock::time_point check_timeout();
  size_t drain(std::span<Completion> out);

  std::unique_ptr<VerbsDevice> dev_;
  // Destroyed in reverse order: the queue pair first (nothing more can
  // touch our memory), then the registration and the buffer, the CQ and
  // its channel, and the device (PD, context) last.
  VerbsPtr<ibv_comp_channel> channel_;
  VerbsPtr<ibv_cq> cq_;
  std::unique_ptr<uint8_t, void (*)(void*)> staging_{nullptr, nullptr};
  VerbsPtr<ibv_mr> staging_mr_;
  VerbsPtr<ibv_qp> qp_;

  net::UniqueFd control_fd_;
  std::chrono::milliseconds op_timeout_{5000};
  uint8_t ack_timeout_ = 14;
  uint32_t psn_ = 0;
  uint32_t sq_depth_ = 0;
  uint32_t max_inline_ = 0;
  uint8_t max_rd_atomic_ = 1;
  uint32_t rkey_ = 0;
  uint64_t base_va_ = 0;
  uint64_t lo_ = 0, hi_ = 0;
  Errc health_ = Errc::kOk;
  std::chrono::steady_clock::time_point next_session_check_{};

  // ops_ in posted order: [0, sent_) handed to the NIC, [sent_, flushed_)
  // flushed and waiting for room, [flushed_, size) not flushed. Done ones
  // leave from the front in order.
  transport_detail::RingQueue<Op> ops_;
  size_t sent_ = 0, flushed_ = 0;
  size_t outstanding_ = 0;     // caller-visible operations in ops_
  uint64_t next_seq_ = 1;      // next work request's sequence number
  uint64_t completed_seq_ = 0; // every work request up to here is finished
  uint64_t last_read_seq_ = 0; // the newest caller READ handed to the NIC
  uint64_t durability_reads_ = 0;
  size_t stage_head_ = 0, stage_used_ = 0;
  std::vector<ibv_send_wr> wrs_;
  std::vector<ibv_sge> sges_;
};

}  // namespace pandora
