#include "memory/tcp_data_plane.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/wire/frame.h"
#include "common/word_copy.h"

namespace pandora::memd {
namespace {

using Clock = std::chrono::steady_clock;

// Counters of one thread; written by that thread only (relaxed), summed by
// add_stats.
struct alignas(64) WorkerCounters {
  std::atomic<uint64_t> reads{0}, writes{0}, cas{0}, faa{0};
  std::atomic<uint64_t> bytes_read{0}, bytes_written{0};
  std::atomic<uint64_t> fenced_ops{0}, malformed_frames{0}, bad_frame_macs{0};
  std::atomic<uint64_t> connections{0};
};

void bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// Contiguous input bytes [head, tail) of a growable buffer; compacts before
// growing so a long-lived stream does not creep.
class InputBuffer {
 public:
  std::span<const uint8_t> data() const { return {buf_.data() + head_, tail_ - head_}; }
  size_t size() const { return tail_ - head_; }
  void consume(size_t n) {
    head_ += n;
    if (head_ == tail_) head_ = tail_ = 0;
  }
  // A writable span of at least `n` bytes at the end.
  std::span<uint8_t> space(size_t n) {
    if (buf_.size() - tail_ < n && head_ > 0) {
      std::memmove(buf_.data(), buf_.data() + head_, tail_ - head_);
      tail_ -= head_;
      head_ = 0;
    }
    if (buf_.size() - tail_ < n) buf_.resize(tail_ + n);
    return {buf_.data() + tail_, buf_.size() - tail_};
  }
  void commit(size_t n) { tail_ += n; }
  void append(std::string_view s) {
    if (s.empty()) return;
    auto sp = space(s.size());
    std::memcpy(sp.data(), s.data(), s.size());
    commit(s.size());
  }
  void clear() { head_ = tail_ = 0; }

 private:
  std::vector<uint8_t> buf_;
  size_t head_ = 0, tail_ = 0;
};

struct Conn {
  uint64_t id = 0;
  int fd = -1;
  uint16_t compute_id = 0;
  uint32_t fence_generation = 0;  // FenceTable::generation at login
  std::string peer;
  SessionTable::Lease lease;
  // Frame MACs on: requests are checked with mac_in, responses sealed with
  // mac_out.
  std::optional<wire::FrameMac> mac_in, mac_out;
  InputBuffer in;
  std::string out;
  size_t out_head = 0;
  bool closing = false;     // no more requests: drain responses, then close
  bool backlog = false;     // complete requests left in `in` when pump() yielded
  bool shut_wr = false;     // closing and our side is shut down: wait for EOF
  Clock::time_point close_deadline{};
  uint32_t events = 0;      // epoll interest currently registered

  size_t pending_out() const { return out.size() - out_head; }
};

}  // namespace

class TcpDataPlane::Worker {
 public:
  Worker(size_t index, Region& region, FenceTable& fences, std::chrono::microseconds busy_poll, Logger log)
      : index_(index),
        region_(region),
        fences_(fences),
        slot_(fences.slot(index)),
        busy_poll_(busy_poll),
        log_(std::move(log)) {}

  ~Worker() {
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    std::lock_guard<std::mutex> lock(inbox_mu_);
    for (auto& h : inbox_) {
      h.lease.release();  // before the descriptor can be reused
      ::close(h.fd);
    }
  }

