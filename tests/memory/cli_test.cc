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
#include "tests/support/verbs_support.h"
#include "tests/transport/child_process.h"

#include <signal.h>
#include <sys/resource.h>

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

// --verbs on must not start a daemon that cannot serve what was asked for;
// auto (the default) serves tcp and shm alone where there is no device.
TEST_F(CliTest, VerbsFlagsAreCheckedAndOnNeedsADevice) {
  expect_exit(with(base_argv(), "--verbs", "maybe"), kExitUsage, "--verbs");
  expect_exit(with(base_argv(), "--rdma-mtu", "1000"), kExitUsage, "--rdma-mtu");
  expect_exit(with(base_argv(), "--rdma-gid-index", "first"), kExitUsage, "--rdma-gid-index");
  EXPECT_FALSE(fs::exists(memd_.region_path()));
  if (verbs_unavailable().empty()) GTEST_SKIP() << "this host has an RDMA device: --verbs on would start";
  expect_exit(with(base_argv(), "--verbs", "on"), kExitIo, "no RDMA device");
  ASSERT_TRUE(memd_.start()) << memd_.last_error();  // --verbs auto
  EXPECT_NE(memd_.stderr_text().find("verbs data plane: off"), std::string::npos) << memd_.stderr_text();
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

// Issue 9, item 8: a zeroed header in front of intact data used to suggest
// --format, which would have erased that data.
TEST_F(CliTest, ZeroedHeaderInFrontOfDataSuggestsNothingDestructive) {
  create_region();
  {
    const std::string zeros(4096, '\0');
    const int fd = ::open(memd_.region_path().c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, zeros.data(), zeros.size(), 0), 4096);
    ::close(fd);
  }
  std::string before = read_all(memd_.region_path());
  std::string out;
  EXPECT_EQ(run(base_argv(), &out), kExitCorruptHeader) << out;
  EXPECT_NE(out.find("may be intact"), std::string::npos) << out;
  EXPECT_EQ(out.find("--format"), std::string::npos) << "suggests the destructive --format:\n" << out;
  EXPECT_TRUE(before == read_all(memd_.region_path()));
}

// Issue 9, item 2: a region open to other users is refused, naming the file,
// its owner and its mode; only an explicit flag starts anyway.
TEST_F(CliTest, RegionWritableByOthersIsRefusedUnlessAllowed) {
  create_region();
  ASSERT_EQ(::chmod(memd_.region_path().c_str(), 0666), 0);
  std::string out;
  EXPECT_EQ(run(base_argv(), &out), kExitUnsafePermissions) << out;
  for (const std::string& needle : {memd_.region_path(), std::string("writable by group or others"),
                                    std::string("mode 0666"), std::string("owner "),
                                    std::string("--allow-unsafe-region-permissions")}) {
    EXPECT_NE(out.find(needle), std::string::npos) << needle << " not in:\n" << out;
  }
  // The directory too (not sticky), also for a region about to be created.
  ASSERT_EQ(::chmod(memd_.region_path().c_str(), 0600), 0);
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0777), 0);
  EXPECT_EQ(run(base_argv(), &out), kExitUnsafePermissions) << out;
  EXPECT_NE(out.find("directory " + dir_.path()), std::string::npos) << out;
  EXPECT_EQ(run(with(base_argv(), "--pm-path", dir_.path() + "/new.pm"), &out), kExitUnsafePermissions) << out;
  EXPECT_FALSE(fs::exists(dir_.path() + "/new.pm"));
  // A sticky directory (like /tmp or /dev/shm) is fine for a file of ours.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 01777), 0);
  MemdProcess sticky(dir_.path());
  ASSERT_TRUE(sticky.start()) << sticky.last_error();
  EXPECT_EQ(sticky.stop(), kExitOk);
  // The override starts, with a warning.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0777), 0);
  MemdOptions o;
  o.extra_args = {"--allow-unsafe-region-permissions"};
  MemdProcess allowed(dir_.path(), o);
  ASSERT_TRUE(allowed.start()) << allowed.last_error();
  EXPECT_NE(allowed.stderr_text().find("starting anyway"), std::string::npos) << allowed.stderr_text();
  EXPECT_EQ(allowed.stop(), kExitOk);
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0700), 0);
}

TEST(RegionPermissions, OwnerAndWriteBitsOfFileAndEveryDirectory) {
  struct stat st {};
  ASSERT_EQ(::stat("/", &st), 0);
  TempDir dir;
  const std::string file = dir.path() + "/r.pm";
  std::ofstream(file) << "x";
  ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  const std::string real = fs::canonical(file).string();
  EXPECT_EQ(check_region_permissions(real, &st, ::geteuid()).failure, RegionFailure::kNone);
  // A file owned by another user (neither us nor root).
  struct stat foreign = st;
  foreign.st_uid = ::geteuid() == 4242 ? 4343 : 4242;
  RegionError e = check_region_permissions(real, &foreign, ::geteuid());
  EXPECT_EQ(e.failure, RegionFailure::kUnsafePermissions);
  EXPECT_NE(e.message.find("not by this daemon's user"), std::string::npos) << e.message;
  st.st_mode |= S_IWGRP;
  e = check_region_permissions(real, &st, ::geteuid());
  EXPECT_EQ(e.failure, RegionFailure::kUnsafePermissions);
  EXPECT_NE(e.message.find("mode 0620"), std::string::npos) << e.message;
}

