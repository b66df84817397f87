// Failover of a whole cluster of real processes (tests/support/local_cluster.h): a
// real ZooKeeper ensemble, two pandora-memd daemons, `pandora-ctl init`,
// three pandora-fd replicas and pandora-bench compute processes running
// SmallBank's net-0 mix (--mix transfers), so that the total money must
// equal the loaded total at every quiet point, whatever crashed.
//
//   CrashLoop                 compute processes killed (SIGKILL) at random moments and replaced, >= 8 times
//   LeaderDiesAtEachRecoveryStep  the FD leader dies at each named recovery crash point; a new one finishes
//   AStoppedLeaderIsDeposed...    the FD leader stands still mid-recovery, its session alive; its successor
//                             deposes it and finishes; continued, the old leader finds out and follows
//   ZooKeeperFaults           one ZooKeeper server lost during a recovery; then the quorum lost and regained
//   FalsePositiveIsFenced     a SIGSTOPped compute process is declared failed, fenced, and exits with code 6
//   FordStopsTheWorld...      ford: every live process parks and acknowledges each recovery's pause
//   ReplicasStayIdle...       replicas do not spin while a failure waits for a leader that cannot recover it
//   RecoveryDoesNotWait...    recovery publishes while every member refresh of every replica stands still
//   MemoryNodeFailsOver       a memory daemon is killed; the survivors' transactions are decided by the live
//                             replicas and they run on; a node started afterwards never contacts the dead one
//
// Every wait polls a condition (the ZooKeeper registry, a process's exit, a
// process's progress lines) against a deadline; the only fixed pauses are the
// random delays before a kill and the observation window of the no-quorum
// phase, where the claim is that nothing happens.
//
// The end-of-test check reads memory below the transaction API (an
// inspector that joins as a kFd member without heartbeats, reads every slot
// of both SmallBank tables on every node, and retires itself): the total
// over primary copies equals the loaded total, every key has identical
// copies on its replicas, and every latch still held belongs to a pid this
// test killed (a stray latch: failed-ids makes it stealable), never to a
// live process or one that left cleanly.
#include <iterator>
#include <sstream>
#include <fstream>
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "common/latch.h"
#include "common/logger.h"
#include "common/transport/client.h"
#include "compute/cluster.h"
#include "compute/op_batch.h"
#include "compute/table_geometry.h"
#include "recovery/membership.h"
#include "recovery/recovery_coordinator.h"
#include "recovery/registry.h"
#include "pandora/client.h"
#include "tests/recovery/cluster_binaries.h"
#include "tests/support/memd_process.h"