  Status start() {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) return Status(Errc::kIo, std::string("epoll/eventfd: ") + strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeId;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
      return Status(Errc::kIo, std::string("epoll_ctl: ") + strerror(errno));
    }
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error& e) {
      return Status(Errc::kIo, std::string("cannot start data-plane thread: ") + e.what());
    }
    return Status::ok();
  }

  void request_stop() {
    stop_.store(true, std::memory_order_release);
    wake();
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

  void adopt(TcpSession h) {
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      inbox_.push_back(std::move(h));
    }
    handoffs_pending_.fetch_add(1, std::memory_order_relaxed);
    wake();
  }

  // Connections owned or about to be owned: the balancing criterion.
  uint64_t load() const {
    return counters_.connections.load(std::memory_order_relaxed) + handoffs_pending_.load(std::memory_order_relaxed);
  }

  void add_stats(wire::StatsReply& s) const {
    auto r = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    s.reads += r(counters_.reads);
    s.writes += r(counters_.writes);
    s.cas += r(counters_.cas);
    s.faa += r(counters_.faa);
    s.bytes_read += r(counters_.bytes_read);
    s.bytes_written += r(counters_.bytes_written);
    s.fenced_ops += r(counters_.fenced_ops);
    s.malformed_frames += r(counters_.malformed_frames);
    s.bad_frame_macs += r(counters_.bad_frame_macs);
    s.connections_current += r(counters_.connections);
  }

 private:
  static constexpr uint64_t kWakeId = 0;

  void wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }

  void run() {
    epoll_event events[64];
    // Busy polling: after an event, poll without sleeping for busy_poll_, so
    // the next request of a client in a request/response loop does not pay
    // the wake-up of a sleeping thread (tens of microseconds on an idle VM).
    std::chrono::steady_clock::time_point spin_until{};
    while (!stop_.load(std::memory_order_acquire)) {
      const bool spin = busy_poll_.count() > 0 && std::chrono::steady_clock::now() < spin_until;
      int timeout = spin ? 0 : closing_count_ > 0 ? 100 : -1;
      int n = ::epoll_wait(epoll_fd_, events, 64, timeout);
      if (n < 0) {
        if (errno == EINTR) continue;
        log_.error("data-plane thread {}: epoll_wait failed: {}", index_, strerror(errno));
        break;
      }
      if (n > 0 && busy_poll_.count() > 0) spin_until = std::chrono::steady_clock::now() + busy_poll_;
      for (int i = 0; i < n; ++i) {
        // Copied out: epoll_event is packed, its u64 is misaligned.
        const uint64_t id = events[i].data.u64;
        if (id == kWakeId) {
          drain_inbox();
          continue;
        }
        auto it = conns_.find(id);
        if (it == conns_.end()) continue;  // closed earlier in this round
        on_event(*it->second, events[i].events);
      }
      if (closing_count_ > 0) expire_closing();
    }
    // Shutdown: the last batch has completed (batches never span loop
    // iterations). Give each client one chance to receive what it is owed.
    drain_inbox();
    std::vector<uint64_t> ids;
    for (auto& [id, c] : conns_) ids.push_back(id);
    for (uint64_t id : ids) {
      Conn& c = *conns_[id];
      if (send_pending(c)) close_conn(c, "daemon shutting down");
    }
  }

  void drain_inbox() {
    uint64_t v;
    [[maybe_unused]] ssize_t r = ::read(wake_fd_, &v, sizeof(v));
    std::vector<TcpSession> items;
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      items.swap(inbox_);
    }
    for (auto& h : items) {
      handoffs_pending_.fetch_sub(1, std::memory_order_relaxed);
      auto c = std::make_unique<Conn>();
      c->id = next_id_++;
      c->fd = h.fd;
      c->compute_id = h.compute_id;
      c->fence_generation = h.fence_generation;
      c->peer = std::move(h.peer);
      c->lease = std::move(h.lease);
      if (h.frame_mac) {
        c->mac_in.emplace(h.frame_mac->client_to_daemon);
        c->mac_out.emplace(h.frame_mac->daemon_to_client);
      }
      c->in.append(h.pending_input);
      int one = 1;
      ::setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = c->id;
      if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        log_.error("data-plane thread {}: cannot watch connection of {}: {}", index_, c->peer, strerror(errno));
        c->lease.release();
        ::close(c->fd);
        continue;
      }
      c->events = EPOLLIN;
      bump(counters_.connections);
      log_.debug("data-plane thread {}: serving {}", index_, c->peer);
      Conn& ref = *c;
      conns_.emplace(c->id, std::move(c));
      pump(ref);
    }
  }

  void on_event(Conn& c, uint32_t ev) {
    if (ev & (EPOLLERR | EPOLLHUP)) {
      // Reset, or both directions shut down: nobody is left to answer.
      close_conn(c, (ev & EPOLLERR) ? "socket error" : "hung up");
      return;
    }
    if (c.shut_wr) {
      linger_read(c);
      return;
    }
    if ((ev & EPOLLIN) && !c.closing && c.pending_out() < TcpDataPlane::kMaxPendingOutput) {
      if (!read_some(c)) return;  // closed
    }
    pump(c);
  }

  // Reads one chunk. Returns false if the connection was closed.
  bool read_some(Conn& c) {
    size_t want = TcpDataPlane::kReadChunk;
    // A large WRITE frame may need more than a chunk; read it in one go.
    auto pending = c.in.data();
    if (pending.size() >= sizeof(wire::RequestHeader)) {
      wire::RequestHeader h;
      std::memcpy(&h, pending.data(), sizeof(h));
      if (h.op == static_cast<uint8_t>(wire::Op::kWrite) && h.len <= wire::kMaxIoBytes) {
        size_t frame = sizeof(h) + h.len + (c.mac_in ? wire::kFrameMacBytes : 0);
        if (frame > pending.size()) want = std::max(want, frame - pending.size());
      }
    }
    auto space = c.in.space(want);
    ssize_t n = ::recv(c.fd, space.data(), want, 0);
    if (n > 0) {
      c.in.commit(static_cast<size_t>(n));
      return true;
    }
    if (n == 0) {
      // The peer closed (or half-closed) its side: execute what is complete,
      // then close after the responses are sent.
      uint64_t id = c.id;
      pump(c);
      if (conns_.count(id) == 0) return false;
      if (!c.closing) {
        if (c.in.size() > 0) {
          log_.info("{}: connection closed by the peer in the middle of a frame ({} bytes discarded)", c.peer,
                    c.in.size());
        } else {
          log_.debug("{}: connection closed by the peer", c.peer);
        }
        begin_close(c);
      }
      pump(c);
      return false;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
    close_conn(c, strerror(errno));
    return false;
  }

  // Executes buffered requests, sends responses, and updates the epoll
  // interest; loops a few times when the client keeps up, then yields to
  // other connections.
  void pump(Conn& c) {
    bool output_full = false;
    for (int round = 0; round < 4; ++round) {
      output_full = false;
      if (!c.closing) output_full = execute_batch(c);
      if (!send_pending(c)) return;  // closed
      if (!output_full || c.pending_out() >= TcpDataPlane::kMaxPendingOutput / 2) break;
    }
    // Requests still buffered (the rounds ran out while the client kept up)
    // may never see another EPOLLIN: the client may have sent everything
    // already. Ask for EPOLLOUT, which a writable socket reports at once, so
    // this connection resumes after the others had their turn.
    c.backlog = output_full && !c.closing;
    if (c.closing && c.pending_out() == 0 && !c.shut_wr) {
      // All responses are out; tell the client we are done and wait
      // (bounded) for its EOF so the last bytes are not lost to a reset.
      ::shutdown(c.fd, SHUT_WR);
      c.shut_wr = true;
    }
    update_interest(c);
  }

  // Decodes and executes every complete frame (while the output is below the
  // limit) as one batch. Returns true if it stopped because the output is
  // full.
  bool execute_batch(Conn& c) {
    if (c.in.size() == 0) return false;
    bool output_full = false;
    bool need_drain = false;
    {
      BatchScope batch(slot_);
      for (;;) {
        if (c.pending_out() >= TcpDataPlane::kMaxPendingOutput) {
          output_full = true;
          break;
        }
        auto data = c.in.data();
        if (data.empty()) break;
        wire::DecodedRequest req;
        std::string why;
        wire::DecodeResult r = wire::decode_request(data, req, &why);
        if (r == wire::DecodeResult::kNeedMore) break;
        if (r == wire::DecodeResult::kMalformed) {
          bump(counters_.malformed_frames);
          log_.warn("{}: malformed data-plane frame ({}); closing the connection", c.peer, why);
          begin_close(c);
          break;
        }
        size_t consumed = req.consumed;
        if (c.mac_in) {
          // Checked before anything executes: a changed frame never touches
          // memory.
          if (data.size() - consumed < wire::kFrameMacBytes) break;  // need more
          if (!c.mac_in->check(data.first(consumed), data.subspan(consumed, wire::kFrameMacBytes))) {
            bump(counters_.bad_frame_macs);
            log_.warn("{}: data-plane frame with a wrong MAC (changed on the way, or not from the client that "
                      "logged in); closing the connection",
                      c.peer);
            begin_close(c);
            break;
          }
          consumed += wire::kFrameMacBytes;
        }
        const size_t response_begin = c.out.size();
        need_drain |= execute(c, req);
        if (c.mac_out && c.out.size() > response_begin) c.mac_out->seal(c.out, response_begin);
        c.in.consume(consumed);
        if (c.closing) break;
      }
      // One drain makes every WRITE/CAS/FAA of the batch durable before any
      // of its responses leaves (the responses are sent after this scope).
      if (need_drain) region_.drain();
    }
    if (c.closing) c.in.clear();
    return output_full;
  }

  // Executes one decoded request, appending its response. Returns true when
  // it modified memory (a drain is needed).
  bool execute(Conn& c, const wire::DecodedRequest& req) {
    const wire::RequestHeader& h = req.header;
    wire::ResponseHeader resp{};
    resp.magic = wire::kFrameMagic;
    resp.op = h.op;
    resp.tag = h.tag;
    if (fences_.refuses(c.compute_id, c.fence_generation)) {
      bump(counters_.fenced_ops);
      resp.status = static_cast<uint8_t>(Errc::kFenced);
      wire::encode_response(c.out, resp);
      return false;
    }
    Errc access = wire::check_access(h, region_.data_offset(), region_.size());
    if (access != Errc::kOk) {
      log_.warn("{}: {} of {} bytes at {:#x} refused ({}; accessible range [{:#x}, {:#x})); closing the connection",
                c.peer, op_text(h.op), h.len, h.addr, errc_name(access), region_.data_offset(), region_.size());
      resp.status = static_cast<uint8_t>(access);
      wire::encode_response(c.out, resp);
      begin_close(c);
      return false;
    }
    resp.status = static_cast<uint8_t>(Errc::kOk);
    switch (static_cast<wire::Op>(h.op)) {
      case wire::Op::kRead: {
        // Word-atomic copy: a latch or version word is never seen torn by a
        // concurrent CAS/FAA (the guarantee an RDMA NIC gives).
        resp.len = h.len;
        wire::encode_response(c.out, resp);
        const size_t at = c.out.size();
        c.out.resize(at + h.len);
        copy_from_region(c.out.data() + at, region_.base() + h.addr, h.len);
        bump(counters_.reads);
        bump(counters_.bytes_read, h.len);
        return false;
      }
      case wire::Op::kWrite:
        region_.copy_nodrain(h.addr, req.payload.data(), h.len);
        wire::encode_response(c.out, resp);
        bump(counters_.writes);
        bump(counters_.bytes_written, h.len);
        return true;
      case wire::Op::kCas: {
        uint64_t expected = h.compare;
        // On failure `expected` receives the current value; on success it
        // already equals the old value.
        __atomic_compare_exchange_n(region_.word(h.addr), &expected, h.swap, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        region_.flush(h.addr, 8);
        resp.value = expected;
        wire::encode_response(c.out, resp);
        bump(counters_.cas);
        return true;
      }
      case wire::Op::kFaa:
        resp.value = __atomic_fetch_add(region_.word(h.addr), h.compare, __ATOMIC_SEQ_CST);
        region_.flush(h.addr, 8);
        wire::encode_response(c.out, resp);
        bump(counters_.faa);
        return true;
    }
    // decode_request rejects unknown ops; never reached.
    begin_close(c);
    return false;
  }

  static const char* op_text(uint8_t op) {
    switch (static_cast<wire::Op>(op)) {
      case wire::Op::kRead: return "READ";
      case wire::Op::kWrite: return "WRITE";
      case wire::Op::kCas: return "CAS";
      case wire::Op::kFaa: return "FAA";
    }
    return "op?";
  }

  // Sends as much pending output as the socket takes. Returns false if the
  // connection was closed.
  bool send_pending(Conn& c) {
    while (c.pending_out() > 0) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_head, c.pending_out(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out_head += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && errno == EINTR) continue;
      close_conn(c, n < 0 ? strerror(errno) : "send returned 0");
      return false;
    }
    if (c.out_head == c.out.size()) {
      c.out.clear();
      c.out_head = 0;
    } else if (c.out_head > (1u << 20)) {
      c.out.erase(0, c.out_head);
      c.out_head = 0;
    }
    return true;
  }

  void update_interest(Conn& c) {
    uint32_t want = 0;
    if (c.shut_wr) want = EPOLLIN;  // waiting for EOF
    else if (!c.closing && c.pending_out() < TcpDataPlane::kMaxPendingOutput) want |= EPOLLIN;
    if (c.pending_out() > 0 || c.backlog) want |= EPOLLOUT;
    if (want == c.events) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = c.id;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
    c.events = want;
  }

  void begin_close(Conn& c) {
    if (c.closing) return;
    c.closing = true;
    c.close_deadline = Clock::now() + std::chrono::milliseconds(TcpDataPlane::kCloseLingerMs);
    ++closing_count_;
  }

  void linger_read(Conn& c) {
    char scratch[4096];
    for (;;) {
      ssize_t n = ::recv(c.fd, scratch, sizeof(scratch), 0);
      if (n > 0) continue;  // discarded: the connection is in error
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n < 0 && errno == EINTR) continue;
      close_conn(c, n == 0 ? "closed" : strerror(errno));
      return;
    }
  }

  void expire_closing() {
    auto now = Clock::now();
    std::vector<uint64_t> expired;
    for (auto& [id, c] : conns_) {
      if (c->closing && now >= c->close_deadline) expired.push_back(id);
    }
    for (uint64_t id : expired) close_conn(*conns_[id], "did not drain in time");
  }

  void close_conn(Conn& c, const char* why) {
    log_.debug("{}: data-plane connection closed ({})", c.peer, why);
    c.lease.release();  // before the descriptor can be reused
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
    if (c.closing) --closing_count_;
    counters_.connections.fetch_sub(1, std::memory_order_relaxed);
    conns_.erase(c.id);  // destroys c
  }

  size_t index_;
  Region& region_;
  FenceTable& fences_;
  QuiescenceSlot& slot_;
  const std::chrono::microseconds busy_poll_;
  Logger log_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex inbox_mu_;
  std::vector<TcpSession> inbox_;
  std::atomic<uint64_t> handoffs_pending_{0};
  WorkerCounters counters_;
  // Owned by the worker thread only.
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  uint64_t next_id_ = 1;  // 0 is the wake-up eventfd
  size_t closing_count_ = 0;
};

TcpDataPlane::TcpDataPlane(Region& region, FenceTable& fences, size_t threads, Logger log,
                           std::chrono::microseconds busy_poll)
    : region_(region), fences_(fences), log_(std::move(log)) {
  for (size_t i = 0; i < threads; ++i) {
    workers_.push_back(
        std::make_unique<Worker>(i, region_, fences_, busy_poll, log_.child("t" + std::to_string(i))));
  }
}

TcpDataPlane::~TcpDataPlane() { stop(); }

Status TcpDataPlane::start() {
  started_ = true;
  for (auto& w : workers_) {
    Status s = w->start();
    if (!s) {
      stop();
      return s;
    }
  }
  return Status::ok();
}

void TcpDataPlane::stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  for (auto& w : workers_) w->request_stop();
  for (auto& w : workers_) w->join();
}

void TcpDataPlane::adopt(TcpSession session) {
  Worker* best = workers_.front().get();
  for (auto& w : workers_) {
    if (w->load() < best->load()) best = w.get();
  }
  best->adopt(std::move(session));
}

void TcpDataPlane::add_stats(wire::StatsReply& out) const {
  for (const auto& w : workers_) w->add_stats(out);
}

}  // namespace pandora::memd
