// The ZooKeeper registry (recovery/registry.h): record formats, lane-slot
// leasing, and - against a real 3-server ensemble and real memory daemons -
// registration, refusal of bad input, and thousands of compute-node
// lifetimes on a default-sized log area (pids retire, lane slots come back).
#include <gtest/gtest.h>

#include <stdexcept>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "common/latch.h"
#include "common/log_record.h"
#include "common/slot_layout.h"
#include "compute/loader.h"
#include "compute/op_batch.h"
#include "compute/table_geometry.h"
#include "recovery/latch_scan.h"
#include "recovery/membership.h"
#include "recovery/recycler.h"
#include "recovery/recovery_coordinator.h"
#include "recovery/registry.h"
#include "recovery/table_audit.h"
#include "recovery/replica_rebuild.h"
#include "compute/scheduler.h"
#include "tests/compute/compute_test_support.h"
#include "tests/support/memd_cluster.h"
#include "testing/zk_ensemble.h"

namespace pandora {
namespace {

// The ZooKeeper identity of these tests' registries (registry_auth).
constexpr std::string_view kRegistrySecret = "registry test secret, 32 bytes..";

TEST(RegistryRecords, RoundTripAndStrictParsing) {
  ClusterRecord c;
  c.cluster_id = 0xabc;
  c.epoch = 3;
  c.memory_nodes = {Endpoint{"127.0.0.1", 7000}, Endpoint{"127.0.0.1", 7001}};
  c.lane_bytes = 16384;
  c.lanes = 1024;
  auto c2 = decode_cluster_record(encode_cluster_record(c));
  ASSERT_TRUE(c2) << c2.status().to_string();
  EXPECT_EQ(c2->cluster_id, 0xabcu);
  EXPECT_EQ(c2->epoch, 3u);
  ASSERT_EQ(c2->memory_nodes.size(), 2u);
  EXPECT_EQ(c2->memory_nodes[1].port, 7001);
  EXPECT_EQ(c2->lanes, 1024u);
  EXPECT_TRUE(c2->failed_memory.empty());
  c.failed_memory = {FailedMemoryNode{2, Endpoint{"127.0.0.1", 7001}}, FailedMemoryNode{9, Endpoint{"10.0.0.3", 80}}};
  auto c3 = decode_cluster_record(encode_cluster_record(c));
  ASSERT_TRUE(c3) << c3.status().to_string();
  EXPECT_EQ(c3->failed_memory, c.failed_memory);
  for (const char* bad : {"cluster_id=0x1\nfailed_memory=2\n", "cluster_id=0x1\nfailed_memory=x@127.0.0.1:1\n",
                          "cluster_id=0x1\nfailed_memory=2@nohost\n"}) {
    auto d = decode_cluster_record(bad);
    EXPECT_FALSE(d) << bad;
    if (!d) EXPECT_EQ(d.status().code(), Errc::kCorrupt) << bad;
  }

  MemberRecord m;
  m.pid = 77;
  m.role = MemberRole::kFd;
  m.slot = LaneSlot{130, 65};
  m.push = Endpoint{"127.0.0.1", 4242};
  m.incarnation = 0xfeed;
  m.os_pid = 1234;
  auto m2 = decode_member_record(encode_member_record(m));
  ASSERT_TRUE(m2) << m2.status().to_string();
  EXPECT_EQ(m2->pid, 77);
  EXPECT_EQ(m2->role, MemberRole::kFd);
  EXPECT_EQ(m2->slot, (LaneSlot{130, 65}));
  ASSERT_TRUE(m2->push);
  EXPECT_EQ(m2->push->port, 4242);
  EXPECT_EQ(m2->incarnation, 0xfeedu);

  RecoveryRecord r;
  r.pid = 9;
  r.step = RecoveryStep::kPublished;
  r.slot = LaneSlot{0, 5};
  r.fence_us = 11;
  r.log_recovery_us = 22;
  r.records = 3;
  auto r2 = decode_recovery_record(encode_recovery_record(r));
  ASSERT_TRUE(r2) << r2.status().to_string();
  EXPECT_EQ(r2->step, RecoveryStep::kPublished);
  EXPECT_EQ(r2->fence_us, 11u);
  EXPECT_EQ(r2->log_recovery_us, 22u);
  EXPECT_EQ(r2->records, 3u);

  // Malformed text is refused with a message, never half-parsed.
  EXPECT_EQ(decode_member_record("pid=5\nslot=nonsense\n").status().code(), Errc::kCorrupt);
  EXPECT_EQ(decode_member_record("pid=70000\n").status().code(), Errc::kCorrupt);
  EXPECT_EQ(decode_member_record("no equals sign\n").status().code(), Errc::kCorrupt);
  EXPECT_EQ(decode_cluster_record("epoch=1\n").status().code(), Errc::kCorrupt);  // no cluster id
  EXPECT_EQ(decode_recovery_record("pid=1\nstep=sideways\n").status().code(), Errc::kCorrupt);
  EXPECT_EQ(decode_alloc_record("next_pid=0\n").status().code(), Errc::kCorrupt);
}

// The daemon each live node is bound to: written by whoever logged in,
// dropped when the node fails over, replaced wholesale by a readdress
// (every daemon restarted), parsed strictly.
TEST(RegistryRecords, MemoryIncarnationsBindLiveNodesToTheirDaemons) {
  ClusterRecord c;
  c.cluster_id = 0xabc;
  c.memory_nodes = {Endpoint{"127.0.0.1", 7001}, Endpoint{"127.0.0.1", 7002}};
  c.memory_node_ids = {1, 2};
  c.memory_incarnations = {{1, 0x1111}, {2, 0xffffffffffffffff}};
  auto d = decode_cluster_record(encode_cluster_record(c));
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->memory_incarnations, c.memory_incarnations);

  auto moved = readdressed(c, {{1, Endpoint{"127.0.0.1", 9001}, 0x3333}, {2, Endpoint{"127.0.0.1", 9002}, 0}});
  ASSERT_TRUE(moved) << moved.status().to_string();
  EXPECT_EQ(moved->memory_incarnations, (std::map<uint32_t, uint64_t>{{1, 0x3333}}))
      << "a readdress binds the daemons it found, and only those";

  // A record written before bindings existed decodes with none; a binding
  // of a node the record does not have live is refused.
  auto old = decode_cluster_record("cluster_id=0x1\nmemory_nodes=127.0.0.1:1\nmemory_node_ids=4\n");
  ASSERT_TRUE(old) << old.status().to_string();
  EXPECT_TRUE(old->memory_incarnations.empty());
  const std::string head = "cluster_id=0x1\nmemory_nodes=127.0.0.1:1,127.0.0.1:2\nmemory_node_ids=4,5\n";
  for (const std::string& bad : {head + "memory_incarnations=4\n", head + "memory_incarnations=4:0\n",
                                head + "memory_incarnations=4:0x1,4:0x2\n", head + "memory_incarnations=6:0x1\n",
                                head + "memory_incarnations=4:zz\n",
                                head + "failed_memory=5@127.0.0.1:2\nmemory_incarnations=5:0x1\n"}) {
    auto b = decode_cluster_record(bad);
    EXPECT_FALSE(b) << bad;
    if (!b) EXPECT_EQ(b.status().code(), Errc::kCorrupt) << bad;
  }
}

TEST(RegistryRecords, MemoryNodeIdsRoundTripAndMustMatchTheList) {
  ClusterRecord c;
  c.cluster_id = 0xabc;
  c.memory_nodes = {Endpoint{"127.0.0.1", 7000}, Endpoint{"127.0.0.1", 7001}};
  c.memory_node_ids = {4, 9};
  auto d = decode_cluster_record(encode_cluster_record(c));
  ASSERT_TRUE(d) << d.status().to_string();
  EXPECT_EQ(d->memory_node_ids, (std::vector<uint32_t>{4, 9}));
  // A record written before the ids existed decodes with none.
  auto old = decode_cluster_record("cluster_id=0x1\nmemory_nodes=127.0.0.1:1,127.0.0.1:2\n");
  ASSERT_TRUE(old) << old.status().to_string();
  EXPECT_TRUE(old->memory_node_ids.empty());
  for (const char* bad : {"cluster_id=0x1\nmemory_nodes=127.0.0.1:1,127.0.0.1:2\nmemory_node_ids=1\n",
                          "cluster_id=0x1\nmemory_nodes=127.0.0.1:1\nmemory_node_ids=x\n"}) {
    auto b = decode_cluster_record(bad);
    EXPECT_FALSE(b) << bad;
    if (!b) EXPECT_EQ(b.status().code(), Errc::kCorrupt) << bad;
  }
}

// After a whole-cluster restart the daemons listen on new ports; the record
// takes their addresses only when they are exactly the live nodes it had.
TEST(RegistryRecords, RestoringTakesOnlyAFailedNodeToAnAddressNobodyHas) {
  ClusterRecord c;
  c.cluster_id = 0xabc;
  c.epoch = 7;
  c.memory_nodes = {Endpoint{"127.0.0.1", 7001}, Endpoint{"127.0.0.1", 7002}, Endpoint{"127.0.0.1", 7003}};
  c.memory_node_ids = {1, 2, 3};
  c.failed_memory = {FailedMemoryNode{2, Endpoint{"127.0.0.1", 7002}}, FailedMemoryNode{3, Endpoint{"127.0.0.1", 7003}}};
  const Endpoint fresh{"127.0.0.1", 8002};
  auto back = restored(c, 2, fresh, 0xbeef);
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->epoch, 8u);
  EXPECT_EQ(back->memory_nodes[1], fresh);
  EXPECT_EQ(back->memory_node_ids, c.memory_node_ids);
  EXPECT_EQ(back->failed_memory, (std::vector<FailedMemoryNode>{c.failed_memory[1]}));
  EXPECT_EQ(live_memory_nodes(*back), (std::vector<Endpoint>{c.memory_nodes[0], fresh}));
  // Bound to the daemon that was filled (and that survives the text).
  EXPECT_EQ(back->memory_incarnations, (std::map<uint32_t, uint64_t>{{2, 0xbeef}}));
  auto text = decode_cluster_record(encode_cluster_record(*back));
  ASSERT_TRUE(text) << text.status().to_string();
  EXPECT_EQ(text->memory_incarnations, back->memory_incarnations);
  // Its own old address is free again (the dead daemon is gone).
  EXPECT_TRUE(restored(c, 2, Endpoint{"127.0.0.1", 7002}, 0));

  struct Case {
    const char* what;
    ClusterRecord rec;
    uint32_t id;
    Endpoint at;
    Errc code;
  };
  ClusterRecord no_ids = c;
  no_ids.memory_node_ids.clear();
  const Case refused[] = {
      {"a live node", c, 1, fresh, Errc::kInvalidArgument},
      {"an unknown node", c, 9, fresh, Errc::kInvalidArgument},
      {"a live node's address", c, 2, c.memory_nodes[0], Errc::kConflict},
      {"another failed node's address", c, 2, Endpoint{"127.0.0.1", 7003}, Errc::kConflict},
      {"a record without node ids", no_ids, 2, fresh, Errc::kUnsupported},
  };
  for (const Case& k : refused) {
    auto r = restored(k.rec, k.id, k.at, 0x1);
    ASSERT_FALSE(r) << k.what;
    EXPECT_EQ(r.status().code(), k.code) << k.what << ": " << r.status().to_string();
  }
}

TEST(RegistryRecords, ReplaceRequestRoundTrips) {
  ReplaceRequest r{3, Endpoint{"127.0.0.1", 9003}, {}};
  auto back = decode_replace_request(encode_replace_request(r));
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(*back, r);
  r.error = "invalid-argument: table accounts is too full\nsecond line";
  back = decode_replace_request(encode_replace_request(r));
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->error, "invalid-argument: table accounts is too full second line");
  for (const char* bad : {"node=3\n", "endpoint=127.0.0.1:1\n", "node=x\nendpoint=127.0.0.1:1\n",
                          "node=3\nendpoint=nohost\n", "garbage\n"}) {
    EXPECT_FALSE(decode_replace_request(bad)) << bad;
  }
}

