// Round-robin across peers: a flood queued first does not stand in front of another peer.
#include "net/fair_queue.h"

#include <gtest/gtest.h>

#include <string>

namespace fgpu::net {
namespace {

TEST(FairQueueTest, PeersTakeTurnsInsteadOfArrivalOrder) {
  FairQueue<std::string> queue;
  for (int i = 0; i < 5; ++i) queue.Push("uid:1000", "flood" + std::to_string(i));
  queue.Push("uid:0", "root");
  queue.Push("uid:1001", "other");
  EXPECT_EQ(queue.size(), 7u);
  EXPECT_EQ(queue.Pop(), "flood0");
  EXPECT_EQ(queue.Pop(), "root") << "root waits for one flood request, not five";
  EXPECT_EQ(queue.Pop(), "other");
  for (int i = 1; i < 5; ++i) EXPECT_EQ(queue.Pop(), "flood" + std::to_string(i));
  EXPECT_TRUE(queue.empty());
}

TEST(FairQueueTest, EachPeerKeepsItsOwnOrder) {
  FairQueue<int> queue;
  queue.Push("a", 1);
  queue.Push("b", 10);
  queue.Push("a", 2);
  queue.Push("b", 20);
  EXPECT_EQ(queue.Pop(), 1);
  EXPECT_EQ(queue.Pop(), 10);
  EXPECT_EQ(queue.Pop(), 2);
  queue.Push("a", 3);  // "a" emptied and comes back: behind "b"
  EXPECT_EQ(queue.Pop(), 20);
  EXPECT_EQ(queue.Pop(), 3);
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace fgpu::net
