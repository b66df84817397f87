// The pandora-memd command line: help, usage errors (exit 2, message naming
// the flag), and the exit code of every kind of region error, run as a real
// process.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "memory/exit_codes.h"
#include "memory/region.h"
#include "tests/support/memd_process.h"
#include "tests/transport/child_process.h"

namespace pandora::testing {
namespace {

namespace fs = std::filesystem;
using namespace pandora::memd;  // exit codes

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Replaces the value following `flag` in argv, or appends `flag value`.
std::vector<std::string> with(std::vector<std::string> argv, const std::string& flag, const std::string& value) {
  for (size_t i = 1; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) {
      argv[i + 1] = value;
      return argv;
    }
  }
  argv.push_back(flag);
  argv.push_back(value);
  return argv;
}

std::vector<std::string> without(std::vector<std::string> argv, const std::string& flag) {
  for (size_t i = 1; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) {
      argv.erase(argv.begin() + static_cast<long>(i), argv.begin() + static_cast<long>(i) + 2);
      break;
    }
  }
  return argv;
}

class CliTest : public ::testing::Test {
 protected:
  // argv of a daemon on a fresh region in the temp dir.
  std::vector<std::string> base_argv() const { return memd_.argv(); }

  int run(const std::vector<std::string>& argv, std::string* out) { return run_command(argv, out, 30); }

  // Runs `argv`, expects `code`, and that the output mentions `needle`.
  void expect_exit(const std::vector<std::string>& argv, int code, const std::string& needle) {
    std::string out;
    int rc = run(argv, &out);
    EXPECT_EQ(rc, code) << out;
    EXPECT_NE(out.find(needle), std::string::npos) << "output does not mention '" << needle << "':\n" << out;
  }

  // Creates the region by running the daemon once (and stopping it cleanly).
  void create_region() {
    ASSERT_TRUE(memd_.start()) << memd_.last_error();
    ASSERT_EQ(memd_.stop(), kExitOk) << memd_.stderr_text();
    ASSERT_TRUE(fs::exists(memd_.region_path()));
  }

  // The daemon must refuse `argv` with `code` and leave the region untouched.
  void expect_region_refused(const std::vector<std::string>& argv, int code, const std::string& needle) {
    std::string before = read_all(memd_.region_path());
    expect_exit(argv, code, needle);
    EXPECT_TRUE(before == read_all(memd_.region_path())) << "the refused start changed the region";
  }

  TempDir dir_;
  MemdProcess memd_{dir_.path()};
};

TEST_F(CliTest, HelpListsEveryFlag) {
  std::string out;
  ASSERT_EQ(run({memd_binary(), "--help"}, &out), 0) << out;
  for (const char* flag : {"--pm-path", "--size", "--node-id", "--cluster-id", "--secret-file", "--listen",
                           "--port-file", "--log-size", "--threads", "--format", "--log-level", "--help",
                           "--config", "--exit-with-pid"}) {
    EXPECT_NE(out.find(flag), std::string::npos) << flag << " missing from --help:\n" << out;
  }
}

TEST_F(CliTest, EachMissingRequiredFlagIsNamed) {
  for (const char* flag : {"--pm-path", "--node-id", "--cluster-id", "--secret-file"}) {
    SCOPED_TRACE(flag);
    expect_exit(without(base_argv(), flag), kExitUsage, flag);
  }
  EXPECT_FALSE(fs::exists(memd_.region_path()));
}

TEST_F(CliTest, BadValuesAreUsageErrorsNamingTheFlag) {
  struct Case {
    const char* flag;
    const char* value;
  } cases[] = {
      {"--size", "12Q"},         {"--size", "-1"},          {"--log-size", "lots"},
      {"--listen", "nowhere"},   {"--listen", "127.0.0.1:99999"},
      {"--listen", "127.0.0.1"}, {"--cluster-id", "0"},     {"--cluster-id", "0xZZ"},
      {"--node-id", "65536"},    {"--node-id", "-3"},       {"--threads", "0"},
      {"--threads", "65"},       {"--log-level", "chatty"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.flag) + " " + c.value);
    expect_exit(with(base_argv(), c.flag, c.value), kExitUsage, c.flag);
  }
  EXPECT_FALSE(fs::exists(memd_.region_path()));
}

TEST_F(CliTest, UnknownFlagIsNamed) {
  auto argv = base_argv();
  argv.push_back("--turbo");
  expect_exit(argv, kExitUsage, "--turbo");
}

TEST_F(CliTest, SecretFileProblemsAreNamed) {
  expect_exit(with(base_argv(), "--secret-file", dir_.path() + "/absent"), kExitUsage, "--secret-file");
  std::string empty = dir_.path() + "/empty";
  std::ofstream(empty).close();
  expect_exit(with(base_argv(), "--secret-file", empty), kExitUsage, "--secret-file");
}