namespace pandora::testing {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// SmallBank's tables (workloads/smallbank/smallbank.h).
constexpr uint32_t kSavings = 10;
constexpr uint32_t kChecking = 11;
constexpr uint64_t kAccounts = 1000;

// The FD replicas' ZooKeeper session: a replica whose session expires
// starts over with a new one (and gives up any leadership), so not too
// short on a loaded machine; but a dead leader is replaced only once its
// session expires.
constexpr const char* kFdSessionMs = "6000";
// Failure-detector timeout: well above the heartbeat delays of busy ASan
// processes on two shared cores (500 ms still gave false positives at a
// load average of 20).
constexpr uint64_t kFdTimeoutUs = 1000000;
// How often a replica evaluates and shares suspicion: the default (250 us)
// costs three ASan replicas most of a core, which this machine cannot spare.
constexpr const char* kFdTickUs = "10000";

Logger quiet_logger() { return Logger("failover-test", LogLevel::kError); }

std::string seconds_since(Clock::time_point t0) {
  return fmt::format("{:.1f} s", std::chrono::duration<double>(Clock::now() - t0).count());
}

uint64_t realtime_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// Polls `pred` until it holds or `timeout` passed.
template <class Pred>
bool wait_until(Clock::duration timeout, Pred&& pred, Clock::duration poll = 20ms) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

// Whether process `pid` stands stopped (SIGSTOP): state T in /proc.
bool process_stopped(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');  // the name may hold spaces and parentheses
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T';
}

// "joined the cluster as pid N (...)" of pandora-bench --zookeeper.
std::optional<uint16_t> joined_pid(const std::string& out) {
  static const std::regex re(R"(joined the cluster as pid (\d+))");
  std::smatch m;
  if (!std::regex_search(out, m, re)) return std::nullopt;
  return static_cast<uint16_t>(std::stoul(m[1].str()));
}

// Commits of a pandora-bench run so far: its last once-a-second progress
// line "(N commits so far)", or, once it has finished, its summary
// "throughput: ... (N commits of M attempts ...)" (no warm-up: all commits).
uint64_t commits_so_far(const std::string& out) {
  static const std::regex progress(R"(\((\d+) commits so far\))");
  static const std::regex summary(R"(throughput: .*\((\d+) commits of )");
  uint64_t best = 0;
  for (const std::regex* re : {&progress, &summary}) {
    for (auto it = std::sregex_iterator(out.begin(), out.end(), *re); it != std::sregex_iterator(); ++it) {
      best = std::max<uint64_t>(best, std::stoull((*it)[1].str()));
    }
  }
  return best;
}

// One compute process (pandora-bench --zookeeper).
struct Compute {
  Child* proc = nullptr;
  uint16_t pid = 0;  // its pid in the cluster (not the os pid)
  Clock::time_point started;
  std::string name;
  uint64_t seconds = 0;
  uint64_t commits() const { return commits_so_far(proc->output()); }
};

// What the inspector read of both SmallBank tables on every node.
struct MemoryImage {
  int64_t total = 0;                      // over primary copies
  uint64_t rows = 0;                      // primary copies
  std::vector<std::string> problems;      // replicas disagreeing, missing copies, ...
  std::map<uint16_t, uint64_t> latches;   // latch owner pid -> latches held
  std::vector<std::vector<uint8_t>> raw;  // [node * 2 + table index]: every slot's bytes
};

class FailoverTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure() && cluster_) {
      // The processes' last lines: why an FD replica or a bench did what it did.
      for (const auto& c : cluster_->children()) {
        if (c->name().rfind("ctl", 0) == 0) continue;
        fprintf(stderr, "%s\n", c->tail(15).c_str());
        const std::string out = c->output();
        const size_t asan = out.find("ERROR: AddressSanitizer");
        if (asan != std::string::npos) {
          fprintf(stderr, "--- %s: %s\n", c->name().c_str(), out.substr(asan, 6000).c_str());
        }
      }
      for (int i = 1; i <= cluster_->zookeeper().servers(); ++i) {
        // Warnings and errors only: elections, lost connections, expiries.
        const std::string log = cluster_->zookeeper().server_log(i);
        // An exception's first line follows its WARN/ERROR line (it says
        // why: a read timed out, a connection was reset, ...).
        std::string lines;
        size_t start = 0, shown = 0;
        bool after_shown = false;
        while (start < log.size() && shown < 400) {
          size_t nl = log.find('\n', start);
          if (nl == std::string::npos) nl = log.size();
          const std::string line = log.substr(start, nl - start);
          const bool dated = line.size() > 4 && std::isdigit(static_cast<unsigned char>(line[0])) &&
                             std::isdigit(static_cast<unsigned char>(line[3]));
          if ((line.find(" - WARN ") != std::string::npos || line.find(" - ERROR ") != std::string::npos ||
               line.find("LEADING") != std::string::npos || line.find("FOLLOWING") != std::string::npos ||
               line.find("LOOKING") != std::string::npos || line.find("xpir") != std::string::npos) &&
              line.find("Close of session") == std::string::npos && line.find("Notification:") == std::string::npos) {
            lines += line.substr(0, 220) + "\n";
            ++shown;
            after_shown = true;
          } else if (after_shown && !dated && line.rfind("\tat ", 0) != 0) {
            lines += "    " + line.substr(0, 216) + "\n";
            ++shown;
            after_shown = false;
          } else if (dated) {
            after_shown = false;
          }
          start = nl + 1;
        }
        fprintf(stderr, "--- ZooKeeper server %d (warnings, states):\n%s\n", i, lines.c_str());
      }
    }
    if (HasFailure() && cluster_) keep_logs();
    inspector_reg_.reset();
    reg_.reset();
    cluster_.reset();
  }

  // After a failure the tails above may not say why: the processes' and
  // ZooKeeper servers' whole logs are copied out of the cluster directory
  // (removed with the cluster) into a kept one, named on stderr. Logs only:
  // regions and ZooKeeper's data stay behind. A passing test keeps nothing.
  void keep_logs() {
    // On disk, not where the cluster lives (/dev/shm).
    std::string kept = disk_temp_base() + "/pandora-failover-logs-XXXXXX";
    if (::mkdtemp(kept.data()) == nullptr) {
      fprintf(stderr, "could not keep the logs: mkdtemp: %s\n", std::strerror(errno));
      return;
    }
    namespace fs = std::filesystem;
    std::error_code ec;
    size_t copied = 0;
    for (auto it = fs::recursive_directory_iterator(cluster_->dir(), ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (!it->is_regular_file(ec) || it->path().extension() != ".log") continue;
      // zk/zk1.log -> zk_zk1.log: one flat directory.
      std::string name = fs::relative(it->path(), cluster_->dir(), ec).string();
      std::replace(name.begin(), name.end(), '/', '_');
      if (fs::copy_file(it->path(), fs::path(kept) / name, ec)) ++copied;
    }
    fprintf(stderr, "--- %zu log files of this cluster kept in %s\n", copied, kept.c_str());
  }

  // ZooKeeper, two memds, init: no tables yet.
  void start_processes() {
    t0_ = Clock::now();
    LocalClusterOptions o = built_cluster_options();
    o.memory_nodes = 2;
    o.protocol = protocol_;
    o.memd_heartbeats = memd_heartbeats_;
    cluster_ = std::make_unique<LocalCluster>(o);
    Status s = cluster_->start();
    ASSERT_TRUE(s) << s.to_string();
  }

  // start_processes(), the SmallBank load, the total it adds up to.
  void start_cluster() {
    ASSERT_NO_FATAL_FAILURE(start_processes());
    std::string out;
    const int rc = cluster_->run_bench(
        "load", {"--workload", "smallbank", "--accounts", std::to_string(kAccounts), "--load", "--seconds", "0"},
        &out);
    ASSERT_EQ(rc, 0) << "loading SmallBank:\n" << out;
    MemoryImage loaded;
    ASSERT_NO_FATAL_FAILURE(inspect(&loaded));
    ASSERT_EQ(loaded.rows, 2 * kAccounts);
    ASSERT_TRUE(loaded.latches.empty());
    loaded_total_ = loaded.total;
    fprintf(stderr, "[%s] cluster up, %lu accounts loaded, total %ld cents\n", seconds_since(t0_).c_str(),
            static_cast<unsigned long>(kAccounts), static_cast<long>(loaded_total_));
  }

  Registry& reg() {
    if (!reg_) {
      auto r = Registry::open(cluster_->zk_options(), cluster_->options().zk_root, cluster_->cluster_id(),
                              quiet_logger());
      if (!r) throw std::runtime_error("opening the registry: " + r.status().to_string());
      reg_ = std::move(*r);
    }
    return *reg_;
  }
  // Polling helpers tolerate ZooKeeper errors (the ZooKeeper test makes
  // them on purpose): the handle is reopened at the next call.
  template <class T>
  std::optional<T> get(Result<T> r) {
    if (!r) {
      reg_.reset();
      return std::nullopt;
    }
    return std::move(*r);
  }
  // A registry read retried for up to 30 s (ZooKeeper is slow or briefly
  // unavailable on a loaded machine): nullopt if it never succeeded.
  template <class T>
  static T value_type_of(const Result<T>&);
  template <class F>
  auto zk_read(F&& f) -> std::optional<decltype(value_type_of(f(std::declval<Registry&>())))> {
    std::optional<decltype(value_type_of(f(std::declval<Registry&>())))> out;
    wait_until(30s, [&] {
      try {
        out = get(f(reg()));
      } catch (const std::exception&) {
      }
      return out.has_value();
    }, 100ms);
    return out;
  }
  std::optional<std::vector<uint16_t>> failed() {
    try {
      return get(reg().failed());
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  std::optional<std::optional<RecoveryRecord>> recovery(uint16_t pid) {
    try {
      return get(reg().recovery(pid));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  // The flags every FD replica of these tests gets, then `extra`.
  static std::vector<std::string> fd_args(uint64_t timeout_us, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"--timeout-us", std::to_string(timeout_us), "--tick-us", kFdTickUs,
                                  "--zk-session-ms", kFdSessionMs};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  // Starts FD replicas `first`..3 (with `extra` flags) and waits until all
  // three are announced.
  void start_fds(uint64_t timeout_us, const std::vector<std::string>& extra = {}, uint32_t first = 1) {
    for (uint32_t id = first; id <= 3; ++id) {
      auto c = cluster_->start_fd(id, fd_args(timeout_us, extra));
      ASSERT_TRUE(c) << c.status().to_string();
      fds_[id] = *c;
    }
    ASSERT_NO_FATAL_FAILURE(wait_replicas(3));
  }
  void wait_replicas(size_t n) {
    ASSERT_TRUE(wait_until(60s, [&] {
      try {
        auto r = get(reg().replicas());
        return r && r->size() == n;
      } catch (const std::exception&) {
        return false;
      }
    })) << "the FD replicas did not all announce themselves";
  }

  // pandora-bench on SmallBank's transfers mix, 1 thread x 8 coordinators,
  // for `seconds`; returns once it has joined and committed something.
  // Memory nodes heartbeat with the compute timeout (a starved daemon of a
  // sanitizer build must not be failed over early). Replica 1 starts alone,
  // so that it leads, with --crash-at `point`; then replicas 2 and 3.
  void start_fds_armed_to_die_at(const std::string& point, Child** armed, std::optional<uint16_t>* armed_pid) {
    const std::vector<std::string> memory_timeout{"--memory-timeout-us", std::to_string(kFdTimeoutUs)};
    std::vector<std::string> armed_extra = memory_timeout;
    armed_extra.insert(armed_extra.end(), {"--crash-at", point});
    auto started = cluster_->start_fd(1, fd_args(kFdTimeoutUs, armed_extra));
    ASSERT_TRUE(started) << started.status().to_string();
    *armed = fds_[1] = *started;
    ASSERT_TRUE(wait_until(60s, [&] {
      *armed_pid = fd_member_of((*armed)->pid());
      return armed_pid->has_value() || !(*armed)->running();
    })) << "replica 1 did not become leader\n" << (*armed)->tail();
    ASSERT_TRUE(*armed_pid) << (*armed)->tail();
    ASSERT_NO_FATAL_FAILURE(start_fds(kFdTimeoutUs, memory_timeout, 2));
  }

  void start_compute(const std::string& name, uint64_t seconds, Compute* out) {
    ASSERT_NO_FATAL_FAILURE(spawn_compute(name, seconds, out));
    ASSERT_NO_FATAL_FAILURE(await_compute(out));
  }
  void spawn_compute(const std::string& name, uint64_t seconds, Compute* out) {
    auto c = cluster_->start_bench(
        name, {"--workload", "smallbank", "--accounts", std::to_string(kAccounts), "--hot-fraction", "0.05",
               "--mix", "transfers", "--threads", "1", "--coordinators", "8", "--seconds", std::to_string(seconds),
               "--warmup-seconds", "0", "--no-check", "--seed", std::to_string(++seed_),
               // Against a 1 s timeout, 20 ms heartbeats lose nothing and
               // cost the ASan replicas a twentieth of the default's CPU.
               "--fd-heartbeat-us", "20000"});
    ASSERT_TRUE(c) << c.status().to_string();
    out->proc = *c;
    out->pid = 0;
    out->started = Clock::now();
    out->name = name;
    out->seconds = seconds;
  }
  // A start that fails to join through ZooKeeper (an operation timeout of
  // a starved ensemble on a loaded machine: pandora-bench does not retry
  // its registration) is retried twice; anything else fails the test.
  void await_compute(Compute* out) {
    for (int attempt = 1;; ++attempt) {
      ASSERT_TRUE(wait_until(60s, [&] {
        if (!out->proc->running()) return true;
        const std::string text = out->proc->output();
        if (auto p = joined_pid(text)) out->pid = *p;
        return out->pid != 0 && commits_so_far(text) > 0;
      })) << out->proc->name() << " did not start committing\n" << out->proc->tail();
      if (out->proc->running()) break;
      const bool join_failed = out->proc->output().find("joining the cluster through ZooKeeper") != std::string::npos;
      ASSERT_TRUE(join_failed && attempt < 3) << out->proc->name() << " exited with "
                                              << out->proc->exit_code().value_or(-1) << "\n"
                                              << out->proc->tail();
      fprintf(stderr, "%s could not join through ZooKeeper, starting it again\n", out->name.c_str());
      ASSERT_NO_FATAL_FAILURE(spawn_compute(out->name + "-again", out->seconds, out));
    }
    all_compute_pids_.insert(out->pid);
  }

  // Recovered: the record is done, the pid is in failed-ids and its lane
  // lease is gone.
  bool recovered(uint16_t pid, std::string* state) {
    auto rec = recovery(pid);
    if (!rec) {
      *state = "ZooKeeper unavailable";
      return false;
    }
    if (!*rec) {
      *state = "no recovery record";
      return false;
    }
    *state = fmt::format("record at step {}", recovery_step_name((*rec)->step));
    if ((*rec)->step != RecoveryStep::kDone) return false;
    auto f = failed();
    if (!f || !std::binary_search(f->begin(), f->end(), pid)) {
      *state += ", not in failed-ids";
      return false;
    }
    std::optional<AllocRecord> a;
    try {
      a = get(reg().alloc());
    } catch (const std::exception&) {
    }
    if (!a) return false;
    for (const Lease& l : a->leases) {
      if (l.pid == pid) {
        *state += fmt::format(", lease {} still held", l.slot.to_string());
        return false;
      }
    }
    return true;
  }
  void wait_recovered(uint16_t pid, Clock::duration timeout, const std::string& what) {
    std::string state;
    const auto t = Clock::now();
    ASSERT_TRUE(wait_until(timeout, [&] { return recovered(pid, &state); }))
        << what << ": pid " << pid << " not recovered after " << seconds_since(t) << " (" << state << ")";
  }

  // Every process of `computes` commits more after this call than at it
  // (one that ends on its own meanwhile must exit 0, having committed more).
  void expect_commits_grow(const std::vector<Compute*>& computes, const std::string& what,
                           Clock::duration timeout = 30s) {
    std::vector<uint64_t> base;
    for (Compute* c : computes) base.push_back(c->commits());
    for (size_t i = 0; i < computes.size(); ++i) {
      Compute* c = computes[i];
      ASSERT_TRUE(wait_until(timeout, [&] { return c->commits() > base[i] || !c->proc->running(); }, 50ms))
          << what << ": pid " << c->pid << " stuck at " << base[i] << " commits\n"
          << c->proc->tail();
      EXPECT_GT(c->commits(), base[i]) << what << ": pid " << c->pid << "\n" << c->proc->tail();
      if (!c->proc->running()) {
        ASSERT_EQ(c->proc->exit_code().value_or(-1), 0) << what << ": pid " << c->pid << "\n" << c->proc->tail();
      }
    }
  }

  // SIGKILL, reap, remember the pid as crashed.
  void kill_compute(Compute& c) {
    ASSERT_TRUE(c.proc->running()) << "pid " << c.pid << " ended before the kill\n" << c.proc->tail();
    const int rc = c.proc->kill9();
    ASSERT_EQ(rc, 128 + SIGKILL);
    killed_.insert(c.pid);
  }

  // Reads both tables on every node (see the file comment). The inspector
  // is a kFd member without heartbeats; it retires itself when done.
  void inspect(MemoryImage* img) {
    MembershipOptions mo;
    mo.zk = cluster_->zk_options();
    mo.root = cluster_->options().zk_root;
    mo.cluster_id = cluster_->cluster_id();
    mo.secret = cluster_->secret();
    mo.role = MemberRole::kFd;
    mo.lanes = 2;
    mo.heartbeats = false;
    auto me = Membership::join(mo, quiet_logger());
    ASSERT_TRUE(me) << me.status().to_string();
    const uint16_t my_pid = (*me)->pid();
    inspectors_.insert(my_pid);
    {
      ComputeConfig c;
      c.cluster_id = cluster_->cluster_id();
      c.secret = cluster_->secret();
      c.compute_id = my_pid;
      c.lane_slot = (*me)->slot();
      auto record = (*me)->registry().read_cluster();
      ASSERT_TRUE(record) << record.status().to_string();
      // Where the record says (a replaced node's daemon is not the one
      // the test started; an old one may still answer with stale data).
      c.memory_nodes = record->memory_nodes;
      c.failed_memory_nodes = record->failed_memory;
      c.replicas = 2;
      c.threads = 1;
      c.coordinators = 1;
      if ((*me)->registry().cluster().lane_bytes) c.lane_bytes = (*me)->registry().cluster().lane_bytes;
      auto cl = Cluster::connect(c, quiet_logger());
      ASSERT_TRUE(cl) << cl.status().to_string();
      Status s = (*cl)->load_directory();
      ASSERT_TRUE(s) << s.to_string();
      ASSERT_NO_FATAL_FAILURE(read_tables(**cl, img));
    }
    me->reset();
    // The registry handle may have outlived its ZooKeeper session on a
    // stalled machine: reopen it, and retry while ZooKeeper is unavailable.
    Status s;
    wait_until(30s, [&] {
      if (!inspector_reg_ || inspector_reg_->zk().expired()) {
        auto r = Registry::open(cluster_->zk_options(), cluster_->options().zk_root, cluster_->cluster_id(),
                                quiet_logger());
        if (!r) {
          s = r.status();
          return false;
        }
        inspector_reg_ = std::move(*r);
      }
      s = retire_member(*inspector_reg_, cluster_->secret(), my_pid, 0, 5000ms);
      return s.is_ok() || s.code() != Errc::kUnavailable;
    });
    ASSERT_TRUE(s) << "retiring the inspector's pid " << my_pid << ": " << s.to_string();
  }

  static void read_tables(Cluster& cluster, MemoryImage* img) {
    struct Copy {
      uint64_t version;
      std::vector<uint8_t> value;
      size_t node;
    };
    const size_t nodes = cluster.node_count();
    img->raw.assign(nodes * 2, {});
    for (size_t ti = 0; ti < 2; ++ti) {
      const uint32_t table = ti == 0 ? kSavings : kChecking;
      const TableEntry* t = cluster.directory().find(table);
      ASSERT_NE(t, nullptr) << "table " << table << " not in the directory";
      const uint64_t bytes = t->bucket_count * bucket_bytes(*t);
      std::map<uint64_t, std::vector<Copy>> copies;
      for (size_t n = 0; n < nodes; ++n) {
        if (cluster.failed_over(n)) continue;  // out of the configuration
        std::vector<uint8_t>& buf = img->raw[n * 2 + ti];
        buf.resize(bytes);
        constexpr uint64_t kChunk = 1 << 20;
        for (uint64_t off = 0; off < bytes; off += kChunk) {
          OpBatch batch(cluster.bootstrap_connections(), 10000ms);
          batch.read(n, t->offset + off, buf.data() + off, static_cast<uint32_t>(std::min(kChunk, bytes - off)));
          Status s = batch.run();
          ASSERT_TRUE(s) << "reading table " << table << " on node " << n << ": " << s.to_string();
        }
        for (uint64_t off = 0; off + t->slot_bytes <= bytes; off += t->slot_bytes) {
          SlotView v(buf.data() + off);
          if (v.latch() != kLatchFree) ++img->latches[latch_pid(v.latch())];
          if (!v.occupied()) continue;
          copies[v.key()].push_back(
              Copy{v.version(), std::vector<uint8_t>(v.value(), v.value() + t->value_size), n});
        }
      }
      for (const auto& [key, cs] : copies) {
        const auto replicas = cluster.replica_indexes(cluster.placement().shard_of(table, key));
        if (cs.size() != replicas.size()) {
          img->problems.push_back(fmt::format("table {} key {}: {} copies, {} replicas", table, key, cs.size(),
                                              replicas.size()));
        }
        for (const Copy& c : cs) {
          if (c.version != cs[0].version || c.value != cs[0].value) {
            img->problems.push_back(fmt::format("table {} key {}: node {} has version {}, node {} version {}{}",
                                                table, key, cs[0].node, cs[0].version, c.node, c.version,
                                                c.value != cs[0].value ? " (values differ)" : ""));
          }
          if (c.node == replicas[0]) {
            int64_t balance;
            std::memcpy(&balance, c.value.data(), sizeof balance);
            img->total += balance;
            ++img->rows;
          }
        }
      }
    }
  }

  // The end-of-test checks of memory: money, replicas, latches.
  void expect_memory_consistent(const std::string& what, MemoryImage* out = nullptr) {
    MemoryImage img;
    ASSERT_NO_FATAL_FAILURE(inspect(&img));
    EXPECT_EQ(img.rows, 2 * kAccounts) << what;
    EXPECT_EQ(img.total, loaded_total_) << what << ": total money changed by " << img.total - loaded_total_;
    for (const std::string& p : img.problems) ADD_FAILURE() << what << ": " << p;
    uint64_t stray = 0;
    for (const auto& [pid, n] : img.latches) {
      EXPECT_TRUE(killed_.count(pid)) << what << ": " << n << " latch(es) held by pid " << pid
                                      << ", which this test did not kill"
                                      << (all_compute_pids_.count(pid) ? " (a compute process)" : "");
      stray += n;
    }
    auto f = zk_read([](Registry& r) { return r.failed(); });
    ASSERT_TRUE(f);
    for (const auto& [pid, n] : img.latches) {
      EXPECT_TRUE(std::binary_search(f->begin(), f->end(), pid))
          << what << ": pid " << pid << " holds " << n << " latch(es) but is not in failed-ids";
    }
    fprintf(stderr, "[%s] %s: total %ld (loaded %ld), %lu stray latch(es) of %zu killed pid(s)\n",
            seconds_since(t0_).c_str(), what.c_str(), static_cast<long>(img.total), static_cast<long>(loaded_total_),
            static_cast<unsigned long>(stray), killed_.size());
    if (out) *out = std::move(img);
  }

  // The end of a run nobody was killed in: every compute process exits 0
  // on its own, nothing is left in the registry, money is conserved and no
  // latch is held.
  // The memory daemons heartbeat the detector (memory timeout as long as
  // compute nodes': a starved daemon of a sanitizer build on a loaded
  // machine must not be failed over before the test stops it); two
  // SmallBank processes of `seconds` commit.
  void start_memory_watched_cluster(int seconds, Compute* a, Compute* b) {
    memd_heartbeats_ = true;
    ASSERT_NO_FATAL_FAILURE(start_cluster());
    ASSERT_NO_FATAL_FAILURE(start_fds(kFdTimeoutUs, {"--memory-timeout-us", std::to_string(kFdTimeoutUs)}));
    ASSERT_NO_FATAL_FAILURE(start_compute("a", seconds, a));
    ASSERT_NO_FATAL_FAILURE(start_compute("b", seconds, b));
    ASSERT_NO_FATAL_FAILURE(expect_commits_grow({a, b}, "before the memory node stopped"));
  }

  void expect_clean_end(const std::vector<Compute*>& computes, const std::string& what) {
    std::set<uint16_t> pids;
    for (Compute* c : computes) {
      auto done = c->proc->wait(120s);
      ASSERT_TRUE(done) << c->name << " did not end\n" << c->proc->tail();
      EXPECT_EQ(*done, 0) << c->name << "\n" << c->proc->tail();
      pids.insert(c->pid);
    }
    ASSERT_NO_FATAL_FAILURE(expect_registry_clean(pids));
    // No latch is left but stray ones of pids this test killed (stolen when
    // met, never scanned for): expect_memory_consistent fails on others.
    ASSERT_NO_FATAL_FAILURE(expect_memory_consistent(what));
  }

  // Registry-level end checks: every killed pid recovered, no lease or
  // member record left by a compute process that is gone. A process that
  // ended cleanly but could not write its departure (ZooKeeper without a
  // quorum at that moment) stops heartbeating with its record in place: the
  // detector then recovers it like a crash, which releases the lease. So
  // leftovers are waited for (bounded), and one that stays is a leak.
  void expect_registry_clean(const std::set<uint16_t>& gone) {
    for (uint16_t pid : killed_) {
      std::string state;
      EXPECT_TRUE(recovered(pid, &state)) << "killed pid " << pid << ": " << state;
    }
    std::vector<std::string> left;
    auto nothing_left = [&] {
      left.clear();
      auto a = zk_read([](Registry& r) { return r.alloc(); });
      auto members = zk_read([](Registry& r) { return r.members(); });
      if (!a || !members) {
        left.push_back("ZooKeeper unavailable");
        return false;
      }
      for (const Lease& l : a->leases) {
        if (gone.count(l.pid)) left.push_back(fmt::format("lane lease {} still held by gone pid {}", l.slot.to_string(), l.pid));
      }
      for (const MemberRecord& m : *members) {
        if (gone.count(m.pid)) left.push_back(fmt::format("pid {} is still registered", m.pid));
      }
      return left.empty();
    };
    if (wait_until(60s, nothing_left)) return;
    for (const std::string& l : left) ADD_FAILURE() << l << " (60 s after the processes ended)";
  }

  // Sum over the memory daemons of a stats field.
  uint64_t memd_stat(uint64_t wire::StatsReply::*field) {
    uint64_t sum = 0;
    for (const Endpoint& ep : cluster_->memds().endpoints()) {
      ClientIdentity admin;
      admin.cluster_id = cluster_->cluster_id();
      admin.secret = cluster_->secret();
      admin.role = wire::Role::kAdmin;
      auto ctl = ControlClient::connect(ep, admin, 5000ms);
      if (!ctl) throw std::runtime_error("memd control: " + ctl.status().to_string());
      auto st = (*ctl)->stats();
      if (!st) throw std::runtime_error("memd stats: " + st.status().to_string());
      sum += (*st).*field;
    }
    return sum;
  }

  // Index (1-based) of the ZooKeeper server that is leader, 0 if none
  // answers as leader within 20 s; *out gets the last status output.
  int zk_leader(std::string* out) {
    static const std::regex re(R"(zk(\d+) pid=\S+ port=\S+ mode=leader)");
    int found = 0;
    wait_until(20s, [&] {
      const int rc = run_command({"/bin/bash", zookeeper_script(), "status", "--dir", cluster_->zookeeper().dir()},
                                 out, 60);
      std::smatch m;
      if (rc == 0 && std::regex_search(*out, m, re)) found = std::stoi(m[1].str());
      return found != 0;
    }, 200ms);
    return found;
  }

  // The kFd member (an FD leader's data-plane identity) registered by the
  // process `os_pid`, if any.
  std::optional<uint16_t> fd_member_of(pid_t os_pid) {
    std::optional<std::vector<MemberRecord>> members;
    try {
      members = get(reg().members());
    } catch (const std::exception&) {
    }
    if (!members) return std::nullopt;
    for (const MemberRecord& m : *members) {
      if (m.role == MemberRole::kFd && m.os_pid == os_pid) return m.pid;
    }
    return std::nullopt;
  }

  // Kills every remaining compute process and waits for their recovery.
  void kill_and_recover(std::vector<Compute>& computes) {
    for (Compute& c : computes) {
      if (c.proc && c.proc->running()) ASSERT_NO_FATAL_FAILURE(kill_compute(c));
    }
    for (Compute& c : computes) ASSERT_NO_FATAL_FAILURE(wait_recovered(c.pid, 30s, "final kill"));
  }

  Clock::time_point t0_;
  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<Registry> reg_;
  std::unique_ptr<Registry> inspector_reg_;
  std::map<uint32_t, Child*> fds_;
  int64_t loaded_total_ = 0;
  uint64_t seed_ = 0;
  std::set<uint16_t> killed_;            // compute pids this test SIGKILLed
  std::set<uint16_t> all_compute_pids_;  // every compute pid started
  std::set<uint16_t> inspectors_;
  std::string protocol_ = "pandora";     // the cluster's (set before start_processes)
  bool memd_heartbeats_ = false;         // the memory daemons heartbeat the replicas (set before start_processes)
};

// 1. Compute processes are killed at random moments (seeded) and replaced;
// after each kill the dead pid is published and its recovery done, and the
// survivors commit again. Each process runs for kLifetime and then leaves
// cleanly (pandora-bench's only clean stop is --seconds), and is replaced
// too, so crashes and clean departures interleave. Once enough kills are
// done nothing is replaced any more and the last processes leave; then
// memory must be consistent: money conserved, replicas identical, only
// stray latches of killed pids left, no lease or member record of a gone
// pid.
TEST_F(FailoverTest, CrashLoop) {
  constexpr int kKills = 8;
  constexpr int kComputes = 3;
  // Long enough that survivors outlive a slow recovery (seconds on a
  // stalled machine) with time left to show they commit again.
  constexpr auto kLifetime = 20s;
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  ASSERT_NO_FATAL_FAILURE(start_fds(kFdTimeoutUs));
  const uint64_t seed = 0xC0FFEE;
  std::mt19937_64 rng(seed);
  const uint64_t lifetime_s = std::chrono::duration_cast<std::chrono::seconds>(kLifetime).count();
  std::vector<Compute> computes(kComputes);
  int next_name = 0, left = 0;
  for (Compute& c : computes) {
    ASSERT_NO_FATAL_FAILURE(start_compute(fmt::format("bench{}", ++next_name), lifetime_s, &c));
  }
  // A process that ended on its own left cleanly (exit 0), or was fenced
  // after a stall longer than the timeout (exit 6: an overloaded host;
  // legal, and recovered like a crash, its latches stray).
  auto ended = [&](const Compute& c, int rc) {
    if (rc == 6) {
      fprintf(stderr, "[%s] pid %u was fenced after a stall (exit 6): recovered like a crash\n",
              seconds_since(t0_).c_str(), c.pid);
      killed_.insert(c.pid);
      ASSERT_NO_FATAL_FAILURE(wait_recovered(c.pid, 60s, "a process fenced after a stall"));
      return;
    }
    ASSERT_EQ(rc, 0) << "pid " << c.pid << "\n" << c.proc->tail();
    ++left;
  };
  auto replace_finished = [&] {
    for (Compute& c : computes) {
      if (c.proc->running()) continue;
      ASSERT_NO_FATAL_FAILURE(ended(c, c.proc->exit_code().value_or(-1)));
      ASSERT_NO_FATAL_FAILURE(start_compute(fmt::format("bench{}", ++next_name), lifetime_s, &c));
    }
  };
  uint64_t records = 0, rolled_back = 0, rolled_forward = 0, swept = 0;
  for (int kill = 1; kill <= kKills; ++kill) {
    // The victim: a running process not about to end on its own, while at
    // least one other such process runs (a survivor to watch).
    size_t victim = kComputes;
    auto young = [&](const Compute& c, Clock::duration margin) {
      return c.proc->running() && Clock::now() - c.started < kLifetime - margin;
    };
    ASSERT_TRUE(wait_until(90s, [&] {
      replace_finished();
      if (::testing::Test::HasFatalFailure()) return true;
      std::vector<size_t> ok;
      for (size_t i = 0; i < computes.size(); ++i) {
        if (young(computes[i], 5s)) ok.push_back(i);
      }
      if (ok.size() < 2) return false;
      victim = ok[rng() % ok.size()];
      return true;
    }, 100ms));
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_LT(victim, computes.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 900));  // a random moment
    Compute& dead = computes[victim];
    const uint16_t pid = dead.pid;
    ASSERT_NO_FATAL_FAILURE(kill_compute(dead));
    const auto t_kill = Clock::now();
    ASSERT_NO_FATAL_FAILURE(wait_recovered(pid, 60s, fmt::format("kill {}", kill)));
    const double recover_s = std::chrono::duration<double>(Clock::now() - t_kill).count();
    auto rec = recovery(pid);
    ASSERT_TRUE(rec && *rec);
    records += (*rec)->records;
    rolled_back += (*rec)->rolled_back;
    rolled_forward += (*rec)->rolled_forward;
    swept += (*rec)->swept;
    std::vector<Compute*> survivors;
    for (size_t i = 0; i < computes.size(); ++i) {
      if (i != victim && young(computes[i], 2s)) survivors.push_back(&computes[i]);
    }
    // The replacement starts while the survivors are watched. On a starved
    // machine every other process may have been fenced after a stall (and
    // is replaced at the next round): then the replacement alone must
    // commit, over the dead pid's stray latches.
    ASSERT_NO_FATAL_FAILURE(spawn_compute(fmt::format("bench{}", ++next_name), lifetime_s, &dead));
    if (!survivors.empty()) {
      ASSERT_NO_FATAL_FAILURE(expect_commits_grow(survivors, fmt::format("after publishing pid {}", pid)));
    }
    ASSERT_NO_FATAL_FAILURE(await_compute(&dead));
    if (survivors.empty()) {
      ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&dead}, fmt::format("with no survivor of pid {}", pid)));
    }
    fprintf(stderr, "[%s] kill %d: pid %u recovered %.2f s after SIGKILL (%u records, %u rolled back, %u forward, "
            "%u swept); %zu survivor(s) committing; replaced by pid %u\n",
            seconds_since(t0_).c_str(), kill, pid, recover_s, (*rec)->records, (*rec)->rolled_back,
            (*rec)->rolled_forward, (*rec)->swept, survivors.size(), dead.pid);
  }
  EXPECT_GT(records, 0u) << "no recovery found a log record";

  // The end: the last processes are asked to stop (SIGTERM ends a run as
  // its lifetime does: report, check, clean departure; waiting out up to
  // 20 s of lifetime showed nothing more) and leave cleanly.
  for (Compute& c : computes) {
    if (c.proc->running()) c.proc->signal(SIGTERM);
  }
  for (Compute& c : computes) {
    auto rc = c.proc->wait(60s);
    ASSERT_TRUE(rc) << "pid " << c.pid << " did not end\n" << c.proc->tail();
    ASSERT_NO_FATAL_FAILURE(ended(c, *rc));
  }
  ASSERT_NO_FATAL_FAILURE(expect_registry_clean(all_compute_pids_));
  ASSERT_NO_FATAL_FAILURE(expect_memory_consistent("after the crash loop"));
  fprintf(stderr, "[%s] %d kills (seed %#lx), %d clean departures: %lu records read, %lu rolled back, %lu rolled "
          "forward, %lu swept\n",
          seconds_since(t0_).c_str(), kKills, static_cast<unsigned long>(seed), left,
          static_cast<unsigned long>(records), static_cast<unsigned long>(rolled_back),
          static_cast<unsigned long>(rolled_forward), static_cast<unsigned long>(swept));
}

