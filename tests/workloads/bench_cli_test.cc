// pandora-bench as a user runs it: --help, bad flags (exit 2 naming the
// flag), and short end-to-end runs against two real daemons.
#include <signal.h>
#include <sys/types.h>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/transport/client.h"
#include "litmus/history/checker.h"
#include "tests/support/fake_daemon.h"
#include "compute/trace/history.h"
#include "litmus/history/report.h"
#include "tests/workloads/workload_test_support.h"

namespace pandora::testing {
namespace {

const char* bench_binary() { return PANDORA_BENCH_PATH; }

int bench(std::vector<std::string> args, std::string* out, int timeout_s = 120) {
  args.insert(args.begin(), bench_binary());
  return run_command(args, out, timeout_s);
}

// Writes a secret file as the README says to (mode 600) unless told otherwise.
void write_secret(const std::string& path, const std::string& content, mode_t mode = 0600) {
  std::ofstream(path) << content;
  ASSERT_EQ(::chmod(path.c_str(), mode), 0);
}

TEST(BenchCli, HelpExitsZero) {
  std::string out;
  ASSERT_EQ(bench({"--help"}, &out), 0) << out;
  EXPECT_NE(out.find("Usage: pandora-bench"), std::string::npos) << out;
  for (const char* flag : {"--workload", "--load", "--seconds", "--warmup-seconds", "--report", "--timeline-ms",
                           "--write-ratio", "--zipf-theta", "--accounts", "--hot-fraction", "--protocol",
                           "--memory-nodes", "--threads", "--coordinators"}) {
    EXPECT_NE(out.find(flag), std::string::npos) << flag;
  }
}

class BenchCliErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    secret_ = dir_.path() + "/secret";
    write_secret(secret_, "test-secret-0123456789\n");
  }
  // Required flags (never reached: every case fails before connecting).
  std::vector<std::string> base() const {
    return {"--memory-nodes", "127.0.0.1:9", "--cluster-id", "7", "--secret-file", secret_, "--compute-id", "1"};
  }
  void expect_usage_error(std::vector<std::string> extra, const std::string& needle) {
    std::vector<std::string> args = base();
    args.insert(args.end(), extra.begin(), extra.end());
    std::string out;
    EXPECT_EQ(bench(args, &out, 30), 2) << out;
    EXPECT_NE(out.find(needle), std::string::npos) << "expected '" << needle << "' in: " << out;
  }
  TempDir dir_;
  std::string secret_;
};

TEST_F(BenchCliErrors, BadFlagsExitTwoNamingTheFlag) {
  expect_usage_error({"--bogus", "1"}, "--bogus");
  expect_usage_error({"--workload", "ycsb"}, "--workload");
  expect_usage_error({"--seconds", "soon"}, "--seconds");
  expect_usage_error({"--threads", "0"}, "--threads");
  expect_usage_error({"--protocol", "2pc"}, "--protocol");
  expect_usage_error({"--write-ratio", "1.5"}, "--write-ratio");
  expect_usage_error({"--write-ratio", "half"}, "--write-ratio");
  expect_usage_error({"--skew", "pareto"}, "--skew");
  expect_usage_error({"--skew", "zipf", "--zipf-theta", "1"}, "--zipf-theta");
  expect_usage_error({"--zipf-theta", "0.5"}, "--zipf-theta");          // without --skew zipf
  expect_usage_error({"--accounts", "50"}, "--accounts");               // smallbank flag on micro
  expect_usage_error({"--workload", "smallbank", "--keys", "5"}, "--keys");
  expect_usage_error({"--workload", "smallbank", "--hot-fraction", "-1"}, "--hot-fraction");
  expect_usage_error({"--value-size", "4"}, "--value-size");
  expect_usage_error({"--replace"}, "--replace");
  expect_usage_error({"--load", "--load-workloads", "micro,ycsb"}, "--load-workloads");
  expect_usage_error({"--timeline-ms", "0"}, "--timeline-ms");
  // Lanes given too small for a loaded workload's largest log record.
  expect_usage_error({"--load", "--workload", "tpcc", "--lane-bytes", "16K"},
                     "--lane-bytes 16384 is too small for tpcc, whose largest log record needs lanes of 65536 bytes");
  expect_usage_error({"--load", "--load-workloads", "micro,tpcc", "--lane-bytes", "32K"},
                     "--lane-bytes 32768 is too small for tpcc");
  expect_usage_error({"--plan-log-size", "4M"}, "--plan-log-size needs --plan");
  expect_usage_error({"--plan", "--plan-log-size", "1049000"}, "--plan-log-size 1049000 must be a multiple of 4K");
}

