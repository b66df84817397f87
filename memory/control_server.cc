#include "memory/control_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <variant>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/bytes.h"
#include "common/checksum.h"
#include "memory/pending_handshakes.h"
#include "memory/session_table.h"

namespace pandora::memd {
namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text() { return std::string(strerror(errno)); }

// "node 5" / "nodes 5, 6, 7" for a log line; a long list (a replacement
// fences every failed pid, up to 1024 per request) is cut after 16 ids.
std::string compute_nodes_text(const std::vector<uint16_t>& ids) {
  constexpr size_t kShown = 16;
  const std::span<const uint16_t> shown(ids.data(), std::min(ids.size(), kShown));
  std::string out = fmt::format("node{} {}", ids.size() == 1 ? "" : "s", fmt::join(shown, ", "));
  if (ids.size() > kShown) out += fmt::format(", ... ({} in all)", ids.size());
  return out;
}

std::string_view type_name(wire::ControlType t) {
  switch (t) {
    case wire::ControlType::kServerHello: return "ServerHello";
    case wire::ControlType::kHello: return "Hello";
    case wire::ControlType::kHelloOk: return "HelloOk";
    case wire::ControlType::kError: return "Error";
    case wire::ControlType::kOk: return "Ok";
    case wire::ControlType::kSetupTcp: return "SetupTcp";
    case wire::ControlType::kSetupShm: return "SetupShm";
    case wire::ControlType::kShmInfo: return "ShmInfo";
    case wire::ControlType::kFence: return "Fence";
    case wire::ControlType::kStatsRequest: return "StatsRequest";
    case wire::ControlType::kStatsReply: return "StatsReply";
    case wire::ControlType::kRegionInfoRequest: return "RegionInfoRequest";
    case wire::ControlType::kRegionInfoReply: return "RegionInfoReply";
    case wire::ControlType::kUnfence: return "Unfence";
    case wire::ControlType::kSetupVerbs: return "SetupVerbs";
    case wire::ControlType::kVerbsInfo: return "VerbsInfo";
  }
  return "unknown";
}

// A peer as the log names it ("127.0.0.1:4242") and its address alone
// ("127.0.0.1"), by which pending handshakes are counted per peer.
struct PeerName {
  std::string name = "unknown peer";
  std::string address = "unknown";
};

PeerName peer_name(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  PeerName out;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return out;
  char host[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    out.address = host;
    out.name = out.address + ":" + std::to_string(ntohs(a->sin_port));
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    out.address = host;
    out.name = "[" + out.address + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  return out;
}

// Runs fences off the event loop: FenceTable::fence() blocks until the data
// plane is quiescent and killed shm clients have exited (up to seconds).
// Completions are reported through an eventfd the event loop watches.
class FenceWorker {
 public:
  struct Done {
    uint64_t conn_id;
    std::vector<uint16_t> compute_ids;
    Status status;
  };

  explicit FenceWorker(FenceTable& fences) : fences_(fences) {}
  ~FenceWorker() {
    stop();
    if (event_fd_ >= 0) ::close(event_fd_);
  }

  Status start() {
    event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (event_fd_ < 0) return Status(Errc::kIo, "eventfd: " + errno_text());
    thread_ = std::thread([this] { run(); });
    return Status::ok();
  }
  int event_fd() const { return event_fd_; }

  void submit(uint64_t conn_id, std::vector<uint16_t> compute_ids) {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back({conn_id, std::move(compute_ids), Status::ok()});
    cv_.notify_one();
  }

  std::vector<Done> take_done() {
    uint64_t v;
    [[maybe_unused]] ssize_t n = ::read(event_fd_, &v, sizeof(v));
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Done> out;
    out.swap(done_);
    return out;
  }

  // Finishes the fence in progress (if any), drops queued ones, joins.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      jobs_.clear();
      cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      Done job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job.status = fences_.fence(job.compute_ids);
      lock.lock();
      done_.push_back(std::move(job));
      uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(event_fd_, &one, sizeof(one));
    }
  }