// 2. The FD leader dies (SIGKILL, --crash-at) at each named recovery step of
// a compute process's recovery. Each round starts a fresh leader armed with
// the next point: every replica is stopped, the former leaders' data-plane
// identities are retired (else the armed leader's first recovery would be
// theirs, in resume()), replica 1 starts alone with --crash-at and becomes
// leader, replicas 2 and 3 join unarmed. Then a compute process is killed;
// the leader must die at that point (its exit is a SIGKILL and the record
// is at the step the point lies in), and a new leader must finish: record
// done, pid in failed-ids, lease released, the dead leader's own identity
// recovered, survivors committing; money conserved at the end. A last round
// cuts the leader off from ZooKeeper after its publish instead (see Point).
TEST_F(FailoverTest, LeaderDiesAtEachRecoveryStep) {
  struct Point {
    const char* name;
    RecoveryStep step_at_death;
    // Instead of dying, the leader stands still at the point while every
    // ZooKeeper server is killed, then continues: its recovery fails after
    // the publish (the pid's registration is gone, so the detector no
    // longer reports it) and it must finish the record itself once
    // ZooKeeper is back. (Every server: with one left, a request it had
    // logged was committed once the others returned, finishing the record
    // for the leader whatever the leader did.)
    bool cut_zookeeper = false;
  };
  const std::vector<Point> points = {{"recovery-after-read", RecoveryStep::kStarted},
                                     {"before-truncate", RecoveryStep::kStarted},
                                     {"after-truncate", RecoveryStep::kStarted},
                                     {"before-sweep", RecoveryStep::kPublished},
                                     {"after-sweep", RecoveryStep::kPublished},
                                     {"before-sweep", RecoveryStep::kPublished, true}};
  // 1 s: replicas 2 and 3 are new every round, and a compute process must
  // learn their endpoints (ZooKeeper watch) before they suspect it.
  const std::string timeout_us = "1000000";
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  std::mt19937_64 rng(0x1EADE5);
  std::vector<Compute> computes(2);
  int next_name = 0;
  for (size_t round = 0; round < points.size(); ++round) {
    const Point& point = points[round];
    const auto t_round = Clock::now();
    for (auto& [id, fd] : fds_) {
      if (fd->running()) EXPECT_EQ(fd->stop(), 0) << "replica " << id << "\n" << fd->tail();
    }
    // Retire the stopped leaders' identities (they hold no latch, wrote no log).
    {
      auto members = zk_read([](Registry& r) { return r.members(); });
      ASSERT_TRUE(members);
      for (const MemberRecord& m : *members) {
        if (m.role != MemberRole::kFd) continue;
        // Retried while ZooKeeper is unavailable (an operation timeout of a
        // starved ensemble failed this step once; retiring twice is fine).
        Status s;
        wait_until(30s, [&] {
          try {
            s = retire_member(reg(), cluster_->secret(), m.pid, 0, 5000ms);
          } catch (const std::exception& e) {
            s = Status(Errc::kUnavailable, e.what());
          }
          if (s.code() == Errc::kUnavailable) reg_.reset();
          return s.is_ok() || s.code() != Errc::kUnavailable;
        }, 200ms);
        ASSERT_TRUE(s) << "retiring former leader pid " << m.pid << ": " << s.to_string();
      }
    }
    // Replica 1 alone: it wins the election. A start that fails on
    // ZooKeeper timeouts (exit 5, a starved ensemble on a loaded machine)
    // is retried: the subject here is the crash at the recovery point.
    Result<Child*> armed = Status(Errc::kIo, "not started");
    std::optional<uint16_t> armed_pid;
    for (int attempt = 1; attempt <= 3 && !armed_pid; ++attempt) {
      // Its session as long as the others': a short one expired on the
      // loaded machine before it could lead (it then rejoins, too late).
      armed = cluster_->start_fd(1, {"--timeout-us", timeout_us, "--tick-us", kFdTickUs, "--zk-session-ms",
                                      kFdSessionMs, "--crash-at", point.name, "--crash-signal",
                                      point.cut_zookeeper ? "stop" : "kill"});
      ASSERT_TRUE(armed) << armed.status().to_string();
      fds_[1] = *armed;
      ASSERT_TRUE(wait_until(30s, [&] {
        armed_pid = fd_member_of((*armed)->pid());
        return armed_pid.has_value() || !(*armed)->running();
      })) << "replica 1 did not become leader\n" << (*armed)->tail();
      if (!armed_pid) {
        ASSERT_EQ((*armed)->exit_code().value_or(-1), 5) << (*armed)->tail();
        fprintf(stderr, "replica 1 could not join the election (ZooKeeper timeout), starting it again\n");
      }
    }
    ASSERT_TRUE(armed_pid) << (*armed)->tail();
    ASSERT_TRUE((*armed)->running()) << (*armed)->tail();
    for (uint32_t id = 2; id <= 3; ++id) {
      auto c = cluster_->start_fd(id, {"--timeout-us", timeout_us, "--tick-us", kFdTickUs, "--zk-session-ms", kFdSessionMs});
      ASSERT_TRUE(c) << c.status().to_string();
      fds_[id] = *c;
    }
    ASSERT_NO_FATAL_FAILURE(wait_replicas(3));
    if (round == 0) {
      for (Compute& c : computes) {
        ASSERT_NO_FATAL_FAILURE(start_compute(fmt::format("bench{}", ++next_name), 600, &c));
      }
    }

    const size_t victim = rng() % computes.size();
    Compute& dead = computes[victim];
    const uint16_t pid = dead.pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 400));  // a random moment
    ASSERT_NO_FATAL_FAILURE(kill_compute(dead));
    if (point.cut_zookeeper) {
      Child& leader = **armed;
      ASSERT_TRUE(wait_until(30s, [&] { return process_stopped(leader.pid()) || !leader.running(); }, 5ms))
          << "the leader did not stop at " << point.name << "\n" << leader.tail();
      ASSERT_TRUE(leader.running()) << leader.tail();
      ZkEnsemble& zk = cluster_->zookeeper();
      for (int server : {1, 2, 3}) ASSERT_TRUE(zk.kill_server(server));
      ASSERT_TRUE(leader.signal(SIGCONT));
      const std::string failed = fmt::format("recovery of pid {}: ", pid);
      ASSERT_TRUE(wait_until(60s, [&] { return leader.output().find(failed) != std::string::npos; }, 50ms))
          << "the leader's recovery did not fail without ZooKeeper\n" << leader.tail();
      for (int server : {1, 2, 3}) ASSERT_TRUE(zk.restart_server(server));
      reg_.reset();
      ASSERT_NO_FATAL_FAILURE(wait_recovered(pid, 60s, "ZooKeeper returned after the publish"));
      auto rec = recovery(pid);
      ASSERT_TRUE(rec && *rec);
      EXPECT_TRUE(leader.running()) << leader.tail();
      // A deposition sent while ZooKeeper was down may apply once it is
      // back (a leader change it no longer needed, and a safe one).
      if (leader.output().find("session expired") == std::string::npos &&
          leader.output().find("was deposed") == std::string::npos) {
        EXPECT_EQ((*rec)->leader_replica, 1u) << "not finished by the leader that published it\n" << leader.tail();
      } else {
        // A successor finished it: the round then shows no more than the
        // leader-death rounds (a starved machine expired the session).
        fprintf(stderr, "the leader's ZooKeeper session expired during the outage; replica %u finished pid %u\n",
                (*rec)->leader_replica, pid);
      }
      std::vector<Compute*> survivors;
      for (size_t i = 0; i < computes.size(); ++i) {
        if (i != victim) survivors.push_back(&computes[i]);
      }
      ASSERT_NO_FATAL_FAILURE(spawn_compute(fmt::format("bench{}", ++next_name), 600, &dead));
      ASSERT_NO_FATAL_FAILURE(expect_commits_grow(survivors, "after the quorum returned"));
      ASSERT_NO_FATAL_FAILURE(await_compute(&dead));
      fprintf(stderr, "[%s] round %zu (%.1f s): leader stood at %s, ZooKeeper was killed; pid %u was finished by "
              "replica %u once ZooKeeper was back\n",
              seconds_since(t0_).c_str(), round + 1, std::chrono::duration<double>(Clock::now() - t_round).count(),
              point.name, pid, (*rec)->leader_replica);
      continue;
    }
    auto rc = (*armed)->wait(30s);
    ASSERT_TRUE(rc) << "the leader did not crash at " << point.name << "\n" << (*armed)->tail();
    EXPECT_EQ(*rc, 128 + SIGKILL) << "leader exit at " << point.name << "\n" << (*armed)->tail();
    // A successor leads only after it deposes the dead leader (3 s:
    // LocalClusterOptions::fd_leader_timeout_ms) or the leader's session
    // expires (6 s), so the record still shows where it died.
    // Before the publish there is no record (no start record:
    // recovery_coordinator.h) and the pid is not in failed-ids.
    auto rec = recovery(pid);
    ASSERT_TRUE(rec) << "reading the recovery record of pid " << pid;
    if (point.step_at_death == RecoveryStep::kStarted) {
      EXPECT_FALSE(*rec) << point.name << ": the leader died before publishing, with a record at "
                         << recovery_step_name((*rec)->step);
      auto failed = zk_read([](Registry& r) { return r.failed(); });
      ASSERT_TRUE(failed);
      EXPECT_FALSE(std::binary_search(failed->begin(), failed->end(), pid))
          << point.name << ": pid " << pid << " published by a leader that died before publishing";
    } else {
      ASSERT_TRUE(*rec) << "no recovery record for pid " << pid << " when the leader died at " << point.name;
      EXPECT_EQ((*rec)->step, point.step_at_death)
          << point.name << ": the leader died with the record at " << recovery_step_name((*rec)->step);
    }
    // The successor leads once it deposes the dead leader (or the leader's
    // session expires).
    ASSERT_NO_FATAL_FAILURE(wait_recovered(pid, 60s, fmt::format("after the leader died at {}", point.name)));
    // The dead leader's data-plane identity is recovered by its successor.
    ASSERT_NO_FATAL_FAILURE(wait_recovered(*armed_pid, 30s, "the dead leader's own pid"));
    auto done = recovery(pid);
    ASSERT_TRUE(done && *done);
    std::vector<Compute*> survivors;
    for (size_t i = 0; i < computes.size(); ++i) {
      if (i != victim) survivors.push_back(&computes[i]);
    }
    ASSERT_NO_FATAL_FAILURE(spawn_compute(fmt::format("bench{}", ++next_name), 600, &dead));
    ASSERT_NO_FATAL_FAILURE(expect_commits_grow(survivors, fmt::format("after the recovery at {}", point.name)));
    ASSERT_NO_FATAL_FAILURE(await_compute(&dead));
    fprintf(stderr, "[%s] round %zu (%.1f s): leader died at %s; replica %u finished pid %u (%u records, %u rolled "
            "back, %u forward, %u swept)\n",
            seconds_since(t0_).c_str(), round + 1, std::chrono::duration<double>(Clock::now() - t_round).count(),
            point.name, (*done)->leader_replica, pid, (*done)->records, (*done)->rolled_back,
            (*done)->rolled_forward, (*done)->swept);
  }
  ASSERT_NO_FATAL_FAILURE(kill_and_recover(computes));
  ASSERT_NO_FATAL_FAILURE(expect_registry_clean(all_compute_pids_));
  ASSERT_NO_FATAL_FAILURE(expect_memory_consistent("after every leader crash"));
  std::string out;
  ASSERT_EQ(cluster_->ctl({"status"}, &out), 0) << out;
  for (uint16_t pid : killed_) {
    const std::regex done_with_steps(
        fmt::format(R"(pid\s+{}\s+done\s+by replica \d+ detected [^:]+: record read \d+ us, fence \d+ us)", pid));
    EXPECT_TRUE(std::regex_search(out, done_with_steps))
        << "pandora-ctl status does not show pid " << pid << " done with its steps:\n" << out;
  }
}

