// In-process tests of memory/region: creation, validation of every kind of
// wrong or damaged region (which must leave the file byte-identical), the
// --format rule, and the clean-shutdown marker.
#include "memory/region.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "memory/exit_codes.h"
#include "tests/support/memd_process.h"

namespace pandora::memd {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kSize = 1u << 20;     // the minimum region
constexpr uint64_t kLogSize = 256u << 10;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void patch(const std::string& path, uint64_t off, const void* data, size_t len) {
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, data, len, static_cast<off_t>(off)), static_cast<ssize_t>(len));
  ::close(fd);
}

RegionHeader read_header(const std::string& path) {
  RegionHeader h{};
  std::string bytes = read_all(path);
  std::memcpy(&h, bytes.data(), sizeof(h));
  return h;
}

class RegionTest : public ::testing::Test {
 protected:
  RegionOptions options() const {
    RegionOptions o;
    o.path = path_;
    o.size = kSize;
    o.log_size = kLogSize;
    o.cluster_id = 0x5eed;
    o.node_id = 3;
    return o;
  }

  std::unique_ptr<Region> open(const RegionOptions& o, RegionError* err) { return Region::open(o, log_, err); }

  // Creates the region and writes a marker into its data area.
  void create_with_marker() {
    RegionError err;
    auto r = open(options(), &err);
    ASSERT_TRUE(r) << err.message;
    std::memcpy(r->base() + kDataOffset, "marker!", 8);
    r->persist(kDataOffset, 8);
  }

  // Opening with `o` must fail with `want`, and leave the file untouched.
  void expect_refused(const RegionOptions& o, RegionFailure want, const char* mention = nullptr) {
    std::string before = read_all(path_);
    RegionError err;
    auto r = open(o, &err);
    EXPECT_FALSE(r);
    EXPECT_EQ(err.failure, want) << err.message;
    EXPECT_FALSE(err.message.empty());
    if (mention) EXPECT_NE(err.message.find(mention), std::string::npos) << err.message;
    r.reset();
    std::string after = read_all(path_);
    EXPECT_EQ(before.size(), after.size());
    EXPECT_TRUE(before == after) << "a refused open changed the file";
  }

  testing::TempDir dir_;
  std::string path_ = dir_.path() + "/region.pm";
  Logger log_{"test", LogLevel::kOff};
};

TEST_F(RegionTest, CreateFormatsHeaderAndReopenKeepsData) {
  {
    RegionError err;
    auto r = open(options(), &err);
    ASSERT_TRUE(r) << err.message;
    EXPECT_TRUE(r->created());
    EXPECT_EQ(r->size(), kSize);
    const RegionHeader& h = r->header();
    EXPECT_EQ(h.magic, kRegionMagic);
    EXPECT_EQ(h.layout_version, kRegionLayoutVersion);
    EXPECT_EQ(h.header_size, sizeof(RegionHeader));
    EXPECT_EQ(h.region_size, kSize);
    EXPECT_EQ(h.cluster_id, 0x5eedu);
    EXPECT_EQ(h.node_id, 3u);
    EXPECT_EQ(h.data_offset, kDataOffset);
    EXPECT_EQ(h.table_offset, kDataOffset);
    EXPECT_EQ(h.log_offset, kSize - kLogSize);
    EXPECT_EQ(h.log_size, kLogSize);
    EXPECT_NE(h.format_time_ns, 0u);
    EXPECT_EQ(h.checksum, header_checksum(h));
    EXPECT_EQ(r->state().state, kStateClean);
    EXPECT_EQ(r->real_path(), fs::canonical(path_).string());
    wire::RegionInfo info = r->info();
    EXPECT_EQ(info.region_size, kSize);
    EXPECT_EQ(info.log_offset, kSize - kLogSize);
    std::memcpy(r->base() + kDataOffset + 100, "persisted", 10);
    r->persist(kDataOffset + 100, 10);
  }
  EXPECT_EQ(fs::file_size(path_), kSize);
  // Nothing but the region is left in the directory (no temporary file).
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_.path())) ++entries;
  EXPECT_EQ(entries, 1u);

  RegionOptions again = options();
  again.size.reset();  // optional on restart
  RegionError err;
  auto r = open(again, &err);
  ASSERT_TRUE(r) << err.message;
  EXPECT_FALSE(r->created());
  EXPECT_EQ(std::memcmp(r->base() + kDataOffset + 100, "persisted", 10), 0);
}

