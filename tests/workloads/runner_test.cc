// deploy/bench/run.sh: one run as three local compute processes against two
// real daemons, merged with one end-of-run check; the same over its ssh
// path with stand-ins for ssh and scp (nothing is ever ssh'd to), and as a
// dry run; and its command-line errors.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/memd_cluster.h"
#include "tests/support/memd_process.h"
#include "workloads/bench/report.h"

namespace pandora::testing {
namespace {

const std::string kRunner = std::string(PANDORA_SOURCE_DIR) + "/deploy/bench/run.sh";

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int runner(std::vector<std::string> args, std::string* out, int timeout_s = 300) {
  args.insert(args.begin(), {"/bin/bash", kRunner});
  return run_command(args, out, timeout_s);
}

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(d_.ok()) << d_.error();
    std::vector<std::string> load = {PANDORA_BENCH_PATH};
    for (const std::string& a : cluster_flags()) load.push_back(a);
    for (const char* a : {"--compute-id", "2", "--load", "--load-workloads", "micro,smallbank", "--keys", "5000",
                          "--accounts", "3000", "--seconds", "0"}) {
      load.push_back(a);
    }
    std::string out;
    ASSERT_EQ(run_command(load, &out, 120), 0) << out;
  }

  std::vector<std::string> cluster_flags() {
    return {"--memory-nodes", d_.endpoints(), "--cluster-id", std::to_string(d_.memd(0).options().cluster_id),
            "--secret-file", d_.memd(0).secret_path(), "--lane-bytes", "4K"};
  }

  // run.sh with 3 processes (compute ids 2, 3, 4) of `workload`; returns
  // the merged report after checking it against the processes' reports.
  // `runner_extra`: more run.sh options; `path_first`: a directory put
  // first on run.sh's PATH (the ssh stand-ins below).
  workloads::BenchReport run_three(const std::vector<std::string>& workload, const std::string& dir,
                                   const std::vector<std::string>& runner_extra = {},
                                   const std::string& path_first = "") {
    std::vector<std::string> args = {"--processes", "3",     "--out",          dir, "--bench", PANDORA_BENCH_PATH,
                                     "--first-compute-id", "2", "--start-margin", "10"};
    for (const std::string& a : runner_extra) args.push_back(a);
    args.push_back("--");
    for (const std::string& a : cluster_flags()) args.push_back(a);
    for (const std::string& a : workload) args.push_back(a);
    for (const char* a : {"--seconds", "3", "--warmup-seconds", "0", "--backend", "tcp", "--coordinators", "2"}) {
      args.push_back(a);
    }
    std::string out;
    int rc = 0;
    if (path_first.empty()) {
      rc = runner(args, &out);
    } else {
      args.insert(args.begin(), {"/usr/bin/env", "PATH=" + path_first + ":" + std::getenv("PATH"), "/bin/bash",
                                 kRunner});
      rc = run_command(args, &out, 300);
    }
    EXPECT_EQ(rc, 0) << out << "\n--- p0.log ---\n" << slurp(dir + "/p0.log");
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(slurp(dir + "/p" + std::to_string(i) + ".log").find("starting late"), std::string::npos)
          << "process " << i << " was not ready by --start-at";
    }
    auto merged = workloads::read_report(dir + "/merged.json");
    EXPECT_TRUE(merged) << merged.status().to_string() << "\n" << out;
    if (!merged) return {};

