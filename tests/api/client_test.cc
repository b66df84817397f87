// The public client API (include/pandora/client.h) against real daemons:
// option checks, table creation and loading, the session pool (ids handed
// out and given back), transactions across sessions, threads and clients.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <thread>

#include "pandora/pandora.h"
#include "testing/local_memd.h"
#include "tests/support/memd_process.h"

namespace pandora {
namespace {

constexpr uint32_t kCounters = 7;

int64_t get(std::span<const uint8_t> v) {
  int64_t x;
  std::memcpy(&x, v.data(), sizeof x);
  return x;
}
void put(std::span<uint8_t> v, int64_t x) { std::memcpy(v.data(), &x, sizeof x); }

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(memds_.start()) << "starting the daemons failed";
    secret_path_ = dir_.path() + "/secret";
    {
      std::ofstream f(secret_path_);
      f << memds_.secret();
    }
    ASSERT_EQ(::chmod(secret_path_.c_str(), 0600), 0);
  }

  ClientOptions options(uint16_t pid) const {
    ClientOptions o;
    for (const Endpoint& e : memds_.endpoints()) o.memory_nodes += (o.memory_nodes.empty() ? "" : ",") + e.to_string();
    o.compute_id = pid;
    o.cluster_id = memds_.cluster_id();
    o.secret_file = secret_path_;
    o.max_sessions = 2;
    return o;
  }

  // Connects, creates the counters table and loads `rows` zeros.
  std::unique_ptr<Client> loaded(uint16_t pid, uint64_t rows) {
    auto c = Client::connect(options(pid));
    EXPECT_TRUE(c) << c.status().to_string();
    if (!c) return nullptr;
    const TableSpec spec{kCounters, "counters", 16, rows};
    EXPECT_TRUE((*c)->create_tables({&spec, 1}));
    auto l = (*c)->loader();
    EXPECT_TRUE(l) << l.status().to_string();
    std::vector<uint8_t> zero(16, 0);
    for (uint64_t k = 0; k < rows; ++k) EXPECT_TRUE((*l)->add(kCounters, k, zero));
    EXPECT_TRUE((*l)->finish());
    EXPECT_EQ((*l)->rows_loaded(), rows);
    return std::move(*c);
  }

  static AbortReason increment(Txn& t, uint64_t key) {
    auto v = t.update(kCounters, key);
    if (!v) return v.reason();
    put(*v, get(*v) + 1);
    return AbortReason::kNone;
  }

  static int64_t read_counter(Session& s, uint64_t key) {
    int64_t x = -1;
    auto o = s.transact_retry([&](Txn& t) {
      auto v = t.read(kCounters, key);
      if (!v) return v.reason();
      x = get(*v);
      return AbortReason::kNone;
    });
    EXPECT_TRUE(o.committed) << abort_reason_name(o.reason);
    return x;
  }

  // The test links only libpandora (the API) and the daemon launcher.
  testing::TempDir dir_;
  LocalMemdCluster memds_{2, testing::local_memd_options(testing::MemdOptions{.size = "32M", .log_size = "4M"}),
                          dir_.path()};
  std::string secret_path_;
};

TEST_F(ClientTest, OptionsAreCheckedAndNamed) {
  auto expect_refused = [&](ClientOptions o, std::string_view names) {
    auto c = Client::connect(o);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.status().code(), Errc::kInvalidArgument) << c.status().to_string();
    EXPECT_NE(c.status().message().find(names), std::string::npos) << c.status().to_string();
  };
  ClientOptions o = options(1);
  o.memory_nodes.clear();
  expect_refused(o, "memory_nodes");
  o = options(1);
  o.compute_id = 0;
  expect_refused(o, "compute_id");
  o = options(1);
  o.zookeeper = "127.0.0.1:1";
  expect_refused(o, "compute_id");  // assigned by the registry, not by the caller
  o = options(1);
  o.max_sessions = 0;
  expect_refused(o, "max_sessions");
  o = options(1);
  o.log_level = "loud";
  expect_refused(o, "log_level");
  o = options(1);
  o.transport = "carrier-pigeon";
  expect_refused(o, "carrier-pigeon");
  o = options(1);
  o.protocol = "2pc";
  expect_refused(o, "2pc");
  o = options(1);
  o.secret_file = dir_.path() + "/missing";
  auto c = Client::connect(o);
  ASSERT_FALSE(c);
  EXPECT_NE(c.status().message().find("missing"), std::string::npos) << c.status().to_string();
}

TEST_F(ClientTest, SessionsNeedTablesThenRunTransactions) {
  auto c = Client::connect(options(1));
  ASSERT_TRUE(c) << c.status().to_string();
  auto none = (*c)->session();
  ASSERT_FALSE(none);
  EXPECT_EQ(none.status().code(), Errc::kInvalidArgument);
  EXPECT_TRUE((*c)->tables().empty());
  auto early = (*c)->loader();
  EXPECT_FALSE(early);
  // One pid, one live process: a second client under pid 1 is refused.
  auto twin = Client::connect(options(1));
  ASSERT_FALSE(twin);
  EXPECT_NE(twin.status().message().find("compute id 1 is in use"), std::string::npos) << twin.status().to_string();
  c = Status(Errc::kUnavailable, "closed");

  auto client = loaded(1, 100);
  ASSERT_TRUE(client);
  auto tables = client->tables();
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].id, kCounters);
  EXPECT_EQ(tables[0].name, "counters");
  EXPECT_EQ(tables[0].value_size, 16u);
  EXPECT_EQ(client->pid(), 1);
  EXPECT_FALSE(client->fenced());

  auto s = client->session();
  ASSERT_TRUE(s) << s.status().to_string();
  for (int i = 0; i < 5; ++i) {
    auto o = (*s)->transact([&](Txn& t) { return increment(t, 3); });
    ASSERT_TRUE(o.committed) << abort_reason_name(o.reason);
  }
  EXPECT_EQ(read_counter(**s, 3), 5);
  // An aborted body leaves nothing behind.
  auto o = (*s)->transact([&](Txn& t) {
    if (AbortReason r = increment(t, 3); r != AbortReason::kNone) return r;
    return AbortReason::kUser;
  });
  EXPECT_FALSE(o.committed);
  EXPECT_EQ(o.reason, AbortReason::kUser);
  EXPECT_EQ(read_counter(**s, 3), 5);
  // Missing keys and unknown tables abort with their reason.
  o = (*s)->transact([&](Txn& t) { return increment(t, 1000); });
  EXPECT_EQ(o.reason, AbortReason::kNotFound);
  o = (*s)->transact([&](Txn& t) {
    auto v = t.read(kCounters + 1, 0);
    return v ? AbortReason::kNone : v.reason();
  });
  EXPECT_EQ(o.reason, AbortReason::kInvalid);
}

