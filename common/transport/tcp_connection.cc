#include "common/transport/tcp_connection.h"

#include <poll.h>

#include <algorithm>
#include <cstring>

#include "common/transport/op_check.h"

namespace pandora {

namespace {

// The receive buffer always offers at least this much room to recv().
constexpr size_t kRecvChunk = 64 * 1024;
// Sent bytes at the front of the send buffer are dropped once they exceed
// this and half the buffer (cheap memmove, bounded memory).
constexpr size_t kCompactThreshold = 1024 * 1024;

std::span<const uint8_t> as_bytes(const void* p, size_t n) { return {static_cast<const uint8_t*>(p), n}; }

}  // namespace

TcpConnection::TcpConnection(net::UniqueFd fd, const wire::RegionInfo& region, std::chrono::milliseconds op_timeout,
                             const std::optional<wire::FrameMacKeys>& frame_mac)
    : fd_(std::move(fd)),
      lo_(region.data_offset),
      hi_(region.region_size),
      op_timeout_(op_timeout),
      ops_(256),
      in_(kRecvChunk) {
  if (frame_mac) {
    mac_out_.emplace(frame_mac->client_to_daemon);
    mac_in_.emplace(frame_mac->daemon_to_client);
  }
}

void TcpConnection::post(OpType op, uint64_t remote, uint32_t len, const void* write_from, uint8_t* read_into,
                         uint64_t compare, uint64_t swap, uint64_t wr_id) {
  Op o;
  o.wr_id = wr_id;
  o.op = op;
  o.len = len;
  if (health_ != Errc::kOk) {
    o.done = true;
    o.status = health_;
  } else if (Errc e = transport_detail::check_op(op, remote, len, lo_, hi_); e != Errc::kOk) {
    o.done = true;
    o.status = e;
  } else {
    o.tag = next_tag_++;
    o.read_into = read_into;
    wire::RequestHeader h{};
    h.magic = wire::kFrameMagic;
    h.op = static_cast<uint8_t>(op);
    h.flags = 0;
    h.len = len;
    h.tag = o.tag;
    h.addr = remote;
    h.compare = compare;
    h.swap = swap;
    const size_t frame_begin = out_.size();
    wire::encode_request(out_, h, op == OpType::kWrite ? as_bytes(write_from, len) : std::span<const uint8_t>{});
    if (mac_out_) mac_out_->seal(out_, frame_begin);
  }
  ops_.push_back(o);
}

void TcpConnection::post_read(uint64_t remote, void* local, uint32_t len, uint64_t wr_id) {
  post(OpType::kRead, remote, len, nullptr, static_cast<uint8_t*>(local), 0, 0, wr_id);
}

void TcpConnection::post_write(uint64_t remote, const void* local, uint32_t len, uint64_t wr_id, Durability) {
  // The daemon persists every WRITE and atomic before answering (the frame
  // carries no durability): kVisible costs the same as kPersistent here.
  post(OpType::kWrite, remote, len, local, nullptr, 0, 0, wr_id);
}

void TcpConnection::post_cas(uint64_t remote, uint64_t expected, uint64_t desired, uint64_t wr_id, Durability) {
  post(OpType::kCas, remote, 8, nullptr, nullptr, expected, desired, wr_id);
}

void TcpConnection::post_faa(uint64_t remote, uint64_t add, uint64_t wr_id, Durability) {
  post(OpType::kFaa, remote, 8, nullptr, nullptr, add, 0, wr_id);
}

void TcpConnection::flush() {
  if (flushed_ops_ == ops_.size()) return;
  if (health_ == Errc::kOk) {
    auto deadline = Clock::now() + op_timeout_;
    for (size_t i = flushed_ops_; i < ops_.size(); ++i) ops_[i].deadline = deadline;
    flushed_bytes_ = out_.size();
  }
  flushed_ops_ = ops_.size();
  if (health_ == Errc::kOk) send_pending();
}

void TcpConnection::send_pending() {
  while (has_unsent()) {
    Errc err = Errc::kOk;
    ssize_t n = net::send_some(fd_.get(), as_bytes(out_.data() + sent_, flushed_bytes_ - sent_), &err);
    if (n < 0) {
      fail_all(Errc::kDisconnected, Errc::kDisconnected);
      return;
    }
    if (n == 0) break;
    sent_ += static_cast<size_t>(n);
  }
  if (sent_ == out_.size()) {
    out_.clear();
    sent_ = flushed_bytes_ = 0;
  } else if (sent_ > kCompactThreshold && sent_ > out_.size() / 2) {
    out_.erase(0, sent_);
    flushed_bytes_ -= sent_;
    sent_ = 0;
  }
}

void TcpConnection::receive() {
  while (health_ == Errc::kOk) {
    if (in_begin_ == in_end_) in_begin_ = in_end_ = 0;
    if (in_.size() - in_end_ < kRecvChunk) {
      if (in_begin_ > 0) {
        std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
        in_end_ -= in_begin_;
        in_begin_ = 0;
      }
      // Only a frame larger than the buffer (a big READ) gets here twice.
      if (in_.size() - in_end_ < kRecvChunk) in_.resize(std::max(in_.size() * 2, in_end_ + kRecvChunk));
    }
    Errc err = Errc::kOk;
    ssize_t n = net::recv_some(fd_.get(), std::span(in_.data() + in_end_, in_.size() - in_end_), &err);
    if (n == 0) return;
    if (n < 0) {
      fail_all(Errc::kDisconnected, Errc::kDisconnected);
      return;
    }
    in_end_ += static_cast<size_t>(n);
    decode_responses();
  }
}

void TcpConnection::decode_responses() {
  std::string why;  // only filled (and allocated) for a malformed frame
  while (health_ == Errc::kOk && in_begin_ < in_end_) {
    wire::DecodedResponse r;
    const std::span<const uint8_t> avail(in_.data() + in_begin_, in_end_ - in_begin_);
    auto res = wire::decode_response(avail, r, &why);
    if (res == wire::DecodeResult::kNeedMore) return;
    size_t consumed = r.consumed;
    if (res == wire::DecodeResult::kOk && mac_in_) {
      // Checked before the response completes anything: a forged READ
      // payload never reaches the caller's buffer.
      if (avail.size() - consumed < wire::kFrameMacBytes) return;
      if (!mac_in_->check(avail.first(consumed), avail.subspan(consumed, wire::kFrameMacBytes))) {
        res = wire::DecodeResult::kMalformed;
      }
      consumed += wire::kFrameMacBytes;
    }
    if (res != wire::DecodeResult::kOk || !complete_one(r)) {
      fail_all(Errc::kDisconnected, Errc::kDisconnected);
      return;
    }
    if (health_ != Errc::kOk) return;  // fenced: the buffers are gone
    in_begin_ += consumed;
  }
}

void TcpConnection::advance_cursor() {
  while (resp_cursor_ < ops_.size() && ops_[resp_cursor_].done) ++resp_cursor_;
}

bool TcpConnection::complete_one(const wire::DecodedResponse& r) {
  if (!in_flight()) return false;  // a response nobody asked for
  Op& o = ops_[resp_cursor_];
  if (r.header.tag != o.tag || r.header.op != static_cast<uint8_t>(o.op)) return false;
  auto status = static_cast<Errc>(r.header.status);
  if (status == Errc::kOk && o.op == OpType::kRead) {
    if (r.payload.size() != o.len) return false;
    std::memcpy(o.read_into, r.payload.data(), o.len);
  } else if (!r.payload.empty()) {
    return false;
  }
  o.done = true;
  o.status = status;
  o.value = (status == Errc::kOk && (o.op == OpType::kCas || o.op == OpType::kFaa)) ? r.header.value : 0;
  ++resp_cursor_;
  if (status == Errc::kFenced) fail_all(Errc::kFenced, Errc::kFenced);
  return true;
}

void TcpConnection::check_timeout() {
  if (!in_flight()) return;
  if (Clock::now() >= ops_[resp_cursor_].deadline) fail_all(Errc::kTimeout, Errc::kTimeout);
}

void TcpConnection::fail_all(Errc health, Errc outstanding_code) {
  health_ = health;
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!ops_[i].done) {
      ops_[i].done = true;
      ops_[i].status = outstanding_code;
    }
  }
  // A broken connection completes everything, flushed or not.
  flushed_ops_ = ops_.size();
  resp_cursor_ = ops_.size();
  fd_.reset();
  out_.clear();
  sent_ = flushed_bytes_ = 0;
  in_begin_ = in_end_ = 0;
}