TEST(RegistryRecords, ReaddressingTakesExactlyTheLiveNodes) {
  ClusterRecord c;
  c.cluster_id = 0xabc;
  c.epoch = 4;
  c.memory_nodes = {Endpoint{"127.0.0.1", 7001}, Endpoint{"127.0.0.1", 7002}, Endpoint{"127.0.0.1", 7003}};
  c.memory_node_ids = {1, 2, 3};
  c.failed_memory = {FailedMemoryNode{2, Endpoint{"127.0.0.1", 7002}}};
  const Endpoint a{"127.0.0.1", 8001}, b{"127.0.0.1", 8003};

  // Any order: placement follows node ids.
  auto moved = readdressed(c, {{3, b}, {1, a}});
  ASSERT_TRUE(moved) << moved.status().to_string();
  EXPECT_EQ(moved->epoch, 5u);
  EXPECT_EQ(moved->failed_memory, c.failed_memory);
  ASSERT_EQ(moved->memory_nodes.size(), 3u);
  EXPECT_EQ(moved->memory_nodes, (std::vector<Endpoint>{Endpoint{"127.0.0.1", 7002}, b, a}))
      << "the failed node keeps the address compute nodes know it by";
  EXPECT_EQ(moved->memory_node_ids, (std::vector<uint32_t>{2, 3, 1}));
  EXPECT_EQ(live_memory_nodes(*moved), (std::vector<Endpoint>{b, a}));
  // Restarting again from the new record works the same way.
  auto again = readdressed(*moved, {{1, Endpoint{"127.0.0.1", 9001}}, {3, Endpoint{"127.0.0.1", 9003}}});
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_EQ(again->epoch, 6u);

  struct Case {
    const char* what;
    std::vector<MemoryNodeAddress> live;
    Errc code;
  };
  const Case refused[] = {
      {"a live node missing", {{1, a}}, Errc::kMismatch},
      {"a stranger instead of node 3", {{1, a}, {7, b}}, Errc::kMismatch},
      {"the failed-over node back", {{1, a}, {3, b}, {2, Endpoint{"127.0.0.1", 8002}}}, Errc::kMismatch},
      {"one node twice", {{1, a}, {1, b}}, Errc::kMismatch},
      {"one address twice", {{1, a}, {3, a}}, Errc::kMismatch},
      {"a live node at the failed node's old address", {{1, a}, {3, Endpoint{"127.0.0.1", 7002}}}, Errc::kConflict},
  };
  for (const Case& k : refused) {
    auto r = readdressed(c, k.live);
    ASSERT_FALSE(r) << k.what;
    EXPECT_EQ(r.status().code(), k.code) << k.what << ": " << r.status().to_string();
  }

  // A record without ids (written before them): counted and checked
  // against the failed ids only, then the ids are recorded.
  ClusterRecord legacy = c;
  legacy.memory_node_ids.clear();
  auto l = readdressed(legacy, {{1, a}, {3, b}});
  ASSERT_TRUE(l) << l.status().to_string();
  EXPECT_EQ(l->memory_node_ids, (std::vector<uint32_t>{2, 1, 3}));
  EXPECT_FALSE(readdressed(legacy, {{1, a}}));
  EXPECT_FALSE(readdressed(legacy, {{1, a}, {2, b}}));
}

TEST(RegistryRecords, FirstFitLeasesReuseFreedRuns) {
  AllocRecord a;
  EXPECT_EQ(find_free_slot(a, 65, 1024), (LaneSlot{0, 65}));
  a.leases = {Lease{LaneSlot{0, 65}, 1}, Lease{LaneSlot{65, 65}, 2}, Lease{LaneSlot{200, 10}, 3}};
  EXPECT_EQ(find_free_slot(a, 65, 1024), (LaneSlot{130, 65}));  // the freed run 130..199
  EXPECT_EQ(find_free_slot(a, 70, 1024), (LaneSlot{130, 70}));
  EXPECT_EQ(find_free_slot(a, 71, 1024), (LaneSlot{210, 71}));  // 130..199 holds only 70
  EXPECT_EQ(find_free_slot(a, 815, 1024), std::nullopt);  // 210 + 815 > 1024
  EXPECT_EQ(find_free_slot(a, 814, 1024), (LaneSlot{210, 814}));
  auto round = decode_alloc_record(encode_alloc_record(a));
  ASSERT_TRUE(round);
  ASSERT_EQ(round->leases.size(), 3u);
  EXPECT_EQ(round->leases[2].pid, 3);
}

// Registration as Membership::join does it: an answer lost to a ZooKeeper
// timeout is retried, and a registration that did apply is found again by
// its incarnation (so it is not made twice).
Result<MemberRecord> register_retrying(Registry& reg, const MemberRecord& want, uint32_t lanes) {
  Result<MemberRecord> m = Status(Errc::kUnavailable, "not tried");
  for (int attempt = 0; attempt < 5; ++attempt) {
    m = reg.register_member(want, lanes);
    if (m || m.status().code() != Errc::kUnavailable) return m;
    if (auto all = reg.members()) {
      for (const MemberRecord& r : *all) {
        if (r.incarnation == want.incarnation) return r;
      }
    }
  }
  return m;
}

// What RegistryZkTest::run_join() saw.
struct JoinRun {
  std::vector<uint16_t> pids;
  std::vector<std::vector<uint16_t>> asked;   // the batch at each question
  std::vector<std::vector<uint16_t>> pushes;
  std::vector<uint64_t> writes_at_push;       // waited ZooKeeper writes so far, at each push
  std::vector<bool> first_listed_at_push;     // whether failed/<first pid> was written then
  uint64_t writes = 0;                        // waited ZooKeeper writes in all (the leader's session)
  uint64_t publisher_writes = 0;              // those of the publishing session
  std::vector<RecoveryRecord> done;
  bool values_rolled_back = false;            // both half-done commits undone
  std::vector<uint16_t> listed;               // failed/ afterwards
};

// Both pids of a JoinRun recovered as one batch: their records done, in
// order, their half-done commits rolled back, both listed as failed (read
// on the leader's session).
void expect_both_recovered(const JoinRun& r) {
  ASSERT_EQ(r.done.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.done[i].pid, r.pids[i]);
    EXPECT_EQ(r.done[i].step, RecoveryStep::kDone);
    EXPECT_EQ(r.done[i].together, 2u);
  }
  EXPECT_TRUE(r.values_rolled_back);
  EXPECT_EQ(r.listed, r.pids);
}

