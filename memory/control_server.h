// The memory daemon's control plane: the one listening TCP socket.
//
// Every accepted connection starts here (protocol in common/wire/control.h):
//
//   daemon -> ServerHello{nonce}       nonce: 32 bytes from getrandom(2)
//   client -> Hello                    checked: cluster id, HMAC over both
//                                      nonces and the fields (constant-time
//                                      compare), role, compute id,
//                                      incarnation, fence bit, and that no
//                                      other live process holds the compute
//                                      id (memory/session_table.h)
//   daemon -> HelloOk{region, mac}     mac proves the daemon knows the secret
//             | Error + close          a failed login is told only that it
//                                      failed; the reason goes to the log
//
// then a request/reply loop: RegionInfoRequest, StatsRequest, Fence (admin
// sessions only), SetupTcp, SetupShm and SetupVerbs (compute sessions only). SetupTcp is
// answered with Ok, after which the socket belongs to the tcp data plane
// (bytes the client pipelined behind SetupTcp go with it, and so do the
// session's frame MAC keys when SetupTcp.frame_mac asked for them). SetupShm
// is answered with ShmInfo: the hand-off socket and a single-use token bound
// to this session (memory/shm_fd_server.h), which the client redeems for the
// region's descriptor; the process that redeems it is registered for
// fencing (Hello.pid is never trusted). The session stays a control session;
// its end revokes its unused tokens. A request that is
// valid but not allowed for the session's role gets Error{kInvalidArgument}
// and the session continues.
//
// Robustness: everything runs on one epoll thread with non-blocking sockets,
// so no client can block another. Input is bounded (one control frame,
// kMaxControlBody); a bad magic, an oversized or undecodable frame, or an
// unexpected message gets Error{kProtocol} and the connection is closed.
// Fence requests, which may block for seconds (quiescence, killing shm
// clients), run on a separate worker thread; the requesting session just
// waits for its reply meanwhile.
//
// Connections that have not logged in (ControlLimits): a client that does not
// complete the handshake within handshake_timeout is dropped. Pending
// handshakes are bounded per peer address and in total, and a new connection
// is never refused for lack of room: the oldest pending handshake of the
// same address, or else of the address with the most pending ones, is closed
// instead (memory/pending_handshakes.h). So idle sockets, however many, cost
// a real client at most one retry, never a lock-out. Running out of file
// descriptors evicts the same way before accept() is paused. Lines about
// such connections (evicted, timed out, closed, protocol errors, accept
// errors) go through a RateLimitedLog (common/log_rate_limiter.h), so a flood
// of them writes a bounded number of lines plus one count per second.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/endpoint.h"
#include "common/log_rate_limiter.h"
#include "common/logger.h"
#include "common/status.h"
#include "common/wire/control.h"
#include "memory/fence_table.h"
#include "memory/region.h"
#include "memory/shm_fd_server.h"
#include "memory/verbs_server.h"
#include "memory/tcp_data_plane.h"

namespace pandora::memd {

// Limits on connections that have not authenticated yet (authenticated
// sessions are limited only by file descriptors: every shm client keeps its
// control session open). pandora-memd sets them from --handshake-timeout-ms,
// --max-handshakes and --max-handshakes-per-peer.
struct ControlLimits {
  // From accept to a valid Hello; an honest client needs milliseconds.
  std::chrono::milliseconds handshake_timeout{3000};
  // Pending handshakes in total, and from one peer IP address.
  size_t max_handshakes = 1024;
  size_t max_handshakes_per_peer = 128;
  // Repeated lines about connections, per kind of event.
  LogRateLimit log_limit{};
};

class ControlServer {
 public:
  // After an Error reply, how long the daemon waits for the client's EOF
  // before cutting the connection (so the Error is not lost to a reset).
  static constexpr std::chrono::milliseconds kCloseLinger{1000};
  // Unsent replies above which a session is not read from until they drain.
  static constexpr size_t kMaxPendingOutput = 64u << 10;

  // `verbs` may be null (no RDMA device): SetupVerbs is then refused with
  // kUnsupported. `incarnation` is this daemon's (the one its heartbeats
  // carry), told to every client in RegionInfo.daemon_incarnation.
  ControlServer(Region& region, FenceTable& fences, TcpDataPlane& data_plane, ShmFdServer& shm, VerbsServer* verbs,
                uint64_t cluster_id, uint64_t incarnation, std::string secret, Logger log, ControlLimits limits = {});
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Binds and listens on `ep` (port 0 picks a free port). Returns the bound
  // endpoint. kIo with the reason (address in use, ...) on failure.
  Result<Endpoint> listen(const Endpoint& ep);

  // Serves until `stop_fd` becomes readable (it is not read here: it is the
  // daemon's signalfd). Then stops accepting, closes every control session
  // (sockets already handed to the data plane are not affected) and waits
  // for a running fence to finish.
  Status serve(int stop_fd);

  // Control-plane counters (auth failures, connections) plus the data plane
  // and fence table's, as sent in StatsReply.
  wire::StatsReply stats() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace pandora::memd
