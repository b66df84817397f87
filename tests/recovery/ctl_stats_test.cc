// `pandora-ctl stats` (deploy/ctl/memory_node_stats.h) against a real
// cluster: a one-server ZooKeeper ensemble, two memory daemons and
// pandora-ctl init (tests/support/local_cluster.h). What each daemon served
// and refused, whether it is the daemon the record binds its node to, a
// failed-over node whose daemon still answers, an unreachable one, and the
// same without ZooKeeper.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/logger.h"
#include "common/transport/client.h"
#include "common/udp_socket.h"
#include "common/wire/heartbeat.h"
#include "recovery/registry.h"
#include "tests/recovery/cluster_binaries.h"
#include "tests/support/memd_process.h"

namespace pandora::testing {
namespace {

using namespace std::chrono_literals;

// The JSON document in `out` (stdout and stderr merged: the document is
// the only thing between its first and last brace).
nlohmann::json json_of(const std::string& out) {
  const size_t begin = out.find('{');
  const size_t end = out.rfind('}');
  if (begin == std::string::npos || end == std::string::npos || end < begin) return nullptr;
  return nlohmann::json::parse(out.substr(begin, end - begin + 1), nullptr, /*allow_exceptions=*/false);
}

const nlohmann::json* node_in(const nlohmann::json& doc, uint32_t id) {
  for (const nlohmann::json& n : doc["memory_nodes"]) {
    if (n["node_id"] == id) return &n;
  }
  return nullptr;
}

class CtlStatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalClusterOptions o = built_cluster_options();
    o.zk_servers = 1;
    adjust(o);
    cluster_ = std::make_unique<LocalCluster>(o);
    Status s = cluster_->start();
    ASSERT_TRUE(s) << s.to_string();
    for (size_t i = 0; i < 2; ++i) {
      auto ctl = ControlClient::connect(memd(i).endpoint(), memd(i).identity(0), 5s);
      ASSERT_TRUE(ctl) << ctl.status().to_string();
      incarnation_[i] = (*ctl)->region().daemon_incarnation;
      ASSERT_NE(incarnation_[i], 0u);
    }
  }

  virtual void adjust(LocalClusterOptions&) {}
  LocalMemd& memd(size_t i) { return cluster_->memds().node(i); }

  int stats(const std::vector<std::string>& extra, std::string* out) {
    std::vector<std::string> args = {"stats"};
    args.insert(args.end(), extra.begin(), extra.end());
    return cluster_->ctl(args, out);
  }

  std::unique_ptr<Registry> registry() {
    auto reg = Registry::open(cluster_->zk_options(), cluster_->options().zk_root, cluster_->cluster_id(),
                              Logger("test", LogLevel::kWarn));
    EXPECT_TRUE(reg) << reg.status().to_string();
    return reg ? std::move(*reg) : nullptr;
  }

  std::unique_ptr<LocalCluster> cluster_;
  uint64_t incarnation_[2] = {0, 0};
};

TEST_F(CtlStatsTest, ReportsWhatEachDaemonServedAndRefusedAndWhetherItIsTheBoundOne) {
  std::string out;
  ASSERT_EQ(cluster_->run_bench("load", {"--workload", "smallbank", "--accounts", "1000", "--load", "--seconds", "0"},
                                &out),
            0)
      << out;
  // A stranger's login at node 1 only.
  ClientIdentity stranger = memd(0).identity(0);
  stranger.secret = "not the cluster's secret, 32 bytes";
  ASSERT_FALSE(ControlClient::connect(memd(0).endpoint(), stranger, 5s));
  // An operator fences two (unused) pids at node 2, in one request.
  ClientIdentity admin = memd(1).identity(0);
  admin.role = wire::Role::kAdmin;
  {
    auto ctl = ControlClient::connect(memd(1).endpoint(), admin, 5s);
    ASSERT_TRUE(ctl) << ctl.status().to_string();
    const std::vector<uint16_t> two{40, 41};
    ASSERT_TRUE((*ctl)->fence(two));
  }

  ASSERT_EQ(stats({"--json"}, &out), 0) << out;
  const nlohmann::json doc = json_of(out);
  ASSERT_TRUE(doc.is_object()) << out;
  EXPECT_EQ(doc["problems"], 0) << out;
  EXPECT_EQ(doc["unreachable"], 0) << out;
  for (uint32_t id : {1u, 2u}) {
    const nlohmann::json* n = node_in(doc, id);
    ASSERT_NE(n, nullptr) << "node " << id << "\n" << out;
    const std::string inc = fmt::format("{:#x}", incarnation_[id - 1]);
    EXPECT_EQ((*n)["state"], "live") << out;
    EXPECT_EQ((*n)["daemon_incarnation"], inc) << out;
    EXPECT_EQ((*n)["bound_incarnation"], inc) << "init binds each node to the daemon it logged in to\n" << out;
    EXPECT_GT((*n)["stats"]["writes"].get<uint64_t>(), 0u) << "the load wrote to every node\n" << out;
    EXPECT_GT((*n)["stats"]["connections_total"].get<uint64_t>(), 0u) << out;
    EXPECT_EQ((*n)["stats"]["auth_failures"].get<uint64_t>(), id == 1 ? 1u : 0u) << out;
    EXPECT_EQ((*n)["stats"]["fenced_nodes"].get<uint64_t>(), id == 2 ? 2u : 0u) << out;
    EXPECT_EQ((*n)["stats"]["fence_requests"].get<uint64_t>(), id == 2 ? 1u : 0u) << out;
  }

  ASSERT_EQ(stats({}, &out), 0) << out;
  const std::string first = fmt::format("memory node 1 at {}: daemon {:#x}", memd(0).endpoint().to_string(),
                                        incarnation_[0]);
  EXPECT_NE(out.find(first), std::string::npos) << out;
  EXPECT_NE(out.find("the one the record binds"), std::string::npos) << out;
  EXPECT_NE(out.find("refused 1 login(s)"), std::string::npos) << out;
  EXPECT_NE(out.find("2 compute id(s) fenced (1 fence request(s) served)"), std::string::npos) << out;
}

