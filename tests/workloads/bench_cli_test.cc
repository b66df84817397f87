// pandora-bench as a user runs it: --help, bad flags (exit 2 naming the
// flag), and short end-to-end runs against two real daemons.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/transport/client.h"
#include "litmus/history/checker.h"
#include "tests/support/fake_daemon.h"
#include "litmus/history/history.h"
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
  expect_usage_error({"--workload", "tpcc"}, "--workload");
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
  expect_usage_error({"--load", "--load-workloads", "micro,tatp"}, "--load-workloads");
  expect_usage_error({"--timeline-ms", "0"}, "--timeline-ms");
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

// A fenced compute node stops at once with its own exit code and says why,
// instead of retrying for the rest of --seconds (it can never commit again).
TEST(BenchFenced, StopsAtOnceWithExitCodeSix) {
  MemdCluster d(2, "32M", "2M");
  ASSERT_TRUE(d.ok()) << d.error();
  const std::vector<std::string> common = {
      "--memory-nodes", d.endpoints(), "--cluster-id", std::to_string(d.memd(0).options().cluster_id),
      "--secret-file", d.memd(0).secret_path(), "--lane-bytes", "4K", "--workload", "smallbank",
      "--accounts", "2000", "--backend", "tcp"};
  std::string out;
  std::vector<std::string> load = common;
  for (const char* a : {"--compute-id", "2", "--load", "--seconds", "0"}) load.push_back(a);
  ASSERT_EQ(bench(load, &out), 0) << out;

  std::vector<std::string> run = common;
  for (const char* a : {"--compute-id", "5", "--seconds", "120", "--warmup-seconds", "0", "--no-check"}) {
    run.push_back(a);
  }
  ClientIdentity admin{d.memd(0).options().cluster_id, d.memd(0).options().secret, wire::Role::kAdmin, 0};
  auto writes_now = [&] {
    uint64_t w = 0;
    for (size_t n = 0; n < d.size(); ++n) {
      auto ctl = ControlClient::connect(d.memd(n).endpoint(), admin, std::chrono::seconds(5));
      auto st = ctl ? (*ctl)->stats() : Result<wire::StatsReply>(Errc::kIo, "no control session");
      if (st) w += st->writes;
    }
    return w;
  };
  const uint64_t loaded = writes_now();  // the load's writes
  int rc = -1;
  std::string run_out;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread runner([&] { rc = bench(run, &run_out, 150); });
  // Fence pid 5 once it is committing transactions (its commit WRITEs show
  // in the daemons' counters; bounded wait).
  bool running = false;
  for (int i = 0; i < 600 && !running; ++i) {
    running = writes_now() > loaded + 200;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!running) {
    runner.join();
    FAIL() << "the bench never ran transactions: " << run_out;
  }
  for (size_t n = 0; n < d.size(); ++n) {
    auto ctl = ControlClient::connect(d.memd(n).endpoint(), admin, std::chrono::seconds(5));
    ASSERT_TRUE(ctl);
    ASSERT_TRUE((*ctl)->fence(5));
  }
  runner.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(rc, 6) << run_out;
  EXPECT_NE(run_out.find("was fenced"), std::string::npos) << run_out;
  EXPECT_LT(secs, 60.0) << "a fenced node kept retrying";
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

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
  ASSERT_EQ(bench(args, &out), 0) << out;
  EXPECT_NE(out.find("loaded 11000 rows"), std::string::npos) << out;
  EXPECT_NE(out.find("throughput: "), std::string::npos) << out;
  EXPECT_NE(out.find("commits/s"), std::string::npos) << out;
  EXPECT_NE(out.find("check passed"), std::string::npos) << out;
  EXPECT_NE(out.find("remote ops per committed transaction"), std::string::npos) << out;
  const std::string json = read_file(report);
  EXPECT_NE(json.find("\"commits_per_second\": "), std::string::npos) << json;
  EXPECT_NE(json.find("\"passed\": true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"p999\": "), std::string::npos) << json;

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
  ASSERT_GT(traces->size(), 100u) << out;
  EXPECT_NE(out.find(fmt::format("history: {} transactions recorded", traces->size())), std::string::npos) << out;
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

}  // namespace
}  // namespace pandora::testing
