#include "common/transport/socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "common/bytes.h"

namespace pandora::net {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Waits until `fd` is ready for `events` or the deadline passes.
// kOk when ready (or on POLLERR/POLLHUP: the next syscall reports the cause).
Errc wait_ready(int fd, short events, Deadline deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (rc > 0) return Errc::kOk;
    if (rc == 0) return Errc::kTimeout;
    if (errno != EINTR) return Errc::kIo;
  }
}

bool is_disconnect_errno(int err) {
  return err == EPIPE || err == ECONNRESET || err == ENOTCONN || err == ECONNABORTED ||
         err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH;
}

// Fills `ss` from a numeric IPv4/IPv6 literal or "localhost" (mapped to
// 127.0.0.1 without consulting any resolver).
bool make_sockaddr(const Endpoint& ep, sockaddr_storage* ss, socklen_t* len) {
  std::memset(ss, 0, sizeof(*ss));
  std::string host = ep.host == "localhost" ? "127.0.0.1" : ep.host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto* v4 = reinterpret_cast<sockaddr_in*>(ss);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(ep.port);
    *len = sizeof(sockaddr_in);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(ss);
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(ep.port);
    *len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

}  // namespace

int poll_timeout_ms(Deadline deadline) {
  auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Status set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Status(Errc::kIo, "fcntl(O_NONBLOCK): " + errno_text(errno));
  }
  return Status::ok();
}

Status set_nodelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
    return Status(Errc::kIo, "setsockopt(TCP_NODELAY): " + errno_text(errno));
  }
  return Status::ok();
}

Result<UniqueFd> connect_tcp(const Endpoint& ep, std::chrono::milliseconds timeout) {
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!make_sockaddr(ep, &ss, &len)) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("'{}' is not a numeric IP address (or localhost)", ep.host));
  }
  Deadline deadline = deadline_after(timeout);
  UniqueFd fd(::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status(Errc::kIo, "socket: " + errno_text(errno));
  if (Status s = set_nodelay(fd.get()); !s) return s;

  int rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len);
  if (rc < 0 && errno != EINPROGRESS && errno != EINTR) {
    int err = errno;
    return Status(is_disconnect_errno(err) || err == ECONNREFUSED ? Errc::kDisconnected : Errc::kIo,
                  fmt::format("connect to {}: {}", ep.to_string(), errno_text(err)));
  }
  if (rc < 0) {
    Errc w = wait_ready(fd.get(), POLLOUT, deadline);
    if (w == Errc::kTimeout) {
      return Status(Errc::kTimeout,
                    fmt::format("connect to {}: no answer within {} ms", ep.to_string(), timeout.count()));
    }
    if (w != Errc::kOk) return Status(Errc::kIo, "poll: " + errno_text(errno));
    int err = 0;
    socklen_t elen = sizeof(err);
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &elen) < 0) err = errno;
    if (err != 0) {
      return Status(Errc::kDisconnected, fmt::format("connect to {}: {}", ep.to_string(), errno_text(err)));
    }
  }
  return fd;
}

ssize_t send_some(int fd, std::span<const uint8_t> data, Errc* error) {
  for (;;) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    *error = is_disconnect_errno(errno) ? Errc::kDisconnected : Errc::kIo;
    return -1;
  }
}

ssize_t recv_some(int fd, std::span<uint8_t> out, Errc* error) {
  for (;;) {
    ssize_t n = ::recv(fd, out.data(), out.size(), MSG_DONTWAIT);
    if (n > 0) return n;
    if (n == 0) {
      *error = Errc::kDisconnected;
      return -1;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    *error = is_disconnect_errno(errno) ? Errc::kDisconnected : Errc::kIo;
    return -1;
  }
}

bool peer_closed(int fd) {
  uint8_t byte;
  for (;;) {
    ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return false;
    if (n == 0) return true;
    if (errno == EINTR) continue;
    return !(errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

Status send_all(int fd, std::span<const uint8_t> data, Deadline deadline) {
  size_t done = 0;
  while (done < data.size()) {
    Errc err = Errc::kOk;
    ssize_t n = send_some(fd, data.subspan(done), &err);
    if (n < 0) return Status(err, "send: " + errno_text(errno));
    done += static_cast<size_t>(n);
    if (done == data.size()) break;
    Errc w = wait_ready(fd, POLLOUT, deadline);
    if (w == Errc::kTimeout) return Status(Errc::kTimeout, "send: peer not reading");
    if (w != Errc::kOk) return Status(Errc::kIo, "poll: " + errno_text(errno));
  }
  return Status::ok();
}

Status recv_exact(int fd, std::span<uint8_t> out, Deadline deadline) {
  size_t done = 0;
  while (done < out.size()) {
    Errc err = Errc::kOk;
    ssize_t n = recv_some(fd, out.subspan(done), &err);
    if (n < 0) {
      return Status(err, err == Errc::kDisconnected ? std::string("connection closed by peer")
                                                    : "recv: " + errno_text(errno));
    }
    done += static_cast<size_t>(n);
    if (done == out.size()) break;
    Errc w = wait_ready(fd, POLLIN, deadline);
    if (w == Errc::kTimeout) return Status(Errc::kTimeout, "no reply from peer in time");
    if (w != Errc::kOk) return Status(Errc::kIo, "poll: " + errno_text(errno));
  }
  return Status::ok();
}

Status send_control(int fd, const wire::ControlMessage& m, Deadline deadline) {
  std::string buf;
  wire::encode_control(buf, m);
  return send_all(fd, bytes_of(buf), deadline);
}

Result<wire::ControlMessage> recv_control(int fd, Deadline deadline) {
  std::string frame(wire::kControlHeaderBytes, '\0');
  auto bytes = [&frame](size_t from, size_t n) {
    return std::span(reinterpret_cast<uint8_t*>(frame.data()) + from, n);
  };
  if (Status s = recv_exact(fd, bytes(0, wire::kControlHeaderBytes), deadline); !s) return s;
  Result<size_t> total = wire::control_frame_length(bytes(0, wire::kControlHeaderBytes));
  if (!total) return total.status();
  if (*total < wire::kControlHeaderBytes) {
    return Status(Errc::kProtocol, "control frame shorter than its header");
  }
  frame.resize(*total);
  if (Status s = recv_exact(fd, bytes(wire::kControlHeaderBytes, *total - wire::kControlHeaderBytes), deadline);
      !s) {
    return s;
  }
  return wire::decode_control(bytes(0, frame.size()));
}

}  // namespace pandora::net