// The record binds node 2 to a daemon that is not the one at its address
// (as after a restart nobody recorded): a problem, exit 1; set-memory-nodes
// binds the daemons it logs in to, and all is well again.
TEST_F(CtlStatsTest, ADaemonThatIsNotTheBoundOneIsAProblemUntilItIsRecorded) {
  auto reg = registry();
  ASSERT_TRUE(reg);
  ASSERT_TRUE(reg->readdress_memory_nodes({{1, memd(0).endpoint(), incarnation_[0]},
                                           {2, memd(1).endpoint(), 0xbad}}));
  std::string out;
  ASSERT_EQ(stats({}, &out), 1) << out;
  EXPECT_NE(out.find("PROBLEM"), std::string::npos) << out;
  EXPECT_NE(out.find("(0xbad)"), std::string::npos) << out;
  ASSERT_EQ(stats({"--json"}, &out), 1) << out;
  const nlohmann::json doc = json_of(out);
  ASSERT_TRUE(doc.is_object()) << out;
  EXPECT_EQ(doc["problems"], 1) << out;
  EXPECT_EQ((*node_in(doc, 1))["problem"], "") << out;
  EXPECT_NE((*node_in(doc, 2))["problem"], "") << out;

  const std::string nodes = memd(0).endpoint().to_string() + "," + memd(1).endpoint().to_string();
  ASSERT_EQ(cluster_->ctl({"set-memory-nodes", "--memory-nodes", nodes}, &out), 0) << out;
  ASSERT_EQ(stats({}, &out), 0) << out;
  EXPECT_EQ(out.find("PROBLEM"), std::string::npos) << out;
}

// Node 2 failed over while its daemon runs (cut off, not dead): reported,
// not a problem of the live cluster. Then node 1's daemon dies: exit 4.
// Without ZooKeeper, the given daemons are asked.
TEST_F(CtlStatsTest, AFailedOverNodesDaemonAndAnUnreachableOneAreReported) {
  auto reg = registry();
  ASSERT_TRUE(reg);
  ASSERT_TRUE(reg->fail_memory_node(FailedMemoryNode{2, memd(1).endpoint()}, 7));
  ASSERT_TRUE(reg->end_pause());
  std::string out;
  ASSERT_EQ(stats({"--json"}, &out), 0) << out;
  nlohmann::json doc = json_of(out);
  ASSERT_TRUE(doc.is_object()) << out;
  const nlohmann::json* two = node_in(doc, 2);
  ASSERT_NE(two, nullptr) << out;
  EXPECT_EQ((*two)["state"], "failed-over") << out;
  EXPECT_EQ((*two)["old_daemon_answers"], true) << out;
  EXPECT_EQ((*two)["bound_incarnation"], nullptr) << "a fail-over drops the dead daemon's binding\n" << out;
  ASSERT_EQ(stats({}, &out), 0) << out;
  EXPECT_NE(out.find("its old daemon still answers"), std::string::npos) << out;

  memd(0).kill9();
  ASSERT_EQ(stats({}, &out), 4) << out;
  EXPECT_NE(out.find("UNREACHABLE"), std::string::npos) << out;

  const int rc = run_command({PANDORA_CLUSTER_CTL, "stats", "--json", "--memory-nodes", memd(1).endpoint().to_string(),
                              "--cluster-id", fmt::format("{:#x}", cluster_->cluster_id()), "--secret-file",
                              cluster_->secret_file()},
                             &out);
  ASSERT_EQ(rc, 0) << out;
  doc = json_of(out);
  ASSERT_TRUE(doc.is_object()) << out;
  ASSERT_EQ(doc["memory_nodes"].size(), 1u) << out;
  EXPECT_EQ(doc["memory_nodes"][0]["node_id"], 2) << "without a record, the node the daemon serves\n" << out;
  EXPECT_EQ(doc["memory_nodes"][0]["bound_incarnation"], nullptr) << out;
  EXPECT_EQ(doc["memory_nodes"][0]["daemon_incarnation"], fmt::format("{:#x}", incarnation_[1])) << out;

  EXPECT_EQ(run_command({PANDORA_CLUSTER_CTL, "stats", "--cluster-id", "7", "--secret-file", cluster_->secret_file()},
                        &out),
            2)
      << out;
  EXPECT_NE(out.find("--memory-nodes"), std::string::npos) << out;
}