// In a forked child: becomes `argv` (keeping the pid) with stdout and
// stderr going to `log`. Returns only if exec failed.
int exec_with_output(std::vector<std::string> argv, const std::string& log) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  return 91;
}

// Issue 9, item 3: the port file was written through PATH.tmp.PID with
// fopen, following a symlink another user planted there.
TEST_F(CliTest, PortFileNeverFollowsPlantedSymlinks) {
  const std::string port_file = dir_.path() + "/node.port";
  const std::string victim = dir_.path() + "/victim";
  const std::string victim2 = dir_.path() + "/victim2";
  std::ofstream(victim) << "precious";
  std::ofstream(victim2) << "precious too";
  // A symlink at the target itself is replaced, never written through.
  ASSERT_EQ(::symlink(victim2.c_str(), port_file.c_str()), 0);
  std::vector<std::string> argv = with(base_argv(), "--port-file", port_file);
  const std::string log = dir_.path() + "/memd.log";
  // The old temporary name embeds the daemon's pid: the child plants the
  // symlink under its own pid and then becomes the daemon (exec keeps it).
  ChildProcess daemon = ChildProcess::run([&] {
    const std::string planted = port_file + ".tmp." + std::to_string(::getpid());
    if (::symlink(victim.c_str(), planted.c_str()) != 0) return 90;
    return exec_with_output(argv, log);
  });
  ASSERT_GT(daemon.pid(), 0);
  // Wait (bounded) until the port file is a regular file with a number.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string port;
  while (std::chrono::steady_clock::now() < deadline && !daemon.try_wait()) {
    struct stat st {};
    if (::lstat(port_file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      port = read_all(port_file);
      if (!port.empty() && port.back() == '\n') break;
    }
    ::usleep(10'000);
  }
  ASSERT_FALSE(port.empty()) << read_all(log);
  EXPECT_GT(std::stoi(port), 0);
  EXPECT_EQ(read_all(victim), "precious") << "the daemon wrote through a planted symlink";
  EXPECT_EQ(read_all(victim2), "precious too") << "the daemon wrote through the symlink at the port file";
  ASSERT_EQ(::kill(daemon.pid(), SIGTERM), 0);
  auto exit = daemon.wait_for(std::chrono::seconds(30));
  ASSERT_TRUE(exit && exit->exited) << read_all(log);
  EXPECT_EQ(exit->code, kExitOk) << read_all(log);
}

// Issue 9, item 6: under `ulimit -f` the daemon died by SIGXFSZ and left
// `*.formatting.<pid>` behind.
TEST_F(CliTest, FileSizeLimitIsDiskFullExitCodeWithoutLeftovers) {
  std::vector<std::string> argv = base_argv();  // a 16M region to create
  const std::string log = dir_.path() + "/memd.log";
  ChildProcess daemon = ChildProcess::run([&] {
    rlimit rl{1 << 20, 1 << 20};  // 1 MiB
    if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) return 90;
    ::signal(SIGXFSZ, SIG_DFL);  // what a shell gives the daemon
    return exec_with_output(argv, log);
  });
  auto exit = daemon.wait_for(std::chrono::seconds(30));
  ASSERT_TRUE(exit);
  const std::string out = read_all(log);
  ASSERT_TRUE(exit->exited) << "killed by signal " << exit->signal << "\n" << out;
  EXPECT_EQ(exit->code, kExitIo) << out;
  EXPECT_NE(out.find("disk full"), std::string::npos) << out;
  EXPECT_NE(out.find("ulimit -f"), std::string::npos) << out;
  for (const auto& e : fs::directory_iterator(dir_.path())) {
    EXPECT_EQ(e.path().filename().string().find(".formatting."), std::string::npos) << "left behind: " << e.path();
  }
  EXPECT_FALSE(fs::exists(memd_.region_path()));
}

// Issue 9, item 6: a sparse region (e.g. copied with cp --sparse) on a full
// file system made the first store into a hole a SIGBUS. Its holes are now
// allocated (posix_fallocate, ENOSPC being exit 8) before it is mapped.
TEST_F(CliTest, SparseRegionIsAllocatedBeforeItIsMapped) {
  create_region();
  const std::string path = memd_.region_path();
  const std::string sparse = path + ".sparse";
  {
    // Copy only the non-zero 4K blocks: everything else becomes a hole.
    std::string bytes = read_all(path);
    const int fd = ::open(sparse.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(bytes.size())), 0);
    for (size_t off = 0; off < bytes.size(); off += 4096) {
      if (std::string_view(bytes).substr(off, 4096).find_first_not_of('\0') != std::string_view::npos) {
        ASSERT_EQ(::pwrite(fd, bytes.data() + off, 4096, static_cast<off_t>(off)), 4096);
      }
    }
    ::close(fd);
  }
  ASSERT_EQ(::rename(sparse.c_str(), path.c_str()), 0);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  ASSERT_LT(static_cast<uint64_t>(st.st_blocks) * 512, static_cast<uint64_t>(st.st_size)) << "not sparse";
  // The daemon allocates every hole before mapping.
  ASSERT_TRUE(memd_.start()) << memd_.last_error();
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, static_cast<uint64_t>(st.st_size));
  EXPECT_EQ(memd_.stop(), kExitOk);
}

}  // namespace
}  // namespace pandora::testing
