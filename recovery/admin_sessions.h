// Admin control sessions to every memory node of a cluster, opened on first
// use and kept open (memd closes only sessions that never logged in).
//
// Why: the recovery coordinator fences on the critical path of a fail-over,
// and a fresh admin session costs a TCP connect and a login (two round trips
// and an HMAC on each side) per memory node before the Fence request itself.
// A kept session costs the one round trip of the request.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/endpoint.h"
#include "common/status.h"
#include "common/transport/client.h"

namespace pandora {

class AdminSessions {
 public:
  // `timeout`: for connecting and for each request.
  AdminSessions(uint64_t cluster_id, std::string secret, std::chrono::milliseconds timeout);

  // Runs `op` at every node of `nodes`, in order, on that node's kept
  // session (opened if there is none). When `op` fails on a session that
  // was already open (the daemon restarted, the connection broke), the
  // session is replaced and `op` runs once more: every op given here must
  // be idempotent (fence, unfence, stats). The first failure stops it, its
  // message naming `what` and the node (whose session is then closed).
  // Thread-safe (one call at a time).
  Status at_every(const std::vector<Endpoint>& nodes, std::string_view what,
                  const std::function<Status(ControlClient&)>& op);

  // Fences `pid` at every node (at_every with ControlClient::fence).
  Status fence(const std::vector<Endpoint>& nodes, uint16_t pid);
  // Fences every pid of `pids` at every node: one request per node for up
  // to wire::kMaxFenceIds pids, all nodes at once; a node that fails is
  // retried as at_every does. On error some pids may be fenced already at
  // some nodes (fencing is idempotent: run it again). No pids: nothing.
  Status fence(const std::vector<Endpoint>& nodes, std::span<const uint16_t> pids);

  // Sessions opened so far (for tests: a kept session is not reopened).
  uint64_t opened() const;

 private:
  struct Kept {
    Endpoint node;
    std::unique_ptr<ControlClient> session;
  };
  // The kept session to `node`, or a new one (`fresh`: always new).
  Result<ControlClient*> session(const Endpoint& node, bool fresh);
  void drop(const Endpoint& node);
  Status fence_chunk(const std::vector<Endpoint>& nodes, std::span<const uint16_t> pids);

  ClientIdentity admin_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::vector<Kept> kept_;
  uint64_t opened_ = 0;
};

}  // namespace pandora
