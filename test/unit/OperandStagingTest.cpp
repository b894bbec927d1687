// OperandStagingTest.cpp - tf32 and i8 mma operands through shared memory:
// the 16-bit view that lets ldmatrix read them, checked against ldmatrix's
// own semantics element by element; and the derived swizzles, with bank
// conflicts counted for the stores that fill a tile and the reads (ldmatrix,
// or one ld.shared per element) that drain it.
#include "compiler/layout/MmaLayouts.h"
#include "compiler/layout/OperandStaging.h"
#include "compiler/layout/SharedSwizzle.h"
#include "compiler/layout/WgmmaOperands.h"
#include "tegula/error.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fmt/format.h>

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

namespace {

/// stmatrix.x4 from a bf16 accumulator (mma.sync's and wgmma's: the same
/// fragments) into the TMA store's staging tile: every register lands where
/// stmatrix puts it - lane l's word j of group g at (row l / 4, columns
/// 2 (l % 4), +1) of the 8x8 matrix whose rows lanes 8j..8j+7 address - and
/// the rows' 16-byte writes hit every bank once. Tiles that break a row's 16
/// contiguous bytes, other element widths and layouts that are not such
/// fragments get none.
TEST(OperandStaging, StmatrixStoresAccumulatorFragmentsWithoutConflicts) {
  struct Case {
    std::vector<int32_t> shape, warps;
  };
  for (const Case &c : {Case{{128, 256}, {8, 1}}, Case{{128, 128}, {4, 1}}, Case{{64, 64}, {4, 1}},
                        Case{{64, 128}, {2, 2}}}) {
    SCOPED_TRACE(fmt::format("{}x{}, warps {}x{}", c.shape[0], c.shape[1], c.warps[0], c.warps[1]));
    const LinearLayout source = mmaAccumulatorLayout(c.shape, c.warps);
    const std::optional<SharedTile> tile = tmaStoreTile(c.shape, 16);
    ASSERT_TRUE(tile);
    const std::optional<LinearLayout> rows = stmatrixRows(source, *tile);
    ASSERT_TRUE(rows) << tile->toString();
    const LinearLayout rowOffsets = rows->compose(tile->offsetLayout());
    const int32_t groups = source.inDimSize("register") / 8;
    ASSERT_EQ(rows->inDimSize("register"), groups);
    for (int32_t w = 0; w < source.inDimSize("warp"); ++w)
      for (int32_t g = 0; g < groups; ++g)
        for (int32_t l = 0; l < 32; ++l)
          for (int32_t j = 0; j < 4; ++j)
            for (int32_t e = 0; e < 2; ++e) {
              const std::vector<int32_t> at = source.apply({{"register", 8 * g + 2 * j + e}, {"lane", l}, {"warp", w}});
              const int64_t want = tile->offset(at[0], at[1]) / 2;
              const int32_t row = rowOffsets.apply({{"register", g}, {"lane", 8 * j + l / 4}, {"warp", w}})[0];
              EXPECT_EQ(row + 2 * (l % 4) + e, want) << "warp " << w << " group " << g << " lane " << l << " word " << j;
            }
    const ConflictCount conflicts = bankConflicts(*tile, SharedAccess{"stmatrix", *rows, 16});
    EXPECT_EQ(conflicts.extraWavefronts, 0) << conflicts.worst;
  }
  const LinearLayout acc = mmaAccumulatorLayout({128, 128}, {4, 1});
  const std::optional<SharedTile> f32Tile = tmaStoreTile({128, 128}, 32);
  ASSERT_TRUE(f32Tile);
  EXPECT_FALSE(stmatrixRows(acc, *f32Tile)); // f32: not 16-bit rows
  SharedTile unswizzledColumnMajor{{128, 128}, 0, 16, {}, 0};
  EXPECT_FALSE(stmatrixRows(acc, unswizzledColumnMajor)); // a row's 8 elements are 256 bytes apart
  EXPECT_FALSE(stmatrixRows(blockedLayout({128, 128}, {1, 8}, {8, 4}, {4, 1}, {1, 0}), *tmaStoreTile({128, 128}, 16)));
}

} // namespace

namespace {

/// tf32 operands loaded along M or N fill wgmma's K-major tiles one 4-byte
/// copy an element: the planned arrangement writes every tile wgmma reads
/// without a bank conflict, where lanes along the load's rows alone (the
/// coalesced layout) would put a warp's copies on a few banks.
TEST(OperandStaging, ScatterCopiesIntoKMajorTf32TilesAreConflictFree) {
  for (int isA = 0; isA < 2; ++isA)
    for (int32_t mn : {64, 128, 256})
      for (int32_t bk : {8, 16, 32, 64})
        for (int32_t warps : {4, 8}) {
          const int kDim = isA ? 1 : 0, mnDim = 1 - kDim;
          std::vector<int32_t> shape(2);
          shape[size_t(kDim)] = bk;
          shape[size_t(mnDim)] = mn;
          auto plan = planWgmmaOperandTile(isA ? 0 : 1, shape, kDim, 32);
          ASSERT_TRUE(plan) << fmt::format("{}x{}", shape[0], shape[1]);
          SCOPED_TRACE(plan->tile.toString());
          auto copy = planScatterCopy(shape, mnDim, warps, plan->tile);
          ASSERT_TRUE(copy);
          EXPECT_EQ(copy->extraWavefronts, 0);
          const LinearLayout ll = blockedLayout(shape, {1, 1}, copy->threadsPerWarp, copy->warpsPerCTA, copy->order);
          EXPECT_TRUE(ll.isInjective() && ll.isSurjective());
          // A warp's copies still read whole 32-byte sectors: 8 lanes along the load.
          EXPECT_GE(copy->threadsPerWarp[size_t(mnDim)], 8);
          std::vector<int32_t> rowsOnly(2, 1), warpsAlong(2, 1);
          rowsOnly[size_t(mnDim)] = 32;
          warpsAlong[size_t(kDim)] = std::min(warps, bk);
          warpsAlong[size_t(mnDim)] = warps / warpsAlong[size_t(kDim)];
          const std::vector<int32_t> order = {mnDim, kDim};
          if (mn >= 32 * warpsAlong[size_t(mnDim)]) {
            const LinearLayout coalesced = blockedLayout(shape, {1, 1}, rowsOnly, warpsAlong, order);
            EXPECT_GT(bankConflicts(plan->tile, vectorAccess("cp.async", coalesced, 1, 32)).extraWavefronts, 0);
          }
        }
}

} // namespace
