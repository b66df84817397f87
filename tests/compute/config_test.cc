// Unit tests that need no daemon: configuration, lane map, latch encoding,
// coroutine stacks under the sanitizers.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <vector>

#include <unistd.h>

#include <fstream>
#include <stdexcept>

#include "common/latch.h"
#include "compute/compute_config.h"
#include "compute/coroutine.h"
#include "common/lane_map.h"
#include "compute/txn_engine.h"
#include "tests/support/memd_process.h"

namespace pandora {
namespace {

ComputeConfig good_config() {
  ComputeConfig c;
  c.cluster_id = 7;
  c.secret = "s";
  c.compute_id = 3;
  c.memory_nodes = {Endpoint{"127.0.0.1", 7000}, Endpoint{"127.0.0.1", 7001}};
  c.replicas = 2;
  return c;
}

TEST(ComputeConfig, ValidatesEveryField) {
  EXPECT_TRUE(good_config().validate()) << good_config().validate().to_string();
  auto expect_bad = [](ComputeConfig c, std::string_view needle) {
    Status s = c.validate();
    EXPECT_EQ(s.code(), Errc::kInvalidArgument);
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  { auto c = good_config(); c.cluster_id = 0; expect_bad(c, "--cluster-id"); }
  { auto c = good_config(); c.compute_id = 0; expect_bad(c, "--compute-id"); }
  { auto c = good_config(); c.replicas = 3; expect_bad(c, "--replicas"); }
  { auto c = good_config(); c.memory_nodes.push_back(c.memory_nodes[0]); expect_bad(c, "twice"); }
  { auto c = good_config(); c.threads = 8; c.coordinators = 16; expect_bad(c, "leased lane slot"); }
  { auto c = good_config(); c.lane_bytes = 1000; expect_bad(c, "--lane-bytes"); }
  { auto c = good_config(); c.memory_nodes.clear(); expect_bad(c, "--memory-nodes"); }
  {
    auto c = good_config();
    c.bugs.covert_latches = true;
    c.protocol = ProtocolMode::kFord;
    expect_bad(c, bug_switches_available() ? "pandora only" : "PANDORA_BUG_SWITCHES");
  }
}

TEST(ComputeConfig, ParsesProtocolsAndBugSwitches) {
  EXPECT_EQ(parse_protocol("log-a-latch").value(), ProtocolMode::kLogALatch);
  EXPECT_FALSE(parse_protocol("2pc"));
  auto b = parse_bug_switches("covert-latches, lost-decision");
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->covert_latches && b->lost_decision && !b->complicit_abort);
  EXPECT_EQ(b->to_string(), "covert-latches,lost-decision");
  EXPECT_FALSE(parse_bug_switches("none")->any());
  auto bad = parse_bug_switches("covert-latch");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("logging-without-latching"), std::string::npos);
}

TEST(ComputeConfig, FlagsResolveThroughOptionSet) {
  testing::TempDir dir;
  const std::string secret = dir.path() + "/secret";
  std::ofstream(secret) << "hunter2-hunter2-hunter2\n";
  ::chmod(secret.c_str(), 0600);
  ComputeFlags flags;
  OptionSet opts("test", "test");
  flags.declare(opts);
  const std::string nodes = "127.0.0.1:7000,127.0.0.1:7001";
  const char* argv[] = {"test", "--memory-nodes", nodes.c_str(), "--cluster-id", "9", "--secret-file",
                        secret.c_str(), "--compute-id", "4", "--backend", "shm", "--replicas", "2",
                        "--protocol", "ford", "--threads", "2", "--coordinators", "8"};
  std::string msg;
  ASSERT_EQ(opts.parse(std::size(argv), argv, &msg), OptionSet::Outcome::kRun) << msg;
  auto cfg = flags.resolve();
  ASSERT_TRUE(cfg) << cfg.status().to_string();
  EXPECT_EQ(cfg->secret, "hunter2-hunter2-hunter2");
  EXPECT_EQ(cfg->memory_nodes.size(), 2u);
  EXPECT_EQ(cfg->backend, Backend::kShm);
  EXPECT_EQ(cfg->protocol, ProtocolMode::kFord);
  EXPECT_EQ(cfg->total_coordinators(), 16u);
}

TEST(ComputeConfig, ReplicasDefaultToTwoWhenTwoMemoryNodesExist) {
  testing::TempDir dir;
  const std::string secret = dir.path() + "/secret";
  std::ofstream(secret) << "hunter2-hunter2-hunter2\n";
  ::chmod(secret.c_str(), 0600);
  auto resolve = [&](const std::string& nodes, const char* replicas) {
    ComputeFlags flags;
    OptionSet opts("test", "test");
    flags.declare(opts);
    std::vector<const char*> argv = {"test", "--memory-nodes", nodes.c_str(), "--cluster-id", "9",
                                     "--secret-file", secret.c_str(), "--compute-id", "4"};
    if (replicas) {
      argv.push_back("--replicas");
      argv.push_back(replicas);
    }
    std::string msg;
    EXPECT_EQ(opts.parse(static_cast<int>(argv.size()), argv.data(), &msg), OptionSet::Outcome::kRun) << msg;
    auto cfg = flags.resolve();
    EXPECT_TRUE(cfg) << cfg.status().to_string();
    return cfg ? cfg->replicas : 0u;
  };
  EXPECT_EQ(resolve("127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", nullptr), 2u);
  EXPECT_EQ(resolve("127.0.0.1:7000,127.0.0.1:7001", nullptr), 2u);
  EXPECT_EQ(resolve("127.0.0.1:7000", nullptr), 1u);
  EXPECT_EQ(resolve("127.0.0.1:7000,127.0.0.1:7001", "1"), 1u);
}

// Parses `base` + extra flags (and a secret file of its own) into a
// ComputeConfig.
class FlagResolver {
 public:
  explicit FlagResolver(std::vector<const char*> base) : base_(std::move(base)) {
    std::ofstream(secret_) << "hunter2-hunter2-hunter2\n";
    ::chmod(secret_.c_str(), 0600);
  }
  Result<ComputeConfig> operator()(std::vector<const char*> extra) const {
    ComputeFlags flags;
    OptionSet opts("test", "test");
    flags.declare(opts);
    std::vector<const char*> argv = {"test", "--secret-file", secret_.c_str()};
    argv.insert(argv.end(), base_.begin(), base_.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::string msg;
    EXPECT_EQ(opts.parse(static_cast<int>(argv.size()), argv.data(), &msg), OptionSet::Outcome::kRun) << msg;
    return flags.resolve();
  }

 private:
  testing::TempDir dir_;
  std::string secret_ = dir_.path() + "/secret";
  std::vector<const char*> base_;
};

// A coordinator waits for a memory node to be declared failed only where a
// failure detector can declare it (--zookeeper).
TEST(ComputeConfig, MemoryFailoverWaitNeedsAFailureDetector) {
  const FlagResolver resolve({"--cluster-id", "9", "--zookeeper", "127.0.0.1:2181"});
  auto zk = resolve({});
  ASSERT_TRUE(zk) << zk.status().to_string();
  EXPECT_EQ(zk->memory_failover_wait, std::chrono::seconds(10));
  auto zk_short = resolve({"--memory-failover-wait-ms", "250"});
  ASSERT_TRUE(zk_short) << zk_short.status().to_string();
  EXPECT_EQ(zk_short->memory_failover_wait, std::chrono::milliseconds(250));
  // The memory nodes come from the cluster record after joining, so
  // --replicas is checked against them then, not refused now.
  auto two = resolve({"--replicas", "2"});
  ASSERT_TRUE(two) << two.status().to_string();
  EXPECT_EQ(two->replicas, 2u);
  EXPECT_TRUE(two->memory_nodes.empty());
}

// The flags a transport and a multi-host deployment add: --backend verbs with
// its --rdma-* flags, --push-listen.
TEST(ComputeConfig, VerbsAndPushListenFlagsAreCheckedAndCarried) {
  const FlagResolver resolve({"--memory-nodes", "127.0.0.1:7000", "--cluster-id", "9", "--compute-id", "4"});
  auto v = resolve({"--backend", "verbs", "--rdma-device", "rxe0", "--rdma-port", "1", "--rdma-gid-index", "3",
                    "--rdma-mtu", "1024", "--push-listen", "10.213.0.7"});
  ASSERT_TRUE(v) << v.status().to_string();
  EXPECT_EQ(v->backend, Backend::kVerbs);
  EXPECT_EQ(v->connect_options().backend, Backend::kVerbs);
  EXPECT_EQ(v->connect_options().verbs.device, "rxe0");
  EXPECT_EQ(v->connect_options().verbs.port, 1);
  EXPECT_EQ(v->connect_options().verbs.gid_index, 3);
  EXPECT_EQ(v->connect_options().verbs.mtu, 1024u);
  EXPECT_EQ(v->push_host, "10.213.0.7");
  auto d = resolve({});
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->verbs.gid_index, -1) << "auto discovers the GID";
  EXPECT_EQ(d->push_host, "127.0.0.1");
  EXPECT_EQ(d->memory_failover_wait.count(), 0) << "no --zookeeper: nobody would declare a memory node failed";