// One ensemble and two memory daemons for every ZooKeeper test of this
// process (ctest runs each test in its own process).
class RegistryZkTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    // A 500 ms tick: 100 ms lost the quorum under load on 2 cores.
    zk_ = new testing::ZkEnsemble(dir_->path() + "/zk", testing::ZkEnsembleOptions{.tick_ms = 500});
    start_ = zk_->start();
  }
  static void TearDownTestSuite() {
    delete zk_;
    delete dir_;
  }
  void SetUp() override { ASSERT_TRUE(start_) << start_.to_string(); }

  zk::ZkOptions zk_options() const {
    zk::ZkOptions o;
    o.hosts = zk_->hosts();
    o.auth = registry_auth(kRegistrySecret);
    return o;
  }
  // A fresh cluster tree per test.
  std::string root(std::string_view name) const { return "/t-" + std::string(name); }

  // Two real daemons with memd's default log area (16 MiB of 16 KiB lanes)
  // and a registry at root(name) that describes them.
  struct DaemonCluster {
    testing::MemdCluster memds{2, "48M", "16M"};
    ComputeConfig base;
    ClusterRecord record;
    std::unique_ptr<Registry> reg;
  };
  void start_daemon_cluster(std::string_view name, DaemonCluster* dc) {
    ASSERT_TRUE(dc->memds.ok()) << dc->memds.error();
    dc->base = dc->memds.config(1, Backend::kTcp, 2);
    dc->record.cluster_id = dc->base.cluster_id;
    dc->record.memory_nodes = dc->base.memory_nodes;
    dc->record.lane_bytes = 16384;
    dc->record.lanes = static_cast<uint32_t>((16u << 20) / dc->record.lane_bytes);
    ASSERT_TRUE(Registry::init(zk_options(), root(name), dc->record, log_));
    auto reg = Registry::open(zk_options(), root(name), dc->record.cluster_id, log_);
    ASSERT_TRUE(reg) << reg.status().to_string();
    dc->reg = std::move(*reg);
  }
  // Three daemons with small log areas, a registry at root(name) that knows
  // their node ids, and the FD leader's data plane (a kFd member) with
  // `accounts` rows in table 1: where the replacement tests start.
  struct ReplacementCluster {
    testing::MemdCluster memds{3, "16M", "2M"};
    ComputeConfig base;
    ClusterRecord record;
    std::unique_ptr<Registry> reg;
    ComputeConfig leader;
    std::unique_ptr<Cluster> cluster;
  };
  void start_replacement_cluster(std::string_view name, uint64_t accounts, ReplacementCluster* rc) {
    ASSERT_TRUE(rc->memds.ok()) << rc->memds.error();
    rc->base = rc->memds.config(1, Backend::kTcp, 2);
    rc->record.cluster_id = rc->base.cluster_id;
    rc->record.memory_nodes = rc->base.memory_nodes;
    rc->record.memory_node_ids = {1, 2, 3};
    rc->record.lane_bytes = testing::kTestLaneBytes;
    rc->record.lanes = static_cast<uint32_t>((2u << 20) / rc->record.lane_bytes);
    ASSERT_TRUE(Registry::init(zk_options(), root(name), rc->record, log_));
    auto reg = Registry::open(zk_options(), root(name), rc->record.cluster_id, log_);
    ASSERT_TRUE(reg) << reg.status().to_string();
    rc->reg = std::move(*reg);
    const auto leader = member_config(*rc->reg, rc->base, rc->record.lane_bytes, MemberRole::kFd, 2);
    ASSERT_TRUE(leader);
    rc->leader = *leader;
    rc->cluster = testing::connect_with_accounts(rc->leader, 1, accounts, 100);
    ASSERT_TRUE(rc->cluster);
  }
  // Node 3's daemon dies and the node is failed over (record, pause ended,
  // the leader's data plane).
  void fail_over_node_3(ReplacementCluster& rc, uint64_t pause_epoch) {
    rc.memds.memd(2).kill9();
    ASSERT_TRUE(rc.reg->fail_memory_node(FailedMemoryNode{3, rc.record.memory_nodes[2]}, pause_epoch));
    ASSERT_TRUE(rc.reg->end_pause());
    rc.cluster->declare_memory_failed(2);
    ASSERT_TRUE(rc.cluster->apply_memory_failures());
  }
  // Registers a member with `lanes` lanes in `reg`: the configuration of
  // its data plane (its pid and lane slot, one coordinator) on `base`'s
  // memory nodes; nullopt (and a test failure) when registering fails.
  static std::optional<ComputeConfig> member_config(Registry& reg, const ComputeConfig& base, uint32_t lane_bytes,
                                                    MemberRole role, uint32_t lanes) {
    auto m = reg.register_member(MemberRecord{.role = role}, lanes);
    EXPECT_TRUE(m) << m.status().to_string();
    if (!m) return std::nullopt;
    ComputeConfig cc = base;
    cc.compute_id = m->pid;
    cc.lane_slot = m->slot;
    cc.lane_bytes = lane_bytes;
    cc.threads = 1;
    cc.coordinators = 1;
    return cc;
  }
  // Registers a member with `lanes` lanes and connects its data plane (one
  // coordinator); null (and a test failure) when either fails.
  std::unique_ptr<Cluster> join(DaemonCluster& dc, MemberRole role, uint32_t lanes) {
    auto cc = member_config(*dc.reg, dc.base, dc.record.lane_bytes, role, lanes);
    if (!cc) return nullptr;
    auto cl = Cluster::connect(*cc, log_);
    EXPECT_TRUE(cl) << cl.status().to_string();
    return cl ? std::move(*cl) : nullptr;
  }
  // A coordinator's options for `dc`, pushing to a fixed (dead) endpoint so
  // that the push callback runs without members being read.
  static RecoveryCoordinatorOptions pushing_coordinator_options(const DaemonCluster& dc) {
    RecoveryCoordinatorOptions ro;
    ro.cluster_id = dc.record.cluster_id;
    ro.secret = dc.base.secret;
    ro.push_targets = [] { return std::vector<Endpoint>{Endpoint{"127.0.0.1", 9}}; };
    return ro;
  }
  // Fence requests each memory daemon of `dc` served so far, in node order.
  static std::vector<uint64_t> fence_requests(const DaemonCluster& dc) {
    std::vector<uint64_t> out;
    Status s = at_every_memory_node(dc.record, dc.base.secret, std::chrono::milliseconds(5000), "stats",
                                    [&](ControlClient& c) {
                                      auto st = c.stats();
                                      if (st) out.push_back(st->fence_requests);
                                      return st.status();
                                    });
    EXPECT_TRUE(s) << s.to_string();
    return out;
  }
  // Compute nodes that joined `dc` and each died in a commit to one of
  // `keys` (load_and_die_mid_commit), kept (their views stay open) with
  // their pids and member records as the detector's leader last read them.
  struct DeadNodes {
    std::vector<std::unique_ptr<Cluster>> nodes;
    std::vector<uint16_t> pids;
    std::vector<MemberRecord> known;
    // Their batch as the leader hands it to recover_together().
    std::vector<RecoveryCoordinator::FailedPid> failed(uint64_t detected_ns) const {
      std::vector<RecoveryCoordinator::FailedPid> out;
      for (size_t i = 0; i < pids.size(); ++i) out.push_back({pids[i], detected_ns, known[i]});
      return out;
    }
  };
  void die_mid_commit(DaemonCluster& dc, uint32_t table, std::span<const uint64_t> keys,
                      const std::vector<uint8_t>& before, const std::vector<uint8_t>& after, DeadNodes* out) {
    for (uint64_t key : keys) {
      auto node = join(dc, MemberRole::kCompute, 2);
      ASSERT_TRUE(node);
      ASSERT_TRUE(node->load_directory());
      ASSERT_NO_FATAL_FAILURE(load_and_die_mid_commit(*node, table, key, before, after));
      out->pids.push_back(node->config().compute_id);
      auto m = dc.reg->member(out->pids.back());
      ASSERT_TRUE(m && *m);
      out->known.push_back(**m);
      out->nodes.push_back(std::move(node));
    }
  }
  // Two compute nodes died mid-commit; the leader recovers the first with
  // recover_together() and the detector reports the second from its
  // `from_question`-th question on (1: before any ZooKeeper write, 2: once
  // the first wave's write runs). `publisher`: the coordinator's
  // publishing session (RecoveryCoordinatorOptions::publisher).
  enum class Publisher : uint8_t { kNone, kOwnSession, kCannotWrite };
  void run_join(std::string_view name, int from_question, JoinRun* out, Publisher publisher = Publisher::kNone);
  // A daemon cluster and its FD leader's data plane (a kFd member), which
  // created table 1 ("t", 16-byte values) and read the directory; null
  // (and a test failure) when a step fails.
  std::unique_ptr<Cluster> leader_with_one_table(std::string_view name, DaemonCluster* dc) {
    start_daemon_cluster(name, dc);
    if (::testing::Test::HasFatalFailure()) return nullptr;
    auto leader = join(*dc, MemberRole::kFd, 2);
    if (!leader) return nullptr;
    const std::vector<TableSpec> tables = {TableSpec{.id = 1, .name = "t", .value_size = 16, .expected_rows = 64}};
    if (Status s = create_tables(*leader, tables, CreateTablesOptions{}); !s) {
      ADD_FAILURE() << s.to_string();
      return nullptr;
    }
    if (Status s = leader->load_directory(); !s) {
      ADD_FAILURE() << s.to_string();
      return nullptr;
    }
    return leader;
  }  // A leader with table 1 and two compute nodes that each died in a commit
  // to one of kKeys (rows `before`, writing `after`): where the batch
  // tests start.
  struct TwoDied {
    static constexpr uint32_t kTable = 1;
    static constexpr uint64_t kKeys[2] = {9, 21};
    DaemonCluster dc;
    std::unique_ptr<Cluster> leader;
    DeadNodes dead;
    std::vector<uint8_t> before, after;
    // Key i's value on replica `replica`, as the leader reads it.
    std::vector<uint8_t> value(size_t i, size_t replica) const {
      return testing::raw_find(*leader, kTable, kKeys[i], replica).value;
    }
  };
  void two_died_mid_commit(std::string_view name, uint8_t fill, TwoDied* t) {
    t->leader = leader_with_one_table(name, &t->dc);
    ASSERT_TRUE(t->leader);
    t->before.assign(16, fill);
    t->after.assign(16, static_cast<uint8_t>(fill + 1));
    ASSERT_NO_FATAL_FAILURE(die_mid_commit(t->dc, TwoDied::kTable, TwoDied::kKeys, t->before, t->after, &t->dead));
  }

  // Loads key `key` of `table` with `before`, then leaves what `node`
  // leaves when it dies in a commit of `after` to it: latched on its
  // primary by a transaction of its own, the log record written to every
  // log node of its first lane, `after` with version+1 on the primary only.
  void load_and_die_mid_commit(Cluster& node, uint32_t table, uint64_t key, const std::vector<uint8_t>& before,
                               const std::vector<uint8_t>& after) {
    {
      TableLoader loader(node);
      ASSERT_TRUE(loader.add(table, key, before));
      ASSERT_TRUE(loader.finish());
    }
    const uint16_t pid = node.config().compute_id;
    const testing::RawSlot s = testing::raw_find(node, table, key);
    ASSERT_TRUE(s.found);
    LogRecord rec;
    rec.txn_id = encode_latch({pid, 0, 1});
    rec.lane_seq = 1;
    const LogEntry& e = rec.entries.emplace_back(testing::log_entry_for(node, table, key, s, before, after));
    const auto reps = node.replica_indexes(e.shard);
    ASSERT_EQ(testing::raw_cas_latch(node, reps[0], s.offset, 0, rec.txn_id), 0u);
    std::string enc;
    encode_log_record(rec, enc);
    std::vector<uint8_t> image(16 + after.size());
    store_u64(image.data(), s.version + 1);
    store_u64(image.data() + 8, make_slot_meta(kSlotOccupied, static_cast<uint32_t>(after.size())));
    std::memcpy(image.data() + 16, after.data(), after.size());
    const auto conns = node.bootstrap_connections();
    OpBatch b(conns, std::chrono::seconds(5));
    for (size_t n : node.log_node_indexes(pid)) {
      b.write(n, node.lane_address(n, node.lanes().lane_index(node.config().lane_slot, 0).value()), enc.data(),
              static_cast<uint32_t>(enc.size()));
    }
    b.write(reps[0], s.offset + kSlotVersionOffset, image.data(), static_cast<uint32_t>(image.size()));
    ASSERT_TRUE(b.run());
    ASSERT_EQ(testing::raw_find(node, table, key).value, after);
  }

  // A cluster record of one (never contacted) memory node, 4 KiB lanes.
  static ClusterRecord one_node_cluster(uint64_t cluster_id, uint32_t lanes = 64) {
    ClusterRecord c;
    c.cluster_id = cluster_id;
    c.memory_nodes = {Endpoint{"127.0.0.1", 7000}};
    c.lane_bytes = 4096;
    c.lanes = lanes;
    return c;
  }

  static inline testing::TempDir* dir_ = nullptr;
  static inline testing::ZkEnsemble* zk_ = nullptr;
  static inline Status start_;
  Logger log_{"test", LogLevel::kError};
};

TEST_F(RegistryZkTest, RefusesAnotherClustersTreeAndAMissingOne) {
  const ClusterRecord c = one_node_cluster(0x1111);
  ASSERT_TRUE(Registry::init(zk_options(), root("other"), c, log_));
  ASSERT_TRUE(Registry::init(zk_options(), root("other"), c, log_));  // idempotent
  ClusterRecord other = c;
  other.cluster_id = 0x2222;
  Status s = Registry::init(zk_options(), root("other"), other, log_);
  EXPECT_EQ(s.code(), Errc::kMismatch);
  EXPECT_NE(s.message().find("0x1111"), std::string::npos) << s.message();
  auto opened = Registry::open(zk_options(), root("other"), 0x2222, log_);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.status().code(), Errc::kMismatch);
  EXPECT_NE(opened.status().message().find("0x2222"), std::string::npos);
  auto missing = Registry::open(zk_options(), root("nothing-here"), 0x1111, log_);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), Errc::kNotFound);
  EXPECT_NE(missing.status().message().find("pandora-ctl init"), std::string::npos);
}

// A memory node's failure is recorded once, bumping the configuration
// epoch; adding it again (a re-run by a new leader) changes nothing.
TEST_F(RegistryZkTest, FailingAMemoryNodeBumpsTheEpochOnce) {
  ClusterRecord c = one_node_cluster(0x6161);
  c.memory_nodes.push_back(Endpoint{"127.0.0.1", 7001});
  ASSERT_TRUE(Registry::init(zk_options(), root("memfail"), c, log_));
  auto reg = Registry::open(zk_options(), root("memfail"), 0x6161, log_);
  ASSERT_TRUE(reg) << reg.status().to_string();
  auto other = Registry::open(zk_options(), root("memfail"), 0x6161, log_);
  ASSERT_TRUE(other) << other.status().to_string();
  const FailedMemoryNode dead{2, Endpoint{"127.0.0.1", 7001}};
  auto paused = (*reg)->pause_in_progress();
  ASSERT_TRUE(paused);
  EXPECT_FALSE(*paused);
  auto r1 = (*reg)->fail_memory_node(dead, 11);
  ASSERT_TRUE(r1) << r1.status().to_string();
  EXPECT_EQ(r1->epoch, 2u);
  EXPECT_EQ(r1->failed_memory, std::vector<FailedMemoryNode>{dead});
  EXPECT_EQ((*reg)->cluster().epoch, 2u) << "the leader's own view follows";
  // The pause began in the same write. Read on the writer's session:
  // another session's server may not have applied the write yet (ZooKeeper
  // orders reads only within a session; this failed once in a suite run).
  auto pause = (*reg)->watch_pause([] {});
  ASSERT_TRUE(pause);
  EXPECT_EQ(*pause, 11u);
  ASSERT_TRUE((*reg)->end_pause());
  auto r2 = (*other)->fail_memory_node(dead, 12);  // another leader, stale view: reads first
  ASSERT_TRUE(r2) << r2.status().to_string();
  EXPECT_EQ(r2->epoch, 2u);
  pause = (*other)->watch_pause([] {});
  ASSERT_TRUE(pause);
  EXPECT_EQ(*pause, 12u) << "a re-run stops the world again";
  ASSERT_TRUE((*reg)->end_pause());
  auto now = (*other)->read_cluster();
  ASSERT_TRUE(now);
  EXPECT_EQ(now->epoch, 2u);
  EXPECT_EQ(now->failed_memory.size(), 1u);
  EXPECT_EQ(now->memory_nodes.size(), 2u) << "the configured list stays; failed_memory says who is out";
}

// A replacement's request, its failure, and its end: the record lists the
// node live at its new address, and the pause (with an acknowledgement in
// it), the request and the relocation journal go in the same write.
TEST_F(RegistryZkTest, RestoringAMemoryNodeEndsThePauseAndTheRequestInOneWrite) {
  ClusterRecord c = one_node_cluster(0x6262);
  c.memory_nodes.push_back(Endpoint{"127.0.0.1", 7001});
  c.memory_node_ids = {1, 2};
  c.memory_incarnations = {{1, 0x11}, {2, 0x22}};
  ASSERT_TRUE(Registry::init(zk_options(), root("replace"), c, log_));
  auto reg = Registry::open(zk_options(), root("replace"), 0x6262, log_);
  ASSERT_TRUE(reg) << reg.status().to_string();
  Registry& r = **reg;
  auto none = r.replacement_request();
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  auto failed = r.fail_memory_node(FailedMemoryNode{2, Endpoint{"127.0.0.1", 7001}}, 21);
  ASSERT_TRUE(failed) << failed.status().to_string();
  EXPECT_EQ(failed->memory_incarnations, (std::map<uint32_t, uint64_t>{{1, 0x11}})) << "the dead daemon is unbound";
  ASSERT_TRUE(r.end_pause());

  const ReplaceRequest req{2, Endpoint{"127.0.0.1", 8002}, {}};
  ASSERT_TRUE(r.request_replacement(req));
  auto twice = r.request_replacement(ReplaceRequest{2, Endpoint{"127.0.0.1", 8003}, {}});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.code(), Errc::kAlreadyExists) << twice.to_string();
  std::atomic<bool> changed{false};
  auto pending = r.replacement_request([&] { changed = true; });
  ASSERT_TRUE(pending && *pending);
  EXPECT_EQ(**pending, req);
  ASSERT_TRUE(r.fail_replacement("invalid-argument: no room"));
  pending = r.replacement_request();
  ASSERT_TRUE(pending && *pending);
  EXPECT_EQ((*pending)->error, "invalid-argument: no room");
  for (int i = 0; i < 500 && !changed; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(changed) << "the watch fires when the leader records an error";
  ASSERT_TRUE(r.withdraw_replacement());
  ASSERT_TRUE(r.withdraw_replacement()) << "idempotent";

  // Again, and this time the leader finishes: pause, an ack, a journal.
  ASSERT_TRUE(r.request_replacement(req));
  ASSERT_TRUE(r.begin_pause(22, {}));
  ASSERT_TRUE(r.ack_pause(5, 22));
  ASSERT_TRUE(r.zk().create(r.path("relocations"), "1 2 3 4\n"));
  auto back = r.restore_memory_node(2, req.endpoint, 0x2222);
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->epoch, 3u);
  EXPECT_EQ(back->memory_incarnations, (std::map<uint32_t, uint64_t>{{1, 0x11}, {2, 0x2222}}))
      << "bound to the daemon that was filled";
  EXPECT_TRUE(back->failed_memory.empty());
  EXPECT_EQ(back->memory_nodes[1], req.endpoint);
  EXPECT_EQ(r.cluster().epoch, 3u);
  auto paused = r.pause_in_progress();
  ASSERT_TRUE(paused);
  EXPECT_FALSE(*paused);
  auto gone = r.replacement_request();
  ASSERT_TRUE(gone);
  EXPECT_FALSE(*gone);
  auto journal = r.zk().exists(r.path("relocations"));
  ASSERT_TRUE(journal);
  EXPECT_FALSE(*journal);
  // Once back, it is not restored twice.
  auto again = r.restore_memory_node(2, req.endpoint, 0x2222);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.status().code(), Errc::kInvalidArgument);
}

