#include "hook/memory/pointer_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace fgpu::hook {
namespace {

PointerEntry Entry(int32_t device, uint64_t bytes, uint64_t owner = 0) {
  PointerEntry entry;
  entry.device = device;
  entry.bytes = bytes;
  entry.owner = owner;
  return entry;
}

// Device pointers as the driver hands them out: 2 MiB aligned, clustered.
uint64_t Address(uint64_t i) { return 0x7f0000000000ull + (i << 21); }

TEST(PointerTableTest, InsertFindErase) {
  PointerTable table(10);
  ASSERT_EQ(table.capacity(), 1024u);
  ASSERT_TRUE(table.Insert(PointerKind::kDevicePointer, Address(1), Entry(0, 4096, 77)));
  PointerEntry found;
  ASSERT_TRUE(table.Find(PointerKind::kDevicePointer, Address(1), &found));
  EXPECT_EQ(found.device, 0);
  EXPECT_EQ(found.bytes, 4096u);
  EXPECT_EQ(found.owner, 77u);
  EXPECT_FALSE(table.Find(PointerKind::kDevicePointer, Address(2), &found));

  PointerEntry erased;
  ASSERT_TRUE(table.Erase(PointerKind::kDevicePointer, Address(1), &erased));
  EXPECT_EQ(erased.bytes, 4096u);
  EXPECT_FALSE(table.Find(PointerKind::kDevicePointer, Address(1), &found));
  EXPECT_FALSE(table.Erase(PointerKind::kDevicePointer, Address(1), &erased)) << "second erase of one key";
}

TEST(PointerTableTest, KindsAreSeparateNamespaces) {
  PointerTable table(10);
  ASSERT_TRUE(table.Insert(PointerKind::kDevicePointer, 0x1000, Entry(0, 1)));
  ASSERT_TRUE(table.Insert(PointerKind::kVmmHandle, 0x1000, Entry(1, 2)));
  PointerEntry entry;
  EXPECT_FALSE(table.Erase(PointerKind::kArray, 0x1000, &entry));
  ASSERT_TRUE(table.Erase(PointerKind::kVmmHandle, 0x1000, &entry));
  EXPECT_EQ(entry.bytes, 2u);
  ASSERT_TRUE(table.Find(PointerKind::kDevicePointer, 0x1000, &entry));
  EXPECT_EQ(entry.bytes, 1u);
}

TEST(PointerTableTest, SmallAndExtremeValues) {
  PointerTable table(10);
  // Values that look like the slot states internally must still work as keys.
  for (uint64_t value : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3}, UINT64_MAX - 3}) {
    ASSERT_TRUE(table.Insert(PointerKind::kVmmHandle, value, Entry(0, value + 1))) << value;
  }
  for (uint64_t value : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3}, UINT64_MAX - 3}) {
    PointerEntry entry;
    ASSERT_TRUE(table.Erase(PointerKind::kVmmHandle, value, &entry)) << value;
    EXPECT_EQ(entry.bytes, value + 1);
  }
  // The three encodings of the slot states cannot be stored: refused, never aliased.
  EXPECT_FALSE(table.Insert(PointerKind::kVmmHandle, UINT64_MAX, Entry(0, 1)));
  EXPECT_FALSE(table.Insert(PointerKind::kVmmHandle, UINT64_MAX - 2, Entry(0, 1)));
}

TEST(PointerTableTest, FullTableRefusesInsteadOfLosingEntries) {
  PointerTable table(6);  // 64 slots, all within kMaxProbe of any home
  for (uint64_t i = 0; i < 64; ++i)
    ASSERT_TRUE(table.Insert(PointerKind::kDevicePointer, Address(i), Entry(0, i)));
  EXPECT_FALSE(table.Insert(PointerKind::kDevicePointer, Address(64), Entry(0, 64)));
  for (uint64_t i = 0; i < 64; ++i) {
    PointerEntry entry;
    ASSERT_TRUE(table.Find(PointerKind::kDevicePointer, Address(i), &entry)) << i;
    EXPECT_EQ(entry.bytes, i);
  }
  // A freed slot (tombstone) is reused.
  PointerEntry entry;
  ASSERT_TRUE(table.Erase(PointerKind::kDevicePointer, Address(5), &entry));
  EXPECT_TRUE(table.Insert(PointerKind::kDevicePointer, Address(64), Entry(0, 64)));
  EXPECT_TRUE(table.Find(PointerKind::kDevicePointer, Address(64), &entry));
}

TEST(PointerTableTest, ChurnOverTombstonesKeepsEveryLiveKeyFindable) {
  PointerTable table(8);  // 256 slots
  // Many more insert/erase cycles than slots: every slot becomes a tombstone at some point.
  std::vector<uint64_t> live;
  for (uint64_t i = 0; i < 20000; ++i) {
    ASSERT_TRUE(table.Insert(PointerKind::kDevicePointer, Address(i), Entry(0, i))) << i;
    live.push_back(i);
    if (live.size() > 100) {
      const uint64_t victim = live[(i * 7919) % live.size()];
      PointerEntry entry;
      ASSERT_TRUE(table.Erase(PointerKind::kDevicePointer, Address(victim), &entry));
      ASSERT_EQ(entry.bytes, victim);
      std::erase(live, victim);
    }
  }
  for (uint64_t key : live) {
    PointerEntry entry;
    ASSERT_TRUE(table.Find(PointerKind::kDevicePointer, Address(key), &entry)) << key;
    EXPECT_EQ(entry.bytes, key);
  }
}