  FenceTable& fences_;
  int event_fd_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Done> jobs_;
  std::vector<Done> done_;
  bool stopping_ = false;
};

}  // namespace

class ControlServer::Impl {
 public:
  Impl(Region& region, FenceTable& fences, TcpDataPlane& data_plane, ShmFdServer& shm, VerbsServer* verbs,
       uint64_t cluster_id, uint64_t incarnation, std::string secret, Logger log, ControlLimits limits)
      : region_(region),
        fences_(fences),
        shm_(shm),
        verbs_(verbs),
        data_plane_(data_plane),
        cluster_id_(cluster_id),
        incarnation_(incarnation),
        secret_(std::move(secret)),
        log_(std::move(log)),
        limits_(limits),
        noisy_(log_, limits.log_limit),
        pending_(limits.max_handshakes, limits.max_handshakes_per_peer),
        fence_worker_(fences) {}

  // The region as a client sees it, with this daemon's incarnation.
  wire::RegionInfo region_info() const {
    wire::RegionInfo i = region_.info();
    i.daemon_incarnation = incarnation_;
    return i;
  }

  ~Impl() {
    close_all();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
  }

  Result<Endpoint> listen(const Endpoint& ep) {
    std::string host = ep.host == "localhost" ? "127.0.0.1" : ep.host;
    sockaddr_storage ss{};
    socklen_t slen = 0;
    int family = AF_INET;
    if (auto* a4 = reinterpret_cast<sockaddr_in*>(&ss); ::inet_pton(AF_INET, host.c_str(), &a4->sin_addr) == 1) {
      a4->sin_family = AF_INET;
      a4->sin_port = htons(ep.port);
      slen = sizeof(sockaddr_in);
    } else if (auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
               ::inet_pton(AF_INET6, host.c_str(), &a6->sin6_addr) == 1) {
      family = AF_INET6;
      a6->sin6_family = AF_INET6;
      a6->sin6_port = htons(ep.port);
      slen = sizeof(sockaddr_in6);
    } else {
      return Status(Errc::kInvalidArgument, "--listen host '" + ep.host + "' is not a numeric address");
    }
    int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status(Errc::kIo, "socket: " + errno_text());
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), slen) != 0 || ::listen(fd, 512) != 0) {
      std::string why = errno_text();
      ::close(fd);
      return Status(Errc::kIo, "cannot listen on " + ep.to_string() + ": " + why +
                                   "; choose another --listen address/port (port 0 picks a free one) or stop the "
                                   "process using it");
    }
    sockaddr_storage bound{};
    socklen_t blen = sizeof(bound);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
    Endpoint out{ep.host, 0};
    out.port = family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port)
                                 : ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    listen_fd_ = fd;
    return out;
  }

  Status serve(int stop_fd) {
    if (listen_fd_ < 0) return Status(Errc::kInvalidArgument, "serve() before listen()");
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) return Status(Errc::kIo, "epoll_create1: " + errno_text());
    if (Status s = fence_worker_.start(); !s) return s;
    if (!watch(listen_fd_, kListenId, EPOLLIN) || !watch(stop_fd, kStopId, EPOLLIN) ||
        !watch(fence_worker_.event_fd(), kFenceId, EPOLLIN)) {
      return Status(Errc::kIo, "epoll_ctl: " + errno_text());
    }
    epoll_event events[64];
    bool stopping = false;
    while (!stopping) {
      int n = ::epoll_wait(epoll_fd_, events, 64, next_timeout_ms());
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status(Errc::kIo, "epoll_wait: " + errno_text());
      }
      for (int i = 0; i < n; ++i) {
        uint64_t id = events[i].data.u64;
        if (id == kStopId) {
          stopping = true;
        } else if (id == kListenId) {
          accept_all();
        } else if (id == kFenceId) {
          finish_fences();
        } else if (auto it = conns_.find(id); it != conns_.end()) {
          on_event(*it->second, events[i].events);
        }
      }
      on_timers();
    }
    log_.info("control plane: stopping (no new connections)");
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    ::close(listen_fd_);
    listen_fd_ = -1;
    close_all();
    fence_worker_.stop();
    return Status::ok();
  }

  wire::StatsReply stats() const {
    wire::StatsReply s;
    data_plane_.add_stats(s);
    s.auth_failures = auth_failures_;
    s.connections_current += conns_.size();
    s.connections_total = connections_total_;
    s.fenced_nodes = fences_.fenced_count();
    s.fence_requests = fence_requests_;
    return s;
  }

 private:
  enum class State { kHandshake, kSession, kClosing };

  struct Conn {
    uint64_t id = 0;
    int fd = -1;
    std::string peer;  // "127.0.0.1:4242", later "compute 7 (127.0.0.1:4242)"
    Clock::time_point accepted{};
    State state = State::kHandshake;
    std::string in;
    std::string out;
    size_t out_head = 0;
    wire::Nonce nonce{};         // the server nonce sent in ServerHello
    wire::Nonce client_nonce{};  // from the Hello
    Clock::time_point deadline{};  // handshake deadline, or linger deadline when closing
    wire::Role role = wire::Role::kAdmin;
    uint16_t compute_id = 0;
    uint32_t fence_generation = 0;  // FenceTable::generation at login
    uint32_t pid = 0;
    SessionTable::Lease lease;  // compute sessions: the claim on compute_id
    std::optional<wire::FrameMacKeys> frame_mac;  // SetupTcp asked for frame MACs
    bool fence_pending = false;  // waiting for the fence worker: no reading
    bool handoff = false;        // SetupTcp answered: hand over once Ok is out
    bool shut_wr = false;
    uint32_t events = 0;
    size_t pending_out() const { return out.size() - out_head; }
  };

  static constexpr uint64_t kListenId = 1, kStopId = 2, kFenceId = 3;
  static constexpr size_t kMaxFrame = wire::kControlHeaderBytes + wire::kMaxControlBody;

  bool watch(int fd, uint64_t id, uint32_t ev) {
    epoll_event e{};
    e.events = ev;
    e.data.u64 = id;
    return ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e) == 0;
  }

  int next_timeout_ms() const {
    Clock::time_point next = Clock::time_point::max();
    if (accept_paused_) next = accept_resume_;
    next = std::min(next, next_log_flush_);
    for (const auto& [id, c] : conns_) {
      if (c->state != State::kSession) next = std::min(next, c->deadline);
    }
    if (next == Clock::time_point::max()) return -1;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    return static_cast<int>(std::clamp<int64_t>(ms + 1, 0, 60'000));
  }

  void on_timers() {
    next_log_flush_ = noisy_.flush();  // counts of suppressed lines, once their second is over
    auto now = Clock::now();
    if (accept_paused_ && now >= accept_resume_) {
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.u64 = kListenId;
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &e);
      accept_paused_ = false;
    }
    std::vector<uint64_t> expired;
    for (const auto& [id, c] : conns_) {
      if (c->state != State::kSession && now >= c->deadline) expired.push_back(id);
    }
    for (uint64_t id : expired) {
      Conn& c = *conns_[id];
      if (c.state == State::kHandshake) {
        noisy_.log(LogLevel::kInfo, "handshake-timeout", "dropping {}: no valid Hello within {} ms", c.peer,
                   limits_.handshake_timeout.count());
      }
      close_conn(c);
    }
  }

  void accept_all() {
    for (;;) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) return;
        if ((errno == EMFILE || errno == ENFILE) && evict_for_descriptor()) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Level-triggered: without a pause the loop would spin at 100% CPU.
          noisy_.log(LogLevel::kError, "accept-paused", "accept: {}; not accepting for 100 ms", errno_text());
          epoll_event e{};
          e.events = 0;
          e.data.u64 = kListenId;
          ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &e);
          accept_paused_ = true;
          accept_resume_ = Clock::now() + std::chrono::milliseconds(100);
          return;
        }
        noisy_.log(LogLevel::kError, "accept-failed", "accept: {}", errno_text());
        return;
      }
      ++connections_total_;
      PeerName peer = peer_name(fd);
      // Never refuse a newcomer for lack of room (that is how idle sockets
      // locked everyone out): an older pending handshake gives way.
      while (std::optional<uint64_t> victim = pending_.victim_for(peer.address)) {
        evict(*victim, "to make room for " + peer.name);
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      auto c = std::make_unique<Conn>();
      c->id = next_id_++;
      c->fd = fd;
      c->peer = std::move(peer.name);
      c->accepted = Clock::now();
      c->deadline = c->accepted + limits_.handshake_timeout;
      if (::getrandom(c->nonce.data(), c->nonce.size(), 0) != static_cast<ssize_t>(c->nonce.size())) {
        log_.error("getrandom failed: {}; dropping {}", errno_text(), c->peer);
        ::close(fd);
        continue;
      }
      if (!watch(fd, c->id, EPOLLIN)) {
        log_.error("epoll_ctl for {}: {}", c->peer, errno_text());
        ::close(fd);
        continue;
      }
      c->events = EPOLLIN;
      log_.debug("connection from {}", c->peer);
      wire::ServerHello hello;
      hello.nonce = c->nonce;
      wire::encode_control(c->out, hello);
      Conn& ref = *c;
      conns_.emplace(c->id, std::move(c));
      pending_.add(ref.id, peer.address);
      flush(ref);
    }
  }

  void on_event(Conn& c, uint32_t ev) {
    uint64_t id = c.id;
    if (ev & (EPOLLERR | EPOLLHUP)) {
      // Reset or fully shut down: nobody is left to read a reply.
      close_conn(c);
      return;
    }
    if (ev & EPOLLOUT) {
      if (!flush(c)) return;
    }
    if (ev & EPOLLIN) {
      if (c.shut_wr) {
        linger_read(c);
        return;
      }
      if (!read_some(c)) return;
      process(c);
      if (conns_.count(id) == 0) return;
      flush(c);
    }
  }

  // Returns false if the connection was closed.
  bool read_some(Conn& c) {
    if (c.state == State::kClosing || c.fence_pending || c.handoff) return true;
    size_t room = kMaxFrame - std::min(kMaxFrame, c.in.size());
    if (room == 0) return true;  // a full frame is buffered; process() takes it
    size_t old = c.in.size();
    c.in.resize(old + std::min<size_t>(room, 16384));
    ssize_t n = ::recv(c.fd, c.in.data() + old, c.in.size() - old, 0);
    if (n > 0) {
      c.in.resize(old + static_cast<size_t>(n));
      return true;
    }
    c.in.resize(old);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    if (n == 0) {
      if (c.state == State::kHandshake) {
        noisy_.log(LogLevel::kInfo, "handshake-closed", "{} closed the connection during the handshake", c.peer);
      } else {
        log_.debug("{} closed its control session", c.peer);
      }
    } else {
      log_.debug("{}: {}", c.peer, errno_text());
    }
    close_conn(c);
    return false;
  }

  // Handles every complete frame in the input while the session is free to
  // take the next request.
  void process(Conn& c) {
    while (c.state != State::kClosing && !c.fence_pending && !c.handoff && c.pending_out() < kMaxPendingOutput) {
      auto bytes = bytes_of(c.in);
      Result<size_t> len = wire::control_frame_length(bytes);
      if (!len) {
        protocol_error(c, len.status().message());
        return;
      }
      if (*len == 0 || *len > bytes.size()) return;  // need more
      Result<wire::ControlMessage> msg = wire::decode_control(bytes.first(*len));
      c.in.erase(0, *len);
      if (!msg) {
        protocol_error(c, msg.status().message());
        return;
      }
      if (c.state == State::kHandshake) handshake(c, *msg);
      else request(c, *msg);
    }
  }

  void handshake(Conn& c, const wire::ControlMessage& m) {
    const auto* hello = std::get_if<wire::Hello>(&m);
    if (hello == nullptr) {
      protocol_error(c, std::string("expected Hello, got ") + std::string(type_name(wire::control_type(m))));
      return;
    }
    Digest256 expected = hmac_sha256(secret_bytes(), bytes_of(wire::hello_mac_input(c.nonce, *hello)));
    bool mac_ok = constant_time_equal(expected, hello->mac);
    if (hello->cluster_id != cluster_id_ || !mac_ok) {
      ++auth_failures_;
      std::string why = hello->cluster_id != cluster_id_
                            ? fmt::format("cluster id {:#x} (this node serves cluster {:#x})", hello->cluster_id,
                                          cluster_id_)
                            : std::string("wrong secret (HMAC mismatch)");
      noisy_.log(LogLevel::kWarn, "auth-failed", "authentication failed for {}: {}; closing", c.peer, why);
      // The reason stays in our log: a peer that does not know the secret
      // learns nothing about this cluster (not even its id) from trying.
      reply_error_and_close(c, Errc::kAuthFailed,
                            "login failed: the memory daemon did not accept this cluster id and secret; check "
                            "--cluster-id and the secret file");
      return;
    }
    if (hello->role == wire::Role::kCompute) {
      if (hello->compute_id == 0) {
        reply_error_and_close(c, Errc::kInvalidArgument, "a compute node needs a compute id in 1..65535");
        return;
      }
      if (hello->incarnation == 0) {
        reply_error_and_close(c, Errc::kInvalidArgument, "a compute node needs a non-zero incarnation");
        return;
      }
      // Generation first, then the bit: an unfence in between makes this
      // session refused later (stale generation), never a fenced one live.
      c.fence_generation = fences_.generation(hello->compute_id);
      if (fences_.is_fenced(hello->compute_id)) {
        log_.warn("refused Hello of fenced compute node {} from {}", hello->compute_id, c.peer);
        reply_error_and_close(c, Errc::kFenced,
                              fmt::format("compute node {} is fenced at memory node {}; a fenced node must not "
                                          "reconnect (fences persist across daemon restarts)",
                                          hello->compute_id, region_.header().node_id));
        return;
      }
      Result<SessionTable::Lease> lease =
          sessions_.acquire(hello->compute_id, hello->incarnation, c.fence_generation, c.fd);
      if (!lease) {
        log_.warn("refused Hello of compute node {} from {} (incarnation {:#x}): {}", hello->compute_id, c.peer,
                  hello->incarnation, lease.status().message());
        reply_error_and_close(c, lease.status().code(), lease.status().message());
        return;
      }
      c.lease = std::move(*lease);
      c.peer = fmt::format("compute {} ({})", hello->compute_id, c.peer);
    } else if (hello->role == wire::Role::kAdmin) {
      if (hello->compute_id != 0 || hello->incarnation != 0) {
        reply_error_and_close(c, Errc::kInvalidArgument, "an admin session must use compute id 0 and incarnation 0");
        return;
      }
      c.peer = fmt::format("admin ({})", c.peer);
    } else {
      protocol_error(c, "unknown role");
      return;
    }
    c.role = hello->role;
    c.compute_id = hello->compute_id;
    c.pid = hello->pid;
    c.client_nonce = hello->client_nonce;
    c.state = State::kSession;
    pending_.remove(c.id);
    // Hello.pid is the client's claim, for the log only (never signalled).
    log_.debug("{}: session established (claims pid {})", c.peer, c.pid);
    // Our half of the mutual login: only a holder of the secret can MAC the
    // client's fresh nonce, so the client knows it talks to its cluster.
    wire::HelloOk ok{region_info(), {}};
    ok.mac = hmac_sha256(secret_bytes(), bytes_of(wire::hello_ok_mac_input(c.nonce, *hello, ok.region)));
    wire::encode_control(c.out, ok);
  }

  void request(Conn& c, const wire::ControlMessage& m) {
    // A compute session from before a fence stays refused, also after its
    // id was unfenced for reuse (it could otherwise open a data plane).
    if (c.role == wire::Role::kCompute && fences_.refuses(c.compute_id, c.fence_generation)) {
      reply_error_and_close(c, Errc::kFenced, fmt::format("compute node {} was fenced", c.compute_id));
      return;
    }
    std::visit(
        [&](const auto& msg) {
          using T = std::decay_t<decltype(msg)>;
          if constexpr (std::is_same_v<T, wire::RegionInfoRequest>) {
            wire::encode_control(c.out, wire::RegionInfoReply{region_info()});
          } else if constexpr (std::is_same_v<T, wire::StatsRequest>) {
            wire::encode_control(c.out, stats());
          } else if constexpr (std::is_same_v<T, wire::Fence>) {
            if (c.role != wire::Role::kAdmin) {
              reply_error(c, Errc::kInvalidArgument, "Fence needs an admin session (role admin)");
            } else if (std::find(msg.compute_ids.begin(), msg.compute_ids.end(), 0) != msg.compute_ids.end()) {
              reply_error(c, Errc::kInvalidArgument, "compute id 0 cannot be fenced");
            } else {
              log_.info("{} requests a fence of compute {}", c.peer, compute_nodes_text(msg.compute_ids));
              c.fence_pending = true;
              fence_worker_.submit(c.id, msg.compute_ids);
            }
          } else if constexpr (std::is_same_v<T, wire::Unfence>) {
            if (c.role != wire::Role::kAdmin) {
              reply_error(c, Errc::kInvalidArgument, "Unfence needs an admin session (role admin)");
            } else if (Status s = fences_.unfence(msg.compute_id); !s) {
              reply_error(c, s.code(), s.message());
            } else {
              log_.info("{} unfenced compute id {}", c.peer, msg.compute_id);
              wire::encode_control(c.out, wire::Ok{});
            }
          } else if constexpr (std::is_same_v<T, wire::SetupTcp>) {
            if (c.role != wire::Role::kCompute) {
              reply_error(c, Errc::kInvalidArgument, "SetupTcp needs a compute session");
            } else {
              if (msg.frame_mac) c.frame_mac = wire::frame_mac_keys(secret_bytes(), c.nonce, c.client_nonce);
              wire::encode_control(c.out, wire::Ok{});
              c.handoff = true;
            }
          } else if constexpr (std::is_same_v<T, wire::SetupShm>) {
            if (c.role != wire::Role::kCompute) {
              reply_error(c, Errc::kInvalidArgument, "SetupShm needs a compute session");
              return;
            }
            // No registration here: the process to kill at a fence is the
            // one the kernel names as the peer of the hand-off socket, once
            // it presents this token (memory/shm_fd_server.h).
            Result<std::array<uint8_t, 32>> token = shm_.issue(c.id, c.compute_id, c.fence_generation);
            if (!token) {
              log_.warn("{}: SetupShm refused: {}", c.peer, token.status().to_string());
              reply_error(c, token.status().code(), token.status().message());
              return;
            }
            wire::ShmInfo info;
            info.socket_path = shm_.socket_path();
            info.token = *token;
            info.region_size = region_.size();
            info.device = region_.device();
            info.inode = region_.inode();
            info.is_pmem = region_.is_pmem();
            wire::encode_control(c.out, info);
          } else if constexpr (std::is_same_v<T, wire::SetupVerbs>) {
            if (c.role != wire::Role::kCompute) {
              reply_error(c, Errc::kInvalidArgument, "SetupVerbs needs a compute session");
              return;
            }
            if (verbs_ == nullptr) {
              reply_error(c, Errc::kUnsupported,
                          "this memory daemon serves no verbs data plane (no RDMA device, or started with --verbs "
                          "off); its log says which");
              return;
            }
            Result<wire::VerbsInfo> info = verbs_->setup(c.id, c.compute_id, c.fence_generation, msg);
            if (!info) {
              log_.warn("{}: SetupVerbs refused: {}", c.peer, info.status().to_string());
              reply_error(c, info.status().code(), info.status().message());
              return;
            }
            log_.debug("{}: verbs data plane, queue pair {:#x} to the client's {:#x}", c.peer, info->qp.qpn,
                       msg.qp.qpn);
            wire::encode_control(c.out, *info);
          } else {
            protocol_error(c, std::string("unexpected ") + std::string(type_name(wire::control_type(m))) +
                                  " in a session");
          }
        },
        m);
  }

  void finish_fences() {
    for (auto& d : fence_worker_.take_done()) {
      if (d.status) ++fence_requests_;
      auto it = conns_.find(d.conn_id);
      if (it == conns_.end()) {
        log_.info("fence of compute {} finished ({}); the requester has gone", compute_nodes_text(d.compute_ids),
                  d.status.to_string());
        continue;
      }
      Conn& c = *it->second;
      c.fence_pending = false;
      if (d.status) {
        for (uint16_t id : d.compute_ids) log_.info("compute node {} is fenced", id);
        wire::encode_control(c.out, wire::Ok{});
      } else {
        reply_error(c, d.status.code(), d.status.message());
      }
      uint64_t id = c.id;
      process(c);  // requests that arrived while the fence ran
      if (conns_.count(id) != 0) flush(c);
    }
  }

  void reply_error(Conn& c, Errc code, std::string message) {
    wire::encode_control(c.out, wire::Error{code, std::move(message)});
  }

  void reply_error_and_close(Conn& c, Errc code, std::string message) {
    reply_error(c, code, std::move(message));
    begin_close(c);
  }

  void protocol_error(Conn& c, const std::string& why) {
    noisy_.log(LogLevel::kWarn, "protocol-error", "{}: protocol error: {}; closing", c.peer, why);
    reply_error_and_close(c, Errc::kProtocol, why);
  }

  void begin_close(Conn& c) {
    if (c.state == State::kHandshake) pending_.remove(c.id);
    c.state = State::kClosing;
    c.deadline = Clock::now() + kCloseLinger;
    c.in.clear();
  }

  // Sends pending output; performs the SetupTcp hand-over and the closing
  // shutdown once the output is out. Returns false if `c` is gone.
  bool flush(Conn& c) {
    while (c.pending_out() > 0) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_head, c.pending_out(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out_head += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else {
        log_.debug("{}: send: {}", c.peer, n < 0 ? errno_text() : "0");
        close_conn(c);
        return false;
      }
    }
    if (c.pending_out() == 0) {
      c.out.clear();
      c.out_head = 0;
      if (c.handoff) {
        hand_over(c);
        return false;
      }
      if (c.state == State::kClosing && !c.shut_wr) {
        ::shutdown(c.fd, SHUT_WR);
        c.shut_wr = true;
      }
    }
    update_interest(c);
    return true;
  }

  void hand_over(Conn& c) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    log_.debug("{}: switching to the tcp data plane", c.peer);
    data_plane_.adopt(TcpSession{c.fd, c.compute_id, c.fence_generation, c.peer, std::move(c.in),
                                 std::move(c.frame_mac), std::move(c.lease)});
    conns_.erase(c.id);  // the fd now belongs to the data plane
  }

  void update_interest(Conn& c) {
    uint32_t want = 0;
    if (c.shut_wr) {
      want = EPOLLIN;
    } else if (c.state != State::kClosing && !c.fence_pending && !c.handoff &&
               c.pending_out() < kMaxPendingOutput) {
      want = EPOLLIN;
    }
    if (c.pending_out() > 0) want |= EPOLLOUT;
    if (want == c.events) return;
    epoll_event e{};
    e.events = want;
    e.data.u64 = c.id;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &e);
    c.events = want;
  }

  void linger_read(Conn& c) {
    char scratch[4096];
    for (;;) {
      ssize_t n = ::recv(c.fd, scratch, sizeof(scratch), 0);
      if (n > 0) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0 && errno == EINTR) continue;
      close_conn(c);
      return;
    }
  }

  // Closes pending handshake `id` so that a newer connection fits (the
  // limits of ControlLimits, or out of file descriptors).
  void evict(uint64_t id, const std::string& why) {
    auto it = conns_.find(id);
    if (it == conns_.end()) {  // cannot happen: pending_ only holds live ids
      pending_.remove(id);
      return;
    }
    Conn& c = *it->second;
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - c.accepted);
    noisy_.log(LogLevel::kWarn, "handshake-evicted",
               "evicting {} (no Hello after {} ms) {}: {} handshakes pending (at most {}, {} per peer address)",
               c.peer, waited.count(), why, pending_.size(), pending_.max_total(), pending_.max_per_peer());
    close_conn(c);
  }

  // accept() ran out of file descriptors: give up the pending handshake the
  // limits would pick first. False if none is pending.
  bool evict_for_descriptor() {
    std::optional<uint64_t> victim = pending_.busiest_oldest();
    if (!victim) return false;
    evict(*victim, "to free a file descriptor (" + errno_text() + ")");
    return true;
  }

  void close_conn(Conn& c) {
    if (c.state == State::kHandshake) pending_.remove(c.id);
    shm_.revoke(c.id);
    if (verbs_ != nullptr) verbs_->close(c.id);
    c.lease.release();  // before the descriptor can be reused
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    conns_.erase(c.id);
  }

  void close_all() {
    for (auto& [id, c] : conns_) {
      shm_.revoke(id);
      if (verbs_ != nullptr) verbs_->close(id);
      c->lease.release();
      if (epoll_fd_ >= 0) ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
      ::close(c->fd);
    }
    conns_.clear();
    pending_ = PendingHandshakes(limits_.max_handshakes, limits_.max_handshakes_per_peer);
  }

  std::span<const uint8_t> secret_bytes() const { return bytes_of(secret_); }

  Region& region_;
  FenceTable& fences_;
  ShmFdServer& shm_;
  VerbsServer* verbs_;  // null without an RDMA device
  TcpDataPlane& data_plane_;
  uint64_t cluster_id_;
  uint64_t incarnation_;
  std::string secret_;
  SessionTable sessions_;
  Logger log_;
  ControlLimits limits_;
  RateLimitedLog noisy_;  // lines outsiders can trigger at will
  Clock::time_point next_log_flush_ = Clock::time_point::max();
  PendingHandshakes pending_;  // connections in State::kHandshake
  FenceWorker fence_worker_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  bool accept_paused_ = false;
  Clock::time_point accept_resume_{};
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  uint64_t next_id_ = 16;  // below are the fixed ids (listen, stop, fence)
  uint64_t auth_failures_ = 0;
  uint64_t fence_requests_ = 0;  // answered Ok (StatsReply.fence_requests)
  uint64_t connections_total_ = 0;
};

ControlServer::ControlServer(Region& region, FenceTable& fences, TcpDataPlane& data_plane, ShmFdServer& shm,
                             VerbsServer* verbs, uint64_t cluster_id, uint64_t incarnation, std::string secret,
                             Logger log, ControlLimits limits)
    : impl_(std::make_unique<Impl>(region, fences, data_plane, shm, verbs, cluster_id, incarnation, std::move(secret),
                                   std::move(log), limits)) {}

ControlServer::~ControlServer() = default;

Result<Endpoint> ControlServer::listen(const Endpoint& ep) { return impl_->listen(ep); }

Status ControlServer::serve(int stop_fd) { return impl_->serve(stop_fd); }

wire::StatsReply ControlServer::stats() const { return impl_->stats(); }

}  // namespace pandora::memd