TEST_F(BenchCliErrors, MissingRequiredAndUnreadableSecret) {
  std::string out;
  EXPECT_EQ(bench({"--seconds", "1"}, &out, 30), 2) << out;
  EXPECT_NE(out.find("--cluster-id"), std::string::npos) << out;
  const std::string secret = dir_.path() + "/secret";
  write_secret(secret, "0123456789abcdef0123");
  // Without --zookeeper the memory nodes and the compute id are required;
  // with it the registry assigns the pid, so choosing one is refused.
  EXPECT_EQ(bench({"--cluster-id", "7", "--secret-file", secret, "--compute-id", "1"}, &out, 30), 2) << out;
  EXPECT_NE(out.find("--memory-nodes is required"), std::string::npos) << out;
  EXPECT_EQ(bench({"--cluster-id", "7", "--secret-file", secret, "--memory-nodes", "127.0.0.1:9"}, &out, 30), 2)
      << out;
  EXPECT_NE(out.find("--compute-id is required"), std::string::npos) << out;
  EXPECT_EQ(bench({"--cluster-id", "7", "--secret-file", secret, "--zookeeper", "127.0.0.1:9", "--compute-id", "3"},
                  &out, 30),
            2)
      << out;
  EXPECT_NE(out.find("registry assigns pids"), std::string::npos) << out;
  EXPECT_EQ(bench({"--memory-nodes", "127.0.0.1:9", "--cluster-id", "7", "--secret-file", dir_.path() + "/nope",
                   "--compute-id", "1"},
                  &out, 30),
            2)
      << out;
  EXPECT_NE(out.find("secret"), std::string::npos) << out;
}

// The daemon's rule for secret files, shared (common/secret.h): a secret
// others can read, or one short enough to guess, is refused before anything
// connects.
TEST_F(BenchCliErrors, RefusesShortOrReadableSecretFiles) {
  write_secret(secret_, "short-secret\n");
  expect_usage_error({"--seconds", "1"}, "at least 16");
  write_secret(secret_, "test-secret-0123456789\n", 0644);
  expect_usage_error({"--seconds", "1"}, "chmod 600");
  write_secret(secret_, "test-secret-0123456789\n", 0640);
  expect_usage_error({"--seconds", "1"}, "chmod 600");
}

// A process listening where a memory daemon should be, without the cluster
// secret: the bench refuses it at login, exits non-zero, and the fake never
// receives a byte beyond the Hello (the reproduction wrote every row
// to it and printed "check passed").
TEST(BenchAuth, RefusesAFakeDaemonAndSendsItNothing) {
  TempDir dir;
  const std::string secret = dir.path() + "/secret";
  write_secret(secret, "test-secret-0123456789\n");
  FakeDaemon fake(FakeDaemon::Mode::kNoSecret, 0x5eed);
  ASSERT_TRUE(fake.ok());
  std::string out;
  const int rc = bench({"--memory-nodes", fake.endpoint().to_string(), "--cluster-id", "0x5eed", "--secret-file",
                        secret, "--compute-id", "1", "--workload", "smallbank", "--accounts", "1000", "--load",
                        "--seconds", "1", "--backend", "tcp"},
                       &out, 60);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("did not prove knowledge of the cluster secret"), std::string::npos) << out;
  EXPECT_EQ(out.find("check passed"), std::string::npos) << out;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fake.logins() < 1 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(fake.logins(), 1u);
  EXPECT_EQ(fake.bytes_after_login(), 0u);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The number after `"key": ` in a JSON report (-1 if absent).
int64_t json_number(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\": ";
  const size_t at = json.find(needle);
  if (at == std::string::npos) return -1;
  return std::strtoll(json.c_str() + at + needle.size(), nullptr, 10);
}

