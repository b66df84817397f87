#include "memory/shm_fd_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/checksum.h"
#include "common/transport/fd_passing.h"
#include "common/wire/shm_handoff.h"

// Linux 6.5; older headers do not name it.
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

namespace pandora::memd {
namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text(int e) { return std::strerror(e); }

// A pidfd for the process at the other end of the Unix socket `fd`, and its
// pid. SO_PEERPIDFD refers to the connecting process itself; without it
// (older kernels) the pid from SO_PEERCRED is opened at once - the residual
// window (that process exiting and its pid being reused in between) is
// stated in the README.
Status peer_process(int fd, pid_t* pid, int* pidfd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return Status(Errc::kIo, "SO_PEERCRED: " + errno_text(errno));
  }
  *pid = cred.pid;
  int pfd = -1;
  len = sizeof(pfd);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pfd, &len) == 0 && pfd >= 0) {
    *pidfd = pfd;
    return Status::ok();
  }
  if (errno != ENOPROTOOPT && errno != EINVAL) {
    return Status(Errc::kIo, "SO_PEERPIDFD: " + errno_text(errno));
  }
  pfd = static_cast<int>(::syscall(SYS_pidfd_open, cred.pid, 0));
  if (pfd < 0) return Status(Errc::kInvalidArgument, fmt::format("peer pid {}: {}", cred.pid, errno_text(errno)));
  *pidfd = pfd;
  return Status::ok();
}

}  // namespace

ShmFdServer::ShmFdServer(Region& region, FenceTable& fences, Logger log)
    : region_(region), fences_(fences), log_(std::move(log)) {}

ShmFdServer::~ShmFdServer() {
  stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
  if (!socket_path_.empty()) ::unlink(socket_path_.c_str());
  if (!dir_.empty()) ::rmdir(dir_.c_str());
}

size_t ShmFdServer::remove_stale_dirs(const std::string& region_path, const Logger& log) {
  const auto slash = region_path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : region_path.substr(0, slash));
  const std::string prefix = region_path.substr(slash == std::string::npos ? 0 : slash + 1) + ".shm.";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  size_t removed = 0;
  const int dfd = ::dirfd(d);
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    // Exactly what start() creates: prefix + 6 mkdtemp characters.
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    struct stat st {};
    if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != ::geteuid()) {
      continue;
    }
    const int sub = ::openat(dfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub >= 0) {
      ::unlinkat(sub, kSocketName, 0);
      ::close(sub);
    }
    if (::unlinkat(dfd, name.c_str(), AT_REMOVEDIR) == 0) {
      log.info("removed {}/{}, the shm hand-off directory of an earlier daemon that did not stop cleanly", dir, name);
      ++removed;
    }
  }
  ::closedir(d);
  return removed;
}

Status ShmFdServer::start(const std::string& dir_template) {
  std::string dir = dir_template;
  if (dir.size() + 1 + std::strlen(kSocketName) > net::max_unix_path()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("shm hand-off socket path {}/{} is longer than the {} bytes a Unix socket allows",
                              dir, kSocketName, net::max_unix_path()));
  }
  if (::mkdtemp(dir.data()) == nullptr) {
    return Status(Errc::kIo, fmt::format("cannot create the shm hand-off directory {}: {}", dir_template,
                                         errno_text(errno)));
  }
  dir_ = dir;
  socket_path_ = dir + "/" + kSocketName;
  stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  listen_fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (stop_fd_ < 0 || listen_fd_ < 0) return Status(Errc::kIo, "shm hand-off socket: " + errno_text(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path_.data(), socket_path_.size());
  // Bound while the directory is still 0700 (mkdtemp), then opened up: the
  // socket is never reachable with the umask's mode.
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::chmod(socket_path_.c_str(), 0666) != 0 || ::listen(listen_fd_, 128) != 0 ||
      ::chmod(dir_.c_str(), 0711) != 0) {
    return Status(Errc::kIo, fmt::format("shm hand-off socket {}: {}", socket_path_, errno_text(errno)));
  }
  thread_ = std::thread([this] { run(); });
  return Status::ok();
}

void ShmFdServer::stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(stop_fd_, &one, sizeof(one));
  thread_.join();
  for (const Peer& p : peers_) ::close(p.fd);
  peers_.clear();
}

Result<std::array<uint8_t, 32>> ShmFdServer::issue(uint64_t session, uint16_t compute_id, uint32_t generation) {
  Token t{};
  if (::getrandom(t.value.data(), t.value.size(), 0) != static_cast<ssize_t>(t.value.size())) {
    return Status(Errc::kIo, "getrandom: " + errno_text(errno));
  }
  t.session = session;
  t.compute_id = compute_id;
  t.generation = generation;
  const auto now = Clock::now();
  t.expires = now + kTokenLifetime;
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(tokens_, [&](const Token& x) { return x.expires <= now; });
  if (tokens_.size() >= kMaxTokens) {
    return Status(Errc::kIo, fmt::format("too many shm hand-offs pending ({}); retry later", kMaxTokens));
  }
  tokens_.push_back(t);
  return t.value;
}

