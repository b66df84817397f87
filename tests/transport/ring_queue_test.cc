#include "common/transport/ring_queue.h"

#include <deque>
#include <random>

#include <gtest/gtest.h>

namespace pandora::transport_detail {
namespace {

TEST(RingQueue, BehavesLikeADequeThroughWrapAndGrowth) {
  RingQueue<int> q(4);
  std::deque<int> model;
  std::mt19937 rng(5);
  int next = 0;
  for (int step = 0; step < 100000; ++step) {
    // Biased towards pushing early and popping late so the queue grows
    // while its head sits in the middle of the ring.
    bool push = model.empty() || (rng() % 100) < (step < 50000 ? 60u : 40u);
    if (push) {
      q.push_back(next);
      model.push_back(next++);
    } else {
      ASSERT_EQ(q.front(), model.front());
      q.pop_front();
      model.pop_front();
    }
    ASSERT_EQ(q.size(), model.size());
    if (!model.empty()) {
      ASSERT_EQ(q[model.size() - 1], model.back());
      ASSERT_EQ(q[model.size() / 2], model[model.size() / 2]);
    }
  }
  q.clear();
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace pandora::transport_detail
