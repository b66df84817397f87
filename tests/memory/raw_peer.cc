#include "tests/memory/raw_peer.h"

#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/checksum.h"

namespace pandora::testing {
namespace {

std::span<const uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

RawPeer::RawPeer(uint16_t port) {
  auto fd = net::connect_tcp(Endpoint{"127.0.0.1", port}, std::chrono::seconds(5));
  if (fd) fd_ = std::move(*fd);
}

Status RawPeer::send(std::string_view bytes) {
  return net::send_all(fd_.get(), bytes_of(bytes), net::deadline_after(std::chrono::seconds(5)));
}

void RawPeer::shutdown_write() { ::shutdown(fd_.get(), SHUT_WR); }

Result<wire::ControlMessage> RawPeer::recv_control(std::chrono::milliseconds timeout) {
  return net::recv_control(fd_.get(), net::deadline_after(timeout));
}

Result<wire::ControlMessage> RawPeer::handshake(uint64_t cluster_id, const std::string& secret, wire::Role role,
                                                uint16_t compute_id, uint64_t incarnation, uint32_t claimed_pid) {
  auto first = recv_control();
  if (!first) return first.status();
  const auto* sh = std::get_if<wire::ServerHello>(&*first);
  if (sh == nullptr) return Status(Errc::kProtocol, "no ServerHello");
  wire::Hello h;
  h.cluster_id = cluster_id;
  h.role = role;
  h.compute_id = compute_id;
  h.pid = claimed_pid != 0 ? claimed_pid : static_cast<uint32_t>(::getpid());
  h.incarnation = role == wire::Role::kCompute ? incarnation : 0;
  if (::getrandom(h.client_nonce.data(), h.client_nonce.size(), 0) != static_cast<ssize_t>(h.client_nonce.size())) {
    return Status(Errc::kIo, "getrandom failed");
  }
  server_nonce_ = sh->nonce;
  client_nonce_ = h.client_nonce;
  h.mac = hmac_sha256(bytes_of(secret), bytes_of(wire::hello_mac_input(sh->nonce, h)));
  std::string out;
  wire::encode_control(out, h);
  if (Status s = send(out); !s) return s;
  return recv_control();
}

bool RawPeer::open_data_plane(uint64_t cluster_id, const std::string& secret, uint16_t compute_id,
                              uint64_t incarnation, bool frame_mac) {
  auto r = handshake(cluster_id, secret, wire::Role::kCompute, compute_id, incarnation);
  if (!r || !std::holds_alternative<wire::HelloOk>(*r)) return false;
  std::string out;
  wire::encode_control(out, wire::SetupTcp{frame_mac});
  if (!send(out)) return false;
  auto ok = recv_control();
  return ok && std::holds_alternative<wire::Ok>(*ok);
}

wire::FrameMacKeys RawPeer::frame_mac_keys(const std::string& secret) const {
  return wire::frame_mac_keys(bytes_of(secret), server_nonce_, client_nonce_);
}

std::optional<RawPeer::Response> RawPeer::recv_response(std::chrono::milliseconds timeout) {
  auto deadline = net::deadline_after(timeout);
  std::string buf(sizeof(wire::ResponseHeader), '\0');
  if (!net::recv_exact(fd_.get(), {reinterpret_cast<uint8_t*>(buf.data()), buf.size()}, deadline)) {
    return std::nullopt;
  }
  wire::ResponseHeader h;
  std::memcpy(&h, buf.data(), sizeof(h));
  if (h.len > wire::kMaxIoBytes) return std::nullopt;
  size_t head = buf.size();
  buf.resize(head + h.len);
  if (h.len > 0 &&
      !net::recv_exact(fd_.get(), {reinterpret_cast<uint8_t*>(buf.data()) + head, h.len}, deadline)) {
    return std::nullopt;
  }
  wire::DecodedResponse d;
  std::string why;
  if (wire::decode_response(bytes_of(buf), d, &why) != wire::DecodeResult::kOk) return std::nullopt;
  Response r;
  r.header = d.header;
  r.payload.assign(reinterpret_cast<const char*>(d.payload.data()), d.payload.size());
  return r;
}

bool RawPeer::wait_closed(std::chrono::milliseconds timeout, std::string* rest) {
  auto deadline = net::deadline_after(timeout);
  char buf[65536];
  for (;;) {
    pollfd p{fd_.get(), POLLIN, 0};
    int rc = ::poll(&p, 1, net::poll_timeout_ms(deadline));
    if (rc == 0) return false;
    if (rc < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      return true;  // reset
    }
    if (rest) rest->append(buf, static_cast<size_t>(n));
  }
}

std::string request_frame(wire::Op op, uint64_t addr, uint32_t len, uint64_t tag, uint64_t compare, uint64_t swap,
                          std::string_view payload) {
  wire::RequestHeader h{};
  h.magic = wire::kFrameMagic;
  h.op = static_cast<uint8_t>(op);
  h.len = len;
  h.tag = tag;
  h.addr = addr;
  h.compare = compare;
  h.swap = swap;
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  out.append(payload);
  return out;
}

}  // namespace pandora::testing
