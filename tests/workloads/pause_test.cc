// The runner's side of ford's stop-the-world pause (workloads/bench/runner.h):
// a node acknowledges only when every live coordinator is parked between
// transactions, and never while it needs recovery itself. A coordinator
// whose latch CAS timed out but landed at the daemon (FaultConnection's
// kLandButFail) halts holding a latch its node cannot release; if the node
// acknowledged, the recovery coordinator's latch scan would run as if the
// world had stopped while that node may still hold latches and have
// operations in flight.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "common/time_source.h"
#include "common/transport/client.h"
#include "compute/loader.h"
#include "compute/scheduler.h"
#include "compute/table_geometry.h"
#include "tests/compute/fault_connection.h"
#include "tests/support/memd_cluster.h"
#include "tests/workloads/workload_test_support.h"
#include "workloads/bench/runner.h"
#include "workloads/micro/micro.h"

namespace pandora::testing {
namespace {

// Pauses as soon as `trigger` is raised, until acknowledged.
struct PauseRequest {
  std::atomic<bool> trigger{false};
  std::atomic<uint64_t> acked{0};
  uint64_t requested() const { return trigger.load() && acked.load() == 0 ? 7 : 0; }
};

class PauseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(d_.ok()) << d_.error();
    workloads::MicroOptions mo;
    mo.keys = 500;
    auto w = workloads::MicroWorkload::create(mo);
    ASSERT_TRUE(w) << w.status().to_string();
    micro_ = std::move(*w);
    cfg_ = d_.config(2, Backend::kTcp, 2, ProtocolMode::kFord);
    cfg_.threads = 1;
    cfg_.coordinators = 2;
    auto loaded = Cluster::connect(cfg_, quiet_logger());
    ASSERT_TRUE(loaded) << loaded.status().to_string();
    ASSERT_TRUE(create_tables(**loaded, micro_->tables()));
    TableLoader loader(**loaded);
    ASSERT_TRUE(micro_->load(loader));
    ASSERT_TRUE(loader.finish());
    for (size_t i = 0; i < (*loaded)->node_count(); ++i) nodes_.push_back((*loaded)->node(i));
  }

  // A compute node whose every data connection goes through `rule`.
  std::unique_ptr<Cluster> faulty_node(const std::shared_ptr<FaultRule>& rule) {
    const ComputeConfig cfg = cfg_;
    const std::vector<MemoryNodeInfo> nodes = nodes_;
    auto c = Cluster::attach(
        cfg_, quiet_logger(), nodes_,
        [cfg, nodes, rule](size_t i) -> Result<std::unique_ptr<Connection>> {
          auto conn = open_connection(nodes[i].endpoint, cfg.identity(), cfg.connect_options());
          if (!conn) return conn.status();
          return std::unique_ptr<Connection>(std::make_unique<FaultConnection>(std::move(*conn), i, rule));
        },
        system_time());
    EXPECT_TRUE(c) << c.status().to_string();
    if (!c) return nullptr;
    Status s = (*c)->load_directory();
    EXPECT_TRUE(s) << s.to_string();
    return s ? std::move(*c) : nullptr;
  }

  // Runs micro on `node` (1 thread x 2 coordinators) for at most `measure`,
  // pausing as `pause` says.
  workloads::RunStats run(Cluster& node, PauseRequest& pause, std::chrono::milliseconds measure);

  MemdCluster d_{2, "32M", "2M"};
  std::unique_ptr<workloads::MicroWorkload> micro_;
  ComputeConfig cfg_;
  std::vector<MemoryNodeInfo> nodes_;
};

workloads::RunStats PauseTest::run(Cluster& node, PauseRequest& pause, std::chrono::milliseconds measure) {
  auto sched = Scheduler::create(node);
  EXPECT_TRUE(sched) << sched.status().to_string();
  if (!sched) return {};
  workloads::RunOptions ro;
  ro.warmup = std::chrono::milliseconds(0);
  ro.measure = measure;
  ro.pause_requested = [&pause] { return pause.requested(); };
  ro.ack_pause = [&pause](uint64_t epoch) { pause.acked.store(epoch); };
  auto stats = workloads::run_workload(**sched, *micro_, cfg_.compute_id, ro);
  EXPECT_TRUE(stats) << stats.status().to_string();
  return stats ? std::move(*stats) : workloads::RunStats{};
}

TEST_F(PauseTest, ANodeWhoseCoordinatorHaltedRefusesThePauseAndStops) {
  PauseRequest pause;
  // The first latch CAS lands at the daemon but reports a timeout: its
  // coordinator halts, the latch held by this live pid.
  auto fired = std::make_shared<std::atomic<bool>>(false);
  auto rule = std::make_shared<FaultRule>([fired, &pause](size_t, const PostedOp& op) {
    if (op.op != OpType::kCas || fired->exchange(true)) return Fate::kPass;
    pause.trigger.store(true);  // recovery of some other node stops the world now
    return Fate::kLandButFail;
  });
  auto node = faulty_node(rule);
  ASSERT_TRUE(node);
  const workloads::RunStats stats = run(*node, pause, std::chrono::milliseconds(20000));
  ASSERT_TRUE(fired->load()) << "no latch CAS was posted";
  EXPECT_EQ(stats.halted_coordinators, 1u);
  EXPECT_EQ(pause.acked.load(), 0u) << "a node with a halted coordinator acknowledged a stop-the-world pause";
  EXPECT_TRUE(stats.pause_refused);
  // It stopped instead of running on until the deadline.
  EXPECT_LT(stats.measured_seconds, 15.0);
}

TEST_F(PauseTest, AHealthyNodeParksEveryCoordinatorAcknowledgesAndResumes) {
  PauseRequest pause;
  std::atomic<uint64_t> cas{0};
  auto rule = std::make_shared<FaultRule>([&cas, &pause](size_t, const PostedOp& op) {
    if (op.op == OpType::kCas && cas.fetch_add(1) == 20) pause.trigger.store(true);
    return Fate::kPass;
  });
  auto node = faulty_node(rule);
  ASSERT_TRUE(node);
  const workloads::RunStats stats = run(*node, pause, std::chrono::milliseconds(1500));
  EXPECT_EQ(pause.acked.load(), 7u);
  EXPECT_EQ(stats.pauses, 1u);
  EXPECT_FALSE(stats.pause_refused);
  EXPECT_EQ(stats.halted_coordinators, 0u);
  // It resumed: more latch CASes after the pause than before it.
  EXPECT_GT(cas.load(), 100u);
}

}  // namespace
}  // namespace pandora::testing
