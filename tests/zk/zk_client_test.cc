// ZkClient against a real 3-server ZooKeeper ensemble on loopback.
//
// One shared ensemble per test process, started on first use and stopped at
// exit (an Environment); the fault test starts its own, so killing servers
// never disturbs the others. No test sleeps and hopes: waits are on
// condition variables or polls with a bounded deadline.
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/logger.h"
#include "common/zk/zk_client.h"
#include "testing/zk_ensemble.h"

namespace pandora::zk {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using pandora::testing::ZkEnsemble;

Logger test_logger() { return Logger("zk_test", LogLevel::kError); }

std::string make_temp_dir(const char* tag) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/pandora-" + tag + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
  return tmpl;
}

// An ensemble in its own temp dir, removed after the ensemble stops.
struct OwnedEnsemble {
  explicit OwnedEnsemble(const char* tag) : dir(make_temp_dir(tag)), zk(dir) {}
  ~OwnedEnsemble() {
    Status s = zk.stop();
    if (s) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    } else {
      fprintf(stderr, "zk_tests: stopping the ensemble in %s failed: %s\n", dir.c_str(), s.to_string().c_str());
    }
  }
  std::string logs() const {
    std::string out;
    for (int i = 1; i <= zk.servers(); ++i) out += "--- zk" + std::to_string(i) + ".log ---\n" + zk.server_log(i);
    return out;
  }
  std::string dir;
  ZkEnsemble zk;
};

std::unique_ptr<OwnedEnsemble>& shared_slot() {
  static std::unique_ptr<OwnedEnsemble> slot;
  return slot;
}

// The process-wide ensemble, started on first use (so tests that need none
// do not pay for it). nullptr (and a failure recorded) if it cannot start.
ZkEnsemble* shared_ensemble() {
  auto& slot = shared_slot();
  static bool tried = false;
  if (!tried) {
    tried = true;
    auto e = std::make_unique<OwnedEnsemble>("zk");
    Status s = e->zk.start();
    if (!s) {
      ADD_FAILURE() << "starting the ZooKeeper ensemble failed: " << s.to_string();
      return nullptr;
    }
    fprintf(stderr, "zk_tests: ensemble %s started in %lld ms\n", e->zk.hosts().c_str(),
            static_cast<long long>(e->zk.start_duration().count()));
    slot = std::move(e);
  }
  return slot ? &slot->zk : nullptr;
}

class EnsembleEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { shared_slot().reset(); }
};

ZkOptions options_for(const std::string& hosts) {
  ZkOptions o;
  o.hosts = hosts;
  o.session_timeout = 2000ms;
  o.connect_timeout = 10000ms;
  o.op_timeout = 5000ms;
  return o;
}

std::unique_ptr<ZkClient> connect_or_fail(const std::string& hosts) {
  auto c = ZkClient::connect(options_for(hosts), test_logger());
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  if (!c) return nullptr;
  return std::move(c).value();
}

// A one-shot flag a watch callback sets and a test waits for, bounded.
struct Signal {
  std::mutex mu;
  std::condition_variable cv;
  int count = 0;
  void fire() {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++count;
    }
    cv.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout, int n = 1) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, timeout, [&] { return count >= n; });
  }
  int value() {
    std::lock_guard<std::mutex> lock(mu);
    return count;
  }
};

// A unique root per test so the cases do not see each other's nodes.
std::string test_root() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string("/pandora-test-") + info->name() + "-" + std::to_string(getpid());
}

class ZkClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    zk_ = shared_ensemble();
    ASSERT_NE(zk_, nullptr);
    client_ = connect_or_fail(zk_->hosts());
    ASSERT_NE(client_, nullptr);
    root_ = test_root();
    ASSERT_TRUE(client_->ensure_path(root_)) << root_;
  }

  ZkEnsemble* zk_ = nullptr;
  std::unique_ptr<ZkClient> client_;
  std::string root_;
};

