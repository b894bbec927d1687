// MemoryProfileTest.cpp - the simulator's memory profile prices a warp's
// access as the hardware serves it: global requests by the 32-byte sectors
// their bytes lie in, shared ones by wavefronts (the most distinct words one
// bank must deliver, per 128-byte phase), each against the fewest its
// distinct bytes need; and a CTA's lanes' accesses are grouped by warp and
// by their execution of the site.
#include "simulator/MemoryProfile.h"
#include "simulator/Runtime.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

using namespace tegula;
using namespace tegula::sim;

namespace {

/// 32 lanes, lane i at base + i * stride, `bytes` each.
std::vector<LanePart> lanes(uintptr_t base, uintptr_t stride, uint32_t bytes, int count = 32) {
  std::vector<LanePart> parts;
  for (int i = 0; i < count; ++i)
    parts.push_back({base + uintptr_t(i) * stride, bytes, i});
  return parts;
}

std::pair<uint64_t, uint64_t> sectors(const std::vector<LanePart> &parts, uint64_t expectBytes) {
  uint64_t bytes = 0;
  auto r = globalSectors(parts, bytes);
  EXPECT_EQ(bytes, expectBytes);
  return r;
}

std::pair<uint64_t, uint64_t> wavefronts(const std::vector<LanePart> &parts, uint64_t expectBytes) {
  uint64_t bytes = 0;
  auto r = sharedWavefronts(parts, bytes);
  EXPECT_EQ(bytes, expectBytes);
  return r;
}

using Pair = std::pair<uint64_t, uint64_t>;

} // namespace

TEST(MemoryProfile, GlobalRequestsMoveTheSectorsTheirBytesLieIn) {
  constexpr uintptr_t base = 0x10000;
  EXPECT_EQ(sectors(lanes(base, 4, 4), 128), (Pair{4, 4}));          // coalesced f32
  EXPECT_EQ(sectors(lanes(base, 16, 16), 512), (Pair{16, 16}));      // coalesced 16-byte vectors
  EXPECT_EQ(sectors(lanes(base + 4, 4, 4), 128), (Pair{5, 4}));      // misaligned by one element
  EXPECT_EQ(sectors(lanes(base, 128, 4), 128), (Pair{32, 4}));       // a column: a sector a lane
  EXPECT_EQ(sectors(lanes(base, 0, 4), 4), (Pair{1, 1}));            // every lane the same word
  EXPECT_EQ(sectors(lanes(base, 8, 4), 128), (Pair{8, 4}));          // every other word
  EXPECT_EQ(sectors(lanes(base, 4, 4, 5), 20), (Pair{1, 1}));        // five lanes (the others masked)
  EXPECT_EQ(sectors({{base + 30, 4, 0}}, 4), (Pair{2, 1}));          // one access across two sectors
}

TEST(MemoryProfile, SharedRequestsTakeAWavefrontPerWordTheBusiestBankDelivers) {
  constexpr uintptr_t base = 0x40000;
  EXPECT_EQ(wavefronts(lanes(base, 4, 4), 128), (Pair{1, 1}));        // a row of f32: every bank once
  EXPECT_EQ(wavefronts(lanes(base, 128, 4), 128), (Pair{32, 1}));     // a column of a 32 x 32 tile
  EXPECT_EQ(wavefronts(lanes(base, 132, 4), 128), (Pair{1, 1}));      // ... padded to 33 columns
  EXPECT_EQ(wavefronts(lanes(base, 8, 4), 128), (Pair{2, 1}));        // every other word: 2-way
  EXPECT_EQ(wavefronts(lanes(base, 0, 4), 4), (Pair{1, 1}));          // broadcast
  EXPECT_EQ(wavefronts(lanes(base, 8, 8), 256), (Pair{2, 2}));        // 8 bytes a lane: two half-warps
  EXPECT_EQ(wavefronts(lanes(base, 16, 16), 512), (Pair{4, 4}));      // 16 bytes: four quarter-warps
  EXPECT_EQ(wavefronts(lanes(base, 128, 16), 512), (Pair{32, 4}));    // 16-byte rows 128 bytes apart: 8-way
  EXPECT_EQ(wavefronts(lanes(base, 2, 2), 64), (Pair{1, 1}));         // 16-bit: two lanes a word
}

namespace {
std::function<void()> body;
void entry(void **) { body(); }
} // namespace

/// In a CTA of 64 threads, lane i of each warp reads word i of its warp's
/// row (coalesced) at one site and word 32 i at another (a column); a warp's
/// lanes make one request per execution, so 2 warps x 3 iterations.
TEST(MemoryProfile, ACtasLanesAreGroupedByWarpAndExecution) {
  alignas(128) static float data[64 * 32 * 4];
  LaunchConfig config;
  config.kernel = "test";
  config.grid = {1, 1, 1};
  config.threads = 64;
  config.buffers = {{reinterpret_cast<uintptr_t>(data), reinterpret_cast<uintptr_t>(data + 64 * 32 * 4), "data",
                     false}};
  config.profileMemory = true;
  body = [] {
    const int t = specialRegister(SpecialRegister::TidX);
    for (int k = 0; k < 3; ++k) {
      checkAccess(&data[t + 64 * k], 4, AccessKind::Read, Space::Global, 1);
      profileAccess(&data[t + 64 * k], 4, AccessKind::Read, Space::Global, 1);
      profileAccess(&data[(t % 32) * 32 + 2048 * (t / 32)], 4, AccessKind::Read, Space::Global, 2);
    }
  };
  RunStats stats = runGrid(config, entry, nullptr);
  ASSERT_EQ(stats.traffic.size(), 2u);
  EXPECT_EQ(stats.traffic[0].site, 1u);
  EXPECT_EQ(stats.traffic[0].requests, 6u);
  EXPECT_EQ(stats.traffic[0].transactions, 24u);
  EXPECT_EQ(stats.traffic[0].ideal, 24u);
  EXPECT_EQ(stats.traffic[1].site, 2u);
  EXPECT_EQ(stats.traffic[1].requests, 6u);
  EXPECT_EQ(stats.traffic[1].transactions, 6u * 32);
  EXPECT_EQ(stats.traffic[1].ideal, 6u * 4);
  EXPECT_EQ(stats.traffic[1].bytes, 6u * 128);
}
