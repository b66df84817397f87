// Opening sessions with a memory daemon: the control plane (handshake,
// fence, stats) and data connections of either backend.
//
//   ClientIdentity me{cluster_id, secret, wire::Role::kCompute, compute_id};
//   auto conn = open_connection(endpoint, me, {.backend = Backend::kTcp});
//   if (!conn) { ... conn.status().to_string() ... }
//   (*conn)->post_faa(addr, 1, 7); (*conn)->flush(); ...
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/endpoint.h"
#include "common/status.h"
#include "common/transport/transport.h"
#include "common/wire/control.h"

namespace pandora {

enum class Backend : uint8_t { kShm = 1, kTcp = 2 };

std::string_view backend_name(Backend b);
Result<Backend> parse_backend(std::string_view text);  // "shm" | "tcp"

struct ClientIdentity {
  uint64_t cluster_id = 0;
  std::string secret;
  wire::Role role = wire::Role::kCompute;
  uint16_t compute_id = 0;  // 1..65535 for kCompute; 0 for kAdmin
};

struct ConnectOptions {
  Backend backend = Backend::kTcp;
  std::chrono::milliseconds connect_timeout{5000};
  // An operation not answered within this time completes with kTimeout and
  // breaks the connection (tcp). Not used by shm.
  std::chrono::milliseconds op_timeout{5000};
};

// A control-plane session (handshake done). Blocking, one request at a time.
class ControlClient {
 public:
  static Result<std::unique_ptr<ControlClient>> connect(const Endpoint& ep, const ClientIdentity& id,
                                                        std::chrono::milliseconds timeout);
  ~ControlClient();

  const wire::RegionInfo& region() const { return region_; }

  // Revokes `compute_id`'s access; returns once the daemon guarantees that
  // nothing that compute node sends (or has in flight) can change memory.
  Status fence(uint16_t compute_id);
  // Admin only: lets `compute_id` log in again (pid recycling); sessions it
  // had before the fence stay refused.
  Status unfence(uint16_t compute_id);
  Result<wire::StatsReply> stats();
  Result<wire::RegionInfo> region_info();

  // Sends one request and returns the reply (Error replies become a non-ok
  // Status). Used by the wrappers above and by open_connection.
  Result<wire::ControlMessage> call(const wire::ControlMessage& request);

  // Hands the socket over (used when it becomes a data-plane stream).
  int release_fd();

 private:
  ControlClient(int fd, wire::RegionInfo region, std::chrono::milliseconds timeout)
      : fd_(fd), region_(region), timeout_(timeout) {}
  int fd_;
  wire::RegionInfo region_;
  std::chrono::milliseconds timeout_;
};

// Opens one data connection of options.backend to the daemon at `ep`.
Result<std::unique_ptr<Connection>> open_connection(const Endpoint& ep, const ClientIdentity& id,
                                                    const ConnectOptions& options);

}  // namespace pandora