TEST_F(CliTest, ImpossibleGeometryIsAUsageError) {
  expect_exit(with(base_argv(), "--size", "512K"), kExitUsage, "--size");
  expect_exit(with(with(base_argv(), "--size", "2M"), "--log-size", "2M"), kExitUsage, "--log-size");
  expect_exit(without(base_argv(), "--size"), kExitUsage, "--size");
  EXPECT_FALSE(fs::exists(memd_.region_path()));
}

TEST_F(CliTest, ConfigFileSuppliesOptions) {
  // Everything but the secret in a config file; a flag overrides the file.
  std::string cfg = dir_.path() + "/memd.conf";
  std::ofstream(cfg) << "# memd test config\n"
                     << "pm-path = " << memd_.region_path() << "\n"
                     << "node-id = 1\ncluster-id = 0x5eed\nsize = 512K\n";
  std::string out;
  // 512K is too small to create a region: the complaint proves the file was read.
  EXPECT_EQ(run({memd_binary(), "--config", cfg, "--secret-file", memd_.secret_path()}, &out), kExitUsage) << out;
  EXPECT_NE(out.find("--size"), std::string::npos) << out;
  std::ofstream(cfg, std::ios::trunc) << "pm-path = " << memd_.region_path() << "\n"
                                       << "node-id = 1\nsize = 16M\ncluster-id = 0\n";
  EXPECT_EQ(run({memd_binary(), "--config", cfg, "--secret-file", memd_.secret_path()}, &out), kExitUsage) << out;
  EXPECT_NE(out.find("cluster-id"), std::string::npos) << out;
}

TEST_F(CliTest, CleanStopExitsZeroAndMarksTheRegionClean) {
  create_region();
  std::string log = memd_.stderr_text();
  EXPECT_NE(log.find("created region"), std::string::npos) << log;
  EXPECT_NE(log.find("persistence: persistent memory"), std::string::npos) << log;
  EXPECT_NE(log.find("shutdown complete"), std::string::npos) << log;
  RegionState st{};
  std::string bytes = read_all(memd_.region_path());
  std::memcpy(&st, bytes.data() + kRegionStateOffset, sizeof(st));
  EXPECT_EQ(st.state, kStateClean);
  EXPECT_EQ(st.start_count, 1u);
}

// A harness that dies without stopping its daemons (an ASan abort) must not
// leave them running: --exit-with-pid shuts the daemon down cleanly when
// the watched process ends, whoever reaps it.
TEST_F(CliTest, ExitWithPidShutsDownCleanlyWhenThatProcessEnds) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);  // the daemon must not inherit the write end
  ChildProcess watched = ChildProcess::run([&] {
    ::close(fds[1]);
    char c;
    (void)!::read(fds[0], &c, 1);  // until the test closes its end
    return 0;
  });
  ::close(fds[0]);
  ASSERT_GT(watched.pid(), 0);
  TempDir dir;
  MemdOptions o;
  o.extra_args = {"--exit-with-pid", std::to_string(watched.pid())};
  MemdProcess memd(dir.path(), o);
  ASSERT_TRUE(memd.start()) << memd.last_error();
  EXPECT_EQ(memd.wait_exit(std::chrono::milliseconds(200)), -1) << "exited while the watched process runs";
  ::close(fds[1]);
  auto ended = watched.wait_for(std::chrono::seconds(20));
  ASSERT_TRUE(ended && ended->exited);
  EXPECT_EQ(memd.wait_exit(std::chrono::seconds(20)), kExitOk) << memd.stderr_text();
  EXPECT_NE(memd.stderr_text().find("shutdown complete"), std::string::npos) << memd.stderr_text();
  // A process that does not exist is a usage error naming the flag.
  std::vector<std::string> argv = base_argv();
  auto flag = std::find(argv.begin(), argv.end(), "--exit-with-pid");
  ASSERT_NE(flag, argv.end());
  *(flag + 1) = "2147483646";
  expect_exit(argv, kExitUsage, "--exit-with-pid 2147483646: cannot watch process");
}

// Refused, not warned about: the rule every secret reader shares
// (common/secret.h).
TEST_F(CliTest, ReadableOrShortSecretIsRefused) {
  for (mode_t mode : {0644, 0640}) {
    ASSERT_EQ(::chmod(memd_.secret_path().c_str(), mode), 0);
    expect_exit(base_argv(), kExitUsage, "chmod 600");
  }
  ASSERT_EQ(::chmod(memd_.secret_path().c_str(), 0600), 0);
  const std::string short_secret = dir_.path() + "/short-secret";
  std::ofstream(short_secret) << "hunter2\n";
  ASSERT_EQ(::chmod(short_secret.c_str(), 0600), 0);
  expect_exit(with(base_argv(), "--secret-file", short_secret), kExitUsage, "at least 16");
}

