#include "compute/blocking_client.h"

#include <fmt/format.h>

namespace pandora {

Result<std::unique_ptr<BlockingClient>> BlockingClient::create(Cluster& cluster, uint16_t coordinator) {
  if (!cluster.has_directory()) {
    return Status(Errc::kInvalidArgument, "the cluster's table directory must be loaded before running transactions");
  }
  if (Result<uint32_t> lane = cluster.lanes().lane_index(cluster.lane_slot(), coordinator); !lane) {
    return lane.status();
  }
  auto conns = cluster.open_connections();
  if (!conns) return conns.status();
  auto worker = std::make_unique<Worker>(cluster, 0, 1, coordinator, std::move(*conns));
  return std::unique_ptr<BlockingClient>(new BlockingClient(std::move(worker)));
}

void BlockingClient::run(const std::function<void(Txn&)>& body) {
  worker_->run([&](Coordinator& c) { body(c.txn()); });
}

CommitOutcome BlockingClient::transact(const std::function<AbortReason(Txn&)>& body) {
  CommitOutcome out;
  run([&](Txn& t) {
    t.begin();
    const AbortReason r = body(t);
    if (r == AbortReason::kNone) {
      out = t.commit();
    } else {
      t.abort();
      out = CommitOutcome{false, r, engine().last_detail()};
    }
  });
  return out;
}

}  // namespace pandora
