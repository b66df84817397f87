// The sim transport keeps the Connection contract and is adversarial where
// the contract allows (testing/sim/sim_network.h).
#include "testing/sim/sim_network.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <set>

#include "common/region_layout.h"

namespace pandora::sim {
namespace {

constexpr uint64_t kAddr = kDataOffset + 4096;

uint64_t word_at(const SimNetwork& net, size_t node, uint64_t addr) {
  uint64_t w;
  std::memcpy(&w, net.region(node).data() + addr, 8);
  return w;
}

std::vector<Completion> drain(Connection& c) {
  std::vector<Completion> out;
  std::array<Completion, 16> buf;
  for (size_t n; (n = c.poll(buf)) > 0;) out.insert(out.end(), buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n));
  return out;
}

SimNetwork two_nodes(uint64_t seed) { return SimNetwork(7, seed, {{.node_id = 1}, {.node_id = 2}}); }

TEST(SimNetwork, RegionInfoIsWhatADaemonReports) {
  SimNetwork net(7, 1, {{.node_id = 4, .table_bytes = 1 << 20, .log_bytes = 1 << 21}});
  const wire::RegionInfo& r = net.region_info(0);
  EXPECT_EQ(r.cluster_id, 7u);
  EXPECT_EQ(r.node_id, 4u);
  EXPECT_EQ(r.layout_version, kRegionLayoutVersion);
  EXPECT_EQ(r.table_offset, kDataOffset);
  EXPECT_EQ(r.log_offset, kDataOffset + (1 << 20));
  EXPECT_EQ(r.region_size, r.log_offset + (1 << 21));
  auto c = net.open(3, 0);
  EXPECT_EQ(c->data_begin(), kDataOffset);
  EXPECT_EQ(c->data_end(), r.region_size);
  EXPECT_EQ(c->backend(), "sim");
}

TEST(SimNetwork, NothingLeavesBeforeFlushAndOneConnectionKeepsItsOrder) {
  SimNetwork net = two_nodes(1);
  auto c = net.open(3, 0);
  const uint64_t a = 1, b = 2;
  uint64_t seen = 0;
  c->post_write(kAddr, &a, 8, 1);
  c->post_write(kAddr, &b, 8, 2);
  c->post_read(kAddr, &seen, 8, 3);
  EXPECT_EQ(net.in_flight(), 0u);
  EXPECT_FALSE(net.apply_one());
  c->flush();
  EXPECT_EQ(net.in_flight(), 3u);
  while (net.apply_one()) {}
  EXPECT_EQ(word_at(net, 0, kAddr), 2u);
  EXPECT_EQ(seen, 2u);
  const auto comps = drain(*c);
  ASSERT_EQ(comps.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(comps[i].wr_id, i + 1);
    EXPECT_EQ(comps[i].status, Errc::kOk);
  }
  EXPECT_EQ(c->outstanding(), 0u);
}

TEST(SimNetwork, AWriteReadsItsBufferWhenItLands) {
  SimNetwork net = two_nodes(1);
  auto c = net.open(3, 0);
  uint64_t v = 5;
  c->post_write(kAddr, &v, 8, 1);
  c->flush();
  v = 6;  // the contract forbids this; the simulation shows what a NIC would do
  while (net.apply_one()) {}
  EXPECT_EQ(word_at(net, 0, kAddr), 6u);
}

TEST(SimNetwork, CasAndFaaReturnTheWordBefore) {
  SimNetwork net = two_nodes(1);
  auto c = net.open(3, 1);
  c->post_cas(kAddr, 0, 10, 1);   // succeeds
  c->post_cas(kAddr, 0, 20, 2);   // fails: the word is 10
  c->post_faa(kAddr, 5, 3);
  c->flush();
  while (net.apply_one()) {}
  const auto comps = drain(*c);
  ASSERT_EQ(comps.size(), 3u);
  EXPECT_EQ(comps[0].value, 0u);
  EXPECT_EQ(comps[1].value, 10u);
  EXPECT_EQ(comps[2].value, 10u);
  EXPECT_EQ(word_at(net, 1, kAddr), 15u);
  EXPECT_EQ(net.stats().landed[static_cast<size_t>(OpType::kCas)], 2u);
  EXPECT_EQ(net.stats().landed[static_cast<size_t>(OpType::kFaa)], 1u);
}

TEST(SimNetwork, BadOperationsFailWithoutLeaving) {
  SimNetwork net = two_nodes(1);
  auto c = net.open(3, 0);
  uint64_t v = 0;
  c->post_read(kDataOffset - 8, &v, 8, 1);  // the daemon's header
  c->post_cas(kAddr + 4, 0, 1, 2);
  c->post_read(c->data_end() - 4, &v, 8, 3);
  c->flush();
  EXPECT_EQ(net.in_flight(), 0u);
  const auto comps = drain(*c);
  ASSERT_EQ(comps.size(), 3u);
  EXPECT_EQ(comps[0].status, Errc::kOutOfBounds);
  EXPECT_EQ(comps[1].status, Errc::kMisaligned);
  EXPECT_EQ(comps[2].status, Errc::kOutOfBounds);
}

// Operations of different connections land in an order the seed decides:
// over a few seeds, each of two racing writes is sometimes the last.
TEST(SimNetwork, TheSeedDecidesTheOrderAcrossConnections) {
  std::set<uint64_t> winners;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SimNetwork net = two_nodes(seed);
    auto a = net.open(3, 0);
    auto b = net.open(4, 0);
    const uint64_t va = 1, vb = 2;
    a->post_write(kAddr, &va, 8, 1);
    b->post_write(kAddr, &vb, 8, 1);
    a->flush();
    b->flush();
    while (net.apply_one()) {}
    winners.insert(word_at(net, 0, kAddr));
  }
  EXPECT_EQ(winners, (std::set<uint64_t>{1, 2}));
}