TEST(PointerTableTest, HundredThousandLiveAllocationsStayO1) {
  PointerTable table;  // the hook's size
  constexpr uint64_t kLive = 100000;
  for (uint64_t i = 0; i < kLive; ++i)
    ASSERT_TRUE(table.Insert(PointerKind::kDevicePointer, Address(i), Entry(0, i)));
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < kLive; ++i) {
    PointerEntry entry;
    ASSERT_TRUE(table.Find(PointerKind::kDevicePointer, Address(i), &entry));
    ASSERT_EQ(entry.bytes, i);
  }
  for (uint64_t i = kLive; i < 2 * kLive; ++i) {
    PointerEntry entry;
    ASSERT_FALSE(table.Find(PointerKind::kDevicePointer, Address(i), &entry));  // misses end early too
  }
  const double ns_per_lookup =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      (2 * kLive);
  // Generous for a debug/sanitizer build; a linear structure would take ~100x this at 10^5.
  EXPECT_LT(ns_per_lookup, 2000.0);
}

TEST(PointerTableTest, EraseOwnedByTakesExactlyThatOwnersEntries) {
  PointerTable table(12);
  for (uint64_t i = 0; i < 300; ++i) {
    ASSERT_TRUE(table.Insert(i % 3 == 0 ? PointerKind::kArray : PointerKind::kDevicePointer, Address(i),
                             Entry(0, i, i % 2 == 0 ? 0xAA : 0xBB)));
  }
  uint64_t visited = 0;
  uint64_t bytes = 0;
  table.EraseOwnedBy(0xAA, [&](PointerKind kind, uint64_t key, const PointerEntry& entry) {
    ++visited;
    bytes += entry.bytes;
    EXPECT_EQ(entry.owner, 0xAAu);
    EXPECT_EQ(key, Address(entry.bytes)) << "the visitor gets the value, not its encoding";
    EXPECT_EQ(kind, entry.bytes % 3 == 0 ? PointerKind::kArray : PointerKind::kDevicePointer);
  });
  EXPECT_EQ(visited, 150u);
  uint64_t expected_bytes = 0;
  for (uint64_t i = 0; i < 300; i += 2) expected_bytes += i;
  EXPECT_EQ(bytes, expected_bytes);
  for (uint64_t i = 0; i < 300; ++i) {
    PointerEntry entry;
    const PointerKind kind = i % 3 == 0 ? PointerKind::kArray : PointerKind::kDevicePointer;
    EXPECT_EQ(table.Find(kind, Address(i), &entry), i % 2 == 1) << i;
  }
}

TEST(PointerTableTest, ConcurrentInsertEraseFromManyThreads) {
  PointerTable table(16);
  constexpr int kThreads = 8;
  constexpr uint64_t kRounds = 20000;
  constexpr uint64_t kLivePerThread = 64;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread owns its keys (the driver never hands one address to two allocations).
      auto key_of = [t](uint64_t i) { return Address(i * kThreads + static_cast<uint64_t>(t)); };
      for (uint64_t i = 0; i < kRounds; ++i) {
        if (!table.Insert(PointerKind::kDevicePointer, key_of(i), Entry(t, i, static_cast<uint64_t>(t)))) {
          failures.fetch_add(1);
        }
        if (i >= kLivePerThread) {
          PointerEntry entry;
          const uint64_t old = i - kLivePerThread;
          if (!table.Erase(PointerKind::kDevicePointer, key_of(old), &entry) || entry.bytes != old ||
              entry.device != t) {
            failures.fetch_add(1);
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    for (uint64_t i = kRounds - kLivePerThread; i < kRounds; ++i) {
      PointerEntry entry;
      ASSERT_TRUE(
          table.Find(PointerKind::kDevicePointer, Address(i * kThreads + static_cast<uint64_t>(t)), &entry));
      EXPECT_EQ(entry.bytes, i);
    }
  }
}

TEST(PointerTableTest, RacingErasesOfOneKeyHaveExactlyOneWinner) {
  PointerTable table(12);
  constexpr int kThreads = 6;
  constexpr int kKeys = 2000;
  for (int k = 0; k < kKeys; ++k)
    ASSERT_TRUE(table.Insert(PointerKind::kDevicePointer, Address(k), Entry(0, 1)));
  std::atomic<int> wins{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (int k = 0; k < kKeys; ++k) {
        PointerEntry entry;
        if (table.Erase(PointerKind::kDevicePointer, Address(k), &entry)) wins.fetch_add(1);
      }
    });
  }
  go.store(true);
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wins.load(), kKeys) << "every key credited exactly once";
}

TEST(PointerTableTest, ContextTeardownRacesWithFrees) {
  PointerTable table(14);
  constexpr uint64_t kKeys = 5000;
  for (uint64_t k = 0; k < kKeys; ++k)
    ASSERT_TRUE(table.Insert(PointerKind::kDevicePointer, Address(k), Entry(0, 1, 9)));
  std::atomic<uint64_t> credited{0};
  std::thread frees([&] {
    for (uint64_t k = 0; k < kKeys; k += 2) {
      PointerEntry entry;
      if (table.Erase(PointerKind::kDevicePointer, Address(k), &entry)) credited.fetch_add(entry.bytes);
    }
  });
  std::thread teardown([&] {
    table.EraseOwnedBy(
        9, [&](PointerKind, uint64_t, const PointerEntry& entry) { credited.fetch_add(entry.bytes); });
  });
  frees.join();
  teardown.join();
  EXPECT_EQ(credited.load(), kKeys) << "each entry credited once, by whichever got it";
}

}  // namespace
}  // namespace fgpu::hook
