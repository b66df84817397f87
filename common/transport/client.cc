#include "common/transport/client.h"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "common/bytes.h"
#include "common/checksum.h"
#include "common/transport/shm_connection.h"
#include "common/transport/socket_util.h"
#include "common/transport/tcp_connection.h"
#include "common/transport/verbs_connection.h"

namespace pandora {

namespace {

// The Status a reply stands for when it is not the expected type.
Status unexpected_reply(const wire::ControlMessage& reply, std::string_view wanted) {
  if (const auto* e = std::get_if<wire::Error>(&reply)) return Status(e->code, e->message);
  return Status(Errc::kProtocol, fmt::format("expected {} from the memory daemon, got message type {}", wanted,
                                             static_cast<int>(wire::control_type(reply))));
}

Status check_identity(const ClientIdentity& id) {
  if (id.role == wire::Role::kCompute && id.compute_id == 0) {
    return Status(Errc::kInvalidArgument, "a compute node needs a compute id in 1..65535 (0 is never issued)");
  }
  if (id.role == wire::Role::kAdmin && id.compute_id != 0) {
    return Status(Errc::kInvalidArgument, "an admin session has no compute id (use 0)");
  }
  if (id.role == wire::Role::kCompute && id.incarnation == 0) {
    return Status(Errc::kInvalidArgument, "a compute node needs an incarnation (new_incarnation(), once per process)");
  }
  if (id.role == wire::Role::kAdmin && id.incarnation != 0) {
    return Status(Errc::kInvalidArgument, "an admin session has no incarnation (use 0)");
  }
  return Status::ok();
}

Status fill_random(void* out, size_t n) {
  auto* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    const ssize_t got = ::getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return Status(Errc::kIo, fmt::format("getrandom: {}", std::strerror(errno)));
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return Status::ok();
}

}  // namespace

uint64_t new_incarnation() {
  uint64_t v = 0;
  // getrandom(2) from an initialised pool does not fail for 8 bytes; should
  // it, the clock and pid still make a collision between two live
  // processes of one compute id practically impossible.
  while (v == 0) {
    if (!fill_random(&v, sizeof(v))) {
      v = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
          (static_cast<uint64_t>(::getpid()) << 40);
    }
  }
  return v;
}

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::kShm: return "shm";
    case Backend::kTcp: return "tcp";
    case Backend::kVerbs: return "verbs";
  }
  return "unknown";
}

Result<Backend> parse_backend(std::string_view text) {
  if (text == "shm") return Backend::kShm;
  if (text == "tcp") return Backend::kTcp;
  if (text == "verbs") return Backend::kVerbs;
  return Status(Errc::kInvalidArgument, fmt::format("unknown backend '{}' (expected shm, tcp or verbs)", text));
}