TEST_F(RegionTest, CreateNeedsSizeAndSaneGeometry) {
  auto refused_create = [&](RegionOptions o, const char* mention) {
    RegionError err;
    EXPECT_FALSE(open(o, &err));
    EXPECT_EQ(err.failure, RegionFailure::kUsage) << err.message;
    EXPECT_NE(err.message.find(mention), std::string::npos) << err.message;
    EXPECT_FALSE(fs::exists(path_));
  };
  RegionOptions o = options();
  o.size.reset();
  refused_create(o, "--size");
  o = options();
  o.size = 512 * 1024;
  refused_create(o, "--size");
  o = options();
  o.size = kSize + 100;
  refused_create(o, "--size");
  o = options();
  o.log_size = kSize - kDataOffset;  // no table area left
  refused_create(o, "--log-size");
  o = options();
  o.log_size = 0;
  refused_create(o, "--log-size");
  // No temporary files left behind either.
  EXPECT_TRUE(fs::is_empty(dir_.path()));
  EXPECT_EQ(exit_code_for(RegionFailure::kUsage), kExitUsage);
}

TEST_F(RegionTest, WrongClusterIsRefusedUntouched) {
  create_with_marker();
  RegionOptions o = options();
  o.cluster_id = 0x5eee;
  expect_refused(o, RegionFailure::kWrongCluster, "--cluster-id");
  EXPECT_EQ(exit_code_for(RegionFailure::kWrongCluster), kExitWrongCluster);
}

TEST_F(RegionTest, WrongNodeIsRefusedUntouched) {
  create_with_marker();
  RegionOptions o = options();
  o.node_id = 4;
  expect_refused(o, RegionFailure::kWrongNode, "--node-id");
  EXPECT_EQ(exit_code_for(RegionFailure::kWrongNode), kExitWrongNode);
}

TEST_F(RegionTest, SizeMismatchIsRefusedUntouched) {
  create_with_marker();
  RegionOptions o = options();
  o.size = 2 * kSize;
  expect_refused(o, RegionFailure::kSizeMismatch, "--size");
  o = options();
  o.log_size = 2 * kLogSize;
  o.log_size_given = true;
  expect_refused(o, RegionFailure::kSizeMismatch, "--log-size");
  // The file itself grew behind the daemon's back.
  fs::resize_file(path_, kSize + 4096);
  o = options();
  o.size.reset();
  expect_refused(o, RegionFailure::kSizeMismatch, "truncated or extended");
  EXPECT_EQ(exit_code_for(RegionFailure::kSizeMismatch), kExitSizeMismatch);
}

TEST_F(RegionTest, OtherLayoutVersionIsRefusedUntouched) {
  create_with_marker();
  RegionHeader h = read_header(path_);
  h.layout_version = kRegionLayoutVersion + 1;
  h.checksum = header_checksum(h);
  patch(path_, 0, &h, sizeof(h));
  expect_refused(options(), RegionFailure::kLayoutVersion, "layout version");
  EXPECT_EQ(exit_code_for(RegionFailure::kLayoutVersion), kExitLayoutVersion);
}

TEST_F(RegionTest, AnyFlippedHeaderByteIsCorruption) {
  create_with_marker();
  const std::string pristine = read_all(path_);
  // Every byte covered by the checksum, and the checksum itself.
  for (size_t i = 0; i < sizeof(RegionHeader); ++i) {
    std::string damaged = pristine;
    damaged[i] = static_cast<char>(damaged[i] ^ 0xff);
    write_all(path_, damaged);
    SCOPED_TRACE("flipped header byte " + std::to_string(i));
    expect_refused(options(), RegionFailure::kCorruptHeader);
    if (HasFailure()) break;
  }
  EXPECT_EQ(exit_code_for(RegionFailure::kCorruptHeader), kExitCorruptHeader);
}

TEST_F(RegionTest, InconsistentLayoutFieldsAreCorruption) {
  create_with_marker();
  RegionHeader h = read_header(path_);
  h.log_offset += 4096;  // no longer ends at region_size
  h.checksum = header_checksum(h);
  patch(path_, 0, &h, sizeof(h));
  expect_refused(options(), RegionFailure::kCorruptHeader, "inconsistent");
}