// The detector's part of `pandora-ctl stats`: each replica pandora-fd
// registered answers with what it hears (both daemons heartbeat it) and
// whether it leads; one leads. A replica that is registered but does not
// answer (here: announced by the test at a UDP port it holds and never
// reads, as a stopped replica whose session has not expired yet) is
// unreachable: exit 4, named in text and JSON.
class CtlStatsDetectorTest : public CtlStatsTest {
 protected:
  void adjust(LocalClusterOptions& o) override { o.memd_heartbeats = true; }
};

TEST_F(CtlStatsDetectorTest, ReportsWhatEachReplicaHearsAndOneThatDoesNotAnswer) {
  for (uint32_t id : {1u, 2u}) {
    // Memory suspicion slower than a loaded machine's stalls: this test
    // wants both nodes watched, not failed over.
    auto fd = cluster_->start_fd(id, {"--memory-timeout-us", "5000000"});
    ASSERT_TRUE(fd) << fd.status().to_string();
  }
  auto reg = registry();
  ASSERT_TRUE(reg);
  uint16_t silent_port = 0;
  Result<net::UniqueFd> silent = net::bind_udp(Endpoint{"127.0.0.1", 0}, &silent_port);
  ASSERT_TRUE(silent) << silent.status().to_string();
  ASSERT_TRUE(reg->announce_replica(3, Endpoint{"127.0.0.1", silent_port}));

  // Until both replicas are registered, one leads and each hears both daemons.
  std::string out;
  nlohmann::json doc;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  auto settled = [&] {
    if (stats({"--json"}, &out) != 4) return false;
    doc = json_of(out);
    if (!doc.is_object() || doc["detector_replicas"].size() != 3) return false;
    int leaders = 0;
    uint64_t leader_id = 0;
    for (const nlohmann::json& r : doc["detector_replicas"]) {
      if (r["replica_id"] == 3) continue;
      if (!r["answered"].get<bool>() || r["stats"]["watched_memory"] != 2 || r["stats"]["heartbeats"] == 0) {
        return false;
      }
      if (r["stats"]["leader"] == 1) leader_id = r["replica_id"].get<uint64_t>();
      leaders += r["stats"]["leader"].get<int>();
    }
    if (leaders != 1) return false;
    // The other real replica follows the leader, next in line, and hears it.
    for (const nlohmann::json& r : doc["detector_replicas"]) {
      if (r["replica_id"] == 3) continue;
      if (r["stats"]["leader_replica"] != leader_id) return false;
      if (r["stats"]["leader"] == 0 && (r["stats"]["successor"] != 1 || r["stats"]["peer_heartbeats"] == 0)) {
        return false;
      }
    }
    return true;
  };
  while (!settled()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the replicas never settled:\n" << out;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(doc["detector_replicas_unreachable"], 1) << out;
  EXPECT_EQ(doc["unreachable"], 0) << "the memory nodes all answer\n" << out;
  const nlohmann::json& third = doc["detector_replicas"][2];
  EXPECT_EQ(third["replica_id"], 3) << out;
  EXPECT_FALSE(third["answered"].get<bool>()) << out;
  EXPECT_NE(third["error"].get<std::string>().find("no answer within"), std::string::npos) << out;
  for (const nlohmann::json& r : doc["detector_replicas"]) {
    if (r["replica_id"] == 3) continue;
    EXPECT_EQ(r["stats"]["watched_compute"], 0) << "no compute node joined\n" << out;
    EXPECT_GE(r["stats"]["queries_answered"].get<uint64_t>(), 1u) << out;
    EXPECT_TRUE(r["incarnation"].is_string()) << out;
    EXPECT_EQ(r["stats"].size(), wire::kReplicaStatsFields.size()) << out;
    EXPECT_EQ(r["stats"]["depositions"], 0) << "nobody was silent\n" << out;
  }

  ASSERT_EQ(stats({}, &out), 4) << out;
  EXPECT_NE(out.find(fmt::format("detector replica 3 at 127.0.0.1:{}: UNREACHABLE", silent_port)), std::string::npos)
      << out;
  EXPECT_NE(out.find("(leader)"), std::string::npos) << out;
  EXPECT_NE(out.find("watching 0 compute node(s) and 2 memory node(s)"), std::string::npos) << out;
  EXPECT_NE(out.find("  leads; 0 leader(s) deposed"), std::string::npos) << out;
  EXPECT_NE(out.find("ms ago; next in line (deposes it if silent too long); 0 leader(s) deposed"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace pandora::testing
