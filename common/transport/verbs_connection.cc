#include "common/transport/verbs_connection.h"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "common/transport/op_check.h"

namespace pandora {

namespace {

using transport_detail::check_op;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kSessionCheckInterval{1};
constexpr size_t kStageAlign = 64;
// The durability READ's 8 bytes live past the ring, at this offset.
constexpr size_t kScratchOffset = VerbsConnection::kStagingBytes;
constexpr size_t kStagingAlloc = VerbsConnection::kStagingBytes + 4096;

size_t round_up(size_t n) { return (n + kStageAlign - 1) & ~(kStageAlign - 1); }

// What an error completion means for the caller (file comment of the header).
Errc map_wc_status(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_REM_ACCESS_ERR: return Errc::kFenced;
    default: return Errc::kDisconnected;
  }
}

}  // namespace

Result<std::unique_ptr<VerbsConnection>> VerbsConnection::create(const VerbsOptions& options,
                                                                 const wire::RegionInfo& region,
                                                                 std::chrono::milliseconds op_timeout) {
  if (op_timeout.count() <= 0) return Status(Errc::kInvalidArgument, "the operation timeout must be positive");
  if (region.data_offset > region.region_size || region.data_offset % 8 != 0) {
    return Status(Errc::kProtocol, fmt::format("inconsistent region description: size {}, data offset {}",
                                               region.region_size, region.data_offset));
  }
  Result<std::unique_ptr<VerbsDevice>> dev = VerbsDevice::open(options);
  if (!dev) return dev.status();
  std::unique_ptr<VerbsConnection> c(new VerbsConnection());
  c->dev_ = std::move(dev).value();
  ibv_context* ctx = c->dev_->context();
  const auto fail = [&](std::string_view what) {
    return Status(Errc::kIo, fmt::format("{} on {}: {}", what, c->dev_->name(), std::strerror(errno)));
  };

  c->channel_.reset(ibv_create_comp_channel(ctx));
  if (!c->channel_) return fail("ibv_create_comp_channel");
  const int flags = ::fcntl(c->channel_->fd, F_GETFL);
  if (flags < 0 || ::fcntl(c->channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) return fail("fcntl(O_NONBLOCK)");

  const uint32_t depth = std::min<uint32_t>(kSendQueueDepth, static_cast<uint32_t>(c->dev_->attr().max_qp_wr));
  // Completions come only from signalled work requests (at most one per
  // chain) and errors, never more than the send queue holds.
  c->cq_.reset(ibv_create_cq(ctx, static_cast<int>(depth) + 16, nullptr, c->channel_.get(), 0));
  if (!c->cq_) return fail("ibv_create_cq");

  c->staging_ = std::unique_ptr<uint8_t, void (*)(void*)>(
      static_cast<uint8_t*>(std::aligned_alloc(4096, kStagingAlloc)), std::free);
  if (!c->staging_) return Status(Errc::kIo, "out of memory for the verbs staging buffer");
  std::memset(c->staging_.get(), 0, kStagingAlloc);
  c->staging_mr_.reset(register_memory(c->dev_->pd(), c->staging_.get(), kStagingAlloc, IBV_ACCESS_LOCAL_WRITE));
  if (!c->staging_mr_) {
    return Status(Errc::kIo, fmt::format("registering the {} KiB staging buffer on {}: {} (is the locked-memory "
                                         "limit, ulimit -l, large enough?)",
                                         kStagingAlloc / 1024, c->dev_->name(), std::strerror(errno)));
  }

  ibv_qp_init_attr init{};
  init.send_cq = c->cq_.get();
  init.recv_cq = c->cq_.get();
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;
  init.cap.max_send_wr = depth;
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = 64;
  c->qp_.reset(ibv_create_qp(c->dev_->pd(), &init));
  if (!c->qp_) {
    // Some devices have no inline data; the staging buffer does the job.
    init.cap.max_inline_data = 0;
    c->qp_.reset(ibv_create_qp(c->dev_->pd(), &init));
  }
  if (!c->qp_) return fail("ibv_create_qp");
  c->sq_depth_ = std::min(init.cap.max_send_wr, depth);
  c->max_inline_ = init.cap.max_inline_data;
  if (c->sq_depth_ < 2) return Status(Errc::kUnsupported, "the RDMA device allows fewer than 2 send work requests");
  if (Status s = qp_to_init(c->qp_.get(), c->dev_->port(), 0); !s) return s;

  c->psn_ = random_psn();
  c->op_timeout_ = op_timeout;
  c->ack_timeout_ = options.ack_timeout;
  // As many READs/atomics in flight as the device allows (perftest's
  // default too); the daemon grants at most what its side allows.
  c->max_rd_atomic_ = static_cast<uint8_t>(std::clamp(c->dev_->attr().max_qp_init_rd_atom, 1, 128));
  c->lo_ = region.data_offset;
  c->hi_ = region.region_size;
  c->wrs_.resize(c->sq_depth_);
  c->sges_.resize(c->sq_depth_);
  return c;
}

VerbsConnection::~VerbsConnection() {
  // The queue pair goes first so nothing can still use a registration.
  qp_.reset();
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (ops_[i].own_mr != nullptr) ibv_dereg_mr(ops_[i].own_mr);
  }
}

