// pandora-bench reports as files: JSON round trip, refusal of damaged or
// foreign files, merging of several processes' reports (histograms bucket
// by bucket, throughput over the common window), the CSV timeline, and
// deploy/plot/plot.py drawing a report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/support/memd_process.h"
#include "workloads/bench/build_info.h"
#include "workloads/bench/report.h"

namespace pandora::workloads {
namespace {

constexpr uint64_t kStart = 1'700'000'000'000'000'000ull;  // some CLOCK_REALTIME, ns
constexpr uint64_t kMs = 1'000'000;

// A report of process `id`: 2 s measured after 1 s warm-up, 100 ms buckets,
// timeline starting `offset_ms` after kStart, latencies `base_ns + i`.
BenchReport sample(uint32_t id, uint64_t offset_ms, uint64_t commits_per_bucket, uint64_t base_ns) {
  BenchReport r;
  r.git_commit = "abc1234";
  r.config = {{"workload", "micro"}, {"compute-id", std::to_string(id)}, {"secret-file", "/tmp/s"}};
  r.workload = "micro";
  r.workload_options = {{"keys", 1000}, {"write_ratio", 0.5}, {"skew", "uniform"}};
  r.protocol = "pandora";
  r.backend = "tcp";
  r.memory_nodes = 2;
  r.replicas = 2;
  r.threads = 1;
  r.coordinators = 4;
  r.compute_id = id;
  r.seed = 1;
  ReportRun run;
  run.seconds = 2.0;
  run.warmup_seconds = 1.0;
  run.timeline = {100, 1000, kStart + offset_ms * kMs, {}, {}};
  for (int b = 0; b < 30; ++b) {
    run.timeline.commits.push_back(commits_per_bucket);
    run.timeline.aborts.push_back(b % 3);
  }
  run.commits = 20 * commits_per_bucket;  // the 20 measured buckets
  run.attempts = run.commits + 7;
  run.commits_per_second = static_cast<double>(run.commits) / run.seconds;
  run.aborts = {{"latched", 5}, {"validation-failed", 2}, {"transport", 0}};
  run.types = {{"read", run.commits / 2, 3, {run.commits / 2, run.commits / 2 * 4, 0, 0, 0}},
               {"rmw", run.commits - run.commits / 2, 4,
                {run.commits - run.commits / 2, 7, (run.commits - run.commits / 2) * 2, 1, 2}}};
  for (uint64_t i = 0; i < run.commits; ++i) run.latency.record(base_ns + i * 37);
  run.ops = {run.commits, 4 * run.commits, run.commits, 2 * run.commits, 0};
  run.committed_delta = static_cast<int64_t>(id) * 100 - 3;
  run.uncertain = 0;
  run.total_commits = 30 * commits_per_bucket;
  r.run = std::move(run);
  r.check = {false, false, "--no-check"};
  return r;
}

void expect_same_histogram(const LatencyHistogram& a, const LatencyHistogram& b) {
  ASSERT_EQ(a.count(), b.count());
  EXPECT_EQ(a.sum(), b.sum());
  EXPECT_EQ(a.min(), b.min());
  EXPECT_EQ(a.max(), b.max());
  for (int i = 0; i < LatencyHistogram::kBuckets; ++i) ASSERT_EQ(a.bucket_count(i), b.bucket_count(i)) << "bucket " << i;
}

TEST(Report, JsonRoundTripKeepsEveryValue) {
  BenchReport r = sample(3, 0, 50, 20'000);
  r.invariant_before = -42;
  r.check = {true, true, "check passed: sum = 1"};
  const std::string text = format_json(r);
  auto back = parse_report(text, "mem.json");
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->source, "mem.json");
  EXPECT_EQ(back->git_commit, r.git_commit);
  EXPECT_EQ(back->config, r.config);
  EXPECT_EQ(back->workload, r.workload);
  EXPECT_EQ(back->workload_options, r.workload_options);
  EXPECT_EQ(back->protocol, r.protocol);
  EXPECT_EQ(back->backend, r.backend);
  EXPECT_EQ(back->memory_nodes, r.memory_nodes);
  EXPECT_EQ(back->replicas, r.replicas);
  EXPECT_EQ(back->threads, r.threads);
  EXPECT_EQ(back->coordinators, r.coordinators);
  EXPECT_EQ(back->compute_id, r.compute_id);
  EXPECT_EQ(back->seed, r.seed);
  EXPECT_EQ(back->invariant_before, r.invariant_before);
  EXPECT_EQ(back->check, r.check);
  ASSERT_TRUE(back->run);
  const ReportRun& a = *r.run;
  const ReportRun& b = *back->run;
  EXPECT_EQ(b.seconds, a.seconds);
  EXPECT_EQ(b.warmup_seconds, a.warmup_seconds);
  EXPECT_EQ(b.attempts, a.attempts);
  EXPECT_EQ(b.commits, a.commits);
  EXPECT_EQ(b.commits_per_second, a.commits_per_second);
  EXPECT_EQ(b.aborts, a.aborts);
  EXPECT_EQ(b.types, a.types);
  EXPECT_EQ(b.ops, a.ops);
  EXPECT_EQ(b.timeline, a.timeline);
  EXPECT_EQ(b.committed_delta, a.committed_delta);
  EXPECT_EQ(b.uncertain, a.uncertain);
  EXPECT_EQ(b.total_commits, a.total_commits);
  expect_same_histogram(a.latency, b.latency);
  // Written again, the same text: nothing lost or reordered.
  EXPECT_EQ(format_json(*back), text);
}

TEST(Report, ARunlessReportRoundTrips) {
  BenchReport r = sample(1, 0, 1, 1);
  r.run.reset();
  r.invariant_before = 7;
  auto back = parse_report(format_json(r), "x");
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_FALSE(back->run);
  EXPECT_EQ(back->invariant_before, 7);
}

TEST(Report, BuildCommitIsRecorded) {
  const std::string c = build_git_commit();
  EXPECT_FALSE(c.empty());
  // Either a describe of the checkout this test was built from or, from a
  // tarball, "unknown"; never a placeholder left in the generated file.
  EXPECT_EQ(c.find("${"), std::string::npos) << c;
}

// Every damaged variant is refused with the file's name and what is wrong.
TEST(Report, DamagedOrForeignReportsAreRefusedWithAClearMessage) {
  const std::string good = format_json(sample(2, 0, 40, 5'000));
  auto refused = [](const std::string& text, const std::string& needle) {
    auto r = parse_report(text, "bad.json");
    ASSERT_FALSE(r) << "accepted: " << text.substr(0, 200);
    EXPECT_NE(r.status().message().find("bad.json"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  refused(good.substr(0, good.size() / 2), "malformed JSON at byte");
  refused("", "malformed JSON");
  refused(R"({"name": "some other tool", "commits": 5})", "not a pandora-bench report");
  refused("[1, 2, 3]", "not a pandora-bench report");
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  refused(edit("\"version\": 2", "\"version\": 9"), "version 9");
  refused(edit("\"commits\": 800", "\"commits\": \"many\""), "commits: expected an unsigned integer");
  refused(edit("\"attempts\": 807,", ""), "attempts: missing");
  // A histogram whose buckets do not add up, or do not match the commits.
  refused(edit("\"count\": 800", "\"count\": 801"), "buckets hold 800 samples, count says 801");
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(good);
  j["latency_histogram"]["buckets"][0][0] = 5003;  // no bucket boundary
  refused(j.dump(), "no bucket boundary");
  j = nlohmann::ordered_json::parse(good);
  j["timeline"]["aborts"].erase(0);
  refused(j.dump(), "30 commit buckets but 29 abort buckets");
  j = nlohmann::ordered_json::parse(good);
  j["commits"] = 799;
  j["latency_histogram"]["count"] = 800;
  refused(j.dump(), "800 samples for 799 commits");
}

TEST(Report, MissingFileIsAnError) {
  auto r = read_report("/nonexistent/dir/r.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("/nonexistent/dir/r.json"), std::string::npos);
}

TEST(ReportMerge, SumsCountsAndMergesHistogramsBucketByBucket) {
  std::vector<BenchReport> in = {sample(2, 0, 50, 10'000), sample(3, 0, 30, 900'000), sample(4, 0, 20, 50'000'000)};
  for (size_t i = 0; i < in.size(); ++i) in[i].source = fmt::format("p{}.json", i);
  auto m = merge_reports(in);
  ASSERT_TRUE(m) << m.status().to_string();
  ASSERT_TRUE(m->run);
  LatencyHistogram expected;
  uint64_t commits = 0, attempts = 0, total = 0;
  int64_t delta = 0;
  for (const BenchReport& r : in) {
    expected.merge(r.run->latency);
    commits += r.run->commits;
    attempts += r.run->attempts;
    total += r.run->total_commits;
    delta += r.run->committed_delta;
  }
  EXPECT_EQ(m->run->commits, commits);
  EXPECT_EQ(m->run->attempts, attempts);
  EXPECT_EQ(m->run->total_commits, total);
  EXPECT_EQ(m->run->committed_delta, delta);
  EXPECT_EQ(m->run->aborts.at("latched"), 15u);
  EXPECT_EQ(m->run->types[0].aborts, 9u);
  EXPECT_EQ(m->run->types[0].commits + m->run->types[1].commits, commits);
  expect_same_histogram(m->run->latency, expected);
  EXPECT_EQ(m->run->latency.count(), m->run->commits);
  // The merged p99 lies in the slowest process's range (within the
  // histogram's 3%): averaging the processes' p99s would put it far below.
  const uint64_t p99 = m->run->latency.percentile(0.99);
  EXPECT_GE(p99, 48'500'000u);
  double avg_p99 = 0;
  for (const BenchReport& r : in) avg_p99 += static_cast<double>(r.run->latency.percentile(0.99)) / 3;
  EXPECT_GT(static_cast<double>(p99), 2 * avg_p99);
  // Throughput over the common window: (50 + 30 + 20) commits per 100 ms.
  EXPECT_DOUBLE_EQ(m->run->commits_per_second, 1000.0);
  EXPECT_DOUBLE_EQ(m->run->seconds, 2.0);
  EXPECT_EQ(m->processes.size(), 3u);
  EXPECT_EQ(m->processes[1].report, "p1.json");
  EXPECT_EQ(m->processes[1].compute_id, 3u);
  EXPECT_EQ(m->compute_id, 0u);
  // Timelines summed bucket by bucket on one clock.
  ASSERT_EQ(m->run->timeline.commits.size(), 30u);
  EXPECT_EQ(m->run->timeline.commits[0], 100u);
  // The merged report survives a round trip too.
  auto back = parse_report(format_json(*m), "merged.json");
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->processes, m->processes);
  EXPECT_EQ(back->common_window_start_ns, m->common_window_start_ns);
  expect_same_histogram(back->run->latency, expected);
}

TEST(ReportMerge, ThroughputCountsOnlyTheCommonWindow) {
  // Process 3 started 500 ms later: the common measured window is 1.5 s,
  // and its first buckets (commits 1000 per bucket) fall before it.
  BenchReport a = sample(2, 0, 10, 1000);
  BenchReport b = sample(3, 500, 10, 1000);
  for (size_t i = 0; i < 5; ++i) a.run->timeline.commits[10 + i] = 1000;  // a's first measured 500 ms
  auto m = merge_reports({a, b});
  ASSERT_TRUE(m) << m.status().to_string();
  EXPECT_DOUBLE_EQ(m->run->seconds, 1.5);
  EXPECT_EQ(m->common_window_start_ns, kStart + 1500 * kMs);
  EXPECT_DOUBLE_EQ(m->run->commits_per_second, 200.0);  // 10 + 10 per 100 ms, the burst excluded
  // b's buckets land 5 buckets later on the merged grid.
  EXPECT_EQ(m->run->timeline.commits.size(), 35u);
  EXPECT_EQ(m->run->timeline.commits[0], 10u);
  EXPECT_EQ(m->run->timeline.commits[5], 20u);
  EXPECT_EQ(m->run->timeline.commits[34], 10u);
}

TEST(ReportMerge, RefusesReportsThatAreNotOfOneRun) {
  auto refused = [](std::vector<BenchReport> in, const std::string& needle) {
    for (size_t i = 0; i < in.size(); ++i) in[i].source = fmt::format("r{}.json", i);
    auto m = merge_reports(in);
    ASSERT_FALSE(m);
    EXPECT_NE(m.status().message().find(needle), std::string::npos) << m.status().message();
  };
  refused({}, "no reports");
  BenchReport other = sample(3, 0, 5, 5);
  other.workload = "smallbank";
  refused({sample(2, 0, 5, 5), other}, "r0.json and r1.json are not of one run: workload micro vs smallbank");
  other = sample(3, 0, 5, 5);
  other.protocol = "ford";
  refused({sample(2, 0, 5, 5), other}, "protocol pandora vs ford");
  other = sample(3, 0, 5, 5);
  other.workload_options["keys"] = 2000;
  refused({sample(2, 0, 5, 5), other}, "workload options");
  refused({sample(2, 0, 5, 5), sample(2, 0, 5, 5)}, "compute id 2 appears in two reports");
  refused({sample(2, 0, 5, 5), sample(3, 5000, 5, 5)}, "do not overlap");
  BenchReport none = sample(3, 0, 5, 5);
  none.run.reset();
  refused({sample(2, 0, 5, 5), none}, "r1.json: no run to merge");
}

TEST(ReportCsv, HeaderCarriesCommitAndConfigThenOneRowPerBucket) {
  const BenchReport r = sample(2, 0, 50, 1000);
  const std::string csv = format_timeline_csv(r);
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("# pandora-bench timeline; build abc1234; workload micro", 0), 0u) << line;
  std::getline(in, line);
  EXPECT_NE(line.find("--compute-id 2"), std::string::npos) << line;
  EXPECT_NE(line.find("--secret-file /tmp/s"), std::string::npos) << line;
  std::getline(in, line);
  EXPECT_EQ(line, fmt::format("# bucket_ms 100, warmup_ms 1000, start_realtime_ns {}", kStart));
  std::getline(in, line);
  EXPECT_EQ(line, "bucket_start_ms,commits,aborts");
  int rows = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(line, fmt::format("{},50,{}", rows * 100, rows % 3));
    ++rows;
  }
  EXPECT_EQ(rows, 30);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// deploy/plot/plot.py on reports and CSV timelines written here.
// Debian's interpreter (python3-matplotlib installs for it), not one a
// version manager put first on PATH; as deploy/failover/ensure_matplotlib.sh.
std::string python() { return ::access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3"; }

TEST(Plot, DrawsBarsAndTimelineToPng) {
  std::string out;
  if (testing::run_command({python(), "-c", "import matplotlib"}, &out, 60) != 0) {
    GTEST_SKIP() << "python3 cannot import matplotlib: " << out;
  }
  testing::TempDir dir;
  BenchReport a = sample(2, 0, 50, 10'000);
  BenchReport b = sample(3, 20, 40, 20'000);
  b.protocol = "ford";
  const std::string ja = dir.path() + "/a.json", jb = dir.path() + "/b.json", ca = dir.path() + "/a.csv";
  ASSERT_TRUE(write_report_files(a, ja, ca));
  ASSERT_TRUE(write_report_files(b, jb, ""));
  const std::string plot = std::string(PANDORA_SOURCE_DIR) + "/deploy/plot/plot.py";
  const std::string bars = dir.path() + "/bars.png", tl = dir.path() + "/tl.png";
  ASSERT_EQ(testing::run_command({python(), plot, "--bars", bars, ja, jb}, &out, 120), 0) << out;
  ASSERT_EQ(testing::run_command({python(), plot, "--timeline", tl, ca, jb}, &out, 120), 0) << out;
  for (const std::string& png : {bars, tl}) {
    const std::string data = slurp(png);
    ASSERT_GT(data.size(), 1000u) << png;
    EXPECT_EQ(data.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << png;
  }
  // A damaged report and a foreign JSON file: exit 2 naming the file, no PNG.
  const std::string bad = dir.path() + "/bad.json", foreign = dir.path() + "/foreign.json";
  std::ofstream(bad) << slurp(ja).substr(0, 300);
  std::ofstream(foreign) << R"({"hello": "world"})";
  const std::string none = dir.path() + "/none.png";
  EXPECT_EQ(testing::run_command({python(), plot, "--bars", none, bad}, &out, 120), 2) << out;
  EXPECT_NE(out.find("bad.json: malformed JSON"), std::string::npos) << out;
  EXPECT_EQ(testing::run_command({python(), plot, "--bars", none, foreign}, &out, 120), 2) << out;
  EXPECT_NE(out.find("foreign.json: not a pandora-bench report"), std::string::npos) << out;
  EXPECT_TRUE(slurp(none).empty());
}

// workloads/bench/compare_table.py on compare_protocols.sh's report names,
// with a --versus build: the per-round ratio this/versus is computed within
// each round and its median printed; a run that failed its check fails it.
TEST(CompareTable, RatiosAgainstAVersusBuildArePerRound) {
  testing::TempDir dir;
  const std::string table = std::string(PANDORA_SOURCE_DIR) + "/workloads/bench/compare_table.py";
  // Rounds 1..3: this build 1000, 1100, 1200 commits/s; versus 1000, 1000, 1000.
  for (int r = 1; r <= 3; ++r) {
    for (const char* protocol : {"pandora", "ford"}) {
      for (bool versus : {false, true}) {
        BenchReport rep = sample(2, 0, 50, 10'000);
        rep.protocol = protocol;
        rep.run->commits_per_second = versus ? 1000.0 : 900.0 + 100.0 * r;
        rep.check.ran = true;
        rep.check.passed = true;
        const std::string name = fmt::format("{}/shm__micro100__r{}__{}{}.json", dir.path(), r, protocol,
                                             versus ? "__versus" : "");
        ASSERT_TRUE(write_report_files(rep, name, ""));
      }
    }
  }
  std::string out;
  ASSERT_EQ(testing::run_command({python(), table, dir.path()}, &out, 60), 0) << out;
  EXPECT_NE(out.find("this build against --versus"), std::string::npos) << out;
  // Per round 1.0, 1.1, 1.2: median 1.100 [1.00..1.20], both protocols.
  EXPECT_NE(out.find("shm     micro100       1 pandora           3        1100        1000     1.100 [1.00..1.20]"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("all 12 runs passed"), std::string::npos) << out;

  BenchReport failed = sample(2, 0, 50, 10'000);
  failed.check.ran = true;
  failed.check.passed = false;
  ASSERT_TRUE(write_report_files(failed, dir.path() + "/shm__micro100__r2__ford__versus.json", ""));
  EXPECT_EQ(testing::run_command({python(), table, dir.path()}, &out, 60), 1) << out;
  EXPECT_NE(out.find("failed their consistency check"), std::string::npos) << out;
}

// workloads/bench/ops_per_type.py: each type's operations divided by its
// commits, rows by workload, type, then protocol in the project's order;
// a file that is no report exits 2.
TEST(OpsPerType, PrintsOperationsPerCommitByTypeAndProtocol) {
  testing::TempDir dir;
  const std::string script = std::string(PANDORA_SOURCE_DIR) + "/workloads/bench/ops_per_type.py";
  BenchReport ford = sample(2, 0, 50, 10'000);  // 500 reads of 4 READs, 500 rmw of 2 WRITEs
  ford.protocol = "ford";
  ford.run->types[1].ops.writes = 1500;
  ASSERT_TRUE(write_report_files(ford, dir.path() + "/ford.json", ""));
  ASSERT_TRUE(write_report_files(sample(2, 0, 50, 10'000), dir.path() + "/pandora.json", ""));
  std::string out;
  ASSERT_EQ(testing::run_command({python(), script, dir.path() + "/ford.json", dir.path() + "/pandora.json"}, &out, 60),
            0)
      << out;
  const std::string expected =
      "| micro | read | pandora | 500 | 4.00 | 0.00 | 0.00 | 0.00 |\n"
      "| micro | read | ford | 500 | 4.00 | 0.00 | 0.00 | 0.00 |\n"
      "| micro | rmw | pandora | 500 | 0.01 | 2.00 | 0.00 | 0.00 |\n"
      "| micro | rmw | ford | 500 | 0.01 | 3.00 | 0.00 | 0.00 |\n";
  EXPECT_NE(out.find(expected), std::string::npos) << out;
  std::ofstream(dir.path() + "/foreign.json") << R"({"hello": "world"})";
  EXPECT_EQ(testing::run_command({python(), script, dir.path() + "/foreign.json"}, &out, 60), 2) << out;
  EXPECT_NE(out.find("foreign.json"), std::string::npos) << out;
}

// The line of `out` that starts with `prefix` ("" when none).
std::string line_starting(const std::string& out, const std::string& prefix) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

// compare_protocols.sh --processes: runs of 1 and 3 processes are separate
// rows, each protocol's ratio to pandora is taken within a round and then
// the median (not the ratio of the medians), names without a process count
// (older directories) count as 1 process, and files that are no run are
// ignored.
TEST(CompareTable, GroupsByProcessCountWithPerRoundRatios) {
  testing::TempDir dir;
  const std::string table = std::string(PANDORA_SOURCE_DIR) + "/workloads/bench/compare_table.py";
  auto put = [&](const std::string& name, const std::string& protocol, double cps) {
    BenchReport rep = sample(2, 0, 50, 10'000);
    rep.workload = "tatp";
    rep.protocol = protocol;
    rep.run->commits_per_second = cps;
    rep.check.ran = true;
    rep.check.passed = true;
    ASSERT_TRUE(write_report_files(rep, dir.path() + "/" + name + ".json", ""));
  };
  // 1 process: pandora 1000, 3000, 1500; ford 2000, 1500, 1500. Per round
  // 2.0, 0.5, 1.0: median 1.000; the ratio of the medians would be 0.75.
  const double pandora1[] = {1000, 3000, 1500}, ford1[] = {2000, 1500, 1500};
  for (int r = 1; r <= 3; ++r) {
    put(fmt::format("shm__tatp__p1__r{}__pandora", r), "pandora", pandora1[r - 1]);
    put(fmt::format("shm__tatp__p1__r{}__ford", r), "ford", ford1[r - 1]);
    // 3 processes: ford at half of pandora in every round.
    put(fmt::format("shm__tatp__p3__r{}__pandora", r), "pandora", 3000);
    put(fmt::format("shm__tatp__p3__r{}__ford", r), "ford", 1500);
  }
  // An older name (no process count) and files that are no run.
  put("tcp__tatp__r1__pandora", "pandora", 500);
  put("tcp__tatp__r1__log-a-latch", "log-a-latch", 250);
  put("load", "pandora", 1);
  put("shm__tatp__p3__r1__nonsense", "pandora", 1);
  put("shm__tatp__px__r1__pandora", "pandora", 1);

  std::string out;
  ASSERT_EQ(testing::run_command({python(), table, dir.path()}, &out, 60), 0) << out;
  const std::string p1 = line_starting(out, "shm     tatp           1 ford              3        1500 ");
  EXPECT_TRUE(p1.ends_with("1.000 [0.50..2.00]")) << out;
  const std::string p3 = line_starting(out, "shm     tatp           3 ford              3        1500 ");
  EXPECT_TRUE(p3.ends_with("0.500 [0.50..0.50]")) << out;
  EXPECT_FALSE(line_starting(out, "shm     tatp           3 pandora           3        3000 ").empty()) << out;
  const std::string legacy = line_starting(out, "tcp     tatp           1 log-a-latch       1         250 ");
  EXPECT_TRUE(legacy.ends_with("0.500 [0.50..0.50]")) << out;
  // 12 + 2 runs; load.json and the malformed names are not among them.
  EXPECT_NE(out.find("all 14 runs passed"), std::string::npos) << out;

  // --markdown adds one row per group: medians and per-round ratios.
  ASSERT_EQ(testing::run_command({python(), table, "--markdown", dir.path()}, &out, 60), 0) << out;
  EXPECT_NE(out.find("| shm | tatp | 1 | 3 | 1,500 | 1,500 |  | 1.00 [0.50..2.00] |  |\n"), std::string::npos) << out;
  EXPECT_NE(out.find("| shm | tatp | 3 | 3 | 3,000 | 1,500 |  | 0.50 [0.50..0.50] |  |\n"), std::string::npos) << out;
  EXPECT_NE(out.find("| tcp | tatp | 1 | 1 | 500 |  | 250 |  | 0.50 [0.50..0.50] |\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace pandora::workloads