    uint64_t commits = 0, attempts = 0, total = 0;
    std::set<uint32_t> ids;
    for (int i = 0; i < 3; ++i) {
      auto p = workloads::read_report(dir + "/p" + std::to_string(i) + ".json");
      EXPECT_TRUE(p) << p.status().to_string();
      if (!p || !p->run) return {};
      EXPECT_FALSE(p->check.ran) << "each process must leave the check to the merge";
      EXPECT_GT(p->run->commits, 0u) << "process " << i;
      commits += p->run->commits;
      attempts += p->run->attempts;
      total += p->run->total_commits;
      ids.insert(p->compute_id);
    }
    EXPECT_EQ(ids, (std::set<uint32_t>{2, 3, 4}));
    EXPECT_TRUE(merged->run);
    if (!merged->run) return {};
    EXPECT_EQ(merged->run->commits, commits);
    EXPECT_EQ(merged->run->attempts, attempts);
    EXPECT_EQ(merged->run->total_commits, total);
    EXPECT_EQ(merged->run->latency.count(), merged->run->commits);
    EXPECT_EQ(merged->processes.size(), 3u);
    // Started together: the common window is most of the 3 s run.
    EXPECT_GT(merged->run->seconds, 2.0);
    EXPECT_GT(merged->run->commits_per_second, 0.0);
    EXPECT_TRUE(merged->check.ran);
    EXPECT_TRUE(merged->check.passed) << merged->check.message;
    EXPECT_TRUE(merged->invariant_before.has_value());
    // The merged CSV timeline: commit and config in the header, then rows.
    const std::string csv = slurp(dir + "/merged.csv");
    EXPECT_EQ(csv.rfind("# pandora-bench timeline; build ", 0), 0u) << csv.substr(0, 200);
    EXPECT_NE(csv.find("\nbucket_start_ms,commits,aborts\n0,"), std::string::npos) << csv.substr(0, 400);
    return std::move(*merged);
  }

  MemdCluster d_{2, "32M", "2M"};
  TempDir out_;
};

