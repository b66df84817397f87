// The public client (include/pandora/client.h) in managed mode on a ford
// cluster: its sessions park for the recovery coordinator's stop-the-world
// pause. A real ZooKeeper ensemble, two memory daemons and pandora-ctl init
// (tests/support/local_cluster.h); this test plays the recovery
// coordinator's part through the registry (begin_pause / pause_acks /
// end_pause), so no detector runs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/logger.h"
#include "pandora/client.h"
#include "recovery/registry.h"
#include "tests/recovery/cluster_binaries.h"

namespace pandora::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

template <class Pred>
bool wait_until(Clock::duration timeout, Pred&& pred) {
  const auto deadline = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

constexpr uint32_t kTable = 7;

TEST(ManagedClient, FordSessionsParkForAStopTheWorldPause) {
  LocalClusterOptions o = built_cluster_options();
  o.zk_servers = 1;
  o.protocol = "ford";
  LocalCluster cluster(o);
  Status s = cluster.start();
  ASSERT_TRUE(s) << s.to_string();

  ClientOptions co;
  co.zookeeper = cluster.zk_options().hosts;
  co.zk_root = o.zk_root;
  co.cluster_id = o.cluster_id;
  co.secret_file = cluster.secret_file();
  co.protocol = "ford";
  auto client = Client::connect(co);
  ASSERT_TRUE(client) << client.status().to_string();
  const TableSpec spec{kTable, "counters", 8, 64};
  ASSERT_TRUE((*client)->create_tables({&spec, 1}));
  {
    auto loader = (*client)->loader();
    ASSERT_TRUE(loader);
    for (uint64_t k = 0; k < 8; ++k) ASSERT_TRUE((*loader)->add(kTable, k, std::vector<uint8_t>(8, 0)));
    ASSERT_TRUE((*loader)->finish());
  }
  auto session = (*client)->session();
  ASSERT_TRUE(session) << session.status().to_string();
  auto increment = [&] {
    return (*session)->transact_retry([](Txn& t) {
      auto v = t.update(kTable, 3);
      if (!v) return v.reason();
      (*v)[0] += 1;
      return AbortReason::kNone;
    });
  };
  ASSERT_TRUE(increment().committed);

  auto reg = Registry::open(cluster.zk_options(), o.zk_root, o.cluster_id, Logger("test", LogLevel::kError));
  ASSERT_TRUE(reg) << reg.status().to_string();
  const uint16_t pid = (*client)->pid();
  // An idle node parks at once: it acknowledges.
  ASSERT_TRUE((*reg)->begin_pause(41, {}));
  ASSERT_TRUE(wait_until(30s, [&] {
    auto acks = (*reg)->pause_acks(41);
    return acks && std::find(acks->begin(), acks->end(), pid) != acks->end();
  })) << "the client (pid " << pid << ") never acknowledged the pause";
  // A transaction asked for during the pause waits for its end.
  std::atomic<bool> resuming{false};
  bool began_during_pause = false;
  CommitOutcome during;
  std::thread app([&] {
    during = increment();
    began_during_pause = !resuming.load();
  });
  std::this_thread::sleep_for(200ms);  // gives a wrongly unparked session time to commit; not a wait for an event
  resuming.store(true);
  ASSERT_TRUE((*reg)->end_pause());
  app.join();
  EXPECT_TRUE(during.committed) << abort_reason_name(during.reason);
  EXPECT_FALSE(began_during_pause) << "a session committed during a stop-the-world pause";
}

}  // namespace
}  // namespace pandora::testing