// The same seed, the same run.
TEST(SimNetwork, OneSeedOneOrder) {
  auto order = [](uint64_t seed) {
    SimNetwork net(7, seed, {{.node_id = 1}, {.node_id = 2}, {.node_id = 3}});
    std::vector<std::unique_ptr<SimConnection>> cs;
    for (size_t i = 0; i < 3; ++i) cs.push_back(net.open(3, i));
    for (uint64_t k = 0; k < 10; ++k) {
      for (auto& c : cs) c->post_faa(kAddr, 1, k);
    }
    for (auto& c : cs) c->flush();
    std::vector<size_t> order;  // which connection each landing belonged to
    std::array<size_t, 3> seen{};
    while (net.apply_one()) {
      for (size_t i = 0; i < 3; ++i) {
        if (cs[i]->completions() > seen[i]) {
          order.push_back(i);
          seen[i] = cs[i]->completions();
        }
      }
    }
    return order;
  };
  EXPECT_EQ(order(9), order(9));
  EXPECT_NE(order(9), order(10));
}

// A crash keeps a prefix of each connection's sent operations (what was on
// the wire): never a later one without every earlier one; and across seeds
// every prefix length occurs, so a batch sent to several nodes lands in part.
TEST(SimNetwork, ACrashLandsAPrefixOfWhatWasSentAndLosesTheRest) {
  std::set<uint64_t> kept;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SimNetwork net = two_nodes(seed);
    auto c = net.open(3, 0);
    std::array<uint64_t, 4> vals{1, 1, 1, 1};
    for (uint64_t i = 0; i < 4; ++i) c->post_write(kAddr + 8 * i, &vals[i], 8, i);
    const uint64_t unflushed = 1;
    c->flush();
    c->post_write(kAddr + 64, &unflushed, 8, 9);  // never flushed: lost
    net.crash(3);
    while (net.apply_one()) {}
    uint64_t landed = 0;
    for (uint64_t i = 0; i < 4; ++i) {
      const uint64_t w = word_at(net, 0, kAddr + 8 * i);
      if (w == 1) {
        EXPECT_EQ(landed, i) << "seed " << seed << ": write " << i << " landed after a lost one";
        ++landed;
      }
    }
    kept.insert(landed);
    EXPECT_EQ(word_at(net, 0, kAddr + 64), 0u);
    EXPECT_EQ(c->completions(), 0u) << "a crashed process receives nothing";
    EXPECT_EQ(net.stats().dropped, 5 - landed);
  }
  EXPECT_EQ(kept, (std::set<uint64_t>{0, 1, 2, 3, 4}));
}

