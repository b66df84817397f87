#include "memory/verbs_server.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace pandora::memd {

// Members are destroyed in reverse order: the registration (if still
// there) before its domain; a session's queue pair before the access whose
// domain it lives in.
struct VerbsServer::Access {
  VerbsPtr<ibv_pd> pd;
  VerbsPtr<ibv_mr> mr;  // empty once revoked
};

struct VerbsServer::Session {
  uint16_t compute_id = 0;
  std::shared_ptr<Access> access;
  VerbsPtr<ibv_qp> qp;
};

VerbsServer::VerbsServer(std::unique_ptr<VerbsDevice> dev, Region& region, FenceTable& fences, Logger log)
    : dev_(std::move(dev)), region_(region), fences_(fences), log_(std::move(log)) {}

VerbsServer::~VerbsServer() {
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.clear();
  access_.clear();
}

Result<std::unique_ptr<VerbsServer>> VerbsServer::open(const VerbsOptions& options, Region& region,
                                                       FenceTable& fences, Logger log) {
  Result<std::unique_ptr<VerbsDevice>> dev = VerbsDevice::open(options);
  if (!dev) return dev.status();
  std::unique_ptr<VerbsServer> s(new VerbsServer(std::move(dev).value(), region, fences, std::move(log)));
  s->cq_.reset(ibv_create_cq(s->dev_->context(), 16, nullptr, nullptr, 0));
  if (!s->cq_) {
    return Status(Errc::kIo, fmt::format("ibv_create_cq on {}: {}", s->dev_->name(), std::strerror(errno)));
  }
  return s;
}

Result<wire::VerbsInfo> VerbsServer::setup(uint64_t session, uint16_t compute_id, uint32_t generation,
                                           const wire::SetupVerbs& request) {
  std::lock_guard<std::mutex> lock(mu_);
  // Under mu_, which revoke() takes after the bit is set (file comment).
  if (fences_.refuses(compute_id, generation)) {
    return Status(Errc::kFenced, fmt::format("compute node {} is fenced", compute_id));
  }
  if (sessions_.count(session) != 0) {
    return Status(Errc::kInvalidArgument, "this session already has a verbs data plane (one per session)");
  }
  if (sessions_.size() >= kMaxSessions) {
    return Status(Errc::kUnavailable, fmt::format("this memory daemon serves {} verbs sessions, its limit; close "
                                                  "some or use fewer threads per compute node",
                                                  kMaxSessions));
  }
  const auto io_error = [&](std::string_view what) {
    return Status(Errc::kIo, fmt::format("{} on {}: {}", what, dev_->name(), std::strerror(errno)));
  };

  std::shared_ptr<Access>& access = access_[compute_id];
  if (!access) {
    auto fresh = std::make_shared<Access>();
    fresh->pd.reset(ibv_alloc_pd(dev_->context()));
    if (!fresh->pd) {
      access_.erase(compute_id);
      return io_error("ibv_alloc_pd");
    }
    // Only the data range: the header and the fence bitmap stay out of
    // reach of every compute node.
    const uint64_t lo = region_.info().data_offset;
    fresh->mr.reset(register_memory(fresh->pd.get(), region_.base() + lo, region_.size() - lo,
                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
                                   IBV_ACCESS_REMOTE_ATOMIC));
    if (!fresh->mr) {
      access_.erase(compute_id);
      return Status(Errc::kIo, fmt::format("registering the region ({} MiB) on {}: {} (is the locked-memory "
                                           "limit, ulimit -l, large enough?)",
                                           (region_.size() - lo) >> 20, dev_->name(), std::strerror(errno)));
    }
    access = std::move(fresh);
    log_.info("compute node {}: region registered on {} (rkey {:#x})", compute_id, dev_->name(),
              access->mr->rkey);
  }
  auto s = std::make_unique<Session>();
  s->compute_id = compute_id;
  s->access = access;
  ibv_qp_init_attr init{};
  init.send_cq = cq_.get();
  init.recv_cq = cq_.get();
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 1;
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  s->qp.reset(ibv_create_qp(access->pd.get(), &init));
  if (!s->qp) return io_error("ibv_create_qp");
  const int remote_access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  if (Status st = qp_to_init(s->qp.get(), dev_->port(), remote_access); !st) return st;
  const uint32_t psn = random_psn();
  const wire::QpAddress local = dev_->address(s->qp.get(), psn);
  const uint8_t depth = static_cast<uint8_t>(
      std::clamp<int>(std::min<int>(request.max_rd_atomic, dev_->attr().max_qp_rd_atom), 1, 255));
  if (Status st = qp_to_rtr(s->qp.get(), *dev_, local, request.qp, depth); !st) return st;
  if (Status st = qp_to_rts(s->qp.get(), psn, 1); !st) return st;

  wire::VerbsInfo info;
  info.qp = local;
  info.rkey = access->mr->rkey;
  info.base_va = reinterpret_cast<uintptr_t>(region_.base());
  info.max_rd_atomic = depth;
  sessions_.emplace(session, std::move(s));
  return info;
}

void VerbsServer::close(uint64_t session) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  const uint16_t id = it->second->compute_id;
  sessions_.erase(it);
  // Drop the registration with the node's last session (nothing can use it).
  auto a = access_.find(id);
  if (a != access_.end() && a->second.use_count() == 1) access_.erase(a);
}

void VerbsServer::revoke(uint16_t compute_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto a = access_.find(compute_id);
  if (a == access_.end()) return;
  if (a->second->mr) {
    a->second->mr.reset();  // returns once the device has let go of it
    log_.info("compute node {}: region registration revoked", compute_id);
  }
  // Sessions keep the (now empty) access alive until they end; a later
  // setup for this id, after an unfence, starts a new one.
  access_.erase(a);
}

}  // namespace pandora::memd
