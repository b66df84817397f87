// Unit tests of the shm backend without a daemon: a hand-made region file,
// a socketpair standing in for the control session.
#include "common/transport/shm_connection.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/region_layout.h"
#include <filesystem>

namespace pandora {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kSize = 1024 * 1024;
constexpr uint64_t kCluster = 0x77;
constexpr uint16_t kId = 300;  // not in the first fence word, on purpose

class ShmConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/dev/shm/pandora-shm-test-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
    path_ = dir_ + "/region";
    int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, kSize), 0);
    void* p = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    ASSERT_NE(p, MAP_FAILED);
    region_ = static_cast<uint8_t*>(p);
    RegionHeader h{};
    h.magic = kRegionMagic;
    h.layout_version = kRegionLayoutVersion;
    h.header_size = sizeof(h);
    h.region_size = kSize;
    h.cluster_id = kCluster;
    h.data_offset = kDataOffset;
    std::memcpy(region_, &h, sizeof(h));

    info_.cluster_id = kCluster;
    info_.region_size = kSize;
    info_.data_offset = kDataOffset;
    struct stat st {};
    ASSERT_EQ(::stat(path_.c_str(), &st), 0);
    shm_.device = st.st_dev;
    shm_.inode = st.st_ino;
    shm_.region_size = kSize;
    shm_.is_pmem = false;
  }
  void TearDown() override {
    if (region_) ::munmap(region_, kSize);
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::unique_ptr<Connection> open_conn() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    daemon_end_.reset(sv[1]);
    auto r = ShmConnection::open(net::UniqueFd(sv[0]), info_, shm_, region_fd(), kId);
    EXPECT_TRUE(r) << r.status().to_string();
    return r ? std::move(r).value() : nullptr;
  }

  net::UniqueFd region_fd(const std::string& path = {}) {
    return net::UniqueFd(::open((path.empty() ? path_ : path).c_str(), O_RDWR | O_CLOEXEC));
  }

  Completion run_one(Connection& c) {
    c.flush();
    std::array<Completion, 1> buf;
    EXPECT_EQ(c.poll(buf), 1u);
    return buf[0];
  }

  std::string dir_;
  std::string path_;
  uint8_t* region_ = nullptr;
  wire::RegionInfo info_;
  wire::ShmInfo shm_;
  net::UniqueFd daemon_end_;
};

TEST_F(ShmConnectionTest, OperatesOnTheMappedFile) {
  auto c = open_conn();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->data_begin(), kDataOffset);
  EXPECT_EQ(c->data_end(), kSize);
  uint64_t v = 41;
  c->post_write(kDataOffset + 8, &v, 8, 1);
  c->post_faa(kDataOffset + 8, 1, 2);
  c->post_cas(kDataOffset + 8, 42, 100, 3);
  EXPECT_EQ(c->outstanding(), 3u);
  c->flush();
  std::array<Completion, 8> buf;
  ASSERT_EQ(c->poll(buf), 3u);
  EXPECT_EQ(buf[1].value, 41u);
  EXPECT_EQ(buf[2].value, 42u);
  uint64_t in_file;
  std::memcpy(&in_file, region_ + kDataOffset + 8, 8);
  EXPECT_EQ(in_file, 100u) << "the operation must act on the shared file";
}

// kVisible operations act exactly like kPersistent ones but skip the flush:
// the latch words the engine posts that way cost no cache-line write-back.
TEST_F(ShmConnectionTest, VisibleOperationsAreNotFlushed) {
  auto conn = open_conn();
  ASSERT_TRUE(conn);
  auto& c = dynamic_cast<ShmConnection&>(*conn);
  const uint64_t word = kDataOffset + 64;
  uint64_t v = 5;
  c.post_write(word, &v, 8, 1, Durability::kVisible);
  c.post_cas(word, 5, 9, 2, Durability::kVisible);
  c.post_faa(word, 1, 3, Durability::kVisible);
  c.flush();
  std::array<Completion, 8> buf;
  ASSERT_EQ(c.poll(buf), 3u);
  EXPECT_EQ(buf[1].value, 5u);
  EXPECT_EQ(buf[2].value, 9u);
  uint64_t in_file;
  std::memcpy(&in_file, region_ + word, 8);
  EXPECT_EQ(in_file, 10u);
  EXPECT_EQ(c.persists(), 0u) << "kVisible operations must not be flushed";

  c.post_write(word, &v, 8, 4);             // kPersistent by default
  c.post_cas(word, 5, 6, 5);                // succeeds: flushed
  c.post_cas(word, 5, 7, 6);                // fails: nothing stored, nothing flushed
  c.post_faa(word, 1, 7, Durability::kPersistent);
  c.flush();
  ASSERT_EQ(c.poll(buf), 4u);
  EXPECT_EQ(buf[2].value, 6u);
  std::memcpy(&in_file, region_ + word, 8);
  EXPECT_EQ(in_file, 7u);
  EXPECT_EQ(c.persists(), 3u);
}