TEST(SimNetwork, AFenceDropsWhatIsInFlightAndRefusesTheRest) {
  SimNetwork net = two_nodes(1);
  auto c = net.open(3, 0);
  auto other = net.open(4, 0);
  const uint64_t v = 1;
  c->post_write(kAddr, &v, 8, 1);
  c->flush();
  net.fence(3);
  EXPECT_TRUE(net.fenced(3));
  EXPECT_FALSE(net.fenced(4));
  EXPECT_EQ(net.in_flight(), 0u);
  EXPECT_EQ(c->health(), Errc::kFenced);
  c->post_write(kAddr, &v, 8, 2);
  c->flush();
  while (net.apply_one()) {}
  EXPECT_EQ(word_at(net, 0, kAddr), 0u);
  const auto comps = drain(*c);
  ASSERT_EQ(comps.size(), 2u);
  EXPECT_EQ(comps[0].status, Errc::kFenced);
  EXPECT_EQ(comps[1].status, Errc::kFenced);
  EXPECT_EQ(net.open(3, 1)->health(), Errc::kFenced) << "a new connection of a fenced pid";
  other->post_write(kAddr, &v, 8, 1);
  other->flush();
  while (net.apply_one()) {}
  EXPECT_EQ(word_at(net, 0, kAddr), 1u);
}

// A broken link: the owner sees every outstanding operation fail at once,
// yet a prefix of those sent may still land (the hole of issue 12: a latch
// CAS that lands after its coordinator was told it failed). A READ that
// lands then writes nowhere, and a WRITE carries the bytes it had.
TEST(SimNetwork, ABrokenLinkFailsEverythingYetSentOperationsMayLand) {
  std::set<uint64_t> cas_landed;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    SimNetwork net = two_nodes(seed);
    auto c = net.open(3, 0);
    auto buf = std::make_unique<uint64_t>(7);
    auto read_into = std::make_unique<uint64_t>(0);
    c->post_write(kAddr, buf.get(), 8, 1);
    c->post_cas(kAddr + 8, 0, 42, 2);
    c->post_read(kAddr, read_into.get(), 8, 3);
    c->flush();
    net.disconnect(*c);
    EXPECT_EQ(c->health(), Errc::kDisconnected);
    const auto comps = drain(*c);
    ASSERT_EQ(comps.size(), 3u);
    for (const auto& comp : comps) EXPECT_EQ(comp.status, Errc::kDisconnected);
    buf.reset();        // the owner may free its buffers now
    read_into.reset();  // (ASan would catch a late READ or WRITE touching them)
    while (net.apply_one()) {}
    const uint64_t w = word_at(net, 0, kAddr), latch = word_at(net, 0, kAddr + 8);
    EXPECT_TRUE(w == 0 || w == 7);
    if (latch == 42) EXPECT_EQ(w, 7u) << "the CAS landed without the WRITE before it";
    cas_landed.insert(latch);
    uint64_t late = 0;
    c->post_read(kAddr, &late, 8, 4);
    EXPECT_EQ(drain(*c).at(0).status, Errc::kDisconnected) << "a broken connection never recovers";
  }
  EXPECT_EQ(cas_landed, (std::set<uint64_t>{0, 42}));
}

TEST(SimNetwork, WaitLandsItsOwnOperationsOrCallsTheHook) {
  SimNetwork net = two_nodes(1);
  auto c = net.open(3, 0);
  uint64_t v = 3, seen = 0;
  c->post_write(kAddr, &v, 8, 1);
  c->post_read(kAddr, &seen, 8, 2);
  std::array<Completion, 4> out;
  size_t got = 0;
  while (got < 2) got += c->wait(std::span(out).subspan(got), std::chrono::milliseconds(0));
  EXPECT_EQ(seen, 3u);

  int hooked = 0;
  c->set_wait_hook([&] { ++hooked; });
  c->post_read(kAddr, &seen, 8, 3);
  c->flush();
  EXPECT_EQ(c->wait(out, std::chrono::milliseconds(0)), 0u);
  EXPECT_EQ(hooked, 1);
  ASSERT_TRUE(net.apply_one());
  EXPECT_EQ(c->wait(out, std::chrono::milliseconds(0)), 1u);
  EXPECT_EQ(hooked, 1) << "no hook when something completed";
}

}  // namespace
}  // namespace pandora::sim