Result<std::unique_ptr<ControlClient>> ControlClient::connect(const Endpoint& ep, const ClientIdentity& id,
                                                              std::chrono::milliseconds timeout) {
  if (Status s = check_identity(id); !s) return s;
  const net::Deadline deadline = net::deadline_after(timeout);
  Result<net::UniqueFd> sock = net::connect_tcp(ep, timeout);
  if (!sock) return sock.status();
  const int fd = sock->get();

  Result<wire::ControlMessage> first = net::recv_control(fd, deadline);
  if (!first) {
    // E.g. a daemon of another protocol version: say which daemon.
    return Status(first.status().code(), fmt::format("memory daemon at {}: {}", ep.to_string(), first.status().message()));
  }
  const auto* server_hello = std::get_if<wire::ServerHello>(&*first);
  if (server_hello == nullptr) return unexpected_reply(*first, "ServerHello");
  if (server_hello->protocol_version != wire::kControlVersion) {
    return Status(Errc::kUnsupported, fmt::format("memory daemon at {} speaks control protocol {}, we speak {}",
                                                  ep.to_string(), server_hello->protocol_version,
                                                  wire::kControlVersion));
  }

  wire::Hello hello;
  hello.cluster_id = id.cluster_id;
  hello.role = id.role;
  hello.compute_id = id.compute_id;
  hello.pid = static_cast<uint32_t>(::getpid());
  hello.incarnation = id.incarnation;
  // Our own fresh nonce is what makes the daemon's proof (HelloOk.mac) one a
  // recording of an earlier login cannot supply.
  if (Status s = fill_random(hello.client_nonce.data(), hello.client_nonce.size()); !s) return s;
  // The MAC binds the daemon's fresh nonce, so the secret never travels and
  // a recorded Hello is useless later.
  hello.mac = hmac_sha256(bytes_of(id.secret), bytes_of(wire::hello_mac_input(server_hello->nonce, hello)));
  if (Status s = net::send_control(fd, hello, deadline); !s) return s;

  Result<wire::ControlMessage> reply = net::recv_control(fd, deadline);
  if (!reply) return reply.status();
  const auto* ok = std::get_if<wire::HelloOk>(&*reply);
  if (ok == nullptr) return unexpected_reply(*reply, "HelloOk");
  const Digest256 expected =
      hmac_sha256(bytes_of(id.secret), bytes_of(wire::hello_ok_mac_input(server_hello->nonce, hello, ok->region)));
  if (!constant_time_equal(expected, ok->mac)) {
    return Status(Errc::kAuthFailed,
                  fmt::format("the memory daemon at {} did not prove knowledge of the cluster secret: not our "
                              "daemon, or a different secret; nothing was sent to it",
                              ep.to_string()));
  }
  return std::unique_ptr<ControlClient>(
      new ControlClient(sock->release(), ok->region, timeout, server_hello->nonce, hello.client_nonce));
}

ControlClient::~ControlClient() { net::UniqueFd close_it(fd_); }

int ControlClient::release_fd() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

Result<wire::ControlMessage> ControlClient::call(const wire::ControlMessage& request) {
  if (Status s = send_request(request); !s) return s;
  return await_reply();
}

Status ControlClient::send_request(const wire::ControlMessage& request) {
  if (fd_ < 0) return Status(Errc::kDisconnected, "control session is closed");
  reply_deadline_ = net::deadline_after(timeout_);
  Status s = net::send_control(fd_, request, reply_deadline_);
  if (!s) {
    // The request/reply pairing is lost: never reuse this stream.
    net::UniqueFd close_it(release_fd());
  }
  return s;
}

Result<wire::ControlMessage> ControlClient::await_reply() {
  if (fd_ < 0) return Status(Errc::kDisconnected, "control session is closed");
  Result<wire::ControlMessage> reply = net::recv_control(fd_, reply_deadline_);
  if (!reply) {
    net::UniqueFd close_it(release_fd());
    return reply.status();
  }
  if (const auto* e = std::get_if<wire::Error>(&*reply)) return Status(e->code, e->message);
  return reply;
}

Status ControlClient::check_fence_ids(std::span<const uint16_t> compute_ids) {
  if (compute_ids.empty() || compute_ids.size() > wire::kMaxFenceIds) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("a fence names 1..{} compute ids, not {}", wire::kMaxFenceIds, compute_ids.size()));
  }
  return Status::ok();
}

Status ControlClient::send_fence(std::span<const uint16_t> compute_ids) {
  if (Status s = check_fence_ids(compute_ids); !s) return s;
  return send_request(wire::Fence{std::vector<uint16_t>(compute_ids.begin(), compute_ids.end())});
}

Status ControlClient::await_fence() {
  Result<wire::ControlMessage> reply = await_reply();
  if (!reply) return reply.status();
  if (!std::holds_alternative<wire::Ok>(*reply)) return unexpected_reply(*reply, "Ok");
  return Status::ok();
}

Status ControlClient::fence(uint16_t compute_id) { return fence(std::span<const uint16_t>(&compute_id, 1)); }

Status ControlClient::fence(std::span<const uint16_t> compute_ids) {
  if (Status s = send_fence(compute_ids); !s) return s;
  return await_fence();
}