// A pause a dead leader left behind is told apart by what it names: a
// memory node's fail-over names no pid (resume() runs it again), ford's
// recovery names the pids it recovers (finished from their records).
TEST_F(RegistryZkTest, APauseForAMemoryNodeNamesNoPid) {
  const ClusterRecord c = one_node_cluster(0x6464);
  ASSERT_TRUE(Registry::init(zk_options(), root("pausekind"), c, log_));
  auto reg = Registry::open(zk_options(), root("pausekind"), 0x6464, log_);
  ASSERT_TRUE(reg) << reg.status().to_string();
  auto none = (*reg)->paused_for_memory();
  ASSERT_TRUE(none) << none.status().to_string();
  EXPECT_FALSE(*none);
  ASSERT_TRUE((*reg)->begin_pause(21, {7, 9}));
  auto ford = (*reg)->paused_for_memory();
  ASSERT_TRUE(ford);
  EXPECT_FALSE(*ford) << "ford's recovery pause names its pids";
  ASSERT_TRUE((*reg)->begin_pause(22, {}));
  auto memory = (*reg)->paused_for_memory();
  ASSERT_TRUE(memory);
  EXPECT_TRUE(*memory);
  ASSERT_TRUE((*reg)->end_pause());
  auto ended = (*reg)->paused_for_memory();
  ASSERT_TRUE(ended);
  EXPECT_FALSE(*ended);
}

// The record written back by set-memory-nodes: versioned, refused (and
// unchanged) when the daemons are not the cluster's live nodes.
TEST_F(RegistryZkTest, ReaddressingRewritesTheRecordOnlyForTheLiveNodes) {
  ClusterRecord c = one_node_cluster(0x6262);
  c.memory_nodes.push_back(Endpoint{"127.0.0.1", 7001});
  c.memory_node_ids = {1, 2};
  ASSERT_TRUE(Registry::init(zk_options(), root("readdress"), c, log_));
  auto reg = Registry::open(zk_options(), root("readdress"), 0x6262, log_);
  ASSERT_TRUE(reg) << reg.status().to_string();
  auto refused = (*reg)->readdress_memory_nodes({{1, Endpoint{"127.0.0.1", 8000}}, {5, Endpoint{"127.0.0.1", 8001}}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), Errc::kMismatch);
  auto unchanged = (*reg)->read_cluster();
  ASSERT_TRUE(unchanged);
  EXPECT_EQ(unchanged->epoch, 1u);
  EXPECT_EQ(unchanged->memory_nodes, c.memory_nodes);
  auto moved = (*reg)->readdress_memory_nodes({{2, Endpoint{"127.0.0.1", 8001}}, {1, Endpoint{"127.0.0.1", 8000}}});
  ASSERT_TRUE(moved) << moved.status().to_string();
  auto now = (*reg)->read_cluster();
  ASSERT_TRUE(now);
  EXPECT_EQ(now->epoch, 2u);
  EXPECT_EQ(now->memory_nodes, (std::vector<Endpoint>{Endpoint{"127.0.0.1", 8001}, Endpoint{"127.0.0.1", 8000}}));
  EXPECT_EQ(now->memory_node_ids, (std::vector<uint32_t>{2, 1}));
  EXPECT_EQ((*reg)->cluster().epoch, 2u);
}

// An FD replica restarted after a whole-cluster crash finds its old
// announcement and election node still there (ZooKeeper restored the dead
// session). It takes over an announcement naming the UDP endpoint it holds
// (so its creator is gone) and removes its dead predecessor's candidacy;
// an announcement of a live replica (another endpoint) is not taken.
TEST_F(RegistryZkTest, ARestartedReplicaTakesOverWhatItsDeadPredecessorLeft) {
  const ClusterRecord c = one_node_cluster(0x6363);
  ASSERT_TRUE(Registry::init(zk_options(), root("stale"), c, log_));
  auto dead = Registry::open(zk_options(), root("stale"), 0x6363, log_);
  ASSERT_TRUE(dead) << dead.status().to_string();
  auto reborn = Registry::open(zk_options(), root("stale"), 0x6363, log_);
  ASSERT_TRUE(reborn) << reborn.status().to_string();
  const Endpoint port{"127.0.0.1", 4701};
  ASSERT_TRUE((*dead)->announce_replica(1, port));
  ASSERT_TRUE((*dead)->zk().create((*dead)->path("fd/election/n_"), "replica=1\n", zk::CreateMode::kEphemeralSequential));
  ASSERT_TRUE((*dead)->zk().create((*dead)->path("fd/election/n_"), "replica=2\n", zk::CreateMode::kEphemeralSequential));

  // Another endpoint: a live replica of the same id, not taken over.
  Status clash = (*reborn)->announce_replica(1, Endpoint{"127.0.0.1", 4702}, std::chrono::milliseconds(200));
  EXPECT_EQ(clash.code(), Errc::kAlreadyExists) << clash.to_string();
  // Its own endpoint: taken over at once (the dead session still lives).
  ASSERT_TRUE((*reborn)->announce_replica(1, port, std::chrono::milliseconds(0)));
  auto node = (*reborn)->zk().get((*reborn)->path("fd/replicas/1"));
  ASSERT_TRUE(node);
  EXPECT_EQ(node->stat.ephemeral_owner, (*reborn)->zk().session_id());
  auto removed = (*reborn)->withdraw_stale_candidacies(1);
  ASSERT_TRUE(removed) << removed.status().to_string();
  EXPECT_EQ(*removed, 1);
  auto left = (*reborn)->zk().children((*reborn)->path("fd/election"));
  ASSERT_TRUE(left);
  ASSERT_EQ(left->size(), 1u) << "replica 2's candidacy is not ours to remove";
  auto other = (*reborn)->zk().get((*reborn)->path("fd/election/" + left->front()));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->data, "replica=2\n");
}

// A leader is deposed by another replica's session deleting its election
// node (the leader's own session lives on: a stopped process). A candidacy
// names its replica; once deposed, the old leader's guarded writes land
// nowhere - each refused as fenced, which no caller takes for "already
// done" - and the candidate after it is first in line.
TEST_F(RegistryZkTest, ALeaderIsDeposedByRemovingItsElectionNode) {
  const ClusterRecord c = one_node_cluster(0x6464);
  ASSERT_TRUE(Registry::init(zk_options(), root("depose"), c, log_));
  auto leader = Registry::open(zk_options(), root("depose"), 0x6464, log_);
  ASSERT_TRUE(leader) << leader.status().to_string();
  auto successor = Registry::open(zk_options(), root("depose"), 0x6464, log_);
  ASSERT_TRUE(successor) << successor.status().to_string();
  auto first = (*leader)->stand_for_election(3);
  ASSERT_TRUE(first) << first.status().to_string();
  auto second = (*successor)->stand_for_election(1);
  ASSERT_TRUE(second) << second.status().to_string();
  EXPECT_EQ((*successor)->candidate(*first).value(), 3u);
  EXPECT_EQ((*leader)->candidate(*second).value(), 1u);
  EXPECT_EQ((*leader)->election_path(*first), root("depose") + "/fd/election/" + *first);
  auto odd = (*leader)->zk().create((*leader)->path("fd/election/n_"), "replica=x\n",
                                    zk::CreateMode::kEphemeralSequential);
  ASSERT_TRUE(odd) << odd.status().to_string();
  EXPECT_EQ((*successor)->candidate(odd->substr(odd->rfind('/') + 1)).status().code(), Errc::kCorrupt);

  (*leader)->zk().guard_writes((*leader)->election_path(*first));
  RecoveryRecord r;
  r.pid = 8;
  r.leader_replica = 3;
  ASSERT_TRUE((*leader)->start_recovery(r));
  ASSERT_TRUE((*leader)->publish_failed(r));

  ASSERT_TRUE((*successor)->depose(*first));
  EXPECT_EQ((*successor)->candidate(*first).status().code(), Errc::kNotFound);
  EXPECT_EQ((*successor)->depose(*first).code(), Errc::kNotFound);
  auto names = (*successor)->zk().children((*successor)->path("fd/election"));
  ASSERT_TRUE(names);
  ASSERT_FALSE(names->empty());
  EXPECT_EQ(names->front(), *second) << "the next candidate is first in line";

  RecoveryRecord late = r;
  late.pid = 9;
  EXPECT_EQ((*leader)->start_recovery(late).code(), Errc::kFenced);
  EXPECT_EQ((*leader)->publish_failed(late, false).code(), Errc::kFenced);
  EXPECT_EQ((*leader)->publish_failed(r).code(), Errc::kFenced) << "not taken for an earlier run's publish";
  EXPECT_EQ((*leader)->finish_recovery(r).code(), Errc::kFenced);
  EXPECT_FALSE((*successor)->recovery(9).value());
  auto failed = (*successor)->failed();
  ASSERT_TRUE(failed);
  EXPECT_EQ(*failed, std::vector<uint16_t>{8});
  auto rec = (*successor)->recovery(8);
  ASSERT_TRUE(rec && *rec);
  EXPECT_EQ((*rec)->step, RecoveryStep::kPublished) << "the deposed leader's late finish landed";
}

// The tree is readable by anyone (zk_dump.py) but only secret holders may
// change it: a stranger on the host, or a process with another secret,
// cannot publish a pid as failed, drop a record or take a lease.
TEST_F(RegistryZkTest, OnlySecretHoldersChangeTheTree) {
  const ClusterRecord c = one_node_cluster(0x4444);
  ASSERT_TRUE(Registry::init(zk_options(), root("acl"), c, log_));
  const std::string r = root("acl");

  zk::ZkOptions no_auth = zk_options();
  no_auth.auth.reset();
  zk::ZkOptions other_secret = zk_options();
  other_secret.auth = registry_auth("another cluster's secret, 32 byte");
  for (const zk::ZkOptions* o : {&no_auth, &other_secret}) {
    SCOPED_TRACE(o->auth ? "another secret" : "no identity");
    auto zk = zk::ZkClient::connect(*o, log_);
    ASSERT_TRUE(zk) << zk.status().to_string();
    auto cluster = (*zk)->get(r + "/cluster");
    ASSERT_TRUE(cluster) << cluster.status().to_string();  // reading is open
    EXPECT_EQ((*zk)->create(r + "/failed/7", "published_ns=1\n").status().code(), Errc::kAuthFailed);
    EXPECT_EQ((*zk)->set(r + "/alloc", "next_pid=1\n").code(), Errc::kAuthFailed);
    EXPECT_EQ((*zk)->remove(r + "/recoveries").code(), Errc::kAuthFailed);
    EXPECT_EQ((*zk)->create(r + "/compute/9", "x").status().code(), Errc::kAuthFailed);
    std::vector<zk::Op> ops = {zk::Op::create(r + "/failed/8", "")};
    EXPECT_EQ((*zk)->multi(ops).code(), Errc::kAuthFailed);
  }
  // Registration needs the identity too (other_secret opens, reads, fails).
  auto stranger = Registry::open(other_secret, r, 0x4444, log_);
  ASSERT_TRUE(stranger) << stranger.status().to_string();
  MemberRecord m;
  m.push = Endpoint{"127.0.0.1", 9};
  EXPECT_EQ((*stranger)->register_member(m, 2).status().code(), Errc::kAuthFailed);
  auto holder = Registry::open(zk_options(), r, 0x4444, log_);
  ASSERT_TRUE(holder) << holder.status().to_string();
  auto reg = (*holder)->register_member(m, 2);
  ASSERT_TRUE(reg) << reg.status().to_string();
  // Without any identity the registry refuses to start.
  auto bare = Registry::open(no_auth, r, 0x4444, log_);
  ASSERT_FALSE(bare);
  EXPECT_EQ(bare.status().code(), Errc::kInvalidArgument);
}

