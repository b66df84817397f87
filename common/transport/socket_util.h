// Small socket helpers shared by the control client and the tcp backend.
//
// Every socket made here is non-blocking and close-on-exec; the blocking
// helpers below wait with poll(2) against an absolute deadline, so a peer that
// stops answering can never hang a caller past its time limit. Sends use
// MSG_NOSIGNAL: a closed peer is an error code, never a SIGPIPE.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

#include <sys/types.h>

#include "common/endpoint.h"
#include "common/status.h"
#include "common/wire/control.h"

namespace pandora::net {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline Deadline deadline_after(std::chrono::milliseconds d) { return Clock::now() + d; }

// Milliseconds left until `deadline`, rounded up, clamped to [0, INT_MAX]:
// the argument poll(2) wants.
int poll_timeout_ms(Deadline deadline);

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Connects a TCP socket to `ep` (numeric address or "localhost"), waiting at
// most `timeout`. The socket is non-blocking, close-on-exec, with
// TCP_NODELAY set (the data plane sends small frames that must not wait for
// Nagle). kInvalidArgument for an unusable address, kTimeout, kDisconnected
// when refused/unreachable.
Result<UniqueFd> connect_tcp(const Endpoint& ep, std::chrono::milliseconds timeout);

Status set_nonblocking(int fd);
Status set_nodelay(int fd);

// Sends every byte of `data`, waiting for socket space until `deadline`.
// kTimeout, or kDisconnected when the peer is gone.
Status send_all(int fd, std::span<const uint8_t> data, Deadline deadline);

// Receives exactly out.size() bytes. kDisconnected on EOF/reset, kTimeout.
Status recv_exact(int fd, std::span<uint8_t> out, Deadline deadline);

// Non-blocking send: writes what the socket accepts now. Returns the byte
// count (possibly 0), or -1 with *error set when the connection is broken.
ssize_t send_some(int fd, std::span<const uint8_t> data, Errc* error);

// Non-blocking receive into `out`. Returns bytes read (> 0), 0 when nothing is
// available now, or -1 with *error = kDisconnected on EOF or reset.
ssize_t recv_some(int fd, std::span<uint8_t> out, Errc* error);

// Whether the peer has closed (or reset) the connection, without consuming
// anything and without blocking. Data waiting to be read counts as alive.
bool peer_closed(int fd);

// Control-plane framing over a socket: one message per call. recv reads
// exactly one frame (never past it), so the same socket can switch to the
// data plane right after a reply.
Status send_control(int fd, const wire::ControlMessage& m, Deadline deadline);
Result<wire::ControlMessage> recv_control(int fd, Deadline deadline);

}  // namespace pandora::net
