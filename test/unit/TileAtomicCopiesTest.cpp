// TileAtomicCopiesTest.cpp - the old values of a tile atomic whose tile is
// smaller than the program's threads (32 elements at 4 warps: each element
// in several threads). One thread runs each element's atomic; the copies
// read its old value through shared memory. This used to fail to lower
// ("failed to legalize operation 'tile.atomic_rmw'").
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace tegula;
using ::testing::HasSubstr;

namespace {

/// 32 increments into 8 counters (4 each): a counter's old values are 0..3
/// in some order. Their sum and max reduce over every thread's copies.
void count_into(tl::ptr<int32_t> counters, tl::ptr<int32_t> olds, tl::ptr<int32_t> stats, tl::ptr<float> fsums,
                tl::ptr<int32_t> wide) {
  tl::tensor i = tl::arange(0, 32);
  tl::tensor old = tl::atomic_add(counters + i % 8, 1);
  tl::store(olds + i, old);
  // Broadcast along a new axis: the [32, 32] tile's threads take their rows
  // from whichever copy of an element they hold.
  tl::tensor j = tl::arange(0, 32);
  tl::store(wide + i.expand_dims(1) * 32 + j.expand_dims(0), old.expand_dims(1) + tl::zeros({1, 32}, tl::i32));
  // A reshape, a transpose and a gather, each reading the old values in a new arrangement.
  tl::store(wide + 1024 + i, old.reshape({4, 8}).trans().reshape({32}));
  tl::store(wide + 1056 + i, tl::gather(old, 31 - i, 0));
  tl::store(stats, tl::sum(old, 0));
  tl::store(stats + 1, tl::max(old, 0));
  tl::tensor cas = tl::atomic_cas(counters + 8 + i, 0, i); // each slot once: old 0, then i
  tl::store(stats + 2, tl::sum(cas, 0));
  tl::tensor fold = tl::atomic_add(fsums + i % 4, 0.5f);
  tl::store(stats + 3, tl::sum(fold * 2.0f, 0).to(tl::i32)); // 8 adds a slot: 2*(0+.5+...+3.5)*4 = 112
}

TEST(TileAtomicCopies, EveryCopyGetsTheOwnersOldValue) {
  auto k = kernel("count_into", count_into, {"counters", "olds", "stats", "fsums", "wide"});
  for (Backend backend : tegula::testing::backendsWithTheGpu("old values of a small tile's atomics")) {
    for (const char *chip : {"sm_80", "sm_90a"}) {
      if (backend == Backend::Interp && std::string(chip) == "sm_90a")
        continue;
      if (backend == Backend::GPU && std::string(chip) == "sm_90a")
        continue; // the GPU's own chip
      SCOPED_TRACE(fmt::format("{} {}", backend == Backend::Interp ? "interpreter" : backend == Backend::Sim ? "simulator" : "GPU",
                               backend == Backend::Sim ? chip : ""));
      for (int warps : {1, 4, 8}) {
        SCOPED_TRACE(fmt::format("{} warps", warps));
        std::vector<int32_t> counters(40, 0), olds(32, -1), stats(4, -1);
        std::vector<float> fsums(4, 0.0f);
        std::vector<int32_t> wide(32 * 32 + 64, -1);
        k({.grid = {1}, .num_warps = warps, .backend = backend, .chip = backend == Backend::Sim ? chip : ""}, counters,
          olds, stats, fsums, wide);
        for (int r = 0; r < 32; ++r)
          for (int c = 0; c < 32; ++c)
            ASSERT_EQ(wide[r * 32 + c], olds[r]) << "row " << r << ", column " << c;
        for (int t = 0; t < 32; ++t) {
          EXPECT_EQ(wide[1024 + t], olds[(t % 4) * 8 + t / 4]) << "transposed " << t;
          EXPECT_EQ(wide[1056 + t], olds[31 - t]) << "gathered " << t;
        }
        for (int c = 0; c < 8; ++c) {
          EXPECT_EQ(counters[c], 4) << c;
          std::vector<int32_t> seen;
          for (int i = c; i < 32; i += 8)
            seen.push_back(olds[i]);
          std::sort(seen.begin(), seen.end());
          EXPECT_EQ(seen, (std::vector<int32_t>{0, 1, 2, 3})) << "counter " << c;
        }
        EXPECT_EQ(stats[0], 8 * (0 + 1 + 2 + 3));
        EXPECT_EQ(stats[1], 3);
        EXPECT_EQ(stats[2], 0); // every slot held 0
        for (int i = 0; i < 32; ++i)
          EXPECT_EQ(counters[8 + i], i);
        EXPECT_EQ(stats[3], 112);
        EXPECT_EQ(fsums, std::vector<float>(4, 4.0f));
      }
    }
  }
}

} // namespace