// A root prepared by someone without the secret (open to everyone) is
// refused: whoever made it could rewrite the cluster's state under it.
TEST_F(RegistryZkTest, InitRefusesARootOthersMayChange) {
  zk::ZkOptions no_auth = zk_options();
  no_auth.auth.reset();
  auto zk = zk::ZkClient::connect(no_auth, log_);
  ASSERT_TRUE(zk) << zk.status().to_string();
  ASSERT_TRUE((*zk)->create(root("prepared"), ""));
  const ClusterRecord c = one_node_cluster(0x5555);
  Status s = Registry::init(zk_options(), root("prepared"), c, log_);
  EXPECT_EQ(s.code(), Errc::kAuthFailed) << s.to_string();
  EXPECT_NE(s.message().find("may be changed by others"), std::string::npos) << s.message();
  auto children = (*zk)->children(root("prepared"));
  ASSERT_TRUE(children);
  EXPECT_TRUE(children->empty());  // nothing was written under it
}

TEST_F(RegistryZkTest, RegistrationLeasesDisjointSlotsAndNeverReissuesAPid) {
  const ClusterRecord c = one_node_cluster(0x3333, 200);
  ASSERT_TRUE(Registry::init(zk_options(), root("lease"), c, log_));
  auto reg = Registry::open(zk_options(), root("lease"), 0x3333, log_);
  ASSERT_TRUE(reg) << reg.status().to_string();
  std::set<uint16_t> pids;
  std::vector<LaneSlot> slots;
  for (int i = 0; i < 3; ++i) {
    auto m = (*reg)->register_member(MemberRecord{}, 65);
    ASSERT_TRUE(m) << m.status().to_string();
    EXPECT_TRUE(pids.insert(m->pid).second);
    for (const LaneSlot& s : slots) EXPECT_FALSE(s.overlaps(m->slot));
    slots.push_back(m->slot);
  }
  // 3 x 65 = 195 of 200 lanes: a fourth does not fit, and says why.
  auto full = (*reg)->register_member(MemberRecord{}, 65);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.status().code(), Errc::kUnavailable);
  EXPECT_NE(full.status().message().find("--log-size"), std::string::npos) << full.status().message();

  // A pid already registered cannot be taken again, even if the alloc
  // record is rolled back by hand: the create of compute/<pid> refuses it.
  auto a = (*reg)->alloc();
  ASSERT_TRUE(a);
  AllocRecord rolled = *a;
  rolled.next_pid = *pids.begin();
  rolled.leases.clear();
  ASSERT_TRUE((*reg)->zk().set((*reg)->path("alloc"), encode_alloc_record(rolled)));
  auto taken = (*reg)->register_member(MemberRecord{}, 5);
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.status().code(), Errc::kAlreadyExists);
  EXPECT_NE(taken.status().message().find("is registered already"), std::string::npos);
}

// Thousands of compute-node lifetimes on a default-sized log area: each
// registers (a 16-coordinator slot, 4x pandora-bench's default: 2,000
// lifetimes wrap the 1,024-lane area 33 times), is recovered as failed
// (fenced at the real daemons, lanes read and truncated, published, lease
// released). With lanes bound to pids a default cluster survived 16
// lifetimes. (64-coordinator slots made the test 60% slower, reading 2 MiB
// of lanes per recovery, and showed nothing more.)
TEST_F(RegistryZkTest, ThousandsOfComputeLifetimesRunOnADefaultLogArea) {
  DaemonCluster dc;
  ASSERT_NO_FATAL_FAILURE(start_daemon_cluster("lifetimes", &dc));
  Registry* reg = dc.reg.get();
  // The recovery coordinator's own data plane: a kFd member.
  std::unique_ptr<Cluster> cluster = join(dc, MemberRole::kFd, 2);
  ASSERT_TRUE(cluster);
  const uint16_t leader_pid = cluster->config().compute_id;
  std::vector<TableSpec> specs = {TableSpec{.id = 1, .name = "t", .value_size = 16, .expected_rows = 1024}};
  CreateTablesOptions copts;
  ASSERT_TRUE(create_tables(*cluster, specs, copts));
  ASSERT_TRUE(cluster->load_directory());
  RecoveryCoordinatorOptions ro;
  ro.cluster_id = dc.record.cluster_id;
  ro.secret = dc.base.secret;
  RecoveryCoordinator coord(*reg, *cluster, ro, log_, {});

  constexpr int kLifetimes = 2000;
  const uint32_t lanes = ComputeConfig{.threads = 1, .coordinators = 16}.lanes_needed();
  uint16_t last_pid = leader_pid;
  for (int i = 0; i < kLifetimes; ++i) {
    // As Membership::join and the FD leader do: an answer lost to a
    // ZooKeeper timeout is retried, a registration that did apply is found
    // again by its incarnation.
    MemberRecord want;
    want.incarnation = static_cast<uint64_t>(i) + 1;
    Result<MemberRecord> m = register_retrying(*reg, want, lanes);
    ASSERT_TRUE(m) << "lifetime " << i << ": " << m.status().to_string();
    ASSERT_GT(m->pid, last_pid) << "a pid was re-issued";
    last_pid = m->pid;
    Result<RecoveryRecord> rec = Status(Errc::kUnavailable, "not tried");
    for (int attempt = 0; attempt < 5; ++attempt) {
      rec = coord.recover(m->pid, 0);  // idempotent: a re-run after a timeout is safe
      if (rec || rec.status().code() != Errc::kUnavailable) break;
    }
    ASSERT_TRUE(rec) << "lifetime " << i << ": " << rec.status().to_string();
    ASSERT_EQ(rec->step, RecoveryStep::kDone);
  }
  auto failed = reg->failed();
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->size(), static_cast<size_t>(kLifetimes));
  auto a = reg->alloc();
  ASSERT_TRUE(a);
  ASSERT_EQ(a->leases.size(), 1u);  // only the coordinator's own slot is still leased
  EXPECT_EQ(a->leases[0].pid, leader_pid);
}

// The tables are created again (another table set) after the recovery
// coordinator read the directory, as `pandora-bench --load --replace` does
// on a running cluster. A failed node's record on a new table must still be
// decided - the coordinator reads the directory again - not skipped with
// its partial commit left in place.
TEST_F(RegistryZkTest, RecoveryReadsTheDirectoryAgainForTablesCreatedSinceItsLeadership) {
  DaemonCluster dc;
  ASSERT_NO_FATAL_FAILURE(start_daemon_cluster("redirectory", &dc));
  // The coordinator's data plane reads the directory of the first tables.
  auto leader = join(dc, MemberRole::kFd, 2);
  ASSERT_TRUE(leader);
  CreateTablesOptions first;
  const std::vector<TableSpec> first_tables = {TableSpec{.id = 1, .name = "t", .value_size = 16, .expected_rows = 64}};
  ASSERT_TRUE(create_tables(*leader, first_tables, first));
  ASSERT_TRUE(leader->load_directory());
  RecoveryCoordinatorOptions ro;
  ro.cluster_id = dc.record.cluster_id;
  ro.secret = dc.base.secret;
  RecoveryCoordinator coord(*dc.reg, *leader, ro, log_, {});

  // A compute node creates the tables again (a new table 2, 24-byte
  // values), loads key 5, and dies after updating it on its primary only.
  auto node = join(dc, MemberRole::kCompute, 2);
  ASSERT_TRUE(node);
  CreateTablesOptions again;
  again.replace_existing = true;
  constexpr uint32_t kTable = 2;
  const std::vector<TableSpec> new_tables = {
      TableSpec{.id = kTable, .name = "u", .value_size = 24, .expected_rows = 64}};
  ASSERT_TRUE(create_tables(*node, new_tables, again));
  ASSERT_TRUE(node->load_directory());
  const std::vector<uint8_t> before(24, 0x11), after(24, 0x22);
  const uint16_t pid = node->config().compute_id;
  ASSERT_NO_FATAL_FAILURE(load_and_die_mid_commit(*node, kTable, 5, before, after));
  const uint64_t version = testing::raw_find(*node, kTable, 5, 1).version;

  auto done = coord.recover(pid, 0);
  ASSERT_TRUE(done) << done.status().to_string();
  EXPECT_EQ(done->records, 1u);
  EXPECT_EQ(done->rolled_back, 1u) << "the record on the new table was not decided";
  // Read through the coordinator's own cluster view (the dead node is
  // fenced), which now describes the new table.
  ASSERT_TRUE(leader->directory().find(kTable));
  EXPECT_EQ(testing::raw_find(*leader, kTable, 5, 0).value, before);
  EXPECT_EQ(testing::raw_find(*leader, kTable, 5, 1).value, before);
  EXPECT_EQ(testing::raw_find(*leader, kTable, 5, 0).version, version);
}

// The recovery's critical path (recovery_coordinator.h): nothing waits for
// a ZooKeeper write before the survivors are told. When the push goes out,
// the dead node's half-done commit is already rolled back and nothing is
// written to ZooKeeper (no start record, failed/<pid> not yet); the one
// waited-for write then publishes, and the record ends at done.
TEST_F(RegistryZkTest, SurvivorsAreToldBeforeAnyWaitedZooKeeperWrite) {
  DaemonCluster dc;
  auto leader = leader_with_one_table("pushfirst", &dc);
  ASSERT_TRUE(leader);
  constexpr uint32_t kTable = 1;
  auto node = join(dc, MemberRole::kCompute, 2);
  ASSERT_TRUE(node);
  ASSERT_TRUE(node->load_directory());
  const std::vector<uint8_t> before(16, 0x33), after(16, 0x44);
  const uint16_t pid = node->config().compute_id;
  ASSERT_NO_FATAL_FAILURE(load_and_die_mid_commit(*node, kTable, 9, before, after));
  auto known = dc.reg->member(pid);
  ASSERT_TRUE(known && *known);

  struct AtPush {
    bool pushed = false;
    std::vector<uint16_t> pids;
    zk::ZkClientStats zk;
    std::optional<RecoveryRecord> record;
    bool failed_listed = true;
    std::vector<uint8_t> value;
  } at;
  const zk::ZkClientStats start = dc.reg->zk().stats();
  RecoveryCoordinatorOptions ro = pushing_coordinator_options(dc);
  auto push = [&](std::span<const Endpoint>, std::span<const uint16_t> pids) {
    at.pushed = true;
    at.pids.assign(pids.begin(), pids.end());
    at.zk = dc.reg->zk().stats();
    if (auto r = dc.reg->recovery(pid); r && *r) at.record = **r;
    if (auto f = dc.reg->failed()) at.failed_listed = std::binary_search(f->begin(), f->end(), pid);
    at.value = testing::raw_find(*leader, kTable, 9, 0).value;
  };
  RecoveryCoordinator coord(*dc.reg, *leader, ro, log_, push);
  auto done = coord.recover(pid, 1, &**known);
  ASSERT_TRUE(done) << done.status().to_string();

  ASSERT_TRUE(at.pushed);
  EXPECT_EQ(at.pids, std::vector<uint16_t>{pid});
  EXPECT_EQ(at.zk.writes_waited, start.writes_waited) << "a ZooKeeper write was waited for before the push";
  EXPECT_EQ(at.zk.gets_waited - start.gets_waited, 1u) << "the pids' records were not read in one round";
  EXPECT_FALSE(at.record) << "a recovery record was written before the push";
  EXPECT_FALSE(at.failed_listed) << "failed/<pid> written before the push";
  EXPECT_EQ(at.value, before) << "the survivors were told before the half-done commit was rolled back";

  EXPECT_EQ(done->step, RecoveryStep::kDone);
  EXPECT_EQ(done->rolled_back, 1u);
  // Publish and done: the fast path's only waited writes.
  EXPECT_EQ(dc.reg->zk().stats().writes_waited - start.writes_waited, 2u);
  auto failed = dc.reg->failed();
  ASSERT_TRUE(failed);
  EXPECT_TRUE(std::binary_search(failed->begin(), failed->end(), pid));
  auto member = dc.reg->member(pid);
  ASSERT_TRUE(member);
  EXPECT_FALSE(*member) << "compute/<pid> left behind";
  auto rec = dc.reg->recovery(pid);
  ASSERT_TRUE(rec && *rec);
  EXPECT_EQ((*rec)->step, RecoveryStep::kDone);
  EXPECT_EQ((*rec)->records, 1u);
  // A second recovery of the same pid (a stale detector report) reads the
  // record, finds it done, and touches nothing.
  at = AtPush{};
  auto again = coord.recover(pid, 2, &**known);
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_EQ(again->step, RecoveryStep::kDone);
  EXPECT_FALSE(at.pushed);
}

