// SessionTable in-process: one incarnation per compute id while its sessions
// are connected, stale generations and hung-up peers never block.
#include "memory/session_table.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/transport/socket_util.h"

namespace pandora::memd {
namespace {

// A connected pair: `ours` plays the daemon's socket, `theirs` the client.
struct Pair {
  net::UniqueFd ours, theirs;
};
Pair socket_pair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  return {net::UniqueFd(sv[0]), net::UniqueFd(sv[1])};
}

TEST(SessionTable, OneIncarnationPerIdWhileItsPeersAreConnected) {
  SessionTable t;
  Pair a1 = socket_pair(), a2 = socket_pair(), b = socket_pair();
  auto l1 = t.acquire(7, /*incarnation=*/100, /*generation=*/0, a1.ours.get());
  ASSERT_TRUE(l1);
  auto l2 = t.acquire(7, 100, 0, a2.ours.get());
  ASSERT_TRUE(l2) << "sessions of one process must coexist";
  EXPECT_EQ(t.sessions(7), 2u);

  auto refused = t.acquire(7, 200, 0, b.ours.get());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), Errc::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("compute id 7"), std::string::npos);
  EXPECT_TRUE(t.acquire(8, 200, 0, b.ours.get())) << "other ids are independent";

  // Released leases no longer count.
  l1->release();
  EXPECT_EQ(t.sessions(7), 1u);
  EXPECT_FALSE(t.acquire(7, 200, 0, b.ours.get()));
  { SessionTable::Lease gone = std::move(*l2); }
  EXPECT_EQ(t.sessions(7), 0u);
  EXPECT_TRUE(t.acquire(7, 200, 0, b.ours.get()));
}

TEST(SessionTable, AHungUpPeerDoesNotHoldItsId) {
  SessionTable t;
  Pair old_conn = socket_pair(), fresh = socket_pair();
  auto old_lease = t.acquire(7, 100, 0, old_conn.ours.get());
  ASSERT_TRUE(old_lease);
  ASSERT_FALSE(t.acquire(7, 200, 0, fresh.ours.get()));
  // The old process exits: its end closes. The daemon may not have handled
  // the EOF yet (the lease is still held), but the id is free.
  old_conn.theirs.reset();
  auto next = t.acquire(7, 200, 0, fresh.ours.get());
  ASSERT_TRUE(next) << next.status().to_string();
  EXPECT_EQ(t.sessions(7), 2u);
}

TEST(SessionTable, SessionsOfAnOlderFenceGenerationDoNotBlock) {
  SessionTable t;
  Pair fenced = socket_pair(), fresh = socket_pair(), late = socket_pair();
  auto old_lease = t.acquire(7, 100, /*generation=*/3, fenced.ours.get());
  ASSERT_TRUE(old_lease);
  // After an Unfence (generation 4) a new process may have the id...
  auto next = t.acquire(7, 200, 4, fresh.ours.get());
  ASSERT_TRUE(next) << next.status().to_string();
  // ...and the old one, though connected, cannot come back beside it.
  EXPECT_FALSE(t.acquire(7, 100, 4, late.ours.get()));
}

TEST(SessionTable, LeasesOutliveTheirTable) {
  Pair p = socket_pair();
  SessionTable::Lease kept;
  {
    SessionTable t;
    auto l = t.acquire(1, 1, 0, p.ours.get());
    ASSERT_TRUE(l);
    kept = std::move(*l);
  }
  EXPECT_TRUE(kept.held());
  kept.release();  // no use after free (ASan would tell)
  EXPECT_FALSE(kept.held());
}

}  // namespace
}  // namespace pandora::memd