wire::SetupVerbs VerbsConnection::setup_request() const {
  wire::SetupVerbs r;
  r.qp = dev_->address(qp_.get(), psn_);
  r.max_rd_atomic = max_rd_atomic_;
  return r;
}

Status VerbsConnection::connect(const wire::VerbsInfo& info, net::UniqueFd control_fd) {
  if (info.base_va > UINT64_MAX - hi_) {
    return Status(Errc::kProtocol, "the memory daemon's region address overflows with the region's size");
  }
  max_rd_atomic_ = std::min(max_rd_atomic_, info.max_rd_atomic);
  const wire::QpAddress local = dev_->address(qp_.get(), psn_);
  // This end answers no READs or atomics, but RTR wants a non-zero depth.
  if (Status s = qp_to_rtr(qp_.get(), *dev_, local, info.qp, 1); !s) return s;
  if (Status s = qp_to_rts(qp_.get(), psn_, max_rd_atomic_, ack_timeout_); !s) return s;
  rkey_ = info.rkey;
  base_va_ = info.base_va;
  control_fd_ = std::move(control_fd);
  return Status::ok();
}

void VerbsConnection::post(OpType type, uint64_t remote, uint32_t len, void* user, uint64_t a, uint64_t b,
                           uint64_t wr_id, Durability d) {
  Op op;
  op.wr_id = wr_id;
  op.op = type;
  op.len = len;
  op.remote = remote;
  op.user = user;
  op.a = a;
  op.b = b;
  op.persistent = d == Durability::kPersistent;
  if (health_ != Errc::kOk) {
    op.done = true;
    op.status = health_;
  } else if (Errc e = check_op(op.op, op.remote, op.len, lo_, hi_); e != Errc::kOk) {
    op.done = true;
    op.status = e;
  }
  ops_.push_back(op);
  ++outstanding_;
}

void VerbsConnection::post_read(uint64_t remote, void* local, uint32_t len, uint64_t wr_id) {
  post(OpType::kRead, remote, len, local, 0, 0, wr_id);
}

void VerbsConnection::post_write(uint64_t remote, const void* local, uint32_t len, uint64_t wr_id, Durability d) {
  post(OpType::kWrite, remote, len, const_cast<void*>(local), 0, 0, wr_id, d);  // only ever read from
}

void VerbsConnection::post_cas(uint64_t remote, uint64_t expected, uint64_t desired, uint64_t wr_id, Durability d) {
  post(OpType::kCas, remote, 8, nullptr, expected, desired, wr_id, d);
}

void VerbsConnection::post_faa(uint64_t remote, uint64_t add, uint64_t wr_id, Durability d) {
  post(OpType::kFaa, remote, 8, nullptr, add, 0, wr_id, d);
}

