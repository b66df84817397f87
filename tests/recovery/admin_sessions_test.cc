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

uint64_t fenced_nodes(AdminSessions& admin, const Endpoint& node) {
  uint64_t n = ~uint64_t{0};
  Status s = admin.at_every({node}, "stats", [&](ControlClient& c) {
    auto st = c.stats();
    if (st) n = st->fenced_nodes;
    return st.status();
  });
  EXPECT_TRUE(s) << s.to_string();
  return n;
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

}  // namespace
}  // namespace pandora::testing