// The fence of a pid whose member record the leader knows runs while the
// pid's recovery record is read: it needs no record. Shown by a record
// that cannot be read (corrupt): the recovery fails, and the known pid is
// fenced nonetheless, while a pid named without its record (pandora-ctl
// recover) is fenced only after a read that succeeds.
TEST_F(RegistryZkTest, AKnownMembersFenceOverlapsItsRecordRead) {
  DaemonCluster dc;
  auto leader = leader_with_one_table("fenceearly", &dc);
  ASSERT_TRUE(leader);
  constexpr uint32_t kTable = 1;
  constexpr uint64_t kKeys[] = {11};
  const std::vector<uint8_t> before(16, 0x61), after(16, 0x62);
  DeadNodes dead;
  ASSERT_NO_FATAL_FAILURE(die_mid_commit(dc, kTable, kKeys, before, after, &dead));
  const uint16_t pid = dead.pids[0];
  const MemberRecord& known = dead.known[0];
  const std::string record = dc.reg->root() + fmt::format("/recoveries/{}", pid);
  ASSERT_TRUE(dc.reg->zk().create(record, "not a recovery record"));

  RecoveryCoordinator coord(*dc.reg, *leader, pushing_coordinator_options(dc), log_,
                            [](std::span<const Endpoint>, std::span<const uint16_t>) {});
  const std::vector<uint64_t> start = fence_requests(dc);
  ASSERT_EQ(start.size(), 2u);
  auto by_hand = coord.recover(pid, 0, nullptr);
  ASSERT_FALSE(by_hand);
  EXPECT_EQ(by_hand.status().code(), Errc::kCorrupt) << by_hand.status().to_string();
  EXPECT_EQ(fence_requests(dc), start) << "a pid named without its member record was fenced before its record was read";

  auto detected = coord.recover(pid, 1, &known);
  ASSERT_FALSE(detected);
  EXPECT_EQ(detected.status().code(), Errc::kCorrupt) << detected.status().to_string();
  std::vector<uint64_t> now = fence_requests(dc);
  ASSERT_EQ(now.size(), 2u);
  for (size_t n = 0; n < 2; ++n) {
    EXPECT_EQ(now[n] - start[n], 1u) << "memory node " << n << ": the known pid not fenced";
  }
  EXPECT_EQ(testing::raw_find(*leader, kTable, 11, 0).value, after) << "repaired without its record";

  // With the record readable (none), the same recovery completes, its
  // fence again beside the read.
  ASSERT_TRUE(dc.reg->zk().remove(record));
  auto done = coord.recover(pid, 2, &known);
  ASSERT_TRUE(done) << done.status().to_string();
  EXPECT_EQ(done->step, RecoveryStep::kDone);
  EXPECT_EQ(done->rolled_back, 1u);
  EXPECT_EQ(testing::raw_find(*leader, kTable, 11, 0).value, before);
  now = fence_requests(dc);
  for (size_t n = 0; n < 2; ++n) EXPECT_EQ(now[n] - start[n], 2u) << "memory node " << n;
}

// Pids found failed together (a host with several compute processes died)
// are repaired one after another and pushed to the survivors in one
// datagram before any ZooKeeper write: before, the k-th pid's latches were
// stolen only after k - 1 full recoveries, each ending with a waited
// ZooKeeper write. Then one multi publishes both, and each is marked done.
TEST_F(RegistryZkTest, PidsFailedTogetherArePushedTogetherBeforeAnyZooKeeperWrite) {
  TwoDied t;
  ASSERT_NO_FATAL_FAILURE(two_died_mid_commit("together", 0x55, &t));
  DaemonCluster& dc = t.dc;
  const std::unique_ptr<Cluster>& leader = t.leader;
  const DeadNodes& dead = t.dead;
  const std::vector<uint16_t>& pids = dead.pids;

  struct AtPush {
    int pushes = 0;
    std::vector<uint16_t> pids;
    zk::ZkClientStats zk;
    bool any_failed_listed = false;
    std::vector<std::vector<uint8_t>> values;
  } at;
  const zk::ZkClientStats start = dc.reg->zk().stats();
  RecoveryCoordinatorOptions ro = pushing_coordinator_options(dc);
  auto push = [&](std::span<const Endpoint>, std::span<const uint16_t> pushed) {
    ++at.pushes;
    at.pids.assign(pushed.begin(), pushed.end());
    at.zk = dc.reg->zk().stats();
    if (auto f = dc.reg->failed()) at.any_failed_listed = !f->empty();
    for (size_t i = 0; i < 2; ++i) at.values.push_back(t.value(i, 0));
  };
  // Fence requests each daemon served (one request fences both pids).
  const std::vector<uint64_t> fences_before = fence_requests(dc);
  RecoveryCoordinator coord(*dc.reg, *leader, ro, log_, push);
  const std::vector<RecoveryCoordinator::FailedPid> failed = dead.failed(1);
  auto done = coord.recover_together(failed);
  ASSERT_TRUE(done) << done.status().to_string();

  const std::vector<uint64_t> fences_after = fence_requests(dc);
  ASSERT_EQ(fences_after.size(), 2u);
  for (size_t n = 0; n < 2; ++n) {
    EXPECT_EQ(fences_after[n] - fences_before[n], 1u) << "memory node " << n << ": not one fence for both pids";
  }
  EXPECT_EQ(at.pushes, 1) << "one push for both";
  EXPECT_EQ(at.pids, pids);
  EXPECT_EQ(at.zk.writes_waited, start.writes_waited) << "a ZooKeeper write was waited for before the push";
  EXPECT_FALSE(at.any_failed_listed) << "failed/<pid> written before the push";
  ASSERT_EQ(at.values.size(), 2u);
  EXPECT_EQ(at.values[0], t.before) << "pushed before the first pid's half-done commit was rolled back";
  EXPECT_EQ(at.values[1], t.before) << "pushed before the second pid's half-done commit was rolled back";

  ASSERT_EQ(done->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const RecoveryRecord& r = (*done)[i];
    EXPECT_EQ(r.pid, pids[i]);
    EXPECT_EQ(r.step, RecoveryStep::kDone);
    EXPECT_EQ(r.rolled_back, 1u);
    EXPECT_EQ(r.together, 2u);
    auto stored = dc.reg->recovery(pids[i]);
    ASSERT_TRUE(stored && *stored);
    EXPECT_EQ((*stored)->step, RecoveryStep::kDone);
    EXPECT_EQ((*stored)->together, 2u) << "kept in the record";
  }
  // One multi publishing both, then one marking both done (both leases
  // released): the only waited writes.
  EXPECT_EQ(dc.reg->zk().stats().writes_waited - start.writes_waited, 2u);
  auto alloc = dc.reg->alloc();
  ASSERT_TRUE(alloc);
  for (uint16_t pid : pids) {
    EXPECT_FALSE(std::any_of(alloc->leases.begin(), alloc->leases.end(), [&](const Lease& l) { return l.pid == pid; }))
        << "pid " << pid << " still leases its lane slot";
  }
  auto listed = dc.reg->failed();
  ASSERT_TRUE(listed);
  for (uint16_t pid : pids) EXPECT_TRUE(std::binary_search(listed->begin(), listed->end(), pid)) << pid;
  // Again (a stale report of both): nothing to do, nothing pushed.
  at = AtPush{};
  auto again = coord.recover_together(failed);
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_EQ(at.pushes, 0);
}

// A leader that dies between a batch's push and its ZooKeeper write (the
// survivors may already steal the pids' latches) is replaced by one that
// re-runs the batch from the top: the lanes are empty by then, so nothing
// is decided twice, and the one multi publishes both. The dying leader is
// played by a push callback that throws.
TEST_F(RegistryZkTest, ABatchCutShortAfterItsPushIsFinishedByTheNextLeader) {
  TwoDied t;
  ASSERT_NO_FATAL_FAILURE(two_died_mid_commit("batch-cut", 0x77, &t));
  DaemonCluster& dc = t.dc;
  const std::unique_ptr<Cluster>& leader = t.leader;
  const DeadNodes& dead = t.dead;
  const std::vector<uint16_t>& pids = dead.pids;
  const std::vector<RecoveryCoordinator::FailedPid> failed = dead.failed(1);
  const RecoveryCoordinatorOptions ro = pushing_coordinator_options(dc);
  {
    auto dies = [](std::span<const Endpoint>, std::span<const uint16_t>) {
      throw std::runtime_error("the leader died right after its push");
    };
    RecoveryCoordinator first(*dc.reg, *leader, ro, log_, dies);
    EXPECT_THROW((void)first.recover_together(failed), std::runtime_error);
  }
  auto listed = dc.reg->failed();
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->empty()) << "published before the push returned";
  for (uint16_t pid : pids) {
    auto m = dc.reg->member(pid);
    ASSERT_TRUE(m);
    EXPECT_TRUE(*m) << "pid " << pid << " unregistered before its publish: the next leader would not find it";
  }

  std::vector<uint16_t> pushed;
  auto push = [&](std::span<const Endpoint>, std::span<const uint16_t> p) { pushed.assign(p.begin(), p.end()); };
  RecoveryCoordinator next(*dc.reg, *leader, ro, log_, push);
  auto done = next.recover_together(failed);
  ASSERT_TRUE(done) << done.status().to_string();
  EXPECT_EQ(pushed, pids);
  ASSERT_EQ(done->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*done)[i].step, RecoveryStep::kDone);
    EXPECT_EQ((*done)[i].records, 0u) << "the re-run found a record the first run had decided and truncated";
    EXPECT_EQ((*done)[i].together, 2u);
    EXPECT_EQ(t.value(i, 0), t.before);
    EXPECT_EQ(t.value(i, 1), t.before);
  }
  listed = dc.reg->failed();
  ASSERT_TRUE(listed);
  EXPECT_EQ(*listed, pids);
}