bool VerbsConnection::stage(Op& op) {
  if (op.op == OpType::kWrite && op.len <= max_inline_) return true;  // copied by ibv_post_send
  if (op.len > kMaxStagedBytes) {
    const int access = op.op == OpType::kRead ? IBV_ACCESS_LOCAL_WRITE : 0;
    op.own_mr = register_memory(dev_->pd(), op.user, op.len, access);
    if (op.own_mr == nullptr) {
      // Not the connection's fault: this operation fails, later ones go on.
      op.done = true;
      op.status = Errc::kIo;
    }
    return true;
  }
  // A ring over [0, kStagingBytes): allocations and releases both go in
  // posted order, so used bytes are one contiguous (possibly wrapped) run.
  const size_t need = round_up(op.len);
  if (stage_used_ == 0) stage_head_ = 0;
  const size_t tail = (stage_head_ + kStagingBytes - stage_used_) % kStagingBytes;
  const bool free_run_contiguous = stage_used_ > 0 && stage_head_ <= tail;  // free: [head, tail)
  size_t at = 0, held = 0;
  if (free_run_contiguous) {
    if (tail - stage_head_ < need) return false;
    at = stage_head_;
    held = need;
  } else if (kStagingBytes - stage_head_ >= need) {  // free: [head, end) and [0, tail)
    at = stage_head_;
    held = need;
  } else if (tail >= need) {
    at = 0;
    held = (kStagingBytes - stage_head_) + need;  // the skipped end counts as held
  } else {
    return false;
  }
  stage_head_ = (at + need) % kStagingBytes;
  stage_used_ += held;
  op.stage_off = at;
  op.stage_held = held;
  if (op.op == OpType::kWrite) std::memcpy(staging_.get() + at, op.user, op.len);
  return true;
}

void VerbsConnection::release(Op& op) {
  if (op.own_mr != nullptr) {
    ibv_dereg_mr(op.own_mr);
    op.own_mr = nullptr;
  }
  stage_used_ -= op.stage_held;
  op.stage_held = 0;
}

