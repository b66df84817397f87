// A blocking facade over one coordinator, driven on the calling thread, for
// simple programs and tests:
//
//   auto client = BlockingClient::create(cluster);          // coordinator 0
//   CommitOutcome o = client->transact([&](Txn& t) {
//     auto v = t.update(kAccounts, 7);
//     if (!v) return v.reason();
//     (*v)[0] += 1;
//     return AbortReason::kNone;                           // commit
//   });
//   client->run([&](Txn& t) { t.begin(); ...; t.commit(); });  // full control
//
// It owns its own data connections (one per memory node). Several clients
// in one process need distinct coordinator ids (they share the pid, and the
// coordinator id selects the latch owner field and the log lane).
#pragma once

#include <functional>
#include <memory>

#include "compute/cluster.h"
#include "compute/scheduler.h"
#include "compute/txn.h"
#include "pandora/session.h"

namespace pandora {

class BlockingClient final : public Session {
 public:
  // `coordinator`: this client's coordinator id on the compute node
  // (a lane of the node's lane slot, distinct from any scheduler's ids).
  static Result<std::unique_ptr<BlockingClient>> create(Cluster& cluster, uint16_t coordinator = 0);

  // Runs `body` as the coordinator's task; returns when it returned.
  void run(const std::function<void(Txn&)>& body) override;

  // begin(); body; commit() if body returned kNone, else abort() and report
  // the body's reason.
  CommitOutcome transact(const std::function<AbortReason(Txn&)>& body) override;
  // transact_retry(): Session's (pandora/session.h).

  TxnEngine& engine() { return worker_->coordinator(0).engine(); }
  RemoteOps& ops() { return worker_->coordinator(0).ops(); }
  Cluster& cluster() { return worker_->cluster(); }
  AddressCache& cache() { return worker_->cache(); }

 private:
  explicit BlockingClient(std::unique_ptr<Worker> worker) : worker_(std::move(worker)) {}
  std::unique_ptr<Worker> worker_;
};

}  // namespace pandora