TEST_F(CliTest, WrongClusterExitCode) {
  create_region();
  expect_region_refused(with(base_argv(), "--cluster-id", "0x5eef"), kExitWrongCluster, "--cluster-id");
}

TEST_F(CliTest, WrongNodeExitCode) {
  create_region();
  expect_region_refused(with(base_argv(), "--node-id", "2"), kExitWrongNode, "--node-id");
}

TEST_F(CliTest, SizeMismatchExitCode) {
  create_region();
  expect_region_refused(with(base_argv(), "--size", "32M"), kExitSizeMismatch, "--size");
  expect_region_refused(with(base_argv(), "--log-size", "2M"), kExitSizeMismatch, "--log-size");
  // The matching size is accepted.
  ASSERT_TRUE(memd_.start()) << memd_.last_error();
  EXPECT_EQ(memd_.stop(), kExitOk);
}

TEST_F(CliTest, LayoutVersionExitCode) {
  create_region();
  RegionHeader h{};
  std::string bytes = read_all(memd_.region_path());
  std::memcpy(&h, bytes.data(), sizeof(h));
  h.layout_version = 99;
  h.checksum = header_checksum(h);
  int fd = ::open(memd_.region_path().c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, &h, sizeof(h), 0), static_cast<ssize_t>(sizeof(h)));
  ::close(fd);
  expect_region_refused(base_argv(), kExitLayoutVersion, "layout version 99");
}

TEST_F(CliTest, CorruptHeaderExitCode) {
  create_region();
  int fd = ::open(memd_.region_path().c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint8_t b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, 40), 1);
  b ^= 0x10;
  ASSERT_EQ(::pwrite(fd, &b, 1, 40), 1);
  ::close(fd);
  expect_region_refused(base_argv(), kExitCorruptHeader, "checksum");
}

TEST_F(CliTest, NotARegionExitCode) {
  std::ofstream(memd_.region_path()) << std::string(2 << 20, 'q');
  expect_region_refused(base_argv(), kExitNotARegion, "not a Pandora region");
  // An all-zero file is refused without --format ...
  std::ofstream(memd_.region_path(), std::ios::trunc) << std::string(2 << 20, '\0');
  expect_region_refused(base_argv(), kExitNotARegion, "--format");
}

TEST_F(CliTest, FormatFlagFormatsAZeroedFile) {
  std::ofstream(memd_.region_path(), std::ios::trunc) << std::string(16 << 20, '\0');
  MemdOptions o;
  o.extra_args = {"--format"};
  MemdProcess memd(dir_.path(), o);
  ASSERT_TRUE(memd.start()) << memd.last_error();
  EXPECT_NE(memd.stderr_text().find("formatted region"), std::string::npos) << memd.stderr_text();
  EXPECT_EQ(memd.stop(), kExitOk);
  RegionHeader h{};
  std::string bytes = read_all(memd.region_path());
  std::memcpy(&h, bytes.data(), sizeof(h));
  EXPECT_EQ(h.magic, kRegionMagic);
  EXPECT_EQ(h.region_size, 16u << 20);
}

TEST_F(CliTest, UnusablePathIsAnIoError) {
  expect_exit(with(base_argv(), "--pm-path", dir_.path() + "/missing-dir/r.pm"), kExitIo, "missing-dir");
}

TEST_F(CliTest, BusyPortIsAnIoError) {
  ASSERT_TRUE(memd_.start()) << memd_.last_error();
  MemdProcess other(dir_.path(), MemdOptions{.node_id = 2});
  auto argv = with(other.argv(), "--listen", "127.0.0.1:" + std::to_string(memd_.endpoint().port));
  expect_exit(argv, kExitIo, "--listen");
  // The failed start left its new region marked clean (it never served).
  RegionState st{};
  std::string bytes = read_all(other.region_path());
  ASSERT_GE(bytes.size(), kRegionStateOffset + sizeof(st));
  std::memcpy(&st, bytes.data() + kRegionStateOffset, sizeof(st));
  EXPECT_EQ(st.state, kStateClean);
}

TEST_F(CliTest, SecondDaemonOnTheSameRegionIsRefused) {
  ASSERT_TRUE(memd_.start()) << memd_.last_error();
  expect_exit(with(base_argv(), "--port-file", dir_.path() + "/port-other"), kExitIo, "in use");
}

}  // namespace
}  // namespace pandora::testing