void VerbsConnection::pump() {
  if (health_ != Errc::kOk || sent_ >= flushed_) return;
  const uint64_t in_queue = next_seq_ - 1 - completed_seq_;
  // One slot stays free for the durability READ that may end the chain.
  if (in_queue + 2 > sq_depth_) return;
  size_t room = sq_depth_ - in_queue - 1;
  size_t n = 0;
  const auto deadline = Clock::now() + op_timeout_;
  Op* last = nullptr;
  // A kPersistent write or atomic in the chain with no READ behind it yet.
  bool unflushed_persistent = false;
  while (sent_ < flushed_ && n < room) {
    Op& op = ops_[sent_];
    if (op.done) {  // rejected locally: nothing to send
      ++sent_;
      continue;
    }
    // A lost READ response is recovered by executing the READ again, which
    // could then see a later WRITE of ours: a WRITE or atomic behind an
    // unfinished READ is held back until that READ has completed, so posted
    // order holds. (Atomics are never executed twice: the responder replays
    // its answer.) A software fence: every chain ends signalled, so the
    // READ's completion is reported and pump() runs again then. The
    // hardware fence flag does the same on the NIC, but with it Soft-RoCE
    // queue pairs wedged for good (a bench hung in 1 of 2 runs, none in 24
    // without it).
    if (op.op != OpType::kRead && last_read_seq_ > completed_seq_) break;
    if (!stage(op)) break;
    if (op.done) {  // its registration failed
      ++sent_;
      continue;
    }
    ibv_send_wr& wr = wrs_[n];
    ibv_sge& sge = sges_[n];
    wr = ibv_send_wr{};
    sge = ibv_sge{};
    op.seq = next_seq_++;
    op.deadline = deadline;
    wr.wr_id = op.seq;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    sge.length = op.len;
    if (op.own_mr != nullptr) {
      sge.addr = reinterpret_cast<uintptr_t>(op.user);
      sge.lkey = op.own_mr->lkey;
    } else if (op.stage_held > 0) {
      sge.addr = reinterpret_cast<uintptr_t>(staging_.get() + op.stage_off);
      sge.lkey = staging_mr_->lkey;
    } else {  // inline WRITE
      sge.addr = reinterpret_cast<uintptr_t>(op.user);
      sge.lkey = staging_mr_->lkey;
      wr.send_flags |= IBV_SEND_INLINE;
    }
    const uint64_t remote = base_va_ + op.remote;
    switch (op.op) {
      case OpType::kRead:
        wr.opcode = IBV_WR_RDMA_READ;
        wr.wr.rdma.remote_addr = remote;
        wr.wr.rdma.rkey = rkey_;
        break;
      case OpType::kWrite:
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.wr.rdma.remote_addr = remote;
        wr.wr.rdma.rkey = rkey_;
        break;
      case OpType::kCas:
        wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
        wr.wr.atomic.remote_addr = remote;
        wr.wr.atomic.rkey = rkey_;
        wr.wr.atomic.compare_add = op.a;
        wr.wr.atomic.swap = op.b;
        break;
      case OpType::kFaa:
        wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
        wr.wr.atomic.remote_addr = remote;
        wr.wr.atomic.rkey = rkey_;
        wr.wr.atomic.compare_add = op.a;
        break;
    }
    if (op.op == OpType::kRead) last_read_seq_ = op.seq;
    unflushed_persistent = op.op != OpType::kRead && (unflushed_persistent || op.persistent);
    if (n > 0) wrs_[n - 1].next = &wr;
    last = &op;
    ++n;
    ++sent_;
  }
  if (n == 0) return;
  if (unflushed_persistent) {
    // Durability: a READ behind the writes (see the header).
    ++durability_reads_;
    ibv_send_wr& wr = wrs_[n];
    ibv_sge& sge = sges_[n];
    wr = ibv_send_wr{};
    sge = ibv_sge{};
    const uint64_t seq = next_seq_++;
    wr.wr_id = seq;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    sge.addr = reinterpret_cast<uintptr_t>(staging_.get() + kScratchOffset);
    sge.length = 8;
    sge.lkey = staging_mr_->lkey;
    wr.opcode = IBV_WR_RDMA_READ;
    // The last written word (aligned, inside the accessible range).
    uint64_t at = (last->remote + (last->len > 8 ? last->len - 8 : 0)) & ~uint64_t{7};
    at = std::clamp(at, lo_, hi_ - 8);
    wr.wr.rdma.remote_addr = base_va_ + at;
    wr.wr.rdma.rkey = rkey_;
    wrs_[n - 1].next = &wr;
    ++n;
  }
  wrs_[n - 1].send_flags |= IBV_SEND_SIGNALED;
  wrs_[n - 1].next = nullptr;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp_.get(), wrs_.data(), &bad); rc != 0) {
    // Only a broken queue pair refuses work; nothing of the chain from `bad`
    // on was accepted, and what was accepted cannot be trusted either.
    fail_all(Errc::kDisconnected);
  }
}

void VerbsConnection::complete_through(uint64_t seq) {
  for (size_t i = 0; i < sent_; ++i) {
    Op& op = ops_[i];
    if (op.done) continue;
    if (op.seq > seq) break;
    if (op.stage_held > 0) {
      const uint8_t* at = staging_.get() + op.stage_off;
      if (op.op == OpType::kRead) {
        std::memcpy(op.user, at, op.len);
      } else if (op.op == OpType::kCas || op.op == OpType::kFaa) {
        std::memcpy(&op.value, at, 8);
      }
    }
    release(op);
    op.done = true;
    op.status = Errc::kOk;
  }
  completed_seq_ = std::max(completed_seq_, seq);
}

void VerbsConnection::fail_from(uint64_t seq, Errc first, Errc rest) {
  if (seq > 0) complete_through(seq - 1);
  health_ = rest;
  for (size_t i = 0; i < ops_.size(); ++i) {
    Op& op = ops_[i];
    if (op.done) continue;
    release(op);
    op.done = true;
    op.status = (i < sent_ && op.seq == seq) ? first : rest;
  }
  completed_seq_ = next_seq_ - 1;
}

