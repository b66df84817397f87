#include "recovery/admin_sessions.h"

#include <fmt/format.h>

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
  return at_every(nodes, fmt::format("fencing pid {}", pid), [pid](ControlClient& ctl) { return ctl.fence(pid); });
}

uint64_t AdminSessions::opened() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opened_;
}

}  // namespace pandora