Status ControlClient::unfence(uint16_t compute_id) {
  Result<wire::ControlMessage> reply = call(wire::Unfence{compute_id});
  if (!reply) return reply.status();
  if (!std::holds_alternative<wire::Ok>(*reply)) return unexpected_reply(*reply, "Ok");
  return Status::ok();
}

Result<wire::StatsReply> ControlClient::stats() {
  Result<wire::ControlMessage> reply = call(wire::StatsRequest{});
  if (!reply) return reply.status();
  if (const auto* r = std::get_if<wire::StatsReply>(&*reply)) return *r;
  return unexpected_reply(*reply, "StatsReply");
}

Result<wire::RegionInfo> ControlClient::region_info() {
  Result<wire::ControlMessage> reply = call(wire::RegionInfoRequest{});
  if (!reply) return reply.status();
  if (const auto* r = std::get_if<wire::RegionInfoReply>(&*reply)) {
    region_ = r->region;
    return r->region;
  }
  return unexpected_reply(*reply, "RegionInfoReply");
}

Result<std::unique_ptr<Connection>> open_connection(const Endpoint& ep, const ClientIdentity& id,
                                                    const ConnectOptions& options) {
  if (id.role != wire::Role::kCompute) {
    return Status(Errc::kInvalidArgument, "data connections are for compute nodes; admin sessions use ControlClient");
  }
  if (options.backend != Backend::kShm && options.backend != Backend::kTcp && options.backend != Backend::kVerbs) {
    return Status(Errc::kInvalidArgument, "unknown backend");
  }
  auto control = ControlClient::connect(ep, id, options.connect_timeout);
  if (!control) return control.status();
  ControlClient& cc = **control;

  if (options.backend == Backend::kTcp) {
    Result<wire::ControlMessage> reply = cc.call(wire::SetupTcp{options.frame_mac});
    if (!reply) return reply.status();
    if (!std::holds_alternative<wire::Ok>(*reply)) return unexpected_reply(*reply, "Ok");
    std::optional<wire::FrameMacKeys> keys;
    if (options.frame_mac) keys = wire::frame_mac_keys(bytes_of(id.secret), cc.server_nonce(), cc.client_nonce());
    return std::unique_ptr<Connection>(
        new TcpConnection(net::UniqueFd(cc.release_fd()), cc.region(), options.op_timeout, keys));
  }

  if (options.backend == Backend::kVerbs) {
    // Our queue pair first: if this host has no usable RDMA device, the
    // daemon is never asked for anything.
    Result<std::unique_ptr<VerbsConnection>> vc = VerbsConnection::create(options.verbs, cc.region(), options.op_timeout);
    if (!vc) return vc.status();
    Result<wire::ControlMessage> reply = cc.call((*vc)->setup_request());
    if (!reply) {
      return Status(reply.status().code(),
                    fmt::format("memory daemon at {}: {}", ep.to_string(), reply.status().message()));
    }
    const auto* info = std::get_if<wire::VerbsInfo>(&*reply);
    if (info == nullptr) return unexpected_reply(*reply, "VerbsInfo");
    if (Status s = (*vc)->connect(*info, net::UniqueFd(cc.release_fd())); !s) return s;
    return std::unique_ptr<Connection>(std::move(vc).value());
  }

  Result<wire::ControlMessage> reply = cc.call(wire::SetupShm{});
  if (!reply) return reply.status();
  const auto* info = std::get_if<wire::ShmInfo>(&*reply);
  if (info == nullptr) return unexpected_reply(*reply, "ShmInfo");
  Result<net::UniqueFd> region_fd = ShmConnection::fetch_region_fd(*info, options.connect_timeout);
  if (!region_fd) return region_fd.status();
  return ShmConnection::open(net::UniqueFd(cc.release_fd()), cc.region(), *info, std::move(region_fd.value()),
                             id.compute_id);
}

}  // namespace pandora