size_t TcpConnection::drain(std::span<Completion> out) {
  size_t n = 0;
  while (n < out.size() && flushed_ops_ > 0 && ops_.front().done) {
    const Op& o = ops_.front();
    out[n++] = Completion{o.wr_id, o.op, o.status, o.value};
    ops_.pop_front();
    --flushed_ops_;
    if (resp_cursor_ > 0) --resp_cursor_;
  }
  return n;
}

size_t TcpConnection::poll(std::span<Completion> out) {
  if (health_ == Errc::kOk) {
    send_pending();
    if (health_ == Errc::kOk && in_flight()) receive();
    if (health_ == Errc::kOk) check_timeout();
  }
  return drain(out);
}

size_t TcpConnection::wait(std::span<Completion> out, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (size_t n = poll(out); n > 0) return n;
    // Broken connections have completed everything already; an idle one has
    // nothing that could complete.
    if (health_ != Errc::kOk || !in_flight()) return 0;
    if (Clock::now() >= deadline) return 0;
    // Wake for data, for send space, or when the oldest op times out.
    auto wake = std::min(deadline, ops_[resp_cursor_].deadline);
    pollfd p{fd_.get(), static_cast<short>(POLLIN | (has_unsent() ? POLLOUT : 0)), 0};
    ::poll(&p, 1, net::poll_timeout_ms(wake));
  }
}

}  // namespace pandora