TEST_F(RegionTest, ForeignFileIsNotARegion) {
  std::string text(kSize, 'x');
  write_all(path_, text);
  expect_refused(options(), RegionFailure::kNotARegion, "not a Pandora region");
  RegionOptions o = options();
  o.format_zeroed = true;  // --format never touches a non-zero header
  expect_refused(o, RegionFailure::kNotARegion);
  // A tiny file too.
  write_all(path_, "hi");
  expect_refused(options(), RegionFailure::kNotARegion);
  EXPECT_EQ(exit_code_for(RegionFailure::kNotARegion), kExitNotARegion);
}

TEST_F(RegionTest, ZeroedFileNeedsFormat) {
  write_all(path_, std::string(kSize, '\0'));
  expect_refused(options(), RegionFailure::kNotARegion, "--format");
}

TEST_F(RegionTest, FormatFormatsOnlyAZeroedHeader) {
  // Zero header, stale bytes in the data area (a reused device).
  std::string bytes(kSize, '\0');
  bytes[kDataOffset + 10] = 'z';
  write_all(path_, bytes);
  RegionOptions o = options();
  o.size.reset();
  o.format_zeroed = true;
  {
    // --size must match the file when given.
    RegionOptions wrong = o;
    wrong.size = 2 * kSize;
    expect_refused(wrong, RegionFailure::kSizeMismatch, "--size");
  }
  {
    RegionError err;
    auto r = open(o, &err);
    ASSERT_TRUE(r) << err.message;
    EXPECT_TRUE(r->created());
    EXPECT_EQ(r->size(), kSize);
    EXPECT_EQ(r->header().log_size, kLogSize);
    EXPECT_EQ(r->base()[kDataOffset + 10], 0) << "format must clear stale data";
    std::memcpy(r->base() + kDataOffset, "keep", 4);
    r->persist(kDataOffset, 4);
  }
  // A formatted region is never re-formatted by --format.
  RegionError err;
  auto r = open(o, &err);
  ASSERT_TRUE(r) << err.message;
  EXPECT_FALSE(r->created());
  EXPECT_EQ(std::memcmp(r->base() + kDataOffset, "keep", 4), 0);
}

TEST_F(RegionTest, FormatRefusesATooSmallFile) {
  write_all(path_, std::string(64 * 1024, '\0'));
  RegionOptions o = options();
  o.size.reset();
  o.format_zeroed = true;
  expect_refused(o, RegionFailure::kSizeMismatch);
}

TEST_F(RegionTest, StateCountsUncleanStarts) {
  {
    RegionError err;
    auto r = open(options(), &err);
    ASSERT_TRUE(r) << err.message;
    EXPECT_FALSE(r->mark_running());
    EXPECT_EQ(r->state().state, kStateRunning);
    EXPECT_EQ(r->state().start_count, 1u);
    // No mark_clean(): like a daemon killed with -9.
  }
  {
    RegionError err;
    auto r = open(options(), &err);
    ASSERT_TRUE(r) << err.message;
    EXPECT_EQ(r->state_at_open().state, kStateRunning);
    EXPECT_TRUE(r->mark_running());
    EXPECT_EQ(r->state().unclean_starts, 1u);
    EXPECT_EQ(r->state().start_count, 2u);
    r->mark_clean();
  }
  RegionError err;
  auto r = open(options(), &err);
  ASSERT_TRUE(r) << err.message;
  EXPECT_EQ(r->state().state, kStateClean);
  EXPECT_FALSE(r->mark_running());
  EXPECT_EQ(r->state().unclean_starts, 1u);
  EXPECT_EQ(r->state().start_count, 3u);
}

TEST_F(RegionTest, SecondOpenerIsLockedOut) {
  RegionError err;
  auto first = open(options(), &err);
  ASSERT_TRUE(first) << err.message;
  RegionOptions o = options();
  o.size.reset();
  expect_refused(o, RegionFailure::kIo, "in use");
  first.reset();
  EXPECT_TRUE(open(o, &err)) << err.message;
}

TEST_F(RegionTest, MissingDirectoryIsAnIoError) {
  RegionOptions o = options();
  o.path = dir_.path() + "/no/such/dir/region.pm";
  RegionError err;
  EXPECT_FALSE(open(o, &err));
  EXPECT_EQ(err.failure, RegionFailure::kIo) << err.message;
  EXPECT_EQ(exit_code_for(RegionFailure::kIo), kExitIo);
}

}  // namespace
}  // namespace pandora::memd