TEST_F(ShmConnectionTest, NothingExecutesBeforeTheDoorbell) {
  auto c = open_conn();
  ASSERT_TRUE(c);
  uint64_t v = 7;
  c->post_write(kDataOffset, &v, 8, 1);
  std::array<Completion, 1> buf;
  EXPECT_EQ(c->wait(buf, 10ms), 0u);
  EXPECT_EQ(region_[kDataOffset], 0);
  c->flush();
  EXPECT_EQ(c->poll(buf), 1u);
  EXPECT_EQ(region_[kDataOffset], 7);
}

TEST_F(ShmConnectionTest, FenceBitStopsEveryLaterOp) {
  auto c = open_conn();
  ASSERT_TRUE(c);
  uint64_t v = 1;
  c->post_write(kDataOffset, &v, 8, 1);
  ASSERT_EQ(run_one(*c).status, Errc::kOk);
  // The daemon sets our bit.
  __atomic_fetch_or(reinterpret_cast<uint64_t*>(region_ + fence_word_offset(kId)), fence_bit_mask(kId),
                    __ATOMIC_SEQ_CST);
  v = 2;
  c->post_write(kDataOffset, &v, 8, 2);
  c->post_faa(kDataOffset, 1, 3);
  c->flush();
  std::array<Completion, 4> buf;
  ASSERT_EQ(c->poll(buf), 2u);
  EXPECT_EQ(buf[0].status, Errc::kFenced);
  EXPECT_EQ(buf[1].status, Errc::kFenced);
  EXPECT_EQ(c->health(), Errc::kFenced);
  EXPECT_EQ(region_[kDataOffset], 1) << "a fenced op touched memory";
}

TEST_F(ShmConnectionTest, AnotherIdsFenceBitDoesNotMatter) {
  auto c = open_conn();
  ASSERT_TRUE(c);
  __atomic_fetch_or(reinterpret_cast<uint64_t*>(region_ + fence_word_offset(kId + 1)), fence_bit_mask(kId + 1),
                    __ATOMIC_SEQ_CST);
  c->post_faa(kDataOffset, 1, 1);
  EXPECT_EQ(run_one(*c).status, Errc::kOk);
}

TEST_F(ShmConnectionTest, EndOfControlSessionBreaksTheConnection) {
  auto c = open_conn();
  ASSERT_TRUE(c);
  c->post_faa(kDataOffset, 1, 1);
  EXPECT_EQ(run_one(*c).status, Errc::kOk);
  daemon_end_.reset();
  Completion last{};
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (std::chrono::steady_clock::now() < deadline) {
    c->post_faa(kDataOffset, 1, 2);
    last = run_one(*c);
    if (last.status != Errc::kOk) break;
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(last.status, Errc::kDisconnected);
  EXPECT_EQ(c->health(), Errc::kDisconnected);
}

TEST_F(ShmConnectionTest, HeaderIsReadOnlyInTheClient) {
  auto c = open_conn();
  ASSERT_TRUE(c);
  // The connection mapped the region itself; find its mapping in
  // /proc/self/maps and check the first data_offset bytes are not writable.
  FILE* maps = std::fopen("/proc/self/maps", "r");
  ASSERT_NE(maps, nullptr);
  char line[1024];
  int readonly_header = 0, writable_data = 0;
  while (std::fgets(line, sizeof(line), maps)) {
    std::string l(line);
    if (l.find(path_) == std::string::npos) continue;
    unsigned long lo = 0, hi = 0;
    char perms[5] = {};
    unsigned long off = 0;
    if (std::sscanf(line, "%lx-%lx %4s %lx", &lo, &hi, perms, &off) != 4) continue;
    if (reinterpret_cast<uint8_t*>(lo) == region_) continue;  // the test's own mapping
    if (off == 0 && hi - lo == kDataOffset && perms[1] == '-') ++readonly_header;
    if (off == kDataOffset && perms[1] == 'w') ++writable_data;
  }
  std::fclose(maps);
  EXPECT_EQ(readonly_header, 1);
  EXPECT_EQ(writable_data, 1);
}

TEST_F(ShmConnectionTest, RefusesAFileThatIsNotTheDescribedRegion) {
  info_.cluster_id = kCluster + 1;
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ::close(sv[1]);
  auto r = ShmConnection::open(net::UniqueFd(sv[0]), info_, shm_, region_fd(), kId);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), Errc::kMismatch);
}

TEST_F(ShmConnectionTest, RefusesALookAlikeDescriptor) {
  // A byte-identical copy is still another inode: not the daemon's region.
  const std::string copy = dir_ + "/look-alike";
  std::filesystem::copy_file(path_, copy);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ::close(sv[1]);
  auto r = ShmConnection::open(net::UniqueFd(sv[0]), info_, shm_, region_fd(copy), kId);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), Errc::kMismatch);
  EXPECT_NE(r.status().message().find("not the file the daemon described"), std::string::npos)
      << r.status().message();
}

TEST_F(ShmConnectionTest, FetchNeedsAnAnsweringHandoffSocket) {
  wire::ShmInfo nowhere = shm_;
  nowhere.socket_path = dir_ + "/no-socket";
  auto fd = ShmConnection::fetch_region_fd(nowhere, 1s);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.status().code(), Errc::kDisconnected) << fd.status().to_string();
}

}  // namespace
}  // namespace pandora
