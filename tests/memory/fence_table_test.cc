// In-process tests of memory/fence_table: the quiescence protocol (fence()
// waits for a batch that started before the bit was set), persistence of
// the bitmap, and killing registered shm clients.
#include "memory/fence_table.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/memd_process.h"

namespace pandora::memd {
namespace {

using namespace std::chrono_literals;

class FenceTableTest : public ::testing::Test {
 protected:
  void SetUp() override { reopen(); }

  void reopen() {
    table_.reset();
    region_.reset();
    RegionOptions o;
    o.path = dir_.path() + "/region.pm";
    o.size = 1u << 20;
    o.log_size = 256u << 10;
    o.cluster_id = 1;
    o.node_id = 1;
    RegionError err;
    region_ = Region::open(o, log_, &err);
    ASSERT_TRUE(region_) << err.message;
    table_ = std::make_unique<FenceTable>(*region_, 2, log_);
  }

  testing::TempDir dir_;
  Logger log_{"test", LogLevel::kOff};
  std::unique_ptr<Region> region_;
  std::unique_ptr<FenceTable> table_;
};

TEST_F(FenceTableTest, BitsAreSetCountedAndPersistent) {
  EXPECT_FALSE(table_->is_fenced(7));
  EXPECT_EQ(table_->fenced_count(), 0u);
  ASSERT_TRUE(table_->fence(7));
  ASSERT_TRUE(table_->fence(65535));
  ASSERT_TRUE(table_->fence(7));  // idempotent
  EXPECT_TRUE(table_->is_fenced(7));
  EXPECT_TRUE(table_->is_fenced(65535));
  EXPECT_FALSE(table_->is_fenced(6));
  EXPECT_FALSE(table_->is_fenced(8));
  EXPECT_EQ(table_->fenced_count(), 2u);
  EXPECT_EQ(table_->fence(0).code(), Errc::kInvalidArgument);
  // The bit lives in the region's bitmap, so it survives a restart.
  EXPECT_EQ(*region_->word(fence_word_offset(7)) & fence_bit_mask(7), fence_bit_mask(7));
  reopen();
  EXPECT_TRUE(table_->is_fenced(7));
  EXPECT_TRUE(table_->is_fenced(65535));
  EXPECT_EQ(table_->fenced_count(), 2u);
}

TEST_F(FenceTableTest, FenceWaitsForABatchThatStartedBeforeIt) {
  std::promise<void> in_batch, release;
  std::shared_future<void> release_f = release.get_future().share();
  std::atomic<bool> batch_done{false};
  bool saw_fence_in_old_batch = true;
  std::thread data_thread([&] {
    BatchScope batch(table_->slot(1));
    saw_fence_in_old_batch = table_->is_fenced(7);  // checked before the fence
    in_batch.set_value();
    release_f.wait();
    batch_done = true;  // "memory effects" of the old batch
  });
  in_batch.get_future().wait();
  auto fence = std::async(std::launch::async, [&] { return table_->fence(7); });
  // While the old batch runs, fence() must not return (it would otherwise
  // promise something the data thread can still break).
  EXPECT_EQ(fence.wait_for(100ms), std::future_status::timeout);
  // The bit itself is set first (the async thread may start late on a
  // loaded machine: wait for it, bounded).
  const auto bit_deadline = std::chrono::steady_clock::now() + 10s;
  while (!table_->is_fenced(7) && std::chrono::steady_clock::now() < bit_deadline) std::this_thread::yield();
  EXPECT_TRUE(table_->is_fenced(7));
  EXPECT_EQ(fence.wait_for(0ms), std::future_status::timeout);  // still waiting for the old batch
  release.set_value();
  ASSERT_EQ(fence.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(batch_done.load()) << "fence() returned before the old batch ended";
  EXPECT_TRUE(fence.get());
  data_thread.join();
  EXPECT_FALSE(saw_fence_in_old_batch);
  // A batch that starts now sees the bit.
  BatchScope batch(table_->slot(1));
  EXPECT_TRUE(table_->is_fenced(7));
}

TEST_F(FenceTableTest, BusyThreadsDoNotStallAFence) {
  // Threads that run batch after batch never leave `in_batch` at 0 for
  // long; fence() must still finish because their batch counters advance.
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      while (!stop.load()) {
        BatchScope batch(table_->slot(t));
      }
    });
  }
  auto fence = std::async(std::launch::async, [&] { return table_->fence(9); });
  EXPECT_EQ(fence.wait_for(10s), std::future_status::ready);
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_TRUE(fence.get());
}