// Two daemons loaded with SmallBank and micro, and a bench run of pid 5 in
// the background that the test then disturbs (fence, kill a daemon).
class BenchUnderFailure : public ::testing::Test {
 protected:
  static constexpr int kCoordinators = 4;  // 2 threads x 2
  // Every transaction writes (and logs) to both memory nodes.
  static inline const std::vector<std::string> kSmallBank = {"--workload", "smallbank", "--accounts", "2000"};
  // Read-only: a transaction that meets a dead memory node aborts with
  // nothing logged, so without a stop it would be retried forever.
  static inline const std::vector<std::string> kMicroReadOnly = {"--workload", "micro", "--keys", "5000",
                                                                 "--write-ratio", "0"};

  void SetUp() override {
    ASSERT_TRUE(d_.ok()) << d_.error();
    std::string out;
    std::vector<std::string> load = common(Backend::kTcp);
    for (const char* a : {"--compute-id", "2", "--load", "--load-workloads", "micro,smallbank", "--workload",
                          "smallbank", "--accounts", "2000", "--keys", "5000", "--seconds", "0"}) {
      load.push_back(a);
    }
    ASSERT_EQ(bench(load, &out), 0) << out;
  }
  void TearDown() override {
    if (getenv("BENCH_SHOW_OUTPUT")) std::cerr << "---- pandora-bench ----\n" << read_file(log_) << "----\n";
    if (pid_ > 0) {  // a failed test: do not leave the bench behind
      ::kill(pid_, SIGKILL);
      wait_child(pid_, std::chrono::seconds(10));
    }
  }

  std::vector<std::string> common(Backend backend) {
    return {"--memory-nodes", d_.endpoints(), "--cluster-id", std::to_string(cluster_id()), "--secret-file",
            secret_path_, "--lane-bytes", "4K", "--backend", std::string(backend_name(backend))};
  }
  uint64_t cluster_id() { return d_.memd(0).options().cluster_id; }

