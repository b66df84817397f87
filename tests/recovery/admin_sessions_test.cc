// recovery/admin_sessions.h against real daemons: a kept session is reused,
// a broken one is replaced and the idempotent request runs once more, and a
// node that cannot be reached is named in the error.
#include "recovery/admin_sessions.h"

#include <gtest/gtest.h>

#include "common/wire/control.h"
#include "tests/support/memd_cluster.h"

namespace pandora::testing {
namespace {

using namespace std::chrono_literals;

std::vector<Endpoint> endpoints(MemdCluster& m) {
  std::vector<Endpoint> out;
  for (size_t i = 0; i < m.size(); ++i) out.push_back(m.memd(i).endpoint());
  return out;
}

wire::StatsReply daemon_stats(AdminSessions& admin, const Endpoint& node) {
  wire::StatsReply out;
  out.fenced_nodes = out.fence_requests = ~uint64_t{0};
  Status s = admin.at_every({node}, "stats", [&](ControlClient& c) {
    auto st = c.stats();
    if (st) out = *st;
    return st.status();
  });
  EXPECT_TRUE(s) << s.to_string();
  return out;
}

uint64_t fenced_nodes(AdminSessions& admin, const Endpoint& node) { return daemon_stats(admin, node).fenced_nodes; }
uint64_t fence_requests(AdminSessions& admin, const Endpoint& node) {
  return daemon_stats(admin, node).fence_requests;
}

TEST(AdminSessionsTest, KeptSessionsAreReusedAndBrokenOnesReplaced) {
  MemdCluster memds(2);
  ASSERT_TRUE(memds.ok()) << memds.error();
  const ComputeConfig cfg = memds.config(1, Backend::kTcp, 2);
  AdminSessions admin(cfg.cluster_id, cfg.secret, 5000ms);
  std::vector<Endpoint> nodes = endpoints(memds);

  ASSERT_TRUE(admin.fence(nodes, 5));
  ASSERT_TRUE(admin.fence(nodes, 6));
  ASSERT_TRUE(admin.fence(nodes, 6));  // idempotent
  EXPECT_EQ(admin.opened(), 2u) << "a session per fence instead of one per node";
  EXPECT_EQ(fenced_nodes(admin, nodes[0]), 2u);
  EXPECT_EQ(fenced_nodes(admin, nodes[1]), 2u);
  EXPECT_EQ(admin.opened(), 2u);

  // The daemon closes node 0's session (a client message it does not
  // expect): the request fails on it, runs again on a new session.
  int calls = 0;
  Status s = admin.at_every({nodes[0]}, "stats", [&](ControlClient& c) {
    if (++calls == 1) {
      EXPECT_FALSE(c.call(wire::ControlMessage(wire::Ok{})));
      return Status(Errc::kIo, "the session broke");
    }
    return c.stats().status();
  });
  ASSERT_TRUE(s) << s.to_string();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(admin.opened(), 3u);
  ASSERT_TRUE(admin.fence(nodes, 7));
  EXPECT_EQ(admin.opened(), 3u) << "the replacement session was not kept";
  EXPECT_EQ(fenced_nodes(admin, nodes[0]), 3u);

  // Node 1 dies and comes back on a new port: the old endpoint fails,
  // naming the node, after one attempt on a new session; the new list works.
  memds.memd(1).kill9();
  s = admin.fence(nodes, 8);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("fencing pid 8 at " + nodes[1].to_string()), std::string::npos) << s.message();
  ASSERT_TRUE(memds.memd(1).restart());
  nodes = endpoints(memds);
  ASSERT_TRUE(admin.fence(nodes, 8));
  EXPECT_EQ(admin.opened(), 4u);  // node 1 on its new port (the failed attempt opened nothing)
  EXPECT_EQ(fenced_nodes(admin, nodes[1]), 4u) << "fence bits persist across the daemon's restart";
}

// Pids that failed together: one request per node names all of them (at
// most wire::kMaxFenceIds each), in flight at every node at once.
TEST(AdminSessionsTest, SeveralPidsAreFencedWithOneRequestPerNode) {
  MemdCluster memds(2);
  ASSERT_TRUE(memds.ok()) << memds.error();
  const ComputeConfig cfg = memds.config(1, Backend::kTcp, 2);
  AdminSessions admin(cfg.cluster_id, cfg.secret, 5000ms);
  const std::vector<Endpoint> nodes = endpoints(memds);

  const std::vector<uint16_t> three{5, 6, 7};
  ASSERT_TRUE(admin.fence(nodes, three));
  for (const Endpoint& n : nodes) {
    EXPECT_EQ(fenced_nodes(admin, n), 3u);
    EXPECT_EQ(fence_requests(admin, n), 1u);
  }

  // More than one request holds: cut into requests of kMaxFenceIds.
  std::vector<uint16_t> many;
  for (size_t i = 0; i < 2 * wire::kMaxFenceIds + 1; ++i) many.push_back(static_cast<uint16_t>(100 + i));
  ASSERT_TRUE(admin.fence(nodes, many));
  for (const Endpoint& n : nodes) {
    EXPECT_EQ(fenced_nodes(admin, n), 3u + many.size());
    EXPECT_EQ(fence_requests(admin, n), 1u + 3u);
  }
  EXPECT_EQ(admin.opened(), 2u);
  ASSERT_TRUE(admin.fence(nodes, std::span<const uint16_t>()));  // nothing to do
  EXPECT_EQ(fence_requests(admin, nodes[0]), 4u);

  // An invalid id is refused by every node; the error names the pids.
  const std::vector<uint16_t> bad{8, 0};
  Status s = admin.fence(nodes, bad);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("fencing pids 8, 0 at " + nodes[0].to_string()), std::string::npos) << s.message();
  EXPECT_EQ(fenced_nodes(admin, nodes[1]), 3u + many.size()) << "pid 8 was fenced by a request naming pid 0";

  // Node 1 dies: node 0 is still fenced (both requests were in flight),
  // the error names node 1.
  memds.memd(1).kill9();
  const std::vector<uint16_t> two{9, 10};
  s = admin.fence(nodes, two);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("fencing pids 9, 10 at " + nodes[1].to_string()), std::string::npos) << s.message();
  EXPECT_EQ(fenced_nodes(admin, nodes[0]), 5u + many.size());
}

}  // namespace
}  // namespace pandora::testing