  for (std::vector<const char*> bad : {std::vector<const char*>{"--rdma-mtu", "1000"},
                                       std::vector<const char*>{"--rdma-gid-index", "x"},
                                       std::vector<const char*>{"--rdma-gid-index", "-2"},
                                       std::vector<const char*>{"--push-listen", "node7.example"},
                                       std::vector<const char*>{"--push-listen", ""}}) {
    auto r = resolve(bad);
    EXPECT_FALSE(r) << bad[0] << " " << bad[1];
    if (!r) {
      EXPECT_EQ(r.status().code(), Errc::kInvalidArgument);
      EXPECT_NE(r.status().message().find(std::string(bad[0]).substr(2, 8)), std::string::npos)
          << r.status().to_string();
    }
  }
}

TEST(LaneMap, MapsSlotAndCoordinatorAndRefusesWhatDoesNotFit) {
  LaneMap m(4096, 256);  // 4 fixed slots of 64 lanes
  EXPECT_EQ(m.max_fixed_pid(), 4u);
  EXPECT_EQ(LaneMap::fixed_slot(1), (LaneSlot{0, kFixedSlotLanes}));
  EXPECT_EQ(m.lane_index(LaneMap::fixed_slot(1), 0).value(), 0u);
  EXPECT_EQ(m.lane_index(LaneMap::fixed_slot(2), 5).value(), kFixedSlotLanes + 5);
  EXPECT_EQ(m.lane_index(LaneMap::fixed_slot(4), kFixedSlotLanes - 1).value(), 4 * kFixedSlotLanes - 1);
  EXPECT_EQ(m.lane_offset(1 << 20, 3), (1u << 20) + 3 * 4096);
  auto far = m.lane_index(LaneMap::fixed_slot(5), 0);
  ASSERT_FALSE(far);
  EXPECT_NE(far.status().message().find("--log-size"), std::string::npos) << far.status().message();
  EXPECT_FALSE(m.lane_index(LaneMap::fixed_slot(1), kFixedSlotLanes));
  // A leased slot is any run of lanes: 200 coordinators in lanes 50..249.
  const LaneSlot big{50, 200};
  EXPECT_TRUE(m.check_slot(big));
  EXPECT_EQ(m.lane_index(big, 199).value(), 249u);
  EXPECT_FALSE(m.lane_index(big, 200));
  EXPECT_FALSE(m.check_slot(LaneSlot{200, 57}));  // ends at lane 257 > 256
  EXPECT_FALSE(m.check_slot(LaneSlot{0, 0}));
  EXPECT_TRUE(big.overlaps(LaneSlot{249, 1}));
  EXPECT_FALSE(big.overlaps(LaneSlot{250, 6}));
}

TEST(ComputeConfig, MoreThanTheFixedSlotNeedsALeasedSlot) {
  ComputeConfig c;
  c.cluster_id = 1;
  c.compute_id = 3;
  c.secret = "0123456789abcdef";
  c.memory_nodes = {Endpoint{"127.0.0.1", 7000}};
  c.threads = 2;
  c.coordinators = 256;  // 512 coordinators, as the seed measures
  Status s = c.validate();
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("leased lane slot"), std::string::npos) << s.message();
  c.lane_slot = LaneSlot{1000, c.lanes_needed()};
  EXPECT_TRUE(c.validate()) << c.validate().to_string();
  EXPECT_EQ(c.effective_lane_slot(), (LaneSlot{1000, 513}));
  c.lane_slot = LaneSlot{1000, 100};
  EXPECT_FALSE(c.validate());
}