// 2b. A leader that stands still (SIGSTOP) in the middle of a recovery
// keeps its ZooKeeper session (a stopped process closes nothing), so the
// election alone would wait for the session to expire. Its successor
// stops hearing it and deposes it after --leader-timeout-ms, finishes the
// recovery and recovers the old leader's data-plane identity first (so
// nothing the old leader had in flight lands). Continued, the old leader
// finds its election node gone, rejoins as a follower, and the cluster
// recovers the next failure under the new leader, consistent throughout.
TEST_F(FailoverTest, AStoppedLeaderIsDeposedByItsSuccessor) {
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  const std::vector<std::string> extra{"--leader-timeout-ms", "1000", "--memory-timeout-us",
                                       std::to_string(kFdTimeoutUs)};
  std::vector<std::string> armed_extra = extra;
  armed_extra.insert(armed_extra.end(), {"--crash-at", "before-sweep", "--crash-signal", "stop"});
  auto started = cluster_->start_fd(1, fd_args(kFdTimeoutUs, armed_extra));
  ASSERT_TRUE(started) << started.status().to_string();
  Child& old_leader = **started;
  fds_[1] = *started;
  std::optional<uint16_t> old_pid;
  ASSERT_TRUE(wait_until(60s, [&] {
    old_pid = fd_member_of(old_leader.pid());
    return old_pid.has_value() || !old_leader.running();
  })) << "replica 1 did not become leader\n" << old_leader.tail();
  ASSERT_TRUE(old_pid) << old_leader.tail();
  ASSERT_NO_FATAL_FAILURE(start_fds(kFdTimeoutUs, extra, 2));
  std::vector<Compute> computes(2);
  for (size_t i = 0; i < computes.size(); ++i) {
    ASSERT_NO_FATAL_FAILURE(start_compute(fmt::format("bench{}", i + 1), 600, &computes[i]));
  }

  const uint16_t pid = computes[0].pid;
  ASSERT_NO_FATAL_FAILURE(kill_compute(computes[0]));
  ASSERT_TRUE(wait_until(60s, [&] { return process_stopped(old_leader.pid()) || !old_leader.running(); }, 5ms))
      << "the leader did not stop before the sweep\n" << old_leader.tail();
  ASSERT_TRUE(old_leader.running()) << old_leader.tail();
  const auto stopped_at = Clock::now();
  // Its successor (replica 2 or 3, whichever stood for election first).
  uint32_t successor = 0;
  ASSERT_TRUE(wait_until(60s, [&] {
    for (uint32_t id : {2u, 3u}) {
      if (fds_[id]->output().find("deposing the leader, replica 1") != std::string::npos) successor = id;
    }
    return successor != 0;
  })) << "no replica deposed the stopped leader\n" << fds_[2]->tail() << fds_[3]->tail();
  const std::string deposed_after = seconds_since(stopped_at);
  // Deposed, not waited out: the stopped leader's session still holds its
  // announcement (it goes when the session expires, 6 s after the stop).
  auto replicas = zk_read([](Registry& r) { return r.replicas(); });
  ASSERT_TRUE(replicas);
  const bool session_alive = replicas->contains(1);
  ASSERT_NO_FATAL_FAILURE(wait_recovered(pid, 60s, "the leader stood still before the sweep"));
  auto rec = recovery(pid);
  ASSERT_TRUE(rec && *rec);
  EXPECT_EQ((*rec)->leader_replica, successor) << "finished by replica " << (*rec)->leader_replica;
  ASSERT_NO_FATAL_FAILURE(wait_recovered(*old_pid, 30s, "the deposed leader's own data-plane pid"));
  fprintf(stderr, "[%s] leader stopped before the sweep; deposed after %s (its session %s then); pid %u finished "
          "by replica %u, %s after the stop\n",
          seconds_since(t0_).c_str(), deposed_after.c_str(), session_alive ? "still alive" : "already expired", pid,
          (*rec)->leader_replica, seconds_since(stopped_at).c_str());

  // Continued, the old leader cannot finish anything (its data plane is
  // fenced, its ZooKeeper writes guarded by the node that is gone): it
  // finds itself deposed and rejoins with a new session.
  ASSERT_TRUE(old_leader.signal(SIGCONT));
  ASSERT_TRUE(wait_until(60s, [&] {
    const std::string out = old_leader.output();
    const size_t deposed = out.find("was deposed");
    return deposed != std::string::npos && out.find("listening for heartbeats", deposed) != std::string::npos;
  })) << "the continued leader did not rejoin as a follower\n" << old_leader.tail();
  EXPECT_TRUE(old_leader.running()) << old_leader.tail();
  EXPECT_EQ(old_leader.output().find(fmt::format("recovered pid {}:", pid)), std::string::npos)
      << "the deposed leader finished the recovery it was stopped in\n" << old_leader.tail();
  ASSERT_NO_FATAL_FAILURE(wait_replicas(3));

  // The new leader recovers the next failure; the survivors commit on.
  std::vector<Compute*> survivors{&computes[1]};
  ASSERT_NO_FATAL_FAILURE(spawn_compute("bench3", 600, &computes[0]));
  ASSERT_NO_FATAL_FAILURE(await_compute(&computes[0]));
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow(survivors, "after the deposition"));
  const uint16_t next = computes[1].pid;
  ASSERT_NO_FATAL_FAILURE(kill_compute(computes[1]));
  ASSERT_NO_FATAL_FAILURE(wait_recovered(next, 60s, "under the new leader"));
  auto next_rec = recovery(next);
  ASSERT_TRUE(next_rec && *next_rec);
  EXPECT_NE((*next_rec)->leader_replica, 1u) << "the deposed replica leads again";
  ASSERT_NO_FATAL_FAILURE(kill_and_recover(computes));
  ASSERT_NO_FATAL_FAILURE(expect_registry_clean(all_compute_pids_));
  ASSERT_NO_FATAL_FAILURE(expect_memory_consistent("after the deposition"));
}

