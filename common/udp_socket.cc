#include "common/udp_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace pandora::net {

Result<UdpAddress> udp_address(const Endpoint& ep) {
  UdpAddress a;
  std::string host = ep.host == "localhost" ? "127.0.0.1" : ep.host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.ss);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(ep.port);
    a.len = sizeof(sockaddr_in);
    return a;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(ep.port);
    a.len = sizeof(sockaddr_in6);
    return a;
  }
  return Status(Errc::kInvalidArgument, fmt::format("'{}' is not a numeric IP address (or localhost)", ep.host));
}

std::string describe_address(const sockaddr_storage& ss, socklen_t len) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET && len >= sizeof(sockaddr_in)) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof(buf));
    return fmt::format("{}:{}", buf, ntohs(v4->sin_port));
  }
  if (ss.ss_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof(buf));
    return fmt::format("[{}]:{}", buf, ntohs(v6->sin6_port));
  }
  return "(unknown address)";
}

Result<UniqueFd> open_udp(int family) {
  UniqueFd fd(::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status(Errc::kIo, fmt::format("udp socket: {}", std::strerror(errno)));
  return fd;
}

Result<UniqueFd> bind_udp(const Endpoint& ep, uint16_t* port) {
  Result<UdpAddress> a = udp_address(ep);
  if (!a) return a.status();
  Result<UniqueFd> fd = open_udp(a->family());
  if (!fd) return fd.status();
  if (::bind(fd->get(), reinterpret_cast<const sockaddr*>(&a->ss), a->len) != 0) {
    return Status(Errc::kIo, fmt::format("bind udp {}: {}", ep.to_string(), std::strerror(errno)));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (::getsockname(fd->get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    return Status(Errc::kIo, fmt::format("getsockname: {}", std::strerror(errno)));
  }
  *port = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(&bound)->sin_port
                                           : reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port);
  return fd;
}

namespace {

constexpr int kShortDatagram = -1;

// One datagram without blocking, to `to` or (null) to the socket's
// connected peer, retried on EINTR: 0 when it went whole, else the errno
// (or kShortDatagram).
int send_whole(int fd, const UdpAddress* to, std::span<const uint8_t> data) {
  for (;;) {
    const ssize_t n = ::sendto(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT,
                               to != nullptr ? reinterpret_cast<const sockaddr*>(&to->ss) : nullptr,
                               to != nullptr ? to->len : 0);
    if (n == static_cast<ssize_t>(data.size())) return 0;
    if (n >= 0) return kShortDatagram;
    if (errno != EINTR) return errno;
  }
}

Status send_failed(int error) {
  return Status(Errc::kIo, error == kShortDatagram ? "sendto: short datagram"
                                                   : fmt::format("sendto: {}", std::strerror(error)));
}

}  // namespace

Status send_datagram(int fd, const UdpAddress& to, std::span<const uint8_t> data) {
  const int error = send_whole(fd, &to, data);
  return error == 0 ? Status::ok() : send_failed(error);
}

Result<UniqueFd> open_connected_udp(const UdpAddress& to) {
  Result<UniqueFd> fd = open_udp(to.family());
  if (!fd) return fd.status();
  if (::connect(fd->get(), reinterpret_cast<const sockaddr*>(&to.ss), to.len) != 0) {
    return Status(Errc::kIo, fmt::format("connect udp {}: {}", describe_address(to.ss, to.len), std::strerror(errno)));
  }
  return fd;
}

Status send_connected(int fd, std::span<const uint8_t> data) {
  const int error = send_whole(fd, nullptr, data);
  if (error == 0) return Status::ok();
  if (error == ECONNREFUSED) return Status(Errc::kDisconnected, "sendto: the peer's port refused");
  return send_failed(error);
}

ssize_t recv_datagram(int fd, std::span<uint8_t> buf, sockaddr_storage* from, socklen_t* from_len) {
  for (;;) {
    *from_len = sizeof(*from);
    const ssize_t n = ::recvfrom(fd, buf.data(), buf.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(from), from_len);
    if (n >= 0) return n;
    if (errno != EINTR) return -1;
  }
}

Result<UniqueFd> open_wakeup() {
  UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!fd.valid()) return Status(Errc::kIo, fmt::format("eventfd: {}", std::strerror(errno)));
  return fd;
}

void wake(int eventfd) {
  const uint64_t one = 1;
  // A full counter (2^64-2 wakeups pending) still wakes the poller.
  [[maybe_unused]] ssize_t n = ::write(eventfd, &one, sizeof(one));
}

}  // namespace pandora::net
