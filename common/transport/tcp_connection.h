// The `tcp` backend: one-sided operations as pipelined request frames
// (common/wire/frame.h) on a TCP stream to the memory daemon, which acts as a
// software NIC.
//
// Semantics (beyond transport.h):
//  * post_*() checks the operation locally (op_check.h) and encodes it into a
//    send buffer; a rejected operation is never sent and completes with its
//    error in posted order (after everything posted before it).
//  * flush() writes as much of the buffer as the socket takes without
//    blocking; poll() and wait() continue sending, receive, and match every
//    response to the oldest request still waiting (the daemon answers in
//    order; the tag double-checks it).
//  * wait() blocks in poll(2) on the socket until a completion, its own
//    timeout, or the oldest operation's deadline; it returns 0 at once when
//    no flushed operation is in flight (unflushed ones cannot complete).
//  * A response the client cannot make sense of (undecodable, wrong tag or
//    op, READ payload of the wrong length, more responses than requests) is a
//    protocol violation: the connection is closed and broken (kDisconnected).
//  * Peer closed or reset: every outstanding operation completes with
//    kDisconnected. A flushed operation that has waited longer than
//    op_timeout: every outstanding operation completes with kTimeout and the
//    connection is closed. A response with status kFenced breaks the
//    connection with kFenced: that operation and every one after it
//    complete with kFenced (the daemon executes in order, so none of them
//    can have run after it).
//  * Once broken, later posts complete locally with health() (kFenced,
//    kTimeout or kDisconnected) without being sent.
//  * With frame MACs (ConnectOptions::frame_mac) every request carries a MAC
//    and every response must carry a valid one (wire::FrameMac); a response
//    whose MAC is wrong is a protocol violation like any other: the
//    connection breaks (kDisconnected) before its payload reaches the
//    caller's buffer.
//  * Steady state allocates nothing per operation: the send and receive
//    buffers and the ring of outstanding operations only grow.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/transport/ring_queue.h"
#include "common/transport/socket_util.h"
#include "common/transport/transport.h"
#include "common/wire/control.h"
#include "common/wire/frame.h"

namespace pandora {

class TcpConnection final : public Connection {
 public:
  // Takes a socket whose control session has just been switched to the data
  // plane (SetupTcp answered Ok). `region` is what HelloOk described.
  // `frame_mac`: the session's keys when SetupTcp asked for frame MACs.
  TcpConnection(net::UniqueFd fd, const wire::RegionInfo& region, std::chrono::milliseconds op_timeout,
                const std::optional<wire::FrameMacKeys>& frame_mac = std::nullopt);
  ~TcpConnection() override = default;

  void post_read(uint64_t remote, void* local, uint32_t len, uint64_t wr_id) override;
  void post_write(uint64_t remote, const void* local, uint32_t len, uint64_t wr_id,
                  Durability d = Durability::kPersistent) override;
  void post_cas(uint64_t remote, uint64_t expected, uint64_t desired, uint64_t wr_id,
                Durability d = Durability::kPersistent) override;
  void post_faa(uint64_t remote, uint64_t add, uint64_t wr_id, Durability d = Durability::kPersistent) override;
  void flush() override;
  size_t poll(std::span<Completion> out) override;
  size_t wait(std::span<Completion> out, std::chrono::milliseconds timeout) override;
  size_t outstanding() const override { return ops_.size(); }
  Errc health() const override { return health_; }
  void abandon() override {
    if (health_ == Errc::kOk) fail_all(Errc::kDisconnected, Errc::kDisconnected);
  }
  uint64_t data_begin() const override { return lo_; }
  uint64_t data_end() const override { return hi_; }
  std::string_view backend() const override { return "tcp"; }

 private:
  using Clock = std::chrono::steady_clock;

  // One posted operation, from post until its completion is returned.
  struct Op {
    uint64_t wr_id = 0;
    uint64_t tag = 0;
    uint8_t* read_into = nullptr;  // READ destination
    uint32_t len = 0;
    OpType op = OpType::kRead;
    bool done = false;             // result known (local error or response)
    Errc status = Errc::kOk;
    uint64_t value = 0;
    Clock::time_point deadline{};  // set at flush
  };

  void post(OpType op, uint64_t remote, uint32_t len, const void* write_from, uint8_t* read_into,
            uint64_t compare, uint64_t swap, uint64_t wr_id);
  // Sends what it can of the flushed part of the send buffer.
  void send_pending();
  // Reads what is available and completes the matching operations.
  void receive();
  // Decodes every complete response in the receive buffer.
  void decode_responses();
  // Completes the oldest waiting operation with `resp`; false on a protocol
  // violation.
  bool complete_one(const wire::DecodedResponse& resp);
  // Moves resp_cursor_ past operations that are already done.
  void advance_cursor();
  // Whether a flushed operation is still waiting for its response.
  bool in_flight() {
    advance_cursor();
    return resp_cursor_ < flushed_ops_;
  }
  void check_timeout();
  // Breaks the connection: every outstanding operation completes with
  // `outstanding_code`; later ones with `health`.
  void fail_all(Errc health, Errc outstanding_code);
  size_t drain(std::span<Completion> out);
  bool has_unsent() const { return sent_ < flushed_bytes_; }

  net::UniqueFd fd_;
  // Present when frame MACs are on: requests are sealed with `mac_out_`,
  // responses checked with `mac_in_`.
  std::optional<wire::FrameMac> mac_out_, mac_in_;
  uint64_t lo_, hi_;
  std::chrono::milliseconds op_timeout_;
  Errc health_ = Errc::kOk;
  uint64_t next_tag_ = 1;

  // ops_ holds every operation not yet returned, in posted order. Indices
  // are relative to its front:
  //   [0, flushed_ops_)      handed to the transport by a doorbell; returned
  //                          by poll from the front as they become done
  //   [flushed_ops_, size)   posted, not yet flushed
  // Every op before resp_cursor_ is done; the next response belongs to the
  // first op at or after it that is not done (local errors are skipped).
  transport_detail::RingQueue<Op> ops_;
  size_t flushed_ops_ = 0;
  size_t resp_cursor_ = 0;

  std::string out_;             // encoded requests
  size_t sent_ = 0;             // bytes of out_ already sent
  size_t flushed_bytes_ = 0;    // bytes of out_ covered by a doorbell
  std::vector<uint8_t> in_;     // received bytes
  size_t in_begin_ = 0, in_end_ = 0;
};

}  // namespace pandora