// 3. ZooKeeper faults. (a) The ZooKeeper leader is killed right after a
// compute process: its recovery still completes. (b) A second server is
// killed (no quorum): compute processes keep committing; a compute process
// killed now is not even fenced (recovery cannot start without its
// ZooKeeper record) for an observation window. (c) Both servers restart:
// the quorum is back and that recovery completes, published after the
// restart. Both, not one: Debian's ZooKeeper (3.8.0) has ZOOKEEPER-4685 -
// a follower syncing with a new leader may acknowledge a proposal before
// NEWLEADER, the leader gives up after initLimit and a new election
// repeats the race. With one restarted server (and forceSync off, on two
// loaded cores) that lost the race again and again: the quorum came back
// after 57 s, 86 s, or not within 90 s. With two, one winning is enough.
// (Those times predate the autogroup finding in the test body, which was
// most of them; restarting one server was not measured again.)
TEST_F(FailoverTest, ZooKeeperFaults) {
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  ASSERT_NO_FATAL_FAILURE(start_fds(kFdTimeoutUs));
  std::vector<Compute> computes(3);
  int next_name = 0;
  for (Compute& c : computes) ASSERT_NO_FATAL_FAILURE(start_compute(fmt::format("bench{}", ++next_name), 600, &c));
  ZkEnsemble& zk = cluster_->zookeeper();

  // (a)
  std::string status;
  const int first = zk_leader(&status);
  ASSERT_GT(first, 0) << "no ZooKeeper leader:\n" << status;
  ASSERT_NO_FATAL_FAILURE(kill_compute(computes[0]));
  Status s = zk.kill_server(first);
  ASSERT_TRUE(s) << s.to_string();
  auto t = Clock::now();
  // The budgets of (a) and (c) are ZooKeeper's, not Pandora's: each waits
  // for an election, and 3.8.0's sync race (above) can repeat one. (c)
  // used to take 20-180 s (once not within 180 s, in a suite run): the
  // restarted JVMs ran in sessions of their own (setsid), i.e. scheduler
  // autogroups of their own, and got 0-2 ms of CPU per 5 s while the
  // benches' group held both cores. zookeeper.sh now keeps them in the
  // caller's session; (c) then took 2.5-4.0 s in 5 of 5 runs. The budgets
  // stay wide for slower machines.
  ASSERT_NO_FATAL_FAILURE(wait_recovered(computes[0].pid, 120s, "ZooKeeper leader killed during the recovery"));
  fprintf(stderr, "[%s] (a) ZooKeeper server %d (leader) killed during the recovery of pid %u: done after %s\n",
          seconds_since(t0_).c_str(), first, computes[0].pid, seconds_since(t).c_str());
  ASSERT_NO_FATAL_FAILURE(spawn_compute(fmt::format("bench{}", ++next_name), 600, &computes[0]));
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&computes[1], &computes[2]}, "after (a)"));
  ASSERT_NO_FATAL_FAILURE(await_compute(&computes[0]));

  // (b)
  const int second = first == 1 ? 2 : 1;
  s = zk.kill_server(second);
  ASSERT_TRUE(s) << s.to_string();
  reg_.reset();
  const uint64_t fenced_before = memd_stat(&wire::StatsReply::fenced_nodes);
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&computes[0], &computes[1], &computes[2]}, "without a quorum"));
  const uint16_t orphan = computes[1].pid;
  ASSERT_NO_FATAL_FAILURE(kill_compute(computes[1]));
  const auto t_kill = Clock::now();
  ASSERT_NO_FATAL_FAILURE(
      expect_commits_grow({&computes[0], &computes[2]}, "without a quorum, a compute process dead and unrecovered"));
  // Detection takes 1 s; give the leader well over that to (wrongly) act.
  while (Clock::now() < t_kill + 4s) {
    ASSERT_EQ(memd_stat(&wire::StatsReply::fenced_nodes), fenced_before)
        << "a pid was fenced while ZooKeeper had no quorum";
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(memd_stat(&wire::StatsReply::fenced_nodes), fenced_before);
  fprintf(stderr, "[%s] (b) no quorum: survivors committing, pid %u not fenced after %s\n",
          seconds_since(t0_).c_str(), orphan, seconds_since(t_kill).c_str());

  // (c)
  const uint64_t restored_ns = realtime_ns();
  for (int server : {first, second}) {
    s = zk.restart_server(server);
    ASSERT_TRUE(s) << s.to_string();
  }
  t = Clock::now();
  ASSERT_NO_FATAL_FAILURE(wait_recovered(orphan, 180s, "quorum restored"));
  EXPECT_GT(memd_stat(&wire::StatsReply::fenced_nodes), fenced_before);
  auto node = zk_read([&](Registry& r) { return r.zk().get(r.path(fmt::format("failed/{}", orphan))); });
  ASSERT_TRUE(node);
  static const std::regex re(R"(published_ns=(\d+))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(node->data, m, re)) << node->data;
  EXPECT_GT(std::stoull(m[1].str()), restored_ns) << "pid " << orphan << " was published before the quorum returned";
  fprintf(stderr, "[%s] (c) servers %d and %d restarted: pid %u recovered after %s\n", seconds_since(t0_).c_str(),
          first, second, orphan, seconds_since(t).c_str());
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&computes[0], &computes[2]}, "after the quorum returned"));
  for (auto& [id, fd] : fds_) EXPECT_TRUE(fd->running()) << "replica " << id << " died\n" << fd->tail();

  ASSERT_NO_FATAL_FAILURE(kill_and_recover(computes));
  ASSERT_NO_FATAL_FAILURE(expect_registry_clean(all_compute_pids_));
  ASSERT_NO_FATAL_FAILURE(expect_memory_consistent("after the ZooKeeper faults"));
}