// --hosts: each process runs over ssh on its host and its report comes
// back by scp. Here ssh and scp are stand-ins that run the remote command
// in a login shell on this machine and copy the file, so the command line
// run.sh sends, its quoting and the copy-back are exercised for real; and
// "remote" DIR is the local DIR, as on a file system the hosts share, where
// copying a report onto itself must not destroy it.
TEST_F(RunnerTest, OverSshEachProcessRunsOnItsHostAndItsReportComesBack) {
  const std::string shims = out_.path() + "/shims";
  ASSERT_EQ(::mkdir(shims.c_str(), 0700), 0);
  const std::string calls = shims + "/calls";
  std::ofstream(shims + "/ssh") << R"(#!/bin/bash
while [[ $# -gt 0 && $1 == -* ]]; do if [[ $1 == -o ]]; then shift 2; else shift; fi; done
echo "ssh $1" >> ")" << calls << R"("
shift
exec /bin/bash -c "$*"
)";
  std::ofstream(shims + "/scp") << R"(#!/bin/bash
while [[ $# -gt 0 && $1 == -* ]]; do if [[ $1 == -o ]]; then shift 2; else shift; fi; done
[[ $# -eq 2 && $1 == *@*:* ]] || { echo "scp stand-in: bad arguments: $*" >&2; exit 64; }
echo "scp $1 $2" >> ")" << calls << R"("
exec cp -- "${1#*:}" "$2"
)";
  ASSERT_EQ(::chmod((shims + "/ssh").c_str(), 0700), 0);
  ASSERT_EQ(::chmod((shims + "/scp").c_str(), 0700), 0);
  const std::string hosts = out_.path() + "/hosts";
  std::ofstream(hosts) << "alice@host-a\nbob@host-b\n";
  const std::string dir = out_.path() + "/over ssh";  // a space: quoting must hold
  const workloads::BenchReport merged =
      run_three({"--workload", "micro", "--keys", "5000", "--write-ratio", "1"}, dir, {"--hosts", hosts}, shims);
  if (HasFailure()) return;
  EXPECT_NE(merged.check.message.find("check passed"), std::string::npos) << merged.check.message;
  const std::string log = slurp(calls);
  // Processes 0 and 2 on host-a, 1 on host-b; each one's three files back.
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("ssh alice@host-a\n"), 2u) << log;
  EXPECT_EQ(count("ssh bob@host-b\n"), 1u) << log;
  EXPECT_EQ(count("scp bob@host-b:" + dir + "/p1.json " + dir + "/.p1.json.part\n"), 1u) << log;
  EXPECT_EQ(count("scp "), 9u) << log;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(slurp(dir + "/p" + std::to_string(i) + ".csv").find("bucket_start_ms"), std::string::npos) << i;
    EXPECT_FALSE(std::ifstream(dir + "/.p" + std::to_string(i) + ".json.part").good()) << "left a partial copy";
  }
}

TEST_F(RunnerTest, ThreeProcessesMergedWithOneCheckMicroAndSmallBank) {
  const std::string micro_dir = out_.path() + "/micro";
  const workloads::BenchReport micro =
      run_three({"--workload", "micro", "--keys", "5000", "--write-ratio", "1"}, micro_dir);
  if (HasFailure()) return;
  EXPECT_NE(micro.check.message.find("check passed"), std::string::npos) << micro.check.message;
  const workloads::BenchReport smallbank = run_three({"--workload", "smallbank", "--accounts", "3000"},
                                                     out_.path() + "/smallbank");
  if (HasFailure()) return;
  EXPECT_NE(smallbank.check.message.find("check passed: total money"), std::string::npos) << smallbank.check.message;

  // The check really covers every process: a merge that lost one unit of
  // one process's committed changes fails it.
  auto p1 = workloads::read_report(micro_dir + "/p1.json");
  ASSERT_TRUE(p1);
  p1->run->committed_delta -= 1;
  ASSERT_TRUE(workloads::write_report_files(*p1, micro_dir + "/p1-tampered.json", ""));
  std::vector<std::string> merge = {PANDORA_BENCH_PATH};
  for (const std::string& a : cluster_flags()) merge.push_back(a);
  for (const std::string& a :
       {std::string("--compute-id"), std::string("2"), std::string("--workload"), std::string("micro"),
        std::string("--keys"), std::string("5000"), std::string("--write-ratio"), std::string("1"),
        std::string("--merge"), micro_dir + "/p0.json," + micro_dir + "/p1-tampered.json," + micro_dir + "/p2.json",
        std::string("--baseline-report"), micro_dir + "/baseline.json"}) {
    merge.push_back(a);
  }
  std::string out;
  EXPECT_EQ(run_command(merge, &out, 120), 1) << out;
  EXPECT_NE(out.find("check FAILED"), std::string::npos) << out;
  EXPECT_NE(out.find("MISMATCH by 1"), std::string::npos) << out;
}

// The ssh path, printed only: each process on its host (round robin), same
// binary path, reports copied back; nothing is run.
TEST(RunnerDryRun, PrintsSshCommandsPerHost) {
  TempDir dir;
  const std::string hosts = dir.path() + "/hosts";
  std::ofstream(hosts) << "# two machines\nalice@node-1\n\nbob@node-2.example  # second\n";
  std::string out;
  ASSERT_EQ(runner({"--dry-run", "--hosts", hosts, "--processes", "3", "--out", dir.path() + "/res", "--bench",
                    "/opt/pandora/pandora-bench", "--first-compute-id", "7", "--coordinators-total", "8", "--",
                    "--memory-nodes", "10.0.0.1:7000", "--cluster-id", "5", "--secret-file", "/etc/pandora/secret",
                    "--workload", "micro", "--seconds", "5"},
                   &out, 60),
            0)
      << out;
  // The baseline and the merge run here; the processes over ssh.
  EXPECT_NE(out.find("+ /opt/pandora/pandora-bench --memory-nodes 10.0.0.1:7000"), std::string::npos) << out;
  EXPECT_NE(out.find("--compute-id 7 --seconds 0 --report " + dir.path() + "/res/baseline.json"), std::string::npos)
      << out;
  const size_t p0 = out.find("+ ssh -o BatchMode=yes alice@node-1 ");
  const size_t p1 = out.find("+ ssh -o BatchMode=yes bob@node-2.example ");
  const size_t p2 = out.find("+ ssh -o BatchMode=yes alice@node-1 ", p0 + 1);
  ASSERT_NE(p0, std::string::npos) << out;
  ASSERT_NE(p1, std::string::npos) << out;
  ASSERT_NE(p2, std::string::npos) << out;
  const std::string line0 = out.substr(p0, out.find('\n', p0) - p0);
  const std::string line2 = out.substr(p2, out.find('\n', p2) - p2);
  EXPECT_NE(line0.find("/opt/pandora/pandora-bench"), std::string::npos) << line0;
  EXPECT_NE(line0.find("--compute-id\\ 7"), std::string::npos) << line0;
  EXPECT_NE(line2.find("--compute-id\\ 9"), std::string::npos) << line2;
  // 8 coordinators over 3 processes: 3, 3, 2.
  EXPECT_NE(line0.find("--coordinators\\ 3"), std::string::npos) << line0;
  EXPECT_NE(line2.find("--coordinators\\ 2"), std::string::npos) << line2;
  EXPECT_NE(line0.find("--start-at\\ "), std::string::npos) << line0;
  EXPECT_NE(line0.find("--no-check"), std::string::npos) << line0;
  EXPECT_NE(out.find("+ scp -q -o BatchMode=yes bob@node-2.example:" + dir.path() + "/res/p1.json"),
            std::string::npos)
      << out;
  // (printf %q quotes the commas of the list: the lines paste into a shell.)
  EXPECT_NE(out.find("--merge " + dir.path() + "/res/p0.json\\," + dir.path() + "/res/p1.json\\," + dir.path() +
                     "/res/p2.json --baseline-report"),
            std::string::npos)
      << out;
  // Every process gets the same --start-at.
  const auto start_of = [](const std::string& line) {
    const size_t at = line.find("--start-at\\ ");
    return at == std::string::npos ? std::string() : line.substr(at, 26);
  };
  EXPECT_EQ(start_of(line0), start_of(line2));
  // A dry run creates nothing.
  EXPECT_NE(::access((dir.path() + "/res").c_str(), F_OK), 0);

  // With --zookeeper the registry assigns pids: no --compute-id anywhere.
  ASSERT_EQ(runner({"--dry-run", "--processes", "2", "--out", dir.path() + "/zk", "--bench", "/b", "--",
                    "--zookeeper", "127.0.0.1:2181", "--cluster-id", "5", "--secret-file", "/s"},
                   &out, 60),
            0)
      << out;
  EXPECT_EQ(out.find("compute-id"), std::string::npos) << out;
  EXPECT_NE(out.find("--merge " + dir.path() + "/zk/p0.json\\," + dir.path() + "/zk/p1.json"), std::string::npos)
      << out;
}

TEST(RunnerDryRun, RefusesBadCommandLines) {
  TempDir dir;
  const std::string o = dir.path() + "/o";
  auto refused = [&](std::vector<std::string> args, const std::string& needle) {
    std::string out;
    EXPECT_EQ(runner(args, &out, 60), 2) << out;
    EXPECT_NE(out.find(needle), std::string::npos) << "expected '" << needle << "' in: " << out;
  };
  refused({"--dry-run", "--processes", "0", "--out", o}, "--processes must be a positive integer");
  refused({"--dry-run", "--processes", "2"}, "--out DIR is required");
  refused({"--dry-run", "--out", o, "--", "--report", "x.json"}, "--report is set by the runner");
  refused({"--dry-run", "--out", o, "--", "--compute-id", "3"}, "--compute-id is set by the runner");
  refused({"--dry-run", "--out", o, "--bogus"}, "unknown option '--bogus'");
  refused({"--dry-run", "--out", o, "--coordinators-total", "4", "--", "--coordinators", "2"}, "exclude each other");
  const std::string hosts = dir.path() + "/hosts";
  std::ofstream(hosts) << "node-without-user\n";
  refused({"--dry-run", "--out", o, "--hosts", hosts}, "'node-without-user' is not user@host");
  std::string out;
  EXPECT_EQ(runner({"--help"}, &out, 60), 0) << out;
  EXPECT_NE(out.find("Usage: bash deploy/bench/run.sh"), std::string::npos) << out;
}

}  // namespace
}  // namespace pandora::testing
