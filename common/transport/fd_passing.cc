#include "common/transport/fd_passing.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace pandora::net {
namespace {

Status wait_for(int fd, short events, Deadline deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (rc > 0) return Status::ok();
    if (rc == 0) return Status(Errc::kTimeout, fmt::format("timed out waiting to {}", what));
    if (errno != EINTR) return Status(Errc::kIo, fmt::format("poll: {}", std::strerror(errno)));
  }
}

// Closes every descriptor in a control message but the first, which goes to
// *keep (if the message carries any).
void take_fds(msghdr& msg, UniqueFd* keep) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (!keep->valid()) keep->reset(fd);
      else ::close(fd);
    }
  }
}

}  // namespace

size_t max_unix_path() { return sizeof(sockaddr_un{}.sun_path) - 1; }

Result<UniqueFd> connect_unix(const std::string& path, Deadline deadline) {
  if (path.empty() || path.size() > max_unix_path()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("unix socket path '{}' is empty or longer than {} bytes", path, max_unix_path()));
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status(Errc::kIo, fmt::format("socket(AF_UNIX): {}", std::strerror(errno)));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int e = errno;
    if (e == EINPROGRESS || e == EAGAIN) {
      // A full backlog: wait for the daemon to accept.
      if (Status s = wait_for(fd.get(), POLLOUT, deadline, "connect"); !s) return s;
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0) return fd;
      return Status(Errc::kDisconnected, fmt::format("cannot connect to {}: {}", path, std::strerror(err)));
    }
    return Status(Errc::kDisconnected, fmt::format("cannot connect to {}: {}", path, std::strerror(e)));
  }
  return fd;
}

Status send_message(int sock, std::span<const uint8_t> data, int fd, Deadline deadline) {
  iovec iov{const_cast<uint8_t*>(data.data()), data.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  for (;;) {
    ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(data.size())) return Status::ok();
    if (n >= 0) return Status(Errc::kIo, "short send of a unix message");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Status s = wait_for(sock, POLLOUT, deadline, "send"); !s) return s;
      continue;
    }
    if (errno == EPIPE || errno == ECONNRESET) return Status(Errc::kDisconnected, "peer closed the unix socket");
    return Status(Errc::kIo, fmt::format("sendmsg: {}", std::strerror(errno)));
  }
}

Result<size_t> recv_message(int sock, std::span<uint8_t> buf, UniqueFd* fd, Deadline deadline) {
  fd->reset();
  for (;;) {
    iovec iov{buf.data(), buf.size()};
    // Room for a few descriptors, so a peer that attaches more than one
    // cannot make us lose track of (and leak) them through MSG_CTRUNC.
    alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (Status s = wait_for(sock, POLLIN, deadline, "receive"); !s) return s;
        continue;
      }
      if (errno == ECONNRESET) return Status(Errc::kDisconnected, "peer reset the unix socket");
      return Status(Errc::kIo, fmt::format("recvmsg: {}", std::strerror(errno)));
    }
    take_fds(msg, fd);
    if (n == 0) return Status(Errc::kDisconnected, "peer closed the unix socket");
    if ((msg.msg_flags & MSG_TRUNC) != 0) {
      fd->reset();
      return Status(Errc::kProtocol, fmt::format("unix message longer than the {} bytes expected", buf.size()));
    }
    if ((msg.msg_flags & MSG_CTRUNC) != 0) {
      fd->reset();
      return Status(Errc::kProtocol, "unix message carried more descriptors than allowed");
    }
    return static_cast<size_t>(n);
  }
}

}  // namespace pandora::net
