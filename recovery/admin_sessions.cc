#include "recovery/admin_sessions.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>

#include "common/wire/control.h"

namespace pandora {

AdminSessions::AdminSessions(uint64_t cluster_id, std::string secret, std::chrono::milliseconds timeout)
    : timeout_(timeout) {
  admin_.cluster_id = cluster_id;
  admin_.secret = std::move(secret);
  admin_.role = wire::Role::kAdmin;
  admin_.compute_id = 0;
}

Result<ControlClient*> AdminSessions::session(const Endpoint& node, bool fresh) {
  auto it = std::find_if(kept_.begin(), kept_.end(), [&](const Kept& k) { return k.node == node; });
  if (it != kept_.end() && !fresh && it->session) return it->session.get();
  if (it == kept_.end()) it = kept_.insert(kept_.end(), Kept{node, nullptr});
  it->session.reset();
  auto opened = ControlClient::connect(node, admin_, timeout_);
  if (!opened) return opened.status();
  ++opened_;
  it->session = std::move(*opened);
  return it->session.get();
}

void AdminSessions::drop(const Endpoint& node) {
  std::erase_if(kept_, [&](const Kept& k) { return k.node == node; });
}

Status AdminSessions::at_every(const std::vector<Endpoint>& nodes, std::string_view what,
                               const std::function<Status(ControlClient&)>& op) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Endpoint& node : nodes) {
    const bool was_open = std::any_of(kept_.begin(), kept_.end(), [&](const Kept& k) {
      return k.node == node && k.session != nullptr;
    });
    auto ctl = session(node, false);
    Status s = ctl ? op(**ctl) : ctl.status();
    if (!s && was_open) {
      ctl = session(node, true);
      s = ctl ? op(**ctl) : ctl.status();
    }
    if (!s) {
      drop(node);  // never reuse a session that failed
      return Status(s.code(), fmt::format("{} at {}: {}", what, node.to_string(), s.message()));
    }
  }
  return Status::ok();
}

Status AdminSessions::fence(const std::vector<Endpoint>& nodes, uint16_t pid) {
  return fence(nodes, std::span<const uint16_t>(&pid, 1));
}

Status AdminSessions::fence(const std::vector<Endpoint>& nodes, std::span<const uint16_t> pids) {
  for (size_t at = 0; at < pids.size(); at += wire::kMaxFenceIds) {
    if (Status s = fence_chunk(nodes, pids.subspan(at, std::min(wire::kMaxFenceIds, pids.size() - at))); !s) {
      return s;
    }
  }
  return Status::ok();
}

Status AdminSessions::fence_chunk(const std::vector<Endpoint>& nodes, std::span<const uint16_t> pids) {
  const std::string what = pids.size() == 1 ? fmt::format("fencing pid {}", pids.front())
                                            : fmt::format("fencing pids {}", fmt::join(pids, ", "));
  // One request in flight at every node, then the answers: the daemons
  // wait for their data planes at the same time. A node whose session
  // fails here is fenced again one by one below, with at_every's retry on
  // a fresh session and its error message.
  std::vector<Endpoint> again;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<Endpoint, ControlClient*>> sent;
    for (const Endpoint& node : nodes) {
      auto ctl = session(node, false);
      if (ctl && (*ctl)->send_fence(pids)) sent.emplace_back(node, *ctl);
      else again.push_back(node);
    }
    for (auto& [node, ctl] : sent) {
      if (!ctl->await_fence()) again.push_back(node);
    }
  }
  if (again.empty()) return Status::ok();
  return at_every(again, what, [pids](ControlClient& ctl) { return ctl.fence(pids); });
}

uint64_t AdminSessions::opened() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opened_;
}

}  // namespace pandora