TEST_F(ZkClientTest, CrudRoundTripAndErrorCodes) {
  ZkClient& zk = *client_;
  EXPECT_TRUE(zk.connected());
  EXPECT_NE(zk.session_id(), 0);
  EXPECT_EQ(zk.hosts(), zk_->hosts());
  const std::string path = root_ + "/node";

  // create / get / set / remove round trip.
  auto created = zk.create(path, "v1");
  ASSERT_TRUE(created) << created.status().to_string();
  EXPECT_EQ(*created, path);
  auto node = zk.get(path);
  ASSERT_TRUE(node) << node.status().to_string();
  EXPECT_EQ(node->data, "v1");
  EXPECT_EQ(node->stat.version, 0);
  EXPECT_EQ(node->stat.data_length, 2);
  EXPECT_EQ(node->stat.ephemeral_owner, 0);
  ASSERT_TRUE(zk.set(path, std::string("v2\0x", 4), node->stat.version));
  node = zk.get(path);
  ASSERT_TRUE(node);
  EXPECT_EQ(node->data, std::string("v2\0x", 4));  // binary-safe
  EXPECT_EQ(node->stat.version, 1);
  ASSERT_TRUE(zk.set(path, "", -1));  // any version
  node = zk.get(path);
  ASSERT_TRUE(node);
  EXPECT_EQ(node->data, "");
  EXPECT_EQ(node->stat.version, 2);

  // A stale version is a conflict, on set and remove; nothing changes.
  Status s = zk.set(path, "stale", 1);
  EXPECT_EQ(s.code(), Errc::kConflict) << s.to_string();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("bad version"), std::string::npos) << s.message();
  s = zk.remove(path, 0);
  EXPECT_EQ(s.code(), Errc::kConflict) << s.to_string();
  node = zk.get(path);
  ASSERT_TRUE(node);
  EXPECT_EQ(node->stat.version, 2);

  // Creating an existing node.
  auto again = zk.create(path, "x");
  EXPECT_EQ(again.status().code(), Errc::kAlreadyExists) << again.status().to_string();
  EXPECT_NE(again.status().message().find(path), std::string::npos);

  // Missing nodes.
  const std::string missing = root_ + "/missing";
  EXPECT_EQ(zk.get(missing).status().code(), Errc::kNotFound);
  EXPECT_NE(zk.get(missing).status().message().find(missing), std::string::npos);
  EXPECT_EQ(zk.set(missing, "x").code(), Errc::kNotFound);
  EXPECT_EQ(zk.remove(missing).code(), Errc::kNotFound);
  EXPECT_EQ(zk.children(missing).status().code(), Errc::kNotFound);
  EXPECT_EQ(zk.create(missing + "/child", "").status().code(), Errc::kNotFound);  // no parent
  auto ex = zk.exists(missing);
  ASSERT_TRUE(ex);
  EXPECT_FALSE(*ex);
  ex = zk.exists(path);
  ASSERT_TRUE(ex);
  EXPECT_TRUE(*ex);

  // Bad input.
  EXPECT_EQ(zk.get("no-slash").status().code(), Errc::kInvalidArgument);
  ASSERT_TRUE(zk.create(path + "/kid", "").is_ok());
  EXPECT_EQ(zk.remove(path).code(), Errc::kInvalidArgument);  // not empty
  ASSERT_TRUE(zk.remove(path + "/kid"));

  // Remove with the right version.
  ASSERT_TRUE(zk.remove(path, 2));
  EXPECT_EQ(zk.get(path).status().code(), Errc::kNotFound);

  // Sequential nodes: the created path carries an increasing suffix.
  const std::string seq_parent = root_ + "/seq";
  ASSERT_TRUE(zk.create(seq_parent, "").is_ok());
  std::string prev;
  for (int i = 0; i < 5; ++i) {
    auto p = zk.create(seq_parent + "/n-", std::to_string(i), CreateMode::kPersistentSequential);
    ASSERT_TRUE(p) << p.status().to_string();
    ASSERT_EQ(p->rfind(seq_parent + "/n-", 0), 0u) << *p;
    EXPECT_EQ(p->size(), seq_parent.size() + 3 + 10) << *p;  // 10-digit counter
    if (!prev.empty()) EXPECT_LT(prev, *p);
    prev = *p;
    auto n = zk.get(*p);
    ASSERT_TRUE(n);
    EXPECT_EQ(n->data, std::to_string(i));
  }
  auto kids = zk.children(seq_parent);
  ASSERT_TRUE(kids);
  ASSERT_EQ(kids->size(), 5u);
  EXPECT_TRUE(std::is_sorted(kids->begin(), kids->end()));
  EXPECT_EQ(seq_parent + "/" + kids->back(), prev);  // names, not full paths

  // ensure_path creates every missing ancestor and is idempotent.
  const std::string deep = root_ + "/a/b/c";
  ASSERT_TRUE(zk.ensure_path(deep));
  ASSERT_TRUE(zk.ensure_path(deep));
  ASSERT_TRUE(zk.ensure_path(root_ + "/a"));
  ex = zk.exists(deep);
  ASSERT_TRUE(ex);
  EXPECT_TRUE(*ex);
  kids = zk.children(root_ + "/a");
  ASSERT_TRUE(kids);
  EXPECT_EQ(*kids, std::vector<std::string>{"b"});
  EXPECT_EQ(zk.ensure_path("relative/x").code(), Errc::kInvalidArgument);
  EXPECT_EQ(zk.ensure_path(deep + "/").code(), Errc::kInvalidArgument);
}