void RegistryZkTest::run_join(std::string_view name, int from_question, JoinRun* out, Publisher publisher) {
  TwoDied t;
  ASSERT_NO_FATAL_FAILURE(two_died_mid_commit(name, 0x31, &t));
  DaemonCluster& dc = t.dc;
  const std::unique_ptr<Cluster>& leader = t.leader;
  const DeadNodes& dead = t.dead;
  out->pids = dead.pids;
  const std::vector<RecoveryCoordinator::FailedPid> both = dead.failed(1);

  RecoveryCoordinatorOptions ro = pushing_coordinator_options(dc);
  ro.failed_since = [&](std::span<const uint16_t> batch) {
    out->asked.emplace_back(batch.begin(), batch.end());
    return static_cast<int>(out->asked.size()) < from_question ? std::vector<RecoveryCoordinator::FailedPid>{}
                                                               : std::vector<RecoveryCoordinator::FailedPid>{both[1]};
  };
  const uint64_t start = dc.reg->zk().stats().writes_waited;
  auto push = [&](std::span<const Endpoint>, std::span<const uint16_t> p) {
    out->pushes.emplace_back(p.begin(), p.end());
    out->writes_at_push.push_back(dc.reg->zk().stats().writes_waited - start);
    auto f = dc.reg->failed();
    out->first_listed_at_push.push_back(f && std::binary_search(f->begin(), f->end(), out->pids[0]));
  };
  std::unique_ptr<Registry> pub;
  if (publisher != Publisher::kNone) {
    zk::ZkOptions o = zk_options();
    // Another identity: it reads the tree (world-readable) but every write fails.
    if (publisher == Publisher::kCannotWrite) o.auth = registry_auth("another cluster's secret, 32 byte");
    auto opened = Registry::open(o, root(name), dc.record.cluster_id, log_);
    ASSERT_TRUE(opened) << opened.status().to_string();
    pub = std::move(*opened);
    ro.publisher = pub.get();
  }
  RecoveryCoordinator coord(*dc.reg, *leader, ro, log_, push);
  auto done = coord.recover_together(std::span<const RecoveryCoordinator::FailedPid>(both.data(), 1));
  ASSERT_TRUE(done) << done.status().to_string();
  out->done = *done;
  out->writes = dc.reg->zk().stats().writes_waited - start;
  if (pub) out->publisher_writes = pub->zk().stats().writes_waited;
  out->values_rolled_back = true;
  for (size_t i = 0; i < 2; ++i) out->values_rolled_back &= t.value(i, 0) == t.before;
  auto listed = dc.reg->failed();
  ASSERT_TRUE(listed);
  out->listed = *listed;
}

// A pid the detector finds failed while a batch is recovered (one host's
// processes crossed the timeout a few milliseconds apart) joins the batch
// after its push: fenced, repaired and pushed before any ZooKeeper write,
// then published and marked done with the others.
TEST_F(RegistryZkTest, APidFailedDuringABatchJoinsItBeforeItsZooKeeperWrites) {
  JoinRun r;
  ASSERT_NO_FATAL_FAILURE(run_join("joins", 1, &r));
  const std::vector<uint16_t>& pids = r.pids;
  ASSERT_EQ(r.pushes.size(), 2u);
  EXPECT_EQ(r.pushes[0], std::vector<uint16_t>{pids[0]});
  EXPECT_EQ(r.pushes[1], std::vector<uint16_t>{pids[1]});
  EXPECT_EQ(r.writes_at_push[1], 0u) << "the late pid waited for a ZooKeeper write";
  ASSERT_GE(r.asked.size(), 2u) << "not asked again after the late pid's push";
  EXPECT_EQ(r.asked[0], std::vector<uint16_t>{pids[0]});
  for (size_t i = 1; i < r.asked.size(); ++i) EXPECT_EQ(r.asked[i], pids) << "question " << i;
  ASSERT_EQ(r.done.size(), 2u) << "the late pid's record is returned too";
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.done[i].pid, pids[i]);
    EXPECT_EQ(r.done[i].step, RecoveryStep::kDone);
    EXPECT_EQ(r.done[i].rolled_back, 1u);
    EXPECT_EQ(r.done[i].together, 2u);
  }
  EXPECT_TRUE(r.values_rolled_back);
  EXPECT_EQ(r.writes, 2u) << "not one multi publishing both and one marking both done";
  EXPECT_EQ(r.listed, pids);
}

// A pid found failed while the batch's ZooKeeper write is under way does
// not wait for it: it is repaired and pushed meanwhile and written next.
// (The second question is asked once the first pid's write has started.)
TEST_F(RegistryZkTest, APidFailedDuringABatchsZooKeeperWriteDoesNotWaitForIt) {
  JoinRun r;
  ASSERT_NO_FATAL_FAILURE(run_join("joins-late", 2, &r));
  const std::vector<uint16_t>& pids = r.pids;
  ASSERT_EQ(r.pushes.size(), 2u) << "the late pid was not pushed";
  EXPECT_EQ(r.pushes[0], std::vector<uint16_t>{pids[0]});
  EXPECT_EQ(r.pushes[1], std::vector<uint16_t>{pids[1]});
  EXPECT_FALSE(r.first_listed_at_push[0]);
  EXPECT_EQ(r.writes, 3u) << "not two publishing writes (one per wave) and one marking both done";
  expect_both_recovered(r);
}

// With a publishing session the two waves' writes go through it, so the
// late pid's record read on the leader's session queues behind neither;
// the leader's session writes only the records done, after which its reads
// show what the other session wrote (the failed/ list).
TEST_F(RegistryZkTest, APublishingSessionTakesTheBatchsPublishingWrites) {
  JoinRun r;
  ASSERT_NO_FATAL_FAILURE(run_join("joins-publisher", 2, &r, Publisher::kOwnSession));
  const std::vector<uint16_t>& pids = r.pids;
  ASSERT_EQ(r.pushes.size(), 2u);
  EXPECT_EQ(r.pushes[1], std::vector<uint16_t>{pids[1]});
  EXPECT_EQ(r.publisher_writes, 2u) << "not one publishing write per wave on the publishing session";
  EXPECT_EQ(r.writes, 1u) << "the leader's session wrote more than the records done";
  expect_both_recovered(r);
}

// A publishing session that fails (here: an identity that may not write;
// an expired session fails the same way) costs the recovery nothing but
// the attempt: each wave is written on the leader's session instead.
TEST_F(RegistryZkTest, APublishingSessionThatFailsFallsBackToTheLeadersSession) {
  JoinRun r;
  ASSERT_NO_FATAL_FAILURE(run_join("joins-publisher-fails", 2, &r, Publisher::kCannotWrite));
  EXPECT_EQ(r.publisher_writes, 2u) << "each wave is tried on the publishing session first";
  EXPECT_EQ(r.writes, 3u) << "not two publishing writes and one marking both done on the leader's session";
  expect_both_recovered(r);
}

// Publishing several pids in one multi assumes each is as the caller
// read it; when one is not (here a member node already gone, as after a
// publish whose answer was lost), nothing is written by the multi and each
// pid is published on its own, which copes.
TEST_F(RegistryZkTest, PublishingTogetherFallsBackToOneByOneWhenAPidIsNotAsExpected) {
  const ClusterRecord c = one_node_cluster(0x5252);
  ASSERT_TRUE(Registry::init(zk_options(), root("publish-together"), c, log_));
  auto reg = Registry::open(zk_options(), root("publish-together"), c.cluster_id, log_);
  ASSERT_TRUE(reg) << reg.status().to_string();
  Registry& rg = **reg;
  std::vector<uint16_t> pids;
  for (int i = 0; i < 3; ++i) {
    auto m = rg.register_member(MemberRecord{.role = MemberRole::kCompute}, 1);
    ASSERT_TRUE(m) << m.status().to_string();
    pids.push_back(m->pid);
  }
  ASSERT_TRUE(rg.zk().remove(rg.path(fmt::format("compute/{}", pids[1]))));
  std::vector<Registry::ToPublish> batch;
  for (uint16_t pid : pids) {
    RecoveryRecord r;
    r.pid = pid;
    r.together = 3;
    batch.push_back({r, false});
  }
  ASSERT_TRUE(rg.publish_failed_together(batch));
  auto failed = rg.failed();
  ASSERT_TRUE(failed);
  EXPECT_EQ(*failed, pids);
  for (uint16_t pid : pids) {
    auto rec = rg.recovery(pid);
    ASSERT_TRUE(rec && *rec) << pid;
    EXPECT_EQ((*rec)->step, RecoveryStep::kPublished);
    EXPECT_EQ((*rec)->together, 3u);
    auto member = rg.member(pid);
    ASSERT_TRUE(member);
    EXPECT_FALSE(*member) << "compute/" << pid << " left behind";
  }
  // All published: again is fine (each one already there).
  EXPECT_TRUE(rg.publish_failed_together(batch));
}

// A batch beyond one multi's share (128 pids; a multi is one request,
// bounded by ZooKeeper's 1 MB jute.maxbuffer) is published in several.
TEST_F(RegistryZkTest, PublishingManyPidsTogetherPublishesEveryOne) {
  const ClusterRecord c = one_node_cluster(0x5353, 512);
  ASSERT_TRUE(Registry::init(zk_options(), root("publish-many"), c, log_));
  auto reg = Registry::open(zk_options(), root("publish-many"), c.cluster_id, log_);
  ASSERT_TRUE(reg) << reg.status().to_string();
  Registry& rg = **reg;
  std::vector<Registry::ToPublish> batch;
  std::vector<uint16_t> pids;
  for (int i = 0; i < 300; ++i) {
    auto m = rg.register_member(MemberRecord{.role = MemberRole::kCompute}, 1);
    ASSERT_TRUE(m) << m.status().to_string();
    pids.push_back(m->pid);
    RecoveryRecord r;
    r.pid = m->pid;
    r.together = 300;
    batch.push_back({r, false});
  }
  const uint64_t writes = rg.zk().stats().writes_waited;
  ASSERT_TRUE(rg.publish_failed_together(batch));
  EXPECT_EQ(rg.zk().stats().writes_waited - writes, 3u) << "300 pids: multis of 128, 128 and 44";
  auto failed = rg.failed();
  ASSERT_TRUE(failed);
  EXPECT_EQ(*failed, pids);
  auto members = rg.members();
  ASSERT_TRUE(members);
  EXPECT_TRUE(members->empty()) << members->size() << " member nodes left behind";
}

// The publishing multi creates the recovery record, or sets the one a
// start record left (ford, retirement); a wrong guess of the caller about
// the record, or a member already gone, costs a retry, not an error;
// publishing twice is fine.
TEST_F(RegistryZkTest, PublishingCreatesOrSetsTheRecord) {
  const ClusterRecord c = one_node_cluster(0x5151);
  ASSERT_TRUE(Registry::init(zk_options(), root("publish"), c, log_));
  auto reg = Registry::open(zk_options(), root("publish"), c.cluster_id, log_);
  ASSERT_TRUE(reg) << reg.status().to_string();
  Registry& rg = **reg;
  auto expect_published = [&](uint16_t pid, uint64_t fence_us) {
    auto rec = rg.recovery(pid);
    ASSERT_TRUE(rec && *rec);
    EXPECT_EQ((*rec)->step, RecoveryStep::kPublished);
    EXPECT_EQ((*rec)->fence_us, fence_us);
    auto member = rg.member(pid);
    ASSERT_TRUE(member);
    EXPECT_FALSE(*member) << "compute/" << pid << " left behind";
  };
  std::vector<uint16_t> pids;
  for (int i = 0; i < 3; ++i) {
    auto m = rg.register_member(MemberRecord{.role = MemberRole::kCompute}, 1);
    ASSERT_TRUE(m) << m.status().to_string();
    pids.push_back(m->pid);
  }
  RecoveryRecord r;
  r.fence_us = 17;
  // No record, as the caller expects.
  r.pid = pids[0];
  ASSERT_TRUE(rg.publish_failed(r, /*record_exists=*/false));
  ASSERT_NO_FATAL_FAILURE(expect_published(pids[0], 17));
  ASSERT_TRUE(rg.publish_failed(r, false));  // again: already published
  ASSERT_TRUE(rg.publish_failed(r, true));
  // No record although the caller expects one, and no member.
  r.pid = pids[1];
  ASSERT_TRUE(rg.zk().remove(rg.path(fmt::format("compute/{}", pids[1]))));
  ASSERT_TRUE(rg.publish_failed(r, true));
  ASSERT_NO_FATAL_FAILURE(expect_published(pids[1], 17));
  // A start record the caller does not expect.
  r.pid = pids[2];
  ASSERT_TRUE(rg.start_recovery(r));
  r.fence_us = 23;
  ASSERT_TRUE(rg.publish_failed(r, false));
  ASSERT_NO_FATAL_FAILURE(expect_published(pids[2], 23));
  auto failed = rg.failed();
  ASSERT_TRUE(failed);
  EXPECT_EQ(*failed, pids);
}