TEST_F(FenceTableTest, ShmRegistrationRules) {
  EXPECT_EQ(table_->register_shm_client(3, 0).code(), Errc::kInvalidArgument);
  EXPECT_EQ(table_->register_shm_client(3, 1).code(), Errc::kInvalidArgument);
  EXPECT_EQ(table_->register_shm_client(3, ::getpid()).code(), Errc::kInvalidArgument);
  // A pid that has certainly exited: a reaped child.
  pid_t gone = ::fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  EXPECT_EQ(table_->register_shm_client(3, gone).code(), Errc::kInvalidArgument);
  ASSERT_TRUE(table_->fence(3));
  pid_t parent = ::getppid();
  EXPECT_EQ(table_->register_shm_client(3, parent).code(), Errc::kFenced);
  EXPECT_EQ(table_->shm_clients(), 0u);
}

// Compute nodes that failed together are fenced by one request: every id
// it names, or (one invalid) none of them.
TEST_F(FenceTableTest, SeveralIdsInOneFence) {
  const std::vector<uint16_t> three{3, 64, 65535};
  ASSERT_TRUE(table_->fence(three));
  for (uint16_t id : three) EXPECT_TRUE(table_->is_fenced(id)) << id;
  EXPECT_FALSE(table_->is_fenced(4));
  EXPECT_EQ(table_->fenced_count(), 3u);

  const std::vector<uint16_t> with_zero{9, 0};
  EXPECT_EQ(table_->fence(with_zero).code(), Errc::kInvalidArgument);
  EXPECT_FALSE(table_->is_fenced(9)) << "an id before the invalid one was fenced";
  EXPECT_EQ(table_->fence(std::span<const uint16_t>()).code(), Errc::kInvalidArgument);

  const std::vector<uint16_t> again{3, 10};  // one already fenced: idempotent
  ASSERT_TRUE(table_->fence(again));
  EXPECT_EQ(table_->fenced_count(), 4u);
  reopen();
  EXPECT_EQ(table_->fenced_count(), 4u);
  EXPECT_TRUE(table_->is_fenced(64));
}

TEST_F(FenceTableTest, OneFenceKillsTheShmClientsOfEveryIdItNames) {
  std::vector<pid_t> kids;
  struct Reaper {
    std::vector<pid_t>& pids;
    ~Reaper() {
      for (pid_t p : pids) {
        if (p > 0) {
          ::kill(p, SIGKILL);
          ::waitpid(p, nullptr, 0);
        }
      }
    }
  } reaper{kids};
  for (int i = 0; i < 3; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      for (int j = 0; j < 600; ++j) ::usleep(100'000);  // at most 60 s
      ::_exit(0);
    }
    ASSERT_GT(pid, 0);
    kids.push_back(pid);
  }
  ASSERT_TRUE(table_->register_shm_client(5, kids[0]));
  ASSERT_TRUE(table_->register_shm_client(6, kids[1]));
  ASSERT_TRUE(table_->register_shm_client(7, kids[2]));
  const std::vector<uint16_t> failed{5, 6};
  ASSERT_TRUE(table_->fence(failed));
  for (int i = 0; i < 2; ++i) {
    int status = 0;
    ASSERT_EQ(::waitpid(kids[i], &status, WNOHANG), kids[i]) << "fence returned before the client of id "
                                                             << failed[i] << " exited";
    kids[i] = -1;
    ASSERT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(kids[2], &status, WNOHANG), 0) << "the process of id 7, not named, was killed";
  EXPECT_EQ(table_->shm_clients(), 1u);
}

TEST_F(FenceTableTest, FenceKillsRegisteredShmClientsOfThatIdOnly) {
  auto spawn_sleeper = [] {
    pid_t pid = ::fork();
    if (pid == 0) {
      for (int i = 0; i < 600; ++i) ::usleep(100'000);  // at most 60 s
      ::_exit(0);
    }
    return pid;
  };
  pid_t victim = spawn_sleeper();
  pid_t bystander = spawn_sleeper();
  ASSERT_GT(victim, 0);
  ASSERT_GT(bystander, 0);
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } r1{victim}, r2{bystander};

  ASSERT_TRUE(table_->register_shm_client(5, victim));
  ASSERT_TRUE(table_->register_shm_client(6, bystander));
  EXPECT_EQ(table_->shm_clients(), 2u);
  ASSERT_TRUE(table_->fence(5));
  // fence() returned only after the victim exited; it is a zombie now.
  int status = 0;
  ASSERT_EQ(::waitpid(victim, &status, WNOHANG), victim);
  r1.pid = -1;
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(::waitpid(bystander, &status, WNOHANG), 0) << "the other compute node's process was killed";
  EXPECT_EQ(table_->shm_clients(), 1u);
}

TEST_F(FenceTableTest, ExitedShmClientsArePruned) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::usleep(10'000);
    ::_exit(0);
  }
  ASSERT_TRUE(table_->register_shm_client(4, child));
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_EQ(table_->shm_clients(), 0u);
  EXPECT_TRUE(table_->fence(4));  // nothing to kill
}

}  // namespace
}  // namespace pandora::memd
