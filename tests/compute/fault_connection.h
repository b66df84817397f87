// A Connection that wraps a real one and lets a test decide the fate of
// each posted operation: pass it through, drop it (it never reaches the
// memory node; it completes with an error), or let it land and report an
// error anyway (a timed-out CAS that still reaches the daemon).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/transport/transport.h"

namespace pandora::testing {

enum class Fate : uint8_t { kPass, kDrop, kLandButFail };

struct PostedOp {
  OpType op;
  uint64_t remote;
  uint32_t len;  // 8 for CAS / FAA
  Durability durability = Durability::kPersistent;  // as posted (READ: kPersistent)
};

// Decides an operation's fate; shared by the connections of one test.
using FaultRule = std::function<Fate(size_t node, const PostedOp& op)>;

class FaultConnection final : public Connection {
 public:
  FaultConnection(std::unique_ptr<Connection> inner, size_t node, std::shared_ptr<FaultRule> rule,
                  Errc error = Errc::kTimeout)
      : inner_(std::move(inner)), node_(node), rule_(std::move(rule)), error_(error) {}

  void post_read(uint64_t remote, void* local, uint32_t len, uint64_t wr_id) override {
    if (admit({OpType::kRead, remote, len}, wr_id)) inner_->post_read(remote, local, len, wr_id);
  }
  void post_write(uint64_t remote, const void* local, uint32_t len, uint64_t wr_id,
                  Durability d = Durability::kPersistent) override {
    if (admit({OpType::kWrite, remote, len, d}, wr_id)) inner_->post_write(remote, local, len, wr_id, d);
  }
  void post_cas(uint64_t remote, uint64_t expected, uint64_t desired, uint64_t wr_id,
                Durability d = Durability::kPersistent) override {
    if (admit({OpType::kCas, remote, 8, d}, wr_id)) inner_->post_cas(remote, expected, desired, wr_id, d);
  }
  void post_faa(uint64_t remote, uint64_t add, uint64_t wr_id, Durability d = Durability::kPersistent) override {
    if (admit({OpType::kFaa, remote, 8, d}, wr_id)) inner_->post_faa(remote, add, wr_id, d);
  }
  void flush() override { inner_->flush(); }
  size_t poll(std::span<Completion> out) override { return fix(out, inner_->poll(skip_dropped(out))); }
  size_t wait(std::span<Completion> out, std::chrono::milliseconds timeout) override {
    if (!dropped_.empty()) return poll(out);
    return fix(out, inner_->wait(out, timeout));
  }
  size_t outstanding() const override { return inner_->outstanding() + dropped_.size(); }
  Errc health() const override { return inner_->health(); }
  void abandon() override { inner_->abandon(); }
  uint64_t data_begin() const override { return inner_->data_begin(); }
  uint64_t data_end() const override { return inner_->data_end(); }
  std::string_view backend() const override { return inner_->backend(); }

  // Wraps every connection of `conns` (index = memory node).
  static std::vector<std::unique_ptr<Connection>> wrap(std::vector<std::unique_ptr<Connection>> conns,
                                                       const std::shared_ptr<FaultRule>& rule) {
    std::vector<std::unique_ptr<Connection>> out;
    for (size_t n = 0; n < conns.size(); ++n) out.push_back(std::make_unique<FaultConnection>(std::move(conns[n]), n, rule));
    return out;
  }

 private:
  // True: hand the operation to the real connection.
  bool admit(const PostedOp& op, uint64_t wr_id) {
    switch ((*rule_)(node_, op)) {
      case Fate::kPass: return true;
      case Fate::kDrop: dropped_.push_back(Completion{wr_id, op.op, error_, 0}); return false;
      case Fate::kLandButFail: failing_[wr_id] = true; return true;
    }
    return true;
  }
  // Moves the dropped operations' completions to the front of `out`; the
  // rest of `out` is for the real connection.
  std::span<Completion> skip_dropped(std::span<Completion> out) {
    pending_ = 0;
    while (!dropped_.empty() && pending_ < out.size()) {
      out[pending_++] = dropped_.front();
      dropped_.pop_front();
    }
    return out.subspan(pending_);
  }
  size_t fix(std::span<Completion> out, size_t real) {
    for (size_t i = pending_; i < pending_ + real; ++i) {
      auto f = failing_.find(out[i].wr_id);
      if (f == failing_.end()) continue;
      out[i].status = error_;
      out[i].value = 0;
      failing_.erase(f);
    }
    const size_t n = pending_ + real;
    pending_ = 0;
    return n;
  }

  std::unique_ptr<Connection> inner_;
  size_t node_;
  std::shared_ptr<FaultRule> rule_;
  Errc error_;
  std::deque<Completion> dropped_;
  std::unordered_map<uint64_t, bool> failing_;
  size_t pending_ = 0;
};

}  // namespace pandora::testing