// 4. False positive: a compute process stopped (SIGSTOP) longer than the FD
// timeout is declared failed: fenced, its logs recovered, published. It is
// the only writer, so memory is then quiet: after SIGCONT it must exit with
// code 6 and say why, and not one byte of either table may change (no write
// of it lands after the fence). Money is conserved, and a new compute
// process commits over its stray latches.
TEST_F(FailoverTest, FalsePositiveIsFenced) {
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  ASSERT_NO_FATAL_FAILURE(start_fds(kFdTimeoutUs));
  Compute v;
  ASSERT_NO_FATAL_FAILURE(start_compute("victim", 600, &v));
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&v}, "before the stop"));
  ASSERT_TRUE(v.proc->signal(SIGSTOP));
  const auto t_stop = Clock::now();
  killed_.insert(v.pid);  // declared failed: its latches are stray
  ASSERT_NO_FATAL_FAILURE(wait_recovered(v.pid, 30s, "stopped process"));
  const double stopped_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_stop).count();
  fprintf(stderr, "[%s] stopped pid %u declared failed and recovered %s after SIGSTOP\n", seconds_since(t0_).c_str(),
          v.pid, seconds_since(t_stop).c_str());
  MemoryImage fenced;
  ASSERT_NO_FATAL_FAILURE(expect_memory_consistent("fenced, still stopped", &fenced));
  const uint64_t refused_before = memd_stat(&wire::StatsReply::fenced_ops);

  ASSERT_TRUE(v.proc->signal(SIGCONT));
  auto rc = v.proc->wait(60s);
  ASSERT_TRUE(rc) << "the fenced process did not stop\n" << v.proc->tail();
  EXPECT_EQ(*rc, 6) << v.proc->tail();
  EXPECT_NE(v.proc->output().find("was declared failed by the failure detector and fenced"), std::string::npos)
      << v.proc->tail();
  // And where the stall was: its own heartbeats stood still for at least
  // as long as it stayed stopped.
  const std::string said = v.proc->output();
  std::smatch pause;
  ASSERT_TRUE(std::regex_search(said, pause, std::regex("longest pause between two of its heartbeats was ([0-9.]+) ms")))
      << v.proc->tail();
  EXPECT_GE(std::stod(pause[1].str()), stopped_ms) << v.proc->tail();
  MemoryImage after;
  ASSERT_NO_FATAL_FAILURE(expect_memory_consistent("after the fenced process exited", &after));
  ASSERT_EQ(after.raw.size(), fenced.raw.size());
  for (size_t i = 0; i < after.raw.size(); ++i) {
    ASSERT_EQ(after.raw[i].size(), fenced.raw[i].size());
    const auto diff = std::mismatch(after.raw[i].begin(), after.raw[i].end(), fenced.raw[i].begin());
    EXPECT_TRUE(diff.first == after.raw[i].end())
        << "node " << i / 2 << " table " << (i % 2 == 0 ? kSavings : kChecking) << " changed at byte "
        << (diff.first - after.raw[i].begin()) << " after the fence (a write of the fenced process landed)";
  }
  fprintf(stderr, "[%s] fenced process exited with %d; memory unchanged; %lu operation(s) refused as fenced\n",
          seconds_since(t0_).c_str(), *rc,
          static_cast<unsigned long>(memd_stat(&wire::StatsReply::fenced_ops) - refused_before));

  Compute next;
  ASSERT_NO_FATAL_FAILURE(start_compute("next", 2, &next));
  auto next_rc = next.proc->wait(60s);
  ASSERT_TRUE(next_rc) << next.proc->tail();
  EXPECT_EQ(*next_rc, 0) << next.proc->tail();
  ASSERT_NO_FATAL_FAILURE(expect_registry_clean({v.pid, next.pid}));
  ASSERT_NO_FATAL_FAILURE(expect_memory_consistent("after a new process ran"));
}

// 5. ford through the real detector: latches carry no owner, so recovery
// stops the world. After a compute process is killed, the leader fences it
// and asks every live compute process to park between transactions; each
// must acknowledge (not be fenced after the park timeout), the leader
// repairs from the undo records and scans every latch away, and all resume.
// Twice, then the survivors end cleanly having parked for both pauses;
// money is conserved and no latch at all is left (a scan releases them
// all; a latch left would be one no one can ever release). An application
// on the public API (include/pandora/, managed mode) is a compute node too:
// it moves money between checking accounts throughout, and must park for
// both pauses (one that did not would be fenced after the park timeout and
// its transactions would fail with kTransport) and commit again after each.
TEST_F(FailoverTest, FordStopsTheWorldAndEveryLiveNodeParks) {
  protocol_ = "ford";
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  ASSERT_NO_FATAL_FAILURE(start_fds(kFdTimeoutUs));
  constexpr uint64_t kLifetime = 45;
  std::vector<Compute> computes(4);
  for (size_t i = 0; i < computes.size(); ++i) {
    ASSERT_NO_FATAL_FAILURE(start_compute(fmt::format("ford{}", i), kLifetime, &computes[i]));
  }

  ClientOptions co;
  co.zookeeper = cluster_->zk_options().hosts;
  co.zk_root = cluster_->options().zk_root;
  co.cluster_id = cluster_->cluster_id();
  co.secret_file = cluster_->secret_file();
  co.protocol = "ford";
  co.max_sessions = 1;
  co.log_level = "error";
  auto client = Client::connect(co);
  ASSERT_TRUE(client) << client.status().to_string();
  const uint16_t app_pid = (*client)->pid();
  std::atomic<bool> app_stop{false};
  std::atomic<uint64_t> app_commits{0}, app_failed{0};
  std::string app_error;
  std::thread app([&] {
    auto session = (*client)->session();
    if (!session) {
      app_error = session.status().to_string();
      return;
    }
    std::mt19937_64 rng(7);
    while (!app_stop.load()) {
      const uint64_t from = rng() % kAccounts, to = (from + 1 + rng() % (kAccounts - 1)) % kAccounts;
      const CommitOutcome out = (*session)->transact_retry([&](Txn& txn) {
        auto a = txn.update(kChecking, from);
        if (!a) return a.reason();
        auto b = txn.update(kChecking, to);
        if (!b) return b.reason();
        int64_t x, y;
        std::memcpy(&x, (*a).data(), 8);
        std::memcpy(&y, (*b).data(), 8);
        if (x < 1) return AbortReason::kUser;
        x -= 1;
        y += 1;
        std::memcpy((*a).data(), &x, 8);
        std::memcpy((*b).data(), &y, 8);
        return AbortReason::kNone;
      });
      if (out.committed || out.reason == AbortReason::kUser) {
        ++app_commits;
      } else if (!is_conflict(out.reason)) {
        // A conflict outlasting transact_retry's attempts is expected:
        // ford's latches carry no owner, so the dead node's stay (and
        // abort whoever meets them) until the pause's scan. Anything else
        // (kTransport: fenced) is a failure.
        ++app_failed;
        app_error = std::string(abort_reason_name(out.reason)) + ": " + out.detail.to_string();
      }
    }
  });
  // Stops and joins the application on every way out of the test: a
  // failed ASSERT returns early, and a joinable thread left behind would
  // abort the process before the fixture stops the cluster.
  struct JoinApp {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~JoinApp() {
      stop.store(true);
      if (thread.joinable()) thread.join();
    }
  } join_app{app_stop, app};
  auto app_commits_grow = [&](const std::string& what) {
    const uint64_t base = app_commits.load();
    ASSERT_TRUE(wait_until(30s, [&] { return app_commits.load() > base || app_failed.load() > 0; }, 50ms))
        << what << ": the application (pid " << app_pid << ") stuck at " << base << " commits";
    ASSERT_EQ(app_failed.load(), 0u) << what << ": the application's transactions failed: " << app_error;
  };
  ASSERT_NO_FATAL_FAILURE(app_commits_grow("before the kills"));

  for (size_t victim = 0; victim < 2; ++victim) {
    std::vector<Compute*> survivors;
    for (size_t i = victim + 1; i < computes.size(); ++i) survivors.push_back(&computes[i]);
    ASSERT_NO_FATAL_FAILURE(expect_commits_grow(survivors, "before the kill"));
    Compute& dead = computes[victim];
    ASSERT_NO_FATAL_FAILURE(kill_compute(dead));
    const auto t_kill = Clock::now();
    ASSERT_NO_FATAL_FAILURE(wait_recovered(dead.pid, 60s, "ford kill"));
    auto rec = recovery(dead.pid);
    ASSERT_TRUE(rec && *rec);
    // The recovery stopped the world (a pause that includes the scan).
    EXPECT_GT((*rec)->pause_us, 0u);
    EXPECT_GE((*rec)->pause_us, (*rec)->scan_us);
    ASSERT_NO_FATAL_FAILURE(expect_commits_grow(survivors, fmt::format("after the pause for pid {}", dead.pid)));
    ASSERT_NO_FATAL_FAILURE(app_commits_grow(fmt::format("after the pause for pid {}", dead.pid)));
    fprintf(stderr, "[%s] ford: pid %u recovered %s after SIGKILL: pause %.1f ms (scan %.1f ms), %u records\n",
            seconds_since(t0_).c_str(), dead.pid, seconds_since(t_kill).c_str(), (*rec)->pause_us / 1e3,
            (*rec)->scan_us / 1e3, (*rec)->records);
  }
  app_stop.store(true);
  if (app.joinable()) app.join();
  EXPECT_EQ(app_failed.load(), 0u) << app_error;
  EXPECT_FALSE((*client)->fenced()) << "the application was fenced: it did not park";
  auto failed = zk_read([](Registry& r) { return r.failed(); });
  ASSERT_TRUE(failed);
  EXPECT_FALSE(std::binary_search(failed->begin(), failed->end(), app_pid)) << "the application's pid was failed";
  fprintf(stderr, "[%s] the application (pid %u) committed %lu transfers across both pauses\n",
          seconds_since(t0_).c_str(), app_pid, static_cast<unsigned long>(app_commits.load()));
  client->reset();  // leaves the cluster cleanly
  // A survivor that had been fenced for not parking would exit 6. SIGTERM
  // ends a run cleanly, as its lifetime would (which is only a bound here).
  static const std::regex parked(R"(stop-the-world pauses: (\d+))");
  for (size_t i = 2; i < computes.size(); ++i) computes[i].proc->signal(SIGTERM);
  for (size_t i = 2; i < computes.size(); ++i) {
    auto rc = computes[i].proc->wait(60s);
    ASSERT_TRUE(rc) << computes[i].name << " did not end\n" << computes[i].proc->tail();
    ASSERT_EQ(*rc, 0) << computes[i].proc->tail();
    const std::string out = computes[i].proc->output();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, parked)) << "pid " << computes[i].pid << " never parked\n" << out;
    EXPECT_GE(std::stoul(m[1].str()), 2u) << out;
  }
  MemoryImage img;
  ASSERT_NO_FATAL_FAILURE(expect_memory_consistent("after two stop-the-world recoveries", &img));
  EXPECT_TRUE(img.latches.empty()) << img.latches.size() << " latch owner(s) left after ford's scans";
}