void ShmFdServer::revoke(uint64_t session) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(tokens_, [&](const Token& x) { return x.session == session; });
}

bool ShmFdServer::redeem(const std::array<uint8_t, 32>& value, Token* out) {
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  bool found = false;
  size_t at = 0;
  // Every token is compared (constant time each), so timing tells nothing
  // about which bytes matched.
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (constant_time_equal(tokens_[i].value, value) && tokens_[i].expires > now) {
      found = true;
      at = i;
    }
  }
  if (!found) return false;
  *out = tokens_[at];
  tokens_.erase(tokens_.begin() + static_cast<long>(at));
  return true;
}

void ShmFdServer::run() {
  std::vector<pollfd> fds;
  for (;;) {
    const auto now = Clock::now();
    // Peers past their deadline are dropped without an answer.
    std::erase_if(peers_, [&](const Peer& p) {
      if (p.deadline > now) return false;
      ::close(p.fd);
      return true;
    });
    int timeout = -1;
    for (const Peer& p : peers_) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(p.deadline - now).count() + 1;
      timeout = timeout < 0 ? static_cast<int>(ms) : std::min(timeout, static_cast<int>(ms));
    }
    fds.clear();
    fds.push_back({stop_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const Peer& p : peers_) fds.push_back({p.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), timeout) < 0) {
      if (errno == EINTR) continue;
      log_.error("shm hand-off: poll: {}; no more shm clients can connect", errno_text(errno));
      return;
    }
    if (fds[0].revents != 0) return;
    // Serve ready peers first (their indices match peers_ until it changes).
    std::vector<int> ready;
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents != 0) ready.push_back(fds[i].fd);
    }
    for (int fd : ready) {
      std::erase_if(peers_, [fd](const Peer& p) { return p.fd == fd; });
      serve_peer(fd);
    }
    if (fds[1].revents != 0) accept_peers();
  }
}

void ShmFdServer::accept_peers() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) log_.warn("shm hand-off: accept: {}", errno_text(errno));
      return;
    }
    if (peers_.size() >= kMaxPeers) {
      // Oldest first out: a flood of idle connections cannot lock out a
      // client that is about to present its token.
      ::close(peers_.front().fd);
      peers_.erase(peers_.begin());
    }
    peers_.push_back({fd, Clock::now() + kPeerTimeout});
  }
}

void ShmFdServer::reply(int fd, Errc code, const std::string& message, int pass_fd) {
  wire::ShmFdReply r;
  r.status = static_cast<uint8_t>(code);
  r.set_message(message);
  Status s = net::send_message(fd, {reinterpret_cast<const uint8_t*>(&r), sizeof(r)}, pass_fd,
                               net::deadline_after(std::chrono::milliseconds(100)));
  if (!s) log_.debug("shm hand-off: reply not delivered: {}", s.message());
}

void ShmFdServer::serve_peer(int fd) {
  wire::ShmFdRequest req;
  net::UniqueFd attached;  // a client has no business sending one: closed unread
  Result<size_t> n = net::recv_message(fd, {reinterpret_cast<uint8_t*>(&req), sizeof(req)}, &attached,
                                       Clock::now());
  net::UniqueFd close_it(fd);
  if (!n) return;
  if (*n != sizeof(req) || req.magic != wire::kShmHandoffMagic || req.version != wire::kShmHandoffVersion) {
    reply(fd, Errc::kProtocol, "malformed shm hand-off request", -1);
    return;
  }
  Token t;
  if (!redeem(req.token, &t)) {
    log_.warn("shm hand-off: refused an unknown, used or expired token");
    reply(fd, Errc::kAuthFailed, "unknown, used or expired shm token; ask again with SetupShm", -1);
    return;
  }
  if (fences_.refuses(t.compute_id, t.generation)) {
    reply(fd, Errc::kFenced, fmt::format("compute node {} was fenced", t.compute_id), -1);
    return;
  }
  pid_t pid = 0;
  int pidfd = -1;
  if (Status s = peer_process(fd, &pid, &pidfd); !s) {
    log_.warn("shm hand-off for compute node {}: {}", t.compute_id, s.message());
    reply(fd, s.code(), s.message(), -1);
    return;
  }
  if (Status s = fences_.register_shm_client(t.compute_id, pid, pidfd); !s) {
    log_.warn("shm hand-off for compute node {} (pid {}): {}", t.compute_id, pid, s.message());
    reply(fd, s.code(), s.message(), -1);
    return;
  }
  log_.info("compute {}: shm client pid {} (from the kernel) registered and given the region", t.compute_id, pid);
  reply(fd, Errc::kOk, "", region_.client_fd());
}

}  // namespace pandora::memd