// get_many: one result per path in order, a missing node kNotFound, all of
// them counted as one round.
TEST_F(ZkClientTest, GetManyAnswersEveryPathInOrderInOneRound) {
  ZkClient& zk = *client_;
  std::vector<std::string> paths;
  for (const char* name : {"a", "missing", "b", "c"}) paths.push_back(root_ + "/" + name);
  ASSERT_TRUE(zk.create(paths[0], "first"));
  ASSERT_TRUE(zk.create(paths[2], std::string("b\0", 2)));
  ASSERT_TRUE(zk.create(paths[3], ""));
  ASSERT_TRUE(zk.set(paths[3], "third"));

  const uint64_t before = zk.stats().gets_waited;
  std::vector<Result<Node>> got = zk.get_many(paths);
  EXPECT_EQ(zk.stats().gets_waited, before + 1);
  ASSERT_EQ(got.size(), 4u);
  ASSERT_TRUE(got[0]) << got[0].status().to_string();
  EXPECT_EQ(got[0]->data, "first");
  EXPECT_EQ(got[1].status().code(), Errc::kNotFound) << got[1].status().to_string();
  EXPECT_NE(got[1].status().message().find(paths[1]), std::string::npos) << got[1].status().message();
  ASSERT_TRUE(got[2]) << got[2].status().to_string();
  EXPECT_EQ(got[2]->data, std::string("b\0", 2));
  ASSERT_TRUE(got[3]) << got[3].status().to_string();
  EXPECT_EQ(got[3]->data, "third");
  EXPECT_EQ(got[3]->stat.version, 1);

  EXPECT_TRUE(zk.get_many({}).empty());
  EXPECT_EQ(zk.stats().gets_waited, before + 1) << "an empty batch waited for nothing";
  // A malformed path is refused by the client; the others are still read.
  std::vector<std::string> bad{"no-slash", paths[0]};
  got = zk.get_many(bad);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FALSE(got[0]);
  ASSERT_TRUE(got[1]) << got[1].status().to_string();
  EXPECT_EQ(got[1]->data, "first");
}

// `meanwhile` runs after every get was sent: a write it makes to a node
// being read is ordered after the read (ZooKeeper answers one session's
// requests in order), so the read returns the value from before it.
TEST_F(ZkClientTest, GetManyRunsMeanwhileAfterSendingEveryGet) {
  ZkClient& zk = *client_;
  const std::string a = root_ + "/meanwhile-a", b = root_ + "/meanwhile-b";
  ASSERT_TRUE(zk.create(a, "before"));
  ASSERT_TRUE(zk.create(b, "before"));
  int ran = 0;
  Status wrote;
  const std::vector<std::string> paths{a, b};
  std::vector<Result<Node>> got = zk.get_many(paths, [&] {
    ++ran;
    wrote = zk.set(b, "after");
  });
  EXPECT_EQ(ran, 1);
  ASSERT_TRUE(wrote) << wrote.to_string();
  ASSERT_EQ(got.size(), 2u);
  ASSERT_TRUE(got[0] && got[1]);
  EXPECT_EQ(got[0]->data, "before");
  EXPECT_EQ(got[1]->data, "before") << "the get of b was sent after meanwhile's write";
  auto now = zk.get(b);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->data, "after");

  ran = 0;
  EXPECT_TRUE(zk.get_many({}, [&] { ++ran; }).empty());
  EXPECT_EQ(ran, 1) << "meanwhile runs once even when there is nothing to read";
}