// A replacement's rebuild dies between writing moved rows at their new
// slots and freeing the old ones (the leader crashed): rows sit at two
// slots of their survivor, their moves journaled in ZooKeeper. The next
// leader's resume() finishes the journal before anything else - before it
// could end a pause and let a transaction update one copy - so every row is
// once on its node again, and the journal is gone; so does a fail-over's
// pause before it ends.
TEST_F(RegistryZkTest, ANewLeaderFinishesTheRowMovesOfARebuildCutShort) {
  ReplacementCluster rc;
  ASSERT_NO_FATAL_FAILURE(start_replacement_cluster("rebuild", 200, &rc));
  testing::MemdCluster& memds = rc.memds;
  Registry& reg = *rc.reg;
  Cluster& cluster = *rc.cluster;
  constexpr uint32_t kTable = 1;
  // Node 3 fails over; rows inserted meanwhile collide on it.
  ASSERT_NO_FATAL_FAILURE(fail_over_node_3(rc, 31));
  {
    auto conns = cluster.open_connections();
    ASSERT_TRUE(conns) << conns.status().to_string();
    Worker w(cluster, 0, 1, 0, std::move(*conns));
    w.run([&](Coordinator& co) {
      for (uint64_t k = 1000; k < 1120; ++k) {
        Txn& t = co.txn();
        t.begin();
        ASSERT_EQ(t.insert(kTable, k, testing::i64_value(static_cast<int64_t>(k))), AbortReason::kNone);
        ASSERT_TRUE(t.commit().committed) << k;
      }
    });
  }
  ASSERT_EQ(std::remove(memds.memd(2).region_path().c_str()), 0);
  ASSERT_TRUE(memds.memd(2).restart());
  auto repl = cluster.connect_replacement(2, memds.memd(2).endpoint());
  ASSERT_TRUE(repl) << repl.status().to_string();
  std::vector<Connection*> conns(cluster.bootstrap_connections().begin(), cluster.bootstrap_connections().end());
  conns[2] = repl->get();
  struct Crash {};
  RebuildOptions cut;
  cut.journal_batch = 3;
  cut.after_moves_written = [] { throw Crash{}; };
  EXPECT_THROW((void)rebuild_memory_node(cluster, conns, 2, *reg.relocation_journal(), log_, cut), Crash);
  auto journaled = reg.relocation_journal()->read();
  ASSERT_TRUE(journaled) << journaled.status().to_string();
  ASSERT_EQ(journaled->size(), 3u) << "the batch in flight is in ZooKeeper";
  auto dup = audit_table(cluster, kTable);
  ASSERT_TRUE(dup) << dup.status().to_string();
  EXPECT_FALSE(dup->clean()) << "the cut leaves rows at two slots";

  RecoveryCoordinatorOptions ro;
  ro.cluster_id = rc.record.cluster_id;
  ro.secret = rc.base.secret;
  RecoveryCoordinator next(reg, cluster, ro, log_, {});
  ASSERT_TRUE(next.resume(rc.leader.compute_id));
  auto left = reg.relocation_journal()->read();
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty());
  auto audit = audit_table(cluster, kTable);
  ASSERT_TRUE(audit) << audit.status().to_string();
  EXPECT_TRUE(audit->clean()) << fmt::format("{}", fmt::join(audit->problems, "\n"));
  EXPECT_EQ(audit->rows, 320u);

  // Cut short again (rows still collide), and this time a fail-over's
  // pause - the re-run of node 3's - is what would end first: it finishes
  // the moves before it ends.
  EXPECT_THROW((void)rebuild_memory_node(cluster, conns, 2, *reg.relocation_journal(), log_, cut), Crash);
  journaled = reg.relocation_journal()->read();
  ASSERT_TRUE(journaled);
  ASSERT_EQ(journaled->size(), 3u);
  ASSERT_TRUE(next.fail_over_memory_node(3));
  left = reg.relocation_journal()->read();
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty());
  auto paused = reg.pause_in_progress();
  ASSERT_TRUE(paused);
  EXPECT_FALSE(*paused);
  audit = audit_table(cluster, kTable);
  ASSERT_TRUE(audit) << audit.status().to_string();
  EXPECT_TRUE(audit->clean()) << fmt::format("{}", fmt::join(audit->problems, "\n"));
}

// A replacement on the node's old region: that region was fenced for pids
// that were recycled while the node was out (the recycler unfences only
// live nodes) - one issued again to a live member, one waiting in the
// reuse list. Once the node is back both must be able to log in there, or
// the live member could never switch back (it would stay parked).
TEST_F(RegistryZkTest, AReplacementOnAnOldRegionLetsInThePidsRecycledSince) {
  ReplacementCluster rc;
  ASSERT_NO_FATAL_FAILURE(start_replacement_cluster("oldregion", 50, &rc));
  testing::MemdCluster& memds = rc.memds;
  Registry& reg = *rc.reg;
  const auto live = member_config(reg, rc.base, rc.record.lane_bytes, MemberRole::kFd, 2);
  ASSERT_TRUE(live);
  const uint16_t live_pid = static_cast<uint16_t>(live->compute_id);
  constexpr uint16_t kRecycled = 9;
  {
    auto node = reg.zk().get(reg.path("alloc"));
    ASSERT_TRUE(node) << node.status().to_string();
    auto alloc = decode_alloc_record(node->data);
    ASSERT_TRUE(alloc) << alloc.status().to_string();
    alloc->next_pid = std::max<uint32_t>(alloc->next_pid, kRecycled + 1);
    alloc->reuse.push_back(kRecycled);
    ASSERT_TRUE(reg.zk().set(reg.path("alloc"), encode_alloc_record(*alloc)));
  }
  // Node 3's region carries both fences from their earlier lives.
  {
    auto admin = ControlClient::connect(memds.memd(2).endpoint(), memds.memd(2).identity(0), std::chrono::seconds(5));
    ASSERT_TRUE(admin) << admin.status().to_string();
    ASSERT_TRUE((*admin)->fence(live_pid));
    ASSERT_TRUE((*admin)->fence(kRecycled));
  }
  ASSERT_NO_FATAL_FAILURE(fail_over_node_3(rc, 41));
  ASSERT_TRUE(memds.memd(2).restart());  // the old region

  RecoveryCoordinatorOptions ro;
  ro.cluster_id = rc.record.cluster_id;
  ro.secret = rc.base.secret;
  RecoveryCoordinator coord(reg, *rc.cluster, ro, log_, {});
  auto report = coord.replace_memory_node(ReplaceRequest{3, memds.memd(2).endpoint(), {}});
  ASSERT_TRUE(report) << report.status().to_string();
  for (uint16_t pid : {live_pid, kRecycled}) {
    auto in = ControlClient::connect(memds.memd(2).endpoint(), memds.memd(2).identity(pid), std::chrono::seconds(5));
    EXPECT_TRUE(in) << "pid " << pid << " at the replacement: " << in.status().to_string();
  }
}

// Pid recycling with a tiny pid space: pids of failed nodes are issued
// again once every stray latch carrying them is released and every live
// member has dropped them from its failed-ids; a re-issued pid logs in and
// writes (it was unfenced), and no latch of a recycled pid survives.
TEST_F(RegistryZkTest, PidsAreRecycledInATinyPidSpace) {
  testing::MemdCluster memds(2, "16M", "2M");
  ASSERT_TRUE(memds.ok()) << memds.error();
  ComputeConfig base = memds.config(1, Backend::kTcp, 2);
  ClusterRecord c;
  c.cluster_id = base.cluster_id;
  c.memory_nodes = base.memory_nodes;
  c.lane_bytes = testing::kTestLaneBytes;
  c.lanes = static_cast<uint32_t>((2u << 20) / c.lane_bytes);
  constexpr uint32_t kPidLimit = 12;
  ASSERT_TRUE(Registry::init(zk_options(), root("recycle"), c, log_, kPidLimit));
  auto reg = Registry::open(zk_options(), root("recycle"), c.cluster_id, log_);
  ASSERT_TRUE(reg) << reg.status().to_string();

  const auto leader = member_config(**reg, base, c.lane_bytes, MemberRole::kFd, 2);
  ASSERT_TRUE(leader);
  const ComputeConfig& lc = *leader;
  auto cluster = Cluster::connect(lc, log_);
  ASSERT_TRUE(cluster) << cluster.status().to_string();
  std::vector<TableSpec> specs = {TableSpec{.id = 1, .name = "t", .value_size = 16, .expected_rows = 256}};
  ASSERT_TRUE(create_tables(**cluster, specs, {}));
  ASSERT_TRUE((*cluster)->load_directory());
  RecoveryCoordinatorOptions ro;
  ro.cluster_id = c.cluster_id;
  ro.secret = base.secret;
  RecoveryCoordinator coord(**reg, **cluster, ro, log_, {});

  // A live member that must drop recycled pids before they are re-issued.
  MembershipOptions mo;
  mo.zk = zk_options();
  mo.root = root("recycle");
  mo.cluster_id = c.cluster_id;
  mo.secret = base.secret;
  mo.lanes = 2;
  auto live = Membership::join(mo, log_);
  ASSERT_TRUE(live) << live.status().to_string();
  FailedIds live_ids;
  ASSERT_TRUE((*live)->attach(live_ids));

  // A copy: recycling reads the directory again, which frees the old one.
  const TableEntry t = *(*cluster)->directory().find(1);
  const auto conns = (*cluster)->bootstrap_connections();
  std::map<uint16_t, int> issued;  // pid -> times issued
  uint32_t recycles = 0, released = 0;
  for (int i = 0; i < 40; ++i) {
    MemberRecord want;
    want.incarnation = static_cast<uint64_t>(i) + 1;
    auto m = register_retrying(**reg, want, 2);
    ASSERT_TRUE(m) << "lifetime " << i << ": " << m.status().to_string();
    ++issued[m->pid];
    // The node runs: its own session logs in and writes (a re-issued pid
    // was unfenced), and it leaves a stray latch behind when it dies.
    ComputeConfig mc = base;
    mc.compute_id = m->pid;
    mc.lane_slot = m->slot;
    mc.threads = 1;
    mc.coordinators = 1;
    {
      auto own = Cluster::connect(mc, log_);
      ASSERT_TRUE(own) << "pid " << m->pid << " (issued " << issued[m->pid] << " times): " << own.status().to_string();
      OpBatch b((*own)->bootstrap_connections(), std::chrono::seconds(5));
      const uint64_t latch = slot_offset(t, static_cast<uint64_t>(i) % t.bucket_count, 0) + kSlotLatchOffset;
      b.cas(0, latch, kLatchFree, encode_latch({m->pid, 0, static_cast<uint32_t>(i + 1)}));
      ASSERT_TRUE(b.run());
      ASSERT_EQ(b.value(0), kLatchFree);
    }
    auto rec = coord.recover(m->pid, 0);
    ASSERT_TRUE(rec) << rec.status().to_string();
    auto alloc = (*reg)->alloc();
    ASSERT_TRUE(alloc);
    if (!recycling_due(*alloc, 0.95)) continue;
    auto failed_before = (*reg)->failed();
    ASSERT_TRUE(failed_before);
    auto r = recycle_pids(**reg, **cluster, lc.compute_id, RecycleOptions{.secret = base.secret}, log_);
    ASSERT_TRUE(r) << r.status().to_string();
    ASSERT_EQ(r->pids, failed_before->size());
    ++recycles;
    released += r->released;
    // The live member dropped them (it acknowledged before the finish).
    for (uint16_t p : *failed_before) EXPECT_FALSE(live_ids.contains(p)) << "pid " << p;
    auto failed_after = (*reg)->failed();
    ASSERT_TRUE(failed_after);
    EXPECT_TRUE(failed_after->empty());
    // No latch of a recycled pid is left anywhere.
    std::set<uint16_t> recycled(failed_before->begin(), failed_before->end());
    uint32_t left = 0;
    auto scan = release_latches_where(
        **cluster, conns,
        [&](uint64_t w) {
          left += recycled.count(latch_pid(w));
          return false;
        },
        log_);
    ASSERT_TRUE(scan);
    EXPECT_EQ(left, 0u);
  }
  EXPECT_GE(recycles, 3u);
  // Each planted latch is released once, by the recycle of its pid; those
  // planted after the last recycle are still there (their pids not due).
  EXPECT_LE(released, 40u);
  EXPECT_GE(released, 30u);
  // The member writes its acknowledgement to ZooKeeper before it counts it,
  // so the recycler can return first: wait (bounded) for the count.
  const auto ack_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((*live)->recycles_acknowledged() < recycles && std::chrono::steady_clock::now() < ack_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GE((*live)->recycles_acknowledged(), recycles);
  // Pids were issued again, and never beyond the pid space.
  EXPECT_TRUE(std::any_of(issued.begin(), issued.end(), [](const auto& kv) { return kv.second > 1; }));
  EXPECT_LE(issued.rbegin()->first, kPidLimit);
}

}  // namespace
}  // namespace pandora