// Rows of 700 bytes, one per bucket: keys from dense_key fill the table
// to the capacity it was declared with, and transactions find them.
TEST_F(ClientTest, DenseKeysFillATableOfBigRowsToItsCapacity) {
  constexpr uint32_t kBig = 9;
  constexpr uint64_t kRows = 4000;
  auto c = Client::connect(options(1));
  ASSERT_TRUE(c) << c.status().to_string();
  const TableSpec spec{kBig, "big", 700, kRows};
  ASSERT_TRUE((*c)->create_tables({&spec, 1}));
  auto l = (*c)->loader();
  ASSERT_TRUE(l) << l.status().to_string();
  std::vector<uint8_t> v(700);
  for (uint64_t i = 0; i < kRows; ++i) {
    put(v, static_cast<int64_t>(i));
    Status s = (*l)->add(kBig, dense_key(kBig, i), v);
    ASSERT_TRUE(s) << "row " << i << ": " << s.to_string();
  }
  Status done = (*l)->finish();
  ASSERT_TRUE(done) << done.to_string();
  EXPECT_EQ((*l)->rows_loaded(), kRows);
  auto s = (*c)->session();
  ASSERT_TRUE(s) << s.status().to_string();
  for (uint64_t i : {uint64_t{0}, uint64_t{1234}, kRows - 1}) {
    int64_t seen = -1;
    auto o = (*s)->transact_retry([&](Txn& t) {
      auto r = t.read(kBig, dense_key(kBig, i));
      if (!r) return r.reason();
      seen = get(*r);
      return AbortReason::kNone;
    });
    ASSERT_TRUE(o.committed) << abort_reason_name(o.reason);
    EXPECT_EQ(seen, static_cast<int64_t>(i));
  }
}

TEST_F(ClientTest, TheSessionPoolIsBoundedAndGivesIdsBack) {
  auto client = loaded(1, 10);
  ASSERT_TRUE(client);
  auto a = client->session();
  auto b = client->session();
  ASSERT_TRUE(a && b);
  auto c = client->session();
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().code(), Errc::kUnavailable);
  EXPECT_NE(c.status().message().find("max_sessions"), std::string::npos);
  a = Status(Errc::kUnavailable, "dropped");  // the first session goes
  auto d = client->session();
  ASSERT_TRUE(d) << d.status().to_string();
  // Both live sessions work side by side (distinct coordinators: a shared
  // one would collide on its log lane and latch owner).
  ASSERT_TRUE((*b)->transact([&](Txn& t) { return increment(t, 1); }).committed);
  ASSERT_TRUE((*d)->transact([&](Txn& t) { return increment(t, 1); }).committed);
  EXPECT_EQ(read_counter(**d, 1), 2);
}

TEST_F(ClientTest, ConcurrentSessionsLoseNoIncrement) {
  auto client = loaded(1, 4);
  ASSERT_TRUE(client);
  constexpr int kPerThread = 200;
  std::atomic<int> committed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      auto s = client->session();
      ASSERT_TRUE(s) << s.status().to_string();
      for (int i = 0; i < kPerThread; ++i) {
        if ((*s)->transact_retry([&](Txn& txn) { return increment(txn, static_cast<uint64_t>(i % 2)); }).committed) {
          ++committed;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(committed.load(), 2 * kPerThread);
  auto s = client->session();
  ASSERT_TRUE(s);
  EXPECT_EQ(read_counter(**s, 0) + read_counter(**s, 1), committed.load());
}

TEST_F(ClientTest, ASessionOutlivesItsClientAndTwoClientsShareTheData) {
  auto first = loaded(1, 10);
  ASSERT_TRUE(first);
  auto s = first->session();
  ASSERT_TRUE(s);
  first.reset();  // the session keeps the connection state alive
  ASSERT_TRUE((*s)->transact([&](Txn& t) { return increment(t, 4); }).committed);

  // A second process-like client (another pid) finds the tables and the value.
  auto second = Client::connect(options(2));
  ASSERT_TRUE(second) << second.status().to_string();
  ASSERT_EQ((*second)->tables().size(), 1u);
  auto s2 = (*second)->session();
  ASSERT_TRUE(s2) << s2.status().to_string();
  EXPECT_EQ(read_counter(**s2, 4), 1);
  ASSERT_TRUE((*s2)->transact([&](Txn& t) { return increment(t, 4); }).committed);
  EXPECT_EQ(read_counter(**s, 4), 2);
}

}  // namespace
}  // namespace pandora