  // Starts a 120 s run of pid 5 and waits (bounded) until it has committed
  // transactions, as its progress lines say.
  void start_run(Backend backend, const std::vector<std::string>& workload = kSmallBank) {
    std::vector<std::string> run = common(backend);
    run.insert(run.end(), workload.begin(), workload.end());
    for (const char* a : {"--compute-id", "5", "--seconds", "120", "--warmup-seconds", "0", "--no-check", "--threads",
                          "2", "--coordinators", "2"}) {
      run.push_back(a);
    }
    run.push_back("--report");
    run.push_back(report_);
    run.insert(run.begin(), bench_binary());
    auto pid = spawn_with_output(run, log_, /*append=*/false);
    ASSERT_TRUE(pid) << pid.status().to_string();
    pid_ = *pid;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (committed_so_far() < 200) {
      if (std::chrono::steady_clock::now() > deadline || wait_child(pid_, std::chrono::milliseconds(0)) >= 0) {
        ::kill(pid_, SIGKILL);
        wait_child(pid_, std::chrono::seconds(10));
        pid_ = -1;
        FAIL() << "the bench never ran transactions: " << read_file(log_);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // "(N commits so far)" of the bench's last progress line, 0 before one.
  uint64_t committed_so_far() const {
    const std::string out = read_file(log_);
    const size_t end = out.rfind(" commits so far)");
    if (end == std::string::npos) return 0;
    const size_t open = out.rfind('(', end);
    return open == std::string::npos ? 0 : std::strtoull(out.c_str() + open + 1, nullptr, 10);
  }

  // Waits (bounded) for the run to end: seconds from `since` to then.
  double finish(std::chrono::steady_clock::time_point since) {
    rc_ = wait_child(pid_, std::chrono::seconds(150));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
    if (rc_ < 0) {  // still running after 150 s: it never stopped by itself
      ::kill(pid_, SIGKILL);
      wait_child(pid_, std::chrono::seconds(10));
    }
    pid_ = -1;
    run_out_ = read_file(log_);
    return secs;
  }

  std::unique_ptr<ControlClient> admin(size_t node) {
    ClientIdentity id{cluster_id(), d_.memd(node).options().secret, wire::Role::kAdmin, 0};
    auto ctl = ControlClient::connect(d_.memd(node).endpoint(), id, std::chrono::seconds(5));
    return ctl ? std::move(*ctl) : nullptr;
  }

  // What every early stop must show: the run ended instead of spinning, a
  // report covers it, and only transactions in flight when it broke failed.
  void expect_stopped_without_spinning() {
    const std::string json = read_file(report_);
    ASSERT_FALSE(json.empty()) << "no --report written:\n" << run_out_;
    // Each coordinator fails at most one transaction on the transport, then
    // stops (before the fix: millions of failed attempts).
    EXPECT_LE(json_number(json, "transport"), kCoordinators) << json;
    EXPECT_LE(json_number(json, "uncertain"), kCoordinators) << json;
    EXPECT_GT(json_number(json, "commits"), 0) << json;
    EXPECT_NE(run_out_.find("check skipped"), std::string::npos) << run_out_;
  }

  MemdCluster d_{2, "32M", "2M"};
  std::string secret_path_ = d_.memd(0).secret_path();
  TempDir out_dir_;
  std::string report_ = out_dir_.path() + "/run.json";
  std::string log_ = out_dir_.path() + "/run.log";
  pid_t pid_ = -1;  // the running bench, until finish()
  int rc_ = -1;
  std::string run_out_;
};

// A fenced compute node stops at once with its own exit code and says why,
// instead of retrying for the rest of --seconds (it can never commit again).
TEST_F(BenchUnderFailure, FencedStopsAtOnceWithExitCodeSix) {
  start_run(Backend::kTcp);
  if (HasFatalFailure()) return;
  const auto fenced_at = std::chrono::steady_clock::now();
  for (size_t n = 0; n < d_.size(); ++n) {
    auto ctl = admin(n);
    ASSERT_TRUE(ctl);
    ASSERT_TRUE(ctl->fence(5));
  }
  const double secs = finish(fenced_at);
  EXPECT_EQ(rc_, 6) << run_out_;
  EXPECT_NE(run_out_.find("was fenced"), std::string::npos) << run_out_;
  EXPECT_LT(secs, 30.0) << "a fenced node kept retrying";
  expect_stopped_without_spinning();
}

// A memory daemon killed under a running bench: every coordinator stops,
// the bench exits 8 naming that memory node, and only transactions in
// flight at the kill count as uncertain. tcp sees the connection close, shm
// sees the daemon's control session end; the read-only run shows that
// failures before logging (which halt nothing) no longer spin.
struct LostNodeCase {
  const char* name;
  Backend backend;
  bool read_only;
};

class BenchMemoryNodeLost : public BenchUnderFailure, public ::testing::WithParamInterface<LostNodeCase> {};

TEST_P(BenchMemoryNodeLost, StopsPromptlyWithExitCodeEightNamingTheNode) {
  start_run(GetParam().backend, GetParam().read_only ? kMicroReadOnly : kSmallBank);
  if (HasFatalFailure()) return;
  const std::string victim = d_.memd(1).endpoint().to_string();
  const auto killed_at = std::chrono::steady_clock::now();
  d_.memd(1).kill9();
  const double secs = finish(killed_at);
  EXPECT_EQ(rc_, 8) << run_out_;
  EXPECT_NE(run_out_.find("memory node 2 (" + victim + "): connection lost"), std::string::npos) << run_out_;
  EXPECT_LT(secs, 30.0) << "the bench kept retrying against a dead memory node";
  expect_stopped_without_spinning();
  if (GetParam().read_only) EXPECT_EQ(json_number(read_file(report_), "uncertain"), 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, BenchMemoryNodeLost,
                         ::testing::Values(LostNodeCase{"tcp", Backend::kTcp, false},
                                           LostNodeCase{"shm", Backend::kShm, false},
                                           LostNodeCase{"tcp_read_only", Backend::kTcp, true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(BenchEndToEnd, LoadRunAndCheckAgainstTwoDaemons) {
  MemdCluster d(2, "32M", "2M");
  ASSERT_TRUE(d.ok()) << d.error();
  const std::vector<std::string> common = {
      "--memory-nodes", d.endpoints(),
      "--cluster-id",   std::to_string(d.memd(0).options().cluster_id),
      "--secret-file",  d.memd(0).secret_path(),
      "--compute-id",   "3",
      "--lane-bytes",   "4K",
      "--coordinators", "4",
      "--keys",         "5000",
      "--accounts",     "3000"};
  TempDir out_dir;
  const std::string report = out_dir.path() + "/report.json";

  // One load for both workloads, then a 2 s micro run on tcp.
  std::vector<std::string> args = common;
  for (const char* a : {"--load", "--load-workloads", "micro,smallbank", "--workload", "micro", "--seconds", "2",
                        "--warmup-seconds", "0", "--backend", "tcp", "--write-ratio", "1"}) {
    args.push_back(a);
  }
  args.push_back("--report");
  args.push_back(report);
  std::string out;
  const auto realtime_ns = [] {
    return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
  };
  const int64_t before_run = realtime_ns();
  ASSERT_EQ(bench(args, &out), 0) << out;
  const int64_t after_run = realtime_ns();
  EXPECT_NE(out.find("loaded 11000 rows"), std::string::npos) << out;
  EXPECT_NE(out.find("throughput: "), std::string::npos) << out;
  EXPECT_NE(out.find("commits/s"), std::string::npos) << out;
  EXPECT_NE(out.find("check passed"), std::string::npos) << out;
  EXPECT_NE(out.find("remote ops per committed transaction"), std::string::npos) << out;
  const std::string json = read_file(report);
  EXPECT_NE(json.find("\"commits_per_second\": "), std::string::npos) << json;
  EXPECT_NE(json.find("\"passed\": true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"p999\": "), std::string::npos) << json;
  // The timeline's bucket 0 on CLOCK_REALTIME (plots of several processes
  // share one clock): inside the run, at least 2 s before its end.
  const int64_t timeline_start = json_number(json, "start_realtime_ns");
  EXPECT_GT(timeline_start, before_run) << json;
  EXPECT_LT(timeline_start, after_run - 2'000'000'000) << json;

  // Attach to the same load: SmallBank on shm under pandora, recording the
  // history; the checker must find every transaction and no anomaly.
  const std::string hist = out_dir.path() + "/run.hist";
  args = common;
  for (const char* a : {"--workload", "smallbank", "--seconds", "1", "--warmup-seconds", "0", "--backend", "shm",
                        "--compute-id", "4"}) {
    args.push_back(a);
  }
  args.erase(std::find(args.begin(), args.end(), "--keys"), std::find(args.begin(), args.end(), "--keys") + 2);
  args.erase(std::find(args.begin(), args.end(), "--compute-id"), std::find(args.begin(), args.end(), "--compute-id") + 2);
  args.push_back("--history");
  args.push_back(hist);
  ASSERT_EQ(bench(args, &out), 0) << out;
  auto traces = history::read_history(hist);
  ASSERT_TRUE(traces) << traces.status().to_string();
  ASSERT_GT(traces->txns.size(), 100u) << out;
  EXPECT_NE(out.find(fmt::format("history: {} transactions recorded", traces->txns.size())), std::string::npos) << out;
  const history::Report report_h = history::check(*traces);
  EXPECT_TRUE(report_h.clean()) << history::format_report_text(report_h);
  EXPECT_GT(report_h.summary.committed, 100u);
  EXPECT_GT(report_h.summary.edges[0] + report_h.summary.edges[1] + report_h.summary.edges[2], 0u)
      << "a contended run must produce dependency edges";

  // SmallBank on tcp with a MAC on every data-plane frame (--frame-mac): the
  // same checks pass, and no frame was refused.
  args = common;
  for (const char* a : {"--workload", "smallbank", "--seconds", "1", "--warmup-seconds", "0", "--backend", "tcp",
                        "--frame-mac"}) {
    args.push_back(a);
  }
  args.erase(std::find(args.begin(), args.end(), "--keys"), std::find(args.begin(), args.end(), "--keys") + 2);
  ASSERT_EQ(bench(args, &out), 0) << out;
  EXPECT_NE(out.find("check passed: total money"), std::string::npos) << out;
  {
    ClientIdentity admin{d.memd(0).options().cluster_id, d.memd(0).options().secret, wire::Role::kAdmin, 0};
    for (size_t n = 0; n < d.size(); ++n) {
      auto ctl = ControlClient::connect(d.memd(n).endpoint(), admin, std::chrono::seconds(5));
      ASSERT_TRUE(ctl) << ctl.status().to_string();
      auto st = (*ctl)->stats();
      ASSERT_TRUE(st);
      EXPECT_EQ(st->bad_frame_macs, 0u);
      EXPECT_EQ(st->malformed_frames, 0u);
    }
  }

  // Attach to the same load: SmallBank on shm, ford protocol.
  args = common;
  for (const char* a : {"--workload", "smallbank", "--seconds", "2", "--warmup-seconds", "0", "--backend", "shm",
                        "--protocol", "ford"}) {
    args.push_back(a);
  }
  // --keys belongs to micro, which this run does not touch.
  args.erase(std::find(args.begin(), args.end(), "--keys"), std::find(args.begin(), args.end(), "--keys") + 2);
  ASSERT_EQ(bench(args, &out), 0) << out;
  EXPECT_NE(out.find("throughput: "), std::string::npos) << out;
  EXPECT_NE(out.find("check passed: total money"), std::string::npos) << out;

  // Attaching with a different account count is refused with a reason.
  std::replace(args.begin(), args.end(), std::string("3000"), std::string("4000"));
  EXPECT_EQ(bench(args, &out), 1) << out;
  EXPECT_NE(out.find("loaded with 3000 rows"), std::string::npos) << out;

  // Loading again over existing tables needs --replace.
  args = common;
  for (const char* a : {"--load", "--load-workloads", "micro,smallbank", "--seconds", "0"}) args.push_back(a);
  EXPECT_EQ(bench(args, &out), 1) << out;
  EXPECT_NE(out.find("already carry tables"), std::string::npos) << out;
}

// Without --lane-bytes a --load sizes the lanes for the largest log record
// of what it loads (TPC-C's Delivery needs 64 KiB, above the 16 KiB
// default); later runs read the size from the table directory.
TEST(BenchEndToEnd, LoadSizesLanesForTheLoadedWorkloads) {
  MemdCluster d(1, "64M", "8M");  // 8 MiB: two fixed slots of 64 lanes of 64 KiB
  ASSERT_TRUE(d.ok()) << d.error();
  const std::vector<std::string> cluster = {"--memory-nodes", d.endpoints(), "--cluster-id",
                                            std::to_string(d.memd(0).options().cluster_id), "--secret-file",
                                            d.memd(0).secret_path(), "--compute-id", "1"};
  const std::vector<std::string> tpcc_size = {"--warehouses", "1", "--tpcc-items", "100",
                                              "--tpcc-customers-per-district", "30",
                                              "--tpcc-max-orders-per-district", "1000"};
  // `cluster` + `tpcc_size` + `extra`.
  auto with = [&](std::initializer_list<const char*> extra) {
    std::vector<std::string> args = cluster;
    args.insert(args.end(), tpcc_size.begin(), tpcc_size.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  std::string out;
  // A second process attaches and runs TPC-C: its lanes come from the
  // directory.
  auto attach_and_run = [&] {
    std::vector<std::string> args = with({"--workload", "tpcc", "--coordinators", "2", "--seconds", "1",
                                          "--warmup-seconds", "0"});
    args[std::find(args.begin(), args.end(), "--compute-id") - args.begin() + 1] = "2";
    ASSERT_EQ(bench(args, &out), 0) << out;
    EXPECT_EQ(out.find("log lanes of"), std::string::npos) << out;
    EXPECT_NE(out.find("check passed"), std::string::npos) << out;
  };

  ASSERT_EQ(bench(with({"--workload", "tpcc", "--coordinators", "2", "--load", "--seconds", "1", "--warmup-seconds",
                        "0"}),
                  &out),
            0)
      << out;
  EXPECT_NE(out.find("log lanes of 65536 bytes (tpcc's largest log record"), std::string::npos) << out;
  EXPECT_NE(out.find("check passed"), std::string::npos) << out;
  ASSERT_NO_FATAL_FAILURE(attach_and_run());

  // The lanes hold the largest record of every workload loaded, not only
  // of the one that runs.
  ASSERT_EQ(bench(with({"--workload", "smallbank", "--accounts", "1000", "--load", "--load-workloads",
                        "smallbank,tpcc", "--replace", "--seconds", "0"}),
                  &out),
            0)
      << out;
  EXPECT_NE(out.find("log lanes of 65536 bytes (tpcc's largest log record"), std::string::npos) << out;
  ASSERT_NO_FATAL_FAILURE(attach_and_run());
}

// The number after `key=` on the "plan:" line of --plan's output; 0 if absent.
uint64_t plan_value(const std::string& out, const std::string& key) {
  const size_t line = out.find("plan: ");
  if (line == std::string::npos) return 0;
  const size_t at = out.find(" " + key + "=", line);
  if (at == std::string::npos || out.find('\n', line) < at) return 0;
  return std::strtoull(out.c_str() + at + key.size() + 2, nullptr, 10);
}

// --plan connects to nothing and needs no cluster options; the region size
// it names is exact: a daemon of that --size takes the load, one 4 KiB
// smaller refuses it.
TEST(BenchPlan, NamesTheExactRegionSizeALoadNeeds) {
  const std::vector<std::string> micro = {"--workload", "micro", "--keys", "20000", "--lane-bytes", "4K"};
  std::vector<std::string> args = micro;
  for (const char* a : {"--plan", "--plan-log-size", "2M"}) args.push_back(a);
  std::string out;
  ASSERT_EQ(bench(args, &out, 30), 0) << out;
  const uint64_t without_log = plan_value(out, "region_bytes_without_log");
  const uint64_t table_bytes = plan_value(out, "table_bytes");
  ASSERT_GT(table_bytes, 20000u * 2 * 64) << out;  // load factor <= 1/2 of slots >= 64 B
  ASSERT_GE(without_log, table_bytes + (64u << 10)) << out;
  EXPECT_EQ(without_log % 4096, 0u) << out;
  EXPECT_EQ(plan_value(out, "lane_bytes"), 4096u) << out;
  EXPECT_NE(out.find(fmt::format("--size {}M --log-size 2M (at least {} bytes;", (without_log + (3u << 20) - 1) >> 20,
                                  without_log + (2u << 20))),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("holds 512 lanes: 8 compute nodes"), std::string::npos) << out;

  for (const uint64_t size : {without_log + (2u << 20), without_log + (2u << 20) - 4096}) {
    MemdCluster d(1, std::to_string(size), "2M");
    ASSERT_TRUE(d.ok()) << d.error();
    args = micro;
    for (const std::string& a : {std::string("--memory-nodes"), d.endpoints(), std::string("--cluster-id"),
                                 std::to_string(d.memd(0).options().cluster_id), std::string("--secret-file"),
                                 d.memd(0).secret_path(), std::string("--compute-id"), std::string("1"),
                                 std::string("--load"), std::string("--seconds"), std::string("0")}) {
      args.push_back(a);
    }
    const bool fits = size == without_log + (2u << 20);
    EXPECT_EQ(bench(args, &out), fits ? 0 : 1) << size << ": " << out;
    if (!fits) EXPECT_NE(out.find("tables need " + std::to_string(table_bytes) + " bytes"), std::string::npos) << out;
  }
}

TEST(BenchPlan, LanesFollowTheLargestLogRecordUnlessGiven) {
  std::string out;
  const std::vector<std::string> tpcc = {"--plan", "--load-workloads", "smallbank,tpcc", "--warehouses", "1",
                                         "--tpcc-items", "100", "--tpcc-customers-per-district", "30"};
  ASSERT_EQ(bench(tpcc, &out, 30), 0) << out;
  EXPECT_EQ(plan_value(out, "lane_bytes"), 65536u) << out;
  EXPECT_NE(out.find("log lanes: 65536 bytes (tpcc's largest log record)"), std::string::npos) << out;
  for (const char* table : {"savings", "checking", "tpcc-warehouse", "tpcc-district", "tpcc-customer",
                            "tpcc-history", "tpcc-new-order", "tpcc-order", "tpcc-order-line", "tpcc-item",
                            "tpcc-stock", "tpcc-customer-name", "tpcc-last-order", "tpcc-delivery-cursor"}) {
    EXPECT_NE(out.find(std::string("  ") + table + " "), std::string::npos) << table << " in " << out;
  }
  std::vector<std::string> args = tpcc;
  args.push_back("--lane-bytes");
  args.push_back("16K");
  EXPECT_EQ(bench(args, &out, 30), 2) << out;
  EXPECT_NE(out.find("--lane-bytes 16384 is too small for tpcc"), std::string::npos) << out;
  // Plain SmallBank keeps the default.
  ASSERT_EQ(bench({"--plan", "--workload", "smallbank", "--accounts", "1000"}, &out, 30), 0) << out;
  EXPECT_EQ(plan_value(out, "lane_bytes"), 16384u) << out;
}

}  // namespace
}  // namespace pandora::testing