// CPU seconds (user + system) process `pid` has used so far.
double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces) start after ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// A failure the leader cannot recover yet (here: no tables, so it has no
// data plane) stays watched by every replica until it is handled. The
// replicas must wait for it, not spin: replicas that paced their loop on
// the detector's failed set burnt a core each at nice -10 and starved a
// 2-core machine's ZooKeeper and compute nodes into false suspicions.
TEST_F(FailoverTest, ReplicasStayIdleWhileAFailureAwaitsRecovery) {
  ASSERT_NO_FATAL_FAILURE(start_processes());  // no tables: the leader cannot recover anything
  ASSERT_NO_FATAL_FAILURE(start_fds(200000));
  // A compute node that registers and never heartbeats.
  MemberRecord ghost;
  ghost.role = MemberRole::kCompute;
  ghost.push = Endpoint{"127.0.0.1", 9};
  ghost.incarnation = 1;
  auto reg_result = reg().register_member(ghost, 2);
  ASSERT_TRUE(reg_result) << reg_result.status().to_string();
  const std::string failed_line = fmt::format("compute node {} failed", reg_result->pid);
  ASSERT_TRUE(wait_until(60s, [&] {
    for (const auto& [id, fd] : fds_) {
      if (fd->output().find(failed_line) == std::string::npos) return false;
    }
    return true;
  })) << "the replicas did not all declare pid " << reg_result->pid << " failed";
  for (const auto& [id, fd] : fds_) ASSERT_TRUE(fd->running()) << fd->tail();

  const auto w0 = Clock::now();
  std::map<uint32_t, double> before;
  for (const auto& [id, fd] : fds_) before[id] = cpu_seconds(fd->pid());
  std::this_thread::sleep_for(2s);  // a measurement window, not a wait for an event
  const double wall = std::chrono::duration<double>(Clock::now() - w0).count();
  double cores = 0;
  std::string each;
  for (const auto& [id, fd] : fds_) {
    const double c = (cpu_seconds(fd->pid()) - before[id]) / wall;
    cores += c;
    each += fmt::format(" replica {}: {:.3f}", id, c);
  }
  fprintf(stderr, "[%s] 3 replicas with pid %u failed and unrecoverable: %.3f cores over %.1f s (%s)\n",
          seconds_since(t0_).c_str(), reg_result->pid, cores, wall, each.c_str());
  // Spinning replicas use a core each (or all the machine has); idle ones,
  // even under ASan with 10 ms ticks, a few percent.
  EXPECT_LT(cores, 0.5) << "the FD replicas spin while a failure awaits recovery";
  // Still not recovered (nothing could be), and still waiting for it.
  auto rec = zk_read([&](Registry& r) { return r.recovery(reg_result->pid); });
  ASSERT_TRUE(rec);
  EXPECT_FALSE(rec->has_value() && (*rec)->step == RecoveryStep::kDone);
}

// 7. The registry reads that keep each replica's list of members current
// (one per member, every second) run beside the leader's recovery loop, not
// in it: a detection must not wait for them. When they ran in the loop, a
// slow ZooKeeper (100 ms per read) made a 4 ms recovery publish 571 ms after
// the kill. Here every member refresh after the one that first watched the
// victim stands still (--stall-member-refreshes): the killed process must
// still be recovered and published, money conserved.
TEST_F(FailoverTest, RecoveryDoesNotWaitForMemberRefreshes) {
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  ASSERT_NO_FATAL_FAILURE(start_fds(kFdTimeoutUs, {"--stall-member-refreshes"}));
  Compute v;
  ASSERT_NO_FATAL_FAILURE(start_compute("victim", 600, &v));
  const std::string stalled = "test: member refreshes stalled";
  ASSERT_TRUE(wait_until(60s, [&] {
    for (const auto& [id, fd] : fds_) {
      if (fd->output().find(stalled) == std::string::npos) return false;
    }
    return true;
  })) << "the replicas' member refreshes never stalled";
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&v}, "with the refreshes stalled"));
  ASSERT_NO_FATAL_FAILURE(kill_compute(v));
  const auto t_kill = Clock::now();
  ASSERT_NO_FATAL_FAILURE(wait_recovered(v.pid, 60s, "killed while every member refresh stood still"));
  fprintf(stderr, "[%s] pid %u recovered %s after SIGKILL with the member refreshes stalled\n",
          seconds_since(t0_).c_str(), v.pid, seconds_since(t_kill).c_str());
  for (const auto& [id, fd] : fds_) ASSERT_TRUE(fd->running()) << fd->tail();
  ASSERT_NO_FATAL_FAILURE(expect_memory_consistent("after the recovery"));
}

// 9. The detector's leader dies inside a memory node's fail-over, right
// after it wrote the record and began the pause (before any acknowledgement
// was awaited). The compute processes park and stay parked; the next leader
// (once the dead one's session expires) finds the pause naming no pid,
// runs the fail-over again (its record untouched: the epoch moves once),
// and ends the pause; everybody commits again and the dead leader's own
// data-plane pid is recovered.
TEST_F(FailoverTest, ALeaderDyingInAMemoryFailOverIsFinishedByTheNext) {
  memd_heartbeats_ = true;
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  // Replica 1 leads, armed to die in the pause; then replicas 2 and 3.
  std::optional<uint16_t> armed_pid;
  Child* armed = nullptr;
  ASSERT_NO_FATAL_FAILURE(start_fds_armed_to_die_at("memory-failover-paused", &armed, &armed_pid));
  Compute a, b;
  ASSERT_NO_FATAL_FAILURE(start_compute("a", 40, &a));
  ASSERT_NO_FATAL_FAILURE(start_compute("b", 40, &b));
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&a, &b}, "before the memory node died"));

  ASSERT_NO_FATAL_FAILURE(cluster_->memds().node(1).kill9());
  auto rc = armed->wait(60s);
  ASSERT_TRUE(rc) << "the leader did not die in the fail-over's pause\n" << armed->tail();
  EXPECT_EQ(*rc, 128 + SIGKILL) << armed->tail();
  // Where it died: the node listed (epoch 2) and the pause begun.
  auto at_death = zk_read([](Registry& reg) { return reg.read_cluster(); });
  ASSERT_TRUE(at_death);
  ASSERT_EQ(at_death->failed_memory.size(), 1u);
  EXPECT_EQ(at_death->epoch, 2u);

  // The successor finishes it: the pause ends, the epoch stays.
  ASSERT_TRUE(wait_until(90s, [&] {
    auto paused = zk_read([](Registry& reg) { return reg.pause_in_progress(); });
    return paused && !*paused;
  }, 50ms)) << "the pause was never ended\n" << fds_[2]->tail() << fds_[3]->tail();
  auto after = zk_read([](Registry& reg) { return reg.read_cluster(); });
  ASSERT_TRUE(after);
  EXPECT_EQ(after->epoch, 2u) << "a re-run must not list the node again";
  EXPECT_EQ(after->failed_memory.size(), 1u);
  const std::string successors = fds_[2]->output() + fds_[3]->output();
  EXPECT_NE(successors.find("finishing memory node"), std::string::npos) << fds_[2]->tail() << fds_[3]->tail();
  ASSERT_NO_FATAL_FAILURE(wait_recovered(*armed_pid, 60s, "the dead leader's own pid"));
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&a, &b}, "after the next leader finished the fail-over"));
  ASSERT_NO_FATAL_FAILURE(expect_clean_end({&a, &b}, "after a leader died in the fail-over"));
}

}  // namespace
}  // namespace pandora::testing

