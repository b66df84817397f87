// Opening sessions with a memory daemon: the control plane (handshake,
// fence, stats) and data connections of either backend.
//
//   ClientIdentity me{cluster_id, secret, wire::Role::kCompute, compute_id, new_incarnation()};
//   auto conn = open_connection(endpoint, me, {.backend = Backend::kTcp});
//
// Login is mutual (common/wire/control.h): the client proves it knows the
// cluster secret, and refuses a daemon that does not prove it too.
//   if (!conn) { ... conn.status().to_string() ... }
//   (*conn)->post_faa(addr, 1, 7); (*conn)->flush(); ...
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/endpoint.h"
#include "common/status.h"
#include "common/transport/transport.h"
#include "common/transport/verbs_device.h"
#include "common/wire/control.h"

namespace pandora {

enum class Backend : uint8_t { kShm = 1, kTcp = 2, kVerbs = 3 };

std::string_view backend_name(Backend b);
Result<Backend> parse_backend(std::string_view text);  // "shm" | "tcp" | "verbs"

struct ClientIdentity {
  uint64_t cluster_id = 0;
  std::string secret;
  wire::Role role = wire::Role::kCompute;
  uint16_t compute_id = 0;  // 1..65535 for kCompute; 0 for kAdmin
  // kCompute: this compute process's incarnation (new_incarnation(), drawn
  // once per process and used on all its connections); a daemon serves a
  // compute id to one incarnation at a time. kAdmin: 0.
  uint64_t incarnation = 0;
};

// A fresh random incarnation (getrandom), never 0.
uint64_t new_incarnation();

struct ConnectOptions {
  Backend backend = Backend::kTcp;
  std::chrono::milliseconds connect_timeout{5000};
  // An operation not answered within this time completes with kTimeout and
  // breaks the connection (tcp, verbs). Not used by shm.
  std::chrono::milliseconds op_timeout{5000};
  // tcp: a MAC on every data-plane frame in both directions (wire::FrameMac,
  // keyed per connection), so a frame changed on the network is detected and
  // closes the connection. Costs one HMAC per frame on each side.
  bool frame_mac = false;
  // verbs: which RDMA device, port, GID and MTU (discovered when left empty).
  VerbsOptions verbs;
};

// A control-plane session (handshake done). Blocking, one request at a time.
class ControlClient {
 public:
  static Result<std::unique_ptr<ControlClient>> connect(const Endpoint& ep, const ClientIdentity& id,
                                                        std::chrono::milliseconds timeout);
  ~ControlClient();

  const wire::RegionInfo& region() const { return region_; }
  // This session's login nonces (the frame MAC keys derive from them).
  const wire::Nonce& server_nonce() const { return server_nonce_; }
  const wire::Nonce& client_nonce() const { return client_nonce_; }

  // Revokes `compute_id`'s access; returns once the daemon guarantees that
  // nothing that compute node sends (or has in flight) can change memory.
  Status fence(uint16_t compute_id);
  // The same for several compute ids in one request (1..wire::kMaxFenceIds;
  // kInvalidArgument otherwise): the daemon waits for its data plane once
  // for all of them.
  Status fence(std::span<const uint16_t> compute_ids);
  // Admin only: lets `compute_id` log in again (pid recycling); sessions it
  // had before the fence stay refused.
  Status unfence(uint16_t compute_id);
  Result<wire::StatsReply> stats();
  Result<wire::RegionInfo> region_info();

  // A fence in two halves, so one caller can have a fence in flight at
  // every memory node at once: send_fence, then await_fence (exactly once;
  // no other request in between).
  Status send_fence(std::span<const uint16_t> compute_ids);
  Status await_fence();

  // Sends one request and returns the reply (Error replies become a non-ok
  // Status). Used by the wrappers above and by open_connection.
  Result<wire::ControlMessage> call(const wire::ControlMessage& request);

  // Hands the socket over (used when it becomes a data-plane stream).
  int release_fd();

 private:
  ControlClient(int fd, wire::RegionInfo region, std::chrono::milliseconds timeout, const wire::Nonce& server_nonce,
                const wire::Nonce& client_nonce)
      : fd_(fd), region_(region), timeout_(timeout), server_nonce_(server_nonce), client_nonce_(client_nonce) {}
  static Status check_fence_ids(std::span<const uint16_t> compute_ids);
  Status send_request(const wire::ControlMessage& request);
  Result<wire::ControlMessage> await_reply();

  int fd_;
  wire::RegionInfo region_;
  std::chrono::milliseconds timeout_;
  wire::Nonce server_nonce_;
  wire::Nonce client_nonce_;
  std::chrono::steady_clock::time_point reply_deadline_{};  // of the request in flight
};

// Opens one data connection of options.backend to the daemon at `ep`
// (options.frame_mac is negotiated for tcp and ignored by shm and verbs;
// options.verbs is used by verbs only).
Result<std::unique_ptr<Connection>> open_connection(const Endpoint& ep, const ClientIdentity& id,
                                                    const ConnectOptions& options);

}  // namespace pandora