TEST_F(ZkClientTest, MultiIsAtomic) {
  ZkClient& zk = *client_;
  const std::string a = root_ + "/a";
  const std::string b = root_ + "/b";
  const std::string c = root_ + "/c";
  const uint64_t writes_before = zk.stats().writes_waited;
  ASSERT_TRUE(zk.create(c, "c0").is_ok());  // version 0

  // A failing check (wrong version of c) leaves nothing created or changed.
  std::vector<Op> failing = {Op::create(a, "A"), Op::create(b, "B"), Op::set(c, "c1"), Op::check(c, 7)};
  Status s = zk.multi(failing);
  EXPECT_EQ(s.code(), Errc::kConflict) << s.to_string();
  EXPECT_NE(s.message().find("op 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(c), std::string::npos) << s.message();
  EXPECT_FALSE(zk.exists(a).value());
  EXPECT_FALSE(zk.exists(b).value());
  auto cn = zk.get(c);
  ASSERT_TRUE(cn);
  EXPECT_EQ(cn->data, "c0");
  EXPECT_EQ(cn->stat.version, 0);

  // A failing create in the middle names that op.
  std::vector<Op> dup = {Op::create(a, "A"), Op::create(c, "again"), Op::create(b, "B")};
  s = zk.multi(dup);
  EXPECT_EQ(s.code(), Errc::kAlreadyExists) << s.to_string();
  EXPECT_NE(s.message().find("op 1"), std::string::npos) << s.message();
  EXPECT_FALSE(zk.exists(a).value());

  // The same ops with the right version all apply.
  std::vector<Op> ok = {Op::create(a, "A"), Op::create(b, "B"), Op::set(c, "c1", 0), Op::check(c, 1),
                        Op::create(root_ + "/s-", "", CreateMode::kPersistentSequential), Op::remove(b)};
  s = zk.multi(ok);
  ASSERT_TRUE(s) << s.to_string();
  EXPECT_EQ(zk.get(a)->data, "A");
  EXPECT_FALSE(zk.exists(b).value());
  EXPECT_EQ(zk.get(c)->data, "c1");
  EXPECT_TRUE(zk.multi({}));
  // Every write call counts once, failed or not; reads and empty multis do not.
  EXPECT_EQ(zk.stats().writes_waited - writes_before, 4u);
}

// A client whose writes are guarded by a node - the failure detector's
// leader by its election node - writes while the node exists, and once
// another session deletes it none of its writes applies, single or multi,
// and each says why (kFenced, naming the guard) rather than looking like a
// failure of the op itself, which callers often treat as benign (a create
// that finds its node, a remove that does not).
TEST_F(ZkClientTest, GuardedWritesApplyOnlyWhileTheGuardExists) {
  ZkClient& leader = *client_;
  std::unique_ptr<ZkClient> successor = connect_or_fail(zk_->hosts());
  ASSERT_NE(successor, nullptr);
  auto guard = leader.create(root_ + "/guard-", "", CreateMode::kEphemeralSequential);
  ASSERT_TRUE(guard) << guard.status().to_string();
  const std::string a = root_ + "/a";
  const std::string b = root_ + "/b";
  EXPECT_FALSE(leader.write_guard());
  leader.guard_writes(*guard);
  EXPECT_EQ(leader.write_guard(), *guard);

  // While it exists: every kind of write applies, with its usual answers.
  auto seq = leader.create(root_ + "/s-", "S", CreateMode::kPersistentSequential);
  ASSERT_TRUE(seq) << seq.status().to_string();
  EXPECT_EQ(seq->rfind(root_ + "/s-", 0), 0u) << *seq;
  EXPECT_EQ(seq->size(), (root_ + "/s-").size() + 10) << "the created path with its sequence suffix: " << *seq;
  EXPECT_EQ(successor->get(*seq)->data, "S");
  ASSERT_TRUE(leader.create(a, "a0"));
  EXPECT_TRUE(leader.set(a, "a1", 0));
  Status s = leader.set(a, "a2", 0);
  EXPECT_EQ(s.code(), Errc::kConflict) << s.to_string();
  EXPECT_EQ(leader.create(a, "again").status().code(), Errc::kAlreadyExists);
  s = leader.multi(std::vector<Op>{Op::create(b, "B"), Op::check(a, 7)});
  EXPECT_EQ(s.code(), Errc::kConflict) << s.to_string();
  EXPECT_NE(s.message().find("op 1"), std::string::npos) << "the caller's op index: " << s.message();
  ASSERT_TRUE(leader.multi(std::vector<Op>{Op::create(b, "B"), Op::set(a, "a2", 1)}));
  ASSERT_TRUE(leader.ensure_path(root_ + "/x/y"));
  EXPECT_TRUE(leader.remove(root_ + "/x/y"));
  EXPECT_EQ(leader.remove(root_ + "/x/y").code(), Errc::kNotFound);

  // Deposed: the successor deletes the guard while the leader's session
  // lives on. Nothing the leader writes applies any more.
  ASSERT_TRUE(successor->remove(*guard));
  const uint64_t writes_before = leader.stats().writes_waited;
  auto fenced = [&](const Status& st, const char* what) {
    EXPECT_EQ(st.code(), Errc::kFenced) << what << ": " << st.to_string();
    EXPECT_NE(st.message().find(*guard), std::string::npos) << what << ": " << st.message();
    EXPECT_NE(st.message().find("nothing applied"), std::string::npos) << what << ": " << st.message();
  };
  fenced(leader.create(root_ + "/c", "C").status(), "create");
  fenced(leader.create(a, "exists").status(), "create of an existing node");
  fenced(leader.set(a, "late"), "set");
  fenced(leader.set(a, "late", 99), "set of a wrong version");
  fenced(leader.remove(b), "remove");
  fenced(leader.remove(root_ + "/missing"), "remove of a missing node");
  fenced(leader.multi(std::vector<Op>{Op::remove(a), Op::create(root_ + "/d", "")}), "multi");
  fenced(leader.ensure_path(root_ + "/x/z"), "ensure_path");
  EXPECT_EQ(leader.stats().writes_waited - writes_before, 8u);
  EXPECT_FALSE(successor->exists(root_ + "/c").value());
  EXPECT_FALSE(successor->exists(root_ + "/d").value());
  EXPECT_FALSE(successor->exists(root_ + "/x/z").value());
  EXPECT_EQ(successor->get(a)->data, "a2");
  EXPECT_TRUE(successor->exists(b).value());
  // Reads are not guarded, and clearing the guard (the deposed leader now
  // follows) makes its writes plain again.
  EXPECT_EQ(leader.get(a)->data, "a2");
  leader.clear_write_guard();
  EXPECT_FALSE(leader.write_guard());
  EXPECT_TRUE(leader.set(a, "a3"));
  EXPECT_EQ(successor->get(a)->data, "a3");
}

TEST_F(ZkClientTest, WatchesFire) {
  ZkClient& watcher = *client_;

  // An ephemeral node vanishes when its owner's handle is destroyed; another
  // client's exists-watch sees it go.
  const std::string eph = root_ + "/owner";
  auto owner = connect_or_fail(zk_->hosts());
  ASSERT_NE(owner, nullptr);
  auto created = owner->create(eph, "alive", CreateMode::kEphemeral);
  ASSERT_TRUE(created) << created.status().to_string();
  auto seq = owner->create(root_ + "/eseq-", "", CreateMode::kEphemeralSequential);
  ASSERT_TRUE(seq) << seq.status().to_string();
  auto en = watcher.get(eph);
  ASSERT_TRUE(en);
  EXPECT_EQ(en->stat.ephemeral_owner, owner->session_id());

  Signal gone;
  auto ex = watcher.watch_exists(eph, [&] { gone.fire(); });
  ASSERT_TRUE(ex) << ex.status().to_string();
  ASSERT_TRUE(*ex);
  EXPECT_EQ(gone.value(), 0);
  owner.reset();  // closes the session
  ASSERT_TRUE(gone.wait(10s)) << "no watch event after the owner's session closed";
  EXPECT_FALSE(watcher.exists(eph).value());
  EXPECT_FALSE(watcher.exists(*seq).value());
  EXPECT_EQ(gone.value(), 1);  // one-shot

  // watch_exists on a missing node fires on its creation.
  Signal born;
  ex = watcher.watch_exists(eph, [&] { born.fire(); });
  ASSERT_TRUE(ex);
  EXPECT_FALSE(*ex);
  ASSERT_TRUE(watcher.create(eph, "").is_ok());
  ASSERT_TRUE(born.wait(10s));

  // watch_children fires on a child create, from another client.
  const std::string parent = root_ + "/parent";
  ASSERT_TRUE(watcher.create(parent, "").is_ok());
  Signal child;
  auto kids = watcher.watch_children(parent, [&] { child.fire(); });
  ASSERT_TRUE(kids) << kids.status().to_string();
  EXPECT_TRUE(kids->empty());
  auto other = connect_or_fail(zk_->hosts());
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->create(parent + "/kid", "").is_ok());
  ASSERT_TRUE(child.wait(10s)) << "no children watch event";
  kids = watcher.children(parent);
  ASSERT_TRUE(kids);
  EXPECT_EQ(*kids, std::vector<std::string>{"kid"});

  // watch_get fires on a data change; a synchronous call from inside the
  // callback is refused at once instead of deadlocking.
  Signal changed;
  std::atomic<int> inner_code{-1};
  auto node = watcher.watch_get(parent, [&] {
    inner_code = static_cast<int>(watcher.get(parent).status().code());
    changed.fire();
  });
  ASSERT_TRUE(node);
  ASSERT_TRUE(other->set(parent, "new"));
  ASSERT_TRUE(changed.wait(10s));
  EXPECT_EQ(inner_code.load(), static_cast<int>(Errc::kInvalidArgument));

  // A watch on a missing node through get fails (no watch is left armed).
  Signal never;
  EXPECT_EQ(watcher.watch_get(root_ + "/nothing", [&] { never.fire(); }).status().code(), Errc::kNotFound);
  ASSERT_TRUE(other->create(root_ + "/nothing", "").is_ok());
  // Destroying the watcher with armed watches runs no callback afterwards.
  Signal after;
  ASSERT_TRUE(watcher.watch_get(root_ + "/nothing", [&] { after.fire(); }).is_ok());
  client_.reset();
  ASSERT_TRUE(other->set(root_ + "/nothing", "x"));
  // Prove the set was seen by the ensemble before judging: a fresh read.
  EXPECT_EQ(other->get(root_ + "/nothing")->data, "x");
  EXPECT_EQ(after.value(), 0);
  EXPECT_EQ(never.value(), 0);
}

// Binds a loopback port without listening: connections to it are refused,
// and no one else can take it while `fd` is open.
int refused_port(int* fd) {
  *fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (*fd < 0 || bind(*fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  socklen_t len = sizeof a;
  if (getsockname(*fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return -1;
  return ntohs(a.sin_port);
}

TEST(ZkConnectTest, NothingListeningIsUnavailableWithinTimeout) {
  int fd = -1;
  int port = refused_port(&fd);
  ASSERT_GT(port, 0);
  ZkOptions o;
  o.hosts = "127.0.0.1:" + std::to_string(port);
  o.connect_timeout = 1500ms;
  auto t0 = Clock::now();
  auto c = ZkClient::connect(o, test_logger());
  auto elapsed = Clock::now() - t0;
  close(fd);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.status().code(), Errc::kUnavailable) << c.status().to_string();
  EXPECT_NE(c.status().message().find(o.hosts), std::string::npos) << c.status().message();
  EXPECT_GE(elapsed, 1400ms);
  EXPECT_LT(elapsed, 1500ms + 2s) << "connect() overran its timeout";

  // Malformed host lists are rejected before any connection attempt.
  for (const char* bad : {"", "localhost", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:2181,",
                          "127.0.0.1:x"}) {
    ZkOptions b;
    b.hosts = bad;
    auto r = ZkClient::connect(b, test_logger());
    EXPECT_EQ(r.status().code(), Errc::kInvalidArgument) << "'" << bad << "': " << r.status().to_string();
  }
}

// Kills servers of its own ensemble: quorum kept with one down, lost with
// two down (kUnavailable within op_timeout), back after one restart.
TEST(ZkFaultTest, QuorumLossAndRecovery) {
  OwnedEnsemble e("zkfault");
  Status started = e.zk.start();
  ASSERT_TRUE(started) << started.to_string();
  fprintf(stderr, "zk_tests: fault ensemble started in %lld ms\n",
          static_cast<long long>(e.zk.start_duration().count()));
  ZkOptions o = options_for(e.zk.hosts());
  o.op_timeout = 2000ms;
  auto first = ZkClient::connect(o, test_logger());
  ASSERT_TRUE(first) << first.status().to_string();
  std::unique_ptr<ZkClient> client = std::move(first).value();
  const std::string path = "/fault";
  ASSERT_TRUE(client->create(path, "0").is_ok());

  // Retries `op` on a (re)connected client until it succeeds or `budget`
  // passes. A session that expired while no quorum existed is replaced, as
  // a real caller would.
  auto eventually = [&](auto op, std::chrono::seconds budget) -> Status {
    auto deadline = Clock::now() + budget;
    Status last(Errc::kUnavailable, "not tried");
    while (Clock::now() < deadline) {
      if (client == nullptr || last.message().find("session expired") != std::string::npos) {
        client.reset();
        auto c = ZkClient::connect(o, test_logger());
        if (!c) {
          last = c.status();
          continue;  // connect() itself waited up to connect_timeout
        }
        client = std::move(c).value();
      }
      last = op(*client);
      if (last) return last;
      EXPECT_EQ(last.code(), Errc::kUnavailable) << last.to_string();
      // Bounded back-off between attempts (each attempt is itself bounded).
      std::this_thread::sleep_for(100ms);
    }
    return last;
  };
  int value = 0;
  auto bump = [&](ZkClient& c) {
    Status s = c.set(path, std::to_string(value + 1));
    if (s) ++value;
    return s;
  };

  // One server down: a quorum of two remains; after the client moves to a
  // live server (and a new leader, if the leader died) operations succeed.
  ASSERT_TRUE(e.zk.kill_server(1));
  Status s = eventually(bump, 30s);
  ASSERT_TRUE(s) << s.to_string() << "\n" << e.logs();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(bump(*client)) << "op " << i << " with two of three servers up";
  EXPECT_EQ(client->get(path)->data, std::to_string(value));

  // Two down: no quorum. A write fails with kUnavailable within op_timeout.
  ASSERT_TRUE(e.zk.kill_server(2));
  auto t0 = Clock::now();
  s = client->set(path, "no-quorum");
  auto elapsed = Clock::now() - t0;
  EXPECT_EQ(s.code(), Errc::kUnavailable) << s.to_string();
  EXPECT_LT(elapsed, o.op_timeout + 1s);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  fprintf(stderr, "zk_tests: without quorum, set failed after %lld ms: %s\n",
          static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()),
          s.to_string().c_str());
  // And it keeps failing (bounded) while no quorum exists.
  t0 = Clock::now();
  s = client->create("/fault-2", "").status();
  EXPECT_EQ(s.code(), Errc::kUnavailable) << s.to_string();
  EXPECT_LT(Clock::now() - t0, o.op_timeout + 1s);

  // One server back: a quorum of two again; a new operation succeeds.
  ASSERT_TRUE(e.zk.restart_server(2));
  t0 = Clock::now();
  s = eventually(bump, 60s);
  ASSERT_TRUE(s) << s.to_string() << "\n" << e.logs();
  fprintf(stderr, "zk_tests: a write succeeded %lld ms after restarting a server\n",
          static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()));
  auto node = client->get(path);
  ASSERT_TRUE(node) << node.status().to_string();
  EXPECT_EQ(node->data, std::to_string(value));

  // Every live server frozen (SIGSTOP): no answer and no connection loss
  // yet (the C client declares the connection dead only after 2/3 of the
  // session timeout); the call gives up after op_timeout on its own.
  ZkOptions quick = o;
  quick.op_timeout = 300ms;
  auto frozen_client = ZkClient::connect(quick, test_logger());
  ASSERT_TRUE(frozen_client) << frozen_client.status().to_string();
  std::vector<int> frozen;
  for (int i = 1; i <= e.zk.servers(); ++i) {
    int pid = e.zk.server_pid(i);
    if (pid > 0 && kill(pid, SIGSTOP) == 0) frozen.push_back(pid);
  }
  ASSERT_EQ(frozen.size(), 2u);
  t0 = Clock::now();
  auto frozen_get = frozen_client.value()->get(path);
  elapsed = Clock::now() - t0;
  for (int pid : frozen) kill(pid, SIGCONT);
  EXPECT_EQ(frozen_get.status().code(), Errc::kUnavailable) << frozen_get.status().to_string();
  EXPECT_NE(frozen_get.status().message().find("operation timeout"), std::string::npos)
      << frozen_get.status().message();
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 300ms + 1s);
  frozen_client.value().reset();
  // Thawed: operations succeed again.
  s = eventually(bump, 30s);
  ASSERT_TRUE(s) << s.to_string();
  client.reset();
}

}  // namespace
}  // namespace pandora::zk

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new pandora::zk::EnsembleEnvironment);
  return RUN_ALL_TESTS();
}