namespace pandora::testing {
namespace {

// A failed-over memory node is replaced (recovery/replica_rebuild.h) and the
// leader dies right after the replacement's pause began (crash point
// memory-replace-paused, before anything was copied). The compute
// processes stay parked; the next leader ends that pause (a pause naming
// no pid is re-run as the last fail-over: nothing changes), finds the
// request still pending and replaces the node. Both processes reconnect to
// the replacement and commit again, every row is on each of its replicas,
// the replacement included, and no latch is left. The replacement runs on
// the node's old region: the rebuild rewrites all of it.
TEST_F(FailoverTest, ALeaderDyingInAReplacementIsFinishedByTheNext) {
  memd_heartbeats_ = true;
  ASSERT_NO_FATAL_FAILURE(start_cluster());
  // Replica 1 leads, armed to die in the pause; then replicas 2 and 3.
  std::optional<uint16_t> armed_pid;
  Child* armed = nullptr;
  ASSERT_NO_FATAL_FAILURE(start_fds_armed_to_die_at("memory-replace-paused", &armed, &armed_pid));
  Compute a, b;
  ASSERT_NO_FATAL_FAILURE(start_compute("a", 60, &a));
  ASSERT_NO_FATAL_FAILURE(start_compute("b", 60, &b));
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&a, &b}, "before the memory node died"));

  LocalMemd& node = cluster_->memds().node(1);
  const uint32_t node_id = node.options().node_id;
  ASSERT_NO_FATAL_FAILURE(node.kill9());
  ASSERT_TRUE(wait_until(60s, [&] {
    auto r = zk_read([](Registry& reg) { return reg.read_cluster(); });
    auto paused = zk_read([](Registry& reg) { return reg.pause_in_progress(); });
    return r && paused && r->failed_memory.size() == 1 && !*paused;
  }, 50ms)) << "memory node " << node_id << " was not failed over\n" << armed->tail();
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&a, &b}, "after the fail-over"));
  // A compute process dies and is recovered while the node is out: its pid
  // is published failed before the replacement begins.
  Compute victim;
  ASSERT_NO_FATAL_FAILURE(start_compute("victim", 60, &victim));
  ASSERT_NO_FATAL_FAILURE(kill_compute(victim));
  ASSERT_NO_FATAL_FAILURE(wait_recovered(victim.pid, 60s, "killed while the memory node was out"));

  ASSERT_TRUE(node.restart());
  ASSERT_TRUE(reg().request_replacement(ReplaceRequest{node_id, node.endpoint(), {}}));
  auto rc = armed->wait(60s);
  ASSERT_TRUE(rc) << "the leader did not die in the replacement's pause\n" << armed->tail();
  EXPECT_EQ(*rc, 128 + SIGKILL) << armed->tail();
  // It died as the pause began: the pids published failed before were
  // fenced at the replacement already (before the world stopped: a long-
  // lived cluster has thousands, one round trip each).
  auto early = ControlClient::connect(node.endpoint(), node.identity(victim.pid), 5s);
  ASSERT_FALSE(early) << "the dead compute process's pid logged in at the replacement";
  EXPECT_EQ(early.status().code(), Errc::kFenced) << early.status().to_string();

  ASSERT_TRUE(wait_until(90s, [&] {
    auto r = zk_read([](Registry& reg) { return reg.read_cluster(); });
    auto req = zk_read([](Registry& reg) { return reg.replacement_request(); });
    return r && req && r->failed_memory.empty() && !*req;
  }, 50ms)) << "the next leader did not finish the replacement\n" << fds_[2]->tail() << fds_[3]->tail();
  auto after = zk_read([](Registry& reg) { return reg.read_cluster(); });
  ASSERT_TRUE(after);
  EXPECT_EQ(after->epoch, 3u) << "fail-over, then replacement: one epoch each";
  const std::string successors = fds_[2]->output() + fds_[3]->output();
  EXPECT_NE(successors.find(fmt::format("memory node {} is back at {}", node_id, node.endpoint().to_string())),
            std::string::npos) << fds_[2]->tail() << fds_[3]->tail();
  ASSERT_NO_FATAL_FAILURE(wait_recovered(*armed_pid, 60s, "the dead leader's own pid"));
  // Published failed before the replacement ran (the successor recovers
  // its predecessor first), so fenced there too: the node refuses it.
  auto fenced = ControlClient::connect(node.endpoint(), node.identity(*armed_pid), 5s);
  ASSERT_FALSE(fenced) << "the dead leader's pid logged in at the replacement";
  EXPECT_EQ(fenced.status().code(), Errc::kFenced) << fenced.status().to_string();
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&a, &b}, "after the node was replaced"));
  ASSERT_NO_FATAL_FAILURE(expect_clean_end({&a, &b}, "after a leader died in the replacement"));
}

// A memory node cut off rather than dead (SIGSTOP: its sockets neither
// answer nor close) is failed over and replaced while its old daemon still
// exists; then the old daemon runs again and heartbeats under the node's
// id. The record binds the id to the replacement's daemon, so the replicas
// refuse those heartbeats, and when the replacement dies it is failed over
// as any dead node is (without the binding the old daemon's heartbeats
// would keep it looking alive for ever and every coordinator that touches
// it would wait). Both compute processes commit throughout.
TEST_F(FailoverTest, AnOldDaemonThatRunsAgainDoesNotSpeakForItsReplacement) {
  Compute a, b;
  ASSERT_NO_FATAL_FAILURE(start_memory_watched_cluster(40, &a, &b));

  LocalMemd& old = cluster_->memds().node(1);
  const uint32_t node_id = old.options().node_id;
  auto failed_over = [&](uint64_t epoch) {
    return wait_until(60s, [&] {
      auto r = zk_read([](Registry& reg) { return reg.read_cluster(); });
      auto paused = zk_read([](Registry& reg) { return reg.pause_in_progress(); });
      return r && paused && r->epoch == epoch && r->failed_memory.size() == 1 && !*paused;
    }, 50ms);
  };
  ASSERT_EQ(::kill(old.pid(), SIGSTOP), 0);
  ASSERT_TRUE(failed_over(2)) << "the stopped daemon was not failed over\n" << fds_[1]->tail();
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&a, &b}, "after the fail-over"));

  // The replacement: the same node id, its own region and port.
  TempDir elsewhere;
  LocalMemd replacement(elsewhere.path(), old.options());
  ASSERT_TRUE(replacement.start()) << replacement.last_error();
  ASSERT_TRUE(reg().request_replacement(ReplaceRequest{node_id, replacement.endpoint(), {}}));
  std::optional<ClusterRecord> back;
  ASSERT_TRUE(wait_until(60s, [&] {
    auto r = zk_read([](Registry& reg) { return reg.read_cluster(); });
    auto req = zk_read([](Registry& reg) { return reg.replacement_request(); });
    if (!r || !req || !r->failed_memory.empty() || *req) return false;
    back = *r;
    return true;
  }, 50ms)) << "the node was not replaced\n" << fds_[1]->tail();
  EXPECT_EQ(back->epoch, 3u);
  ASSERT_TRUE(back->memory_incarnations.contains(node_id)) << "the replacement is not bound";
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&a, &b}, "after the replacement"));

  // The old daemon runs again: its heartbeats are refused as not the node's.
  ASSERT_EQ(::kill(old.pid(), SIGCONT), 0);
  ASSERT_TRUE(wait_until(30s, [&] {
    for (const auto& [id, fd] : fds_) {
      if (fd->output().find("not the node's") == std::string::npos) return false;
    }
    return true;
  }, 50ms)) << "the old daemon's heartbeats were not refused by every replica\n" << fds_[1]->tail();

  const auto t_kill = Clock::now();
  replacement.kill9();
  ASSERT_TRUE(failed_over(4)) << "the dead replacement was not failed over while its old daemon heartbeats\n"
                              << fds_[1]->tail() << fds_[2]->tail() << fds_[3]->tail();
  fprintf(stderr, "[%s] the dead replacement failed over %s after its kill, its old daemon heartbeating\n",
          seconds_since(t0_).c_str(), seconds_since(t_kill).c_str());
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&a, &b}, "after the replacement died"));
  ASSERT_NO_FATAL_FAILURE(expect_clean_end({&a, &b}, "after a replaced node's old daemon ran again"));
}

}  // namespace
}  // namespace pandora::testing

namespace pandora::testing {
namespace {

// 8. A memory daemon dies under two running compute processes (SmallBank
// transfers, 2 replicas on 2 memory nodes): the detector fails it over
// (ARCHITECTURE.md 5; seed 4.3.2.5). The cluster record lists it (epoch
// + 1), every compute process parks for the fail-over's pause with its
// in-flight transactions decided by the live replicas, switches primaries,
// and commits again; none halts or is fenced. A process started afterwards
// joins without contacting the dead daemon. Money is conserved on the
// surviving node and no latch is left.
TEST_F(FailoverTest, MemoryNodeFailsOver) {
  Compute a, b;
  ASSERT_NO_FATAL_FAILURE(start_memory_watched_cluster(25, &a, &b));

  const auto t_kill = Clock::now();
  ASSERT_NO_FATAL_FAILURE(cluster_->memds().node(1).kill9());
  std::optional<ClusterRecord> record;
  ASSERT_TRUE(wait_until(60s, [&] {
    auto r = zk_read([](Registry& reg) { return reg.read_cluster(); });
    auto paused = zk_read([](Registry& reg) { return reg.pause_in_progress(); });
    if (!r || !paused || r->failed_memory.empty() || *paused) return false;
    record = *r;
    return true;
  }, 50ms)) << "the memory node was not failed over\n" << fds_[1]->tail() << fds_[2]->tail() << fds_[3]->tail();
  fprintf(stderr, "[%s] memory node failed over %s after the kill (configuration epoch %lu)\n",
          seconds_since(t0_).c_str(), seconds_since(t_kill).c_str(), static_cast<unsigned long>(record->epoch));
  ASSERT_EQ(record->failed_memory.size(), 1u);
  EXPECT_EQ(record->failed_memory[0].endpoint, cluster_->memds().endpoints()[1]);
  EXPECT_EQ(record->epoch, 2u);
  ASSERT_NO_FATAL_FAILURE(expect_commits_grow({&a, &b}, "after the fail-over"));
  for (Compute* c : {&a, &b}) {
    EXPECT_TRUE(c->proc->running()) << c->name << " stopped\n" << c->proc->tail();
    EXPECT_NE(c->proc->output().find("memory configuration 1: 1 of 2 memory nodes live"), std::string::npos)
        << c->name << " did not switch primaries\n" << c->proc->tail();
  }

  Compute late;
  ASSERT_NO_FATAL_FAILURE(start_compute("late", 3, &late));
  uint64_t decided = 0;  // transactions in flight at the crash, decided by the live replicas
  for (Compute* c : {&a, &b, &late}) {
    auto rc = c->proc->wait(120s);
    ASSERT_TRUE(rc) << c->name << " did not end\n" << c->proc->tail();
    EXPECT_EQ(*rc, 0) << c->name << "\n" << c->proc->tail();
    EXPECT_EQ(c->proc->output().find("halted"), std::string::npos) << c->name << "\n" << c->proc->tail();
    static const std::regex re(R"(memory-node fail-over: (\d+) transaction)");
    std::smatch m;
    const std::string out = c->proc->output();
    if (std::regex_search(out, m, re)) decided += std::stoull(m[1].str());
  }
  // Every coordinator of both runs kept a transaction going: those that
  // met the dead node waited for it to be declared and were decided then.
  EXPECT_GT(decided, 0u) << a.proc->tail() << b.proc->tail();
  fprintf(stderr, "[%s] %lu in-flight transaction(s) decided by the live replicas\n", seconds_since(t0_).c_str(),
          static_cast<unsigned long>(decided));
  ASSERT_NO_FATAL_FAILURE(expect_registry_clean({a.pid, b.pid, late.pid}));
  MemoryImage img;
  ASSERT_NO_FATAL_FAILURE(expect_memory_consistent("after the memory node's fail-over", &img));
  EXPECT_TRUE(img.latches.empty()) << "a latch was left behind";

  // The operator's audit reads the live node only and agrees; loading
  // into the degraded cluster is refused (every shard would start a copy
  // short).
  std::string nodes;
  for (const Endpoint& e : cluster_->memds().endpoints()) nodes += (nodes.empty() ? "" : ",") + e.to_string();
  std::string out;
  // Compute id 1: the loader's, which left cleanly (verify's id must fit
  // a fixed lane slot, and none of the live processes may use it).
  EXPECT_EQ(cluster_->ctl({"verify", "--memory-nodes", nodes, "--compute-id", "1"}, &out), 0) << out;
  EXPECT_NE(out.find("verify: every table is consistent"), std::string::npos) << out;
  EXPECT_NE(cluster_->run_bench("reload", {"--workload", "smallbank", "--accounts", "10", "--load", "--replace",
                                           "--seconds", "0"},
                                &out),
            0);
  EXPECT_NE(out.find("a memory node of this cluster was failed over"), std::string::npos) << out;
}

}  // namespace
}  // namespace pandora::testing
