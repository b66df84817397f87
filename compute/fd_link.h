// A compute node's link to the failure detector (ARCHITECTURE.md 5, steps 1
// and 5): it heartbeats every FD replica (kind kCompute, id = its pid) and
// listens for the replicas' FailedPush messages, which announce pids whose
// recovery was just published. Each authentic, fresh push calls on_failed
// once per pid; the caller sets the pid in its FailedIds (common/
// failed_ids.h), after which its coordinators steal that pid's stray latches.
//
// A push is trusted only if it is authenticated with the cluster secret and
// not a replay (common/heartbeat_receiver.h): a forged or replayed push
// would make this node treat a live node's latches as stray. Pushes are
// best effort (UDP); the ZooKeeper failed-ids record is the reliable path.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/endpoint.h"
#include "common/heartbeat_receiver.h"
#include "common/heartbeat_sender.h"
#include "common/logger.h"
#include "common/status.h"
#include "common/udp_socket.h"

namespace pandora {

struct FdLinkOptions {
  uint64_t cluster_id = 0;
  std::string secret;
  uint16_t pid = 0;                              // this compute node's pid (1..65535)
  std::vector<Endpoint> replicas;                // FD replicas' heartbeat endpoints
  Endpoint push_bind{"127.0.0.1", 0};            // push listener; port 0 picks one (push_port() tells)
  std::chrono::microseconds heartbeat_period{1000};
  std::chrono::milliseconds max_skew{2000};      // replay guard for pushes
};

struct FdLinkStats {
  HeartbeatSenderStats heartbeats;
  uint64_t pushes = 0;          // authentic FailedPush messages accepted
  uint64_t pids_delivered = 0;  // on_failed calls
  RejectCounts rejected;        // refused datagrams on the push port, by reason
};

class FdLink {
 public:
  // Binds the push listener and starts heartbeating and listening.
  // on_failed runs on the listener thread: keep it short (set a bit).
  // kInvalidArgument for pid 0, an empty secret or a non-numeric address,
  // kIo when the socket cannot be bound.
  static Result<std::unique_ptr<FdLink>> start(FdLinkOptions options, std::function<void(uint16_t pid)> on_failed,
                                               const Logger& log);
  ~FdLink();  // stop()
  FdLink(const FdLink&) = delete;
  FdLink& operator=(const FdLink&) = delete;

  uint16_t push_port() const { return push_port_; }

  // Replaces the replicas heartbeated (thread-safe); see
  // HeartbeatSender::set_targets.
  Status set_replicas(std::vector<Endpoint> replicas);

  // Stops heartbeating (the replicas will time this node out) and
  // listening. Idempotent.
  void stop();

  FdLinkStats stats() const;

 private:
  FdLink(FdLinkOptions options, std::function<void(uint16_t)> on_failed, const Logger& log);
  void listen();

  const FdLinkOptions options_;
  const std::function<void(uint16_t)> on_failed_;
  const Logger log_;
  HeartbeatSender sender_;
  HeartbeatReceiver receiver_;  // listener thread only (counts() from any)
  net::UniqueFd sock_;
  net::UniqueFd wakeup_;
  uint16_t push_port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread listener_;
  std::atomic<uint64_t> pushes_{0};
  std::atomic<uint64_t> pids_delivered_{0};
};

}  // namespace pandora
