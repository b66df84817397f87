// PendingHandshakes alone: which pending handshake gives way to a new one.
#include "memory/pending_handshakes.h"

#include <gtest/gtest.h>

namespace pandora::memd {
namespace {

TEST(PendingHandshakes, RoomMeansNoVictim) {
  PendingHandshakes p(4, 2);
  EXPECT_EQ(p.victim_for("10.0.0.1"), std::nullopt);
  EXPECT_EQ(p.busiest_oldest(), std::nullopt);
  p.add(1, "10.0.0.1");
  EXPECT_EQ(p.victim_for("10.0.0.1"), std::nullopt);
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p.count("10.0.0.1"), 1u);
}

TEST(PendingHandshakes, AFullPeerEvictsItsOwnOldest) {
  PendingHandshakes p(100, 3);
  p.add(10, "10.0.0.9");  // a bystander, older than everything else
  for (uint64_t id = 11; id <= 13; ++id) p.add(id, "10.0.0.1");
  EXPECT_EQ(p.victim_for("10.0.0.1"), 11u);
  EXPECT_EQ(p.victim_for("10.0.0.9"), std::nullopt);
  p.remove(11);
  p.add(14, "10.0.0.1");
  EXPECT_EQ(p.victim_for("10.0.0.1"), 12u);
  EXPECT_EQ(p.count("10.0.0.1"), 3u);
}

TEST(PendingHandshakes, AFullTableEvictsFromTheBusiestPeerNotTheOldestOverall) {
  PendingHandshakes p(5, 10);
  p.add(1, "10.0.0.1");  // the oldest, but alone: a real client
  for (uint64_t id = 2; id <= 5; ++id) p.add(id, "10.0.0.2");
  EXPECT_EQ(p.victim_for("10.0.0.3"), 2u);
  EXPECT_EQ(p.busiest_oldest(), 2u);
  // Tied peers: the one holding the older handshake gives way.
  PendingHandshakes q(4, 10);
  q.add(1, "a");
  q.add(2, "b");
  q.add(3, "b");
  q.add(4, "a");
  EXPECT_EQ(q.victim_for("c"), 1u);
}

TEST(PendingHandshakes, EvictingUntilNoVictimMakesRoomForEveryNewcomer) {
  PendingHandshakes p(8, 3);
  uint64_t next = 1;
  // A flood from three addresses, then the table never exceeds its limits.
  for (int round = 0; round < 100; ++round) {
    const std::string addr = "10.0.0." + std::to_string(round % 3);
    while (auto v = p.victim_for(addr)) p.remove(*v);
    p.add(next++, addr);
    ASSERT_LE(p.size(), 8u);
    ASSERT_LE(p.count(addr), 3u);
  }
  // A newcomer from a fresh address always finds room, at a flooder's cost.
  while (auto v = p.victim_for("192.168.1.1")) {
    EXPECT_NE(p.count("10.0.0.0") + p.count("10.0.0.1") + p.count("10.0.0.2"), 0u);
    p.remove(*v);
  }
  p.add(next, "192.168.1.1");
  EXPECT_EQ(p.count("192.168.1.1"), 1u);
}

TEST(PendingHandshakes, RemoveIsIdempotentAndForgetsEmptyPeers) {
  PendingHandshakes p(0, 0);  // raised to 1 and 1
  EXPECT_EQ(p.max_total(), 1u);
  EXPECT_EQ(p.max_per_peer(), 1u);
  p.add(7, "x");
  p.add(7, "x");  // duplicates are ignored
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p.victim_for("y"), 7u);
  p.remove(7);
  p.remove(7);
  p.remove(99);
  EXPECT_EQ(p.size(), 0u);
  EXPECT_EQ(p.count("x"), 0u);
  EXPECT_EQ(p.victim_for("x"), std::nullopt);
}

}  // namespace
}  // namespace pandora::memd
