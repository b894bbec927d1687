// OperandStagingTest.cpp - tf32 and i8 mma operands through shared memory:
// the 16-bit view that lets ldmatrix read them, checked against ldmatrix's
// own semantics element by element; and the derived swizzles, with bank
// conflicts counted for the stores that fill a tile and the reads (ldmatrix,
// or one ld.shared per element) that drain it.
#include "compiler/layout/MmaLayouts.h"
#include "compiler/layout/OperandStaging.h"
#include "compiler/layout/SharedSwizzle.h"
#include "tegula/error.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace tegula;
using namespace tegula::layout;
using Coords = std::vector<int32_t>;

namespace {

TEST(OperandStaging, SixteenBitViewIsTheFragmentOfTheScaledTile) {
  for (std::vector<int32_t> warps : {std::vector<int32_t>{1, 1}, {2, 2}, {4, 1}, {2, 4}})
    for (int isA = 0; isA < 2; ++isA) {
      const int kDim = isA ? 1 : 0;
      std::vector<int32_t> shape32 = isA ? std::vector<int32_t>{64, 16} : std::vector<int32_t>{16, 64};
      std::vector<int32_t> shape8 = isA ? std::vector<int32_t>{64, 64} : std::vector<int32_t>{64, 64};
      std::vector<int32_t> as16 = shape32, as16from8 = shape8;
      as16[size_t(kDim)] *= 2;
      as16from8[size_t(kDim)] /= 2;
      const int op = isA ? 0 : 1;
      EXPECT_EQ(sixteenBitView(mmaOperandLayout(op, shape32, 32, warps), isA, 32),
                mmaOperandLayout(op, as16, 16, warps))
          << "tf32 " << (isA ? "A" : "B") << " warps " << warps[0] << "x" << warps[1];
      EXPECT_EQ(sixteenBitView(mmaOperandLayout(op, shape8, 8, warps), isA, 8),
                mmaOperandLayout(op, as16from8, 16, warps))
          << "i8 " << (isA ? "A" : "B") << " warps " << warps[0] << "x" << warps[1];
    }
  // A 16-bit fragment is neither.
  EXPECT_THROW(sixteenBitView(mmaOperandLayout(0, {16, 16}, 16, {1, 1}), true, 8), Error);
  EXPECT_THROW(sixteenBitView(mmaOperandLayout(0, {16, 16}, 16, {1, 1}), true, 32), Error);
}

/// ldmatrix.x`m` as the hardware runs it: lane 8j + r addresses row r of
/// matrix j; thread t receives, in word j, the 4 bytes at byte 4 * (t % 4)
/// of row t / 4 of matrix j. Every operand register must be where the
/// fragment layout says.
void expectLdmatrixDeliversTheFragment(const LinearLayout &operand, bool isA, int bits) {
  const int kDim = isA ? 1 : 0, perWord = 32 / bits;
  LdmatrixReads reads = planLdmatrixReads(operand, isA, kDim == 1 ? 1 : 0, bits);
  ASSERT_FALSE(reads.trans);
  const int32_t words = operand.inDimSize("register") / perWord;
  for (int32_t warp = 0; warp < operand.inDimSize("warp"); ++warp)
    for (int32_t w = 0; w < words; ++w) {
      const int32_t group = w / reads.matrices, j = w % reads.matrices;
      const int32_t first = firstRegisterOfWord(reads, w);
      for (int32_t t = 0; t < 32; ++t) {
        Coords row = reads.rows.apply({{"register", group}, {"lane", 8 * j + t / 4}, {"warp", warp}});
        for (int32_t i = 0; i < perWord; ++i) {
          Coords want = row;
          want[size_t(kDim)] += (t % 4) * perWord + i;
          ASSERT_EQ(operand.apply({{"register", first + i}, {"lane", t}, {"warp", warp}}), want)
              << bits << "-bit " << (isA ? "A" : "B") << " word " << w << " thread " << t << " element " << i;
          ASSERT_EQ(wordOfRegister(reads, first + i), w);
        }
      }
    }
}

TEST(OperandStaging, LdmatrixReadsTf32AndInt8FragmentsWhoseRowsRunAlongK) {
  expectLdmatrixDeliversTheFragment(mmaOperandLayout(0, {16, 8}, 32, {1, 1}), true, 32);
  expectLdmatrixDeliversTheFragment(mmaOperandLayout(0, {64, 32}, 32, {2, 2}), true, 32);
  expectLdmatrixDeliversTheFragment(mmaOperandLayout(1, {32, 64}, 32, {2, 2}), false, 32);
  expectLdmatrixDeliversTheFragment(mmaOperandLayout(1, {8, 8}, 32, {1, 1}), false, 32);
  expectLdmatrixDeliversTheFragment(mmaOperandLayout(0, {64, 64}, 8, {4, 1}), true, 8);
  expectLdmatrixDeliversTheFragment(mmaOperandLayout(1, {64, 128}, 8, {2, 4}), false, 8);
  // Rows along M or N: no ldmatrix for 32- or 8-bit elements (.trans would
  // split them).
  EXPECT_FALSE(ldmatrixReads(true, 0, 32));
  EXPECT_FALSE(ldmatrixReads(false, 1, 8));
  EXPECT_TRUE(ldmatrixReads(false, 1, 16));
  EXPECT_THROW(planLdmatrixReads(mmaOperandLayout(1, {8, 8}, 32, {1, 1}), false, 1, 32), Error);
}

struct StagingCase {
  const char *what;
  bool isA;
  int bits;
  std::vector<int32_t> shape;
  LinearLayout source; // the global load's layout, 16 bytes per thread
};

TEST(OperandStaging, Tf32AndInt8TilesAreConflictFree) {
  // 4 warps 2 x 2, as accelerate-dot picks for 128 x 128.
  const std::vector<int32_t> warps = {2, 2};
  std::vector<StagingCase> cases = {
      {"tf32 A, K contiguous", true, 32, {128, 16}, blockedLayout({128, 16}, {1, 4}, {8, 4}, {4, 1}, {1, 0})},
      {"tf32 A, K contiguous, BK 32", true, 32, {128, 32}, blockedLayout({128, 32}, {1, 4}, {4, 8}, {4, 1}, {1, 0})},
      {"tf32 B, N contiguous", false, 32, {16, 128}, blockedLayout({16, 128}, {1, 4}, {1, 32}, {4, 1}, {1, 0})},
      {"tf32 B, K contiguous", false, 32, {16, 128}, blockedLayout({16, 128}, {4, 1}, {4, 8}, {1, 4}, {0, 1})},
      {"i8 A, K contiguous", true, 8, {128, 64}, blockedLayout({128, 64}, {1, 16}, {8, 4}, {4, 1}, {1, 0})},
      {"i8 B, K contiguous", false, 8, {64, 128}, blockedLayout({64, 128}, {16, 1}, {4, 8}, {1, 4}, {0, 1})},
      {"i8 B, N contiguous", false, 8, {64, 128}, blockedLayout({64, 128}, {1, 16}, {4, 8}, {4, 1}, {1, 0})},
  };
  for (const StagingCase &c : cases) {
    SCOPED_TRACE(c.what);
    LinearLayout operand = mmaOperandLayout(c.isA ? 0 : 1, c.shape, c.bits, warps);
    const int32_t vector = 128 / c.bits;
    SharedTile tile = planOperandTile(c.source, operand, c.isA, vector, c.bits);
    const bool ldmatrix = ldmatrixReads(c.isA, tile.contiguousDim, c.bits);
    SharedAccess read = ldmatrix ? SharedAccess{"ldmatrix", planLdmatrixReads(operand, c.isA, tile.contiguousDim, c.bits).rows, 16}
                                 : vectorAccess("ld.shared", operand, 1, c.bits);
    SharedAccess store = vectorAccess("store", c.source, vector, c.bits);
    ConflictCount r = bankConflicts(tile, read), s = bankConflicts(tile, store);
    std::printf("[staging] %-22s %-64s %-9s worst %d wavefronts, stores %d\n", c.what,
                tile.toString().c_str(), ldmatrix ? "ldmatrix" : "ld.shared", r.worst, s.worst);
    EXPECT_EQ(ldmatrix, std::string(c.what).find("K contiguous") != std::string::npos);
    EXPECT_EQ(r.extraWavefronts, 0);
    EXPECT_EQ(s.extraWavefronts, 0);
  }
}

} // namespace