void VerbsConnection::fail_all(Errc code) {
  if (health_ != Errc::kOk) return;
  fail_from(0, code, code);
}

void VerbsConnection::reap() {
  if (health_ != Errc::kOk) return;
  ibv_wc wc[32];
  for (;;) {
    const int n = ibv_poll_cq(cq_.get(), 32, wc);
    if (n < 0) {
      fail_all(Errc::kDisconnected);
      return;
    }
    for (int i = 0; i < n; ++i) {
      if (wc[i].status == IBV_WC_SUCCESS) {
        complete_through(wc[i].wr_id);
      } else {
        const Errc e = map_wc_status(wc[i].status);
        fail_from(wc[i].wr_id, e, e);
        return;  // the rest are flushed work requests of a dead queue pair
      }
    }
    if (n < 32) return;
  }
}

void VerbsConnection::check_control_session() {
  if (health_ != Errc::kOk) return;
  const auto now = Clock::now();
  if (now < next_session_check_) return;
  next_session_check_ = now + kSessionCheckInterval;
  if (net::peer_closed(control_fd_.get())) fail_all(Errc::kDisconnected);
}

Clock::time_point VerbsConnection::check_timeout() {
  if (health_ != Errc::kOk) return Clock::time_point::max();
  for (size_t i = 0; i < sent_; ++i) {
    const Op& op = ops_[i];
    if (op.done) continue;
    // Completions come in order: the first unfinished one is the oldest.
    if (Clock::now() < op.deadline) return op.deadline;
    fail_all(Errc::kTimeout);
    break;
  }
  return Clock::time_point::max();
}

void VerbsConnection::flush() {
  check_control_session();
  flushed_ = ops_.size();
  pump();
}

size_t VerbsConnection::drain(std::span<Completion> out) {
  size_t n = 0;
  while (n < out.size() && flushed_ > 0 && ops_.front().done) {
    const Op& op = ops_.front();
    out[n++] = Completion{op.wr_id, op.op, op.status, op.value};
    ops_.pop_front();
    --flushed_;
    if (sent_ > 0) --sent_;
    --outstanding_;
  }
  return n;
}

size_t VerbsConnection::poll(std::span<Completion> out) {
  check_control_session();
  reap();
  check_timeout();
  pump();
  return drain(out);
}

size_t VerbsConnection::wait(std::span<Completion> out, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (size_t n = poll(out); n > 0) return n;
    // Nothing flushed is pending: nothing can complete.
    bool pending = false;
    for (size_t i = 0; i < flushed_ && !pending; ++i) pending = !ops_[i].done;
    if (!pending || health_ != Errc::kOk) return 0;
    const auto now = Clock::now();
    if (now >= deadline) return 0;
    // Arm, then look again: a completion between the last poll and the
    // arming would otherwise raise no event.
    if (ibv_req_notify_cq(cq_.get(), 0) != 0) {
      fail_all(Errc::kDisconnected);
      continue;
    }
    if (size_t n = poll(out); n > 0) return n;
    // Wake for the caller's deadline or the oldest operation's, whichever
    // comes first.
    const auto wake = std::min(deadline, check_timeout());
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, Clock::duration::zero()));
    pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {control_fd_.get(), POLLIN | POLLRDHUP, 0}};
    const int r = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno != EINTR) {
      fail_all(Errc::kDisconnected);
      continue;
    }
    if (fds[0].revents & POLLIN) {
      ibv_cq* ev_cq = nullptr;
      void* ev_ctx = nullptr;
      if (ibv_get_cq_event(channel_.get(), &ev_cq, &ev_ctx) == 0) ibv_ack_cq_events(ev_cq, 1);
    }
    if (fds[1].revents != 0) next_session_check_ = {};  // look at the session now
  }
}

}  // namespace pandora