TEST(Latch, EngineWordsCarryOwnerAndFordWordsDoNot) {
  const uint64_t w = encode_latch({9, 3, 77});
  EXPECT_EQ(latch_pid(w), 9);
  EXPECT_EQ(decode_latch(w).coordinator, 3);
  EXPECT_EQ(decode_latch(w).seq, 77u);
  EXPECT_NE(kFordLatch, kLatchFree);
  EXPECT_EQ(latch_pid(kFordLatch), 0);  // owner-less: never matches a failed pid
}

// Coroutine stacks switched under ASan: exceptions thrown and caught inside
// a coroutine, deep frames, an exception escaping the body, and unwinding a
// suspended coroutine must not produce reports (compute/coroutine.h).
int deep(int n) {
  volatile char pad[512];
  pad[0] = static_cast<char>(n);
  return n == 0 ? pad[0] : deep(n - 1) + 1;
}

TEST(Coroutines, StackSwitchingIsCleanUnderSanitizers) {
  int steps = 0;
  bool unwound = false;
  {
    struct Flag {
      bool* f;
      ~Flag() { *f = true; }
    };
    Coroutine co(256 * 1024, [&](Coroutine& self) {
      Flag flag{&unwound};
      for (int i = 0; i < 3; ++i) {
        try {
          throw std::runtime_error("inside");
        } catch (const std::exception&) {
          ++steps;
        }
        EXPECT_EQ(deep(100), 100);
        self.suspend();
      }
      self.suspend();  // left suspended: destroying `co` unwinds this stack
    });
    while (steps < 3) co.resume();
    co.resume();
    EXPECT_FALSE(co.finished());
  }
  EXPECT_EQ(steps, 3);
  EXPECT_TRUE(unwound);
  // An exception escaping the body reaches the resumer.
  Coroutine bad(256 * 1024, [](Coroutine& self) {
    self.suspend();
    throw std::runtime_error("escaped");
  });
  bad.resume();
  EXPECT_THROW(bad.resume(), std::runtime_error);
  EXPECT_TRUE(bad.finished());
  // Throwing on the main stack afterwards is still fine.
  EXPECT_THROW(throw std::runtime_error("main"), std::runtime_error);
}

}  // namespace
}  // namespace pandora
