// pandora-history-check end to end: exit status, report formats, exports,
// several files as one history.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "litmus/history/export_dbcop.h"
#include "litmus/history/export_elle.h"
#include "compute/trace/history.h"
#include "tests/litmus/history/history_test_util.h"

namespace pandora::history {
namespace {

using testing::HistoryBuilder;
using testing::moved_key_history;
using testing::rd;
using testing::upd;

struct CliRun {
  int status = -1;
  std::string out;  // stdout and stderr
};

class HistoryCheckCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr ? tmp : "/tmp") + "/pandora-history-cli-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  static std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  CliRun run(const std::string& args) {
    CliRun r;
    const std::string cmd = std::string(PANDORA_HISTORY_CHECK_PATH) + " " + args + " 2>&1";
    std::FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
  }

  std::string dir_;
};

std::vector<TxnTrace> clean_history() {
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {upd(1, 0)};
  h.txn(1, 300, 400).items = {rd(1, 1)};
  return h.txns;
}

std::vector<TxnTrace> stale_read_history() {
  HistoryBuilder h;
  h.txn(0, 100, 200).items = {upd(1, 0)};
  h.txn(1, 300, 400).items = {rd(1, 0)};  // after T1 ended, still the old version
  return h.txns;
}

TEST_F(HistoryCheckCli, CleanHistoryExitsZero) {
  const CliRun r = run(write("clean.hist", format_history({{}, clean_history()})));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("transactions: 2 (committed 2, aborted 0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no anomalies"), std::string::npos) << r.out;
}

TEST_F(HistoryCheckCli, AnomaliesExitOneAndRealTimeCanBeTurnedOff) {
  const std::string file = write("stale.hist", format_history({{}, stale_read_history()}));
  const CliRun strict = run(file);
  EXPECT_EQ(strict.status, 1) << strict.out;
  EXPECT_NE(strict.out.find("[1] G-single-realtime:"), std::string::npos) << strict.out;
  const CliRun serial = run(file + " --no-realtime");
  EXPECT_EQ(serial.status, 0) << serial.out;
  const CliRun json = run(file + " --format json");
  EXPECT_EQ(json.status, 1) << json.out;
  EXPECT_EQ(json.out.rfind("{\"model\":\"strict-serializability\"", 0), 0u) << json.out;
}

TEST_F(HistoryCheckCli, SeveralFilesAreOneHistory) {
  // Write skew split over two per-process files.
  HistoryBuilder a;
  a.txn(0, 100, 300).items = {rd(1, 0), rd(2, 0), upd(1, 0)};
  HistoryBuilder b;
  b.txn(1, 150, 350).items = {rd(1, 0), rd(2, 0), upd(2, 0)};
  const CliRun r = run(write("p0.hist", format_history({{}, a.txns})) + " " + write("p1.hist", format_history({{}, b.txns})));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("G2: anti-dependency cycle over 2 transactions"), std::string::npos) << r.out;
}

TEST_F(HistoryCheckCli, BadInputExitsTwo) {
  const std::string good = format_history({{}, clean_history()});
  const std::string line = format_txn_line(clean_history()[0]);
  const CliRun malformed = run(write("bad.hist", good + line.substr(0, 30) + "\n"));
  EXPECT_EQ(malformed.status, 2) << malformed.out;
  EXPECT_NE(malformed.out.find("bad.hist:4: column 31: syntax error while parsing object key - invalid string: "
                               "missing closing quote"),
            std::string::npos)
      << malformed.out;
  // A format-1 file (no header) is refused, saying so.
  const CliRun old = run(write("old.hist", line + "\n"));
  EXPECT_EQ(old.status, 2) << old.out;
  EXPECT_NE(old.out.find("old.hist:1: no header line: this is a format-1 history"), std::string::npos) << old.out;
  // Files whose headers disagree about the initial state are not one run.
  const CliRun mixed = run(write("a.hist", format_history({InitialState::loaded(1), {}})) + " " +
                           write("b.hist", format_history({InitialState::loaded(2), {}})));
  EXPECT_EQ(mixed.status, 2) << mixed.out;
  EXPECT_NE(mixed.out.find("b.hist: its initial state {\"version\":2} differs from the other files' {\"version\":1}"),
            std::string::npos)
      << mixed.out;
  EXPECT_EQ(run(dir_ + "/missing.hist").status, 2);
  EXPECT_EQ(run("").status, 2);
  EXPECT_EQ(run(write("x.hist", good) + " --format yaml").status, 2);
  EXPECT_EQ(run(write("y.hist", good) + " --bogus").status, 2);
}

TEST_F(HistoryCheckCli, Help) {
  const CliRun r = run("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--export-elle"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--no-realtime"), std::string::npos) << r.out;
}

TEST_F(HistoryCheckCli, Exports) {
  const std::vector<TxnTrace> h = stale_read_history();
  const std::string elle = dir_ + "/out.edn";
  const std::string dbcop = dir_ + "/out.json";
  const CliRun r = run(write("h.hist", format_history({{}, h})) + " --export-elle " + elle + " --export-dbcop=" + dbcop);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(slurp(elle), elle_text({{}, h}).value());
  EXPECT_EQ(slurp(dbcop), dbcop_text({{}, h}).value());
  EXPECT_EQ(run(write("h2.hist", format_history({{}, h})) + " --export-elle /nonexistent/dir/x.edn").status, 2);
}

TEST_F(HistoryCheckCli, KeyReinsertedAtAnotherSlotIsClean) {
  const std::vector<TxnTrace> h = moved_key_history();
  const std::string file = write("moved.hist", format_history({{}, h}));
  EXPECT_NE(slurp(file).find("\"slot\":8192"), std::string::npos);
  const std::string elle = dir_ + "/moved.edn";
  const CliRun r = run(file + " --export-elle " + elle);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("objects: 3, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no anomalies"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(elle), elle_text({{}, h}).value());
}

}  // namespace
}  // namespace pandora::history
