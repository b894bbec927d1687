// MmaLayoutTest.cpp - mma.sync fragments as linear layouts, checked against
// the PTX ISA's fragment tables element by element; ldmatrix addresses
// checked against ldmatrix's own semantics; shared-memory bank conflicts
// counted for the stores that fill an operand tile and the ldmatrix reads
// that drain it, unswizzled and with the derived swizzle.
#include "compiler/layout/MmaLayouts.h"
#include "compiler/layout/SharedSwizzle.h"
#include "compiler/layout/WgmmaOperands.h"
#include "tegula/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <tuple>

#include <fmt/format.h>

using namespace tegula;
using namespace tegula::layout;
using Coords = std::vector<int32_t>;

namespace {

Coords at(const LinearLayout &l, int32_t reg, int32_t lane, int32_t warp = 0) {
  return l.apply({{"register", reg}, {"lane", lane}, {"warp", warp}});
}

TEST(MmaLayout, AccumulatorMatchesThePtxFragment) {
  LinearLayout c = mmaAccumulatorLayout({16, 8}, {1, 1});
  for (int32_t lane = 0; lane < 32; ++lane)
    for (int32_t r = 0; r < 4; ++r) // c0..c3
      EXPECT_EQ(at(c, r, lane), (Coords{lane / 4 + 8 * (r >> 1), 2 * (lane % 4) + (r & 1)}))
          << "lane " << lane << " c" << r;
}

TEST(MmaLayout, SixteenBitOperandsMatchThePtxFragments) { // m16n8k16
  LinearLayout a = mmaOperandLayout(0, {16, 16}, 16, {1, 1});
  LinearLayout b = mmaOperandLayout(1, {16, 8}, 16, {1, 1});
  for (int32_t lane = 0; lane < 32; ++lane) {
    const int32_t g = lane / 4, t = lane % 4;
    for (int32_t r = 0; r < 8; ++r) // a0..a7
      EXPECT_EQ(at(a, r, lane), (Coords{g + 8 * ((r >> 1) & 1), 2 * t + (r & 1) + 8 * (r >> 2)}))
          << "lane " << lane << " a" << r;
    for (int32_t r = 0; r < 4; ++r) // b0..b3
      EXPECT_EQ(at(b, r, lane), (Coords{2 * t + (r & 1) + 8 * (r >> 1), g}))
          << "lane " << lane << " b" << r;
  }
}

TEST(MmaLayout, Tf32AndInt8OperandsMatchThePtxFragments) {
  LinearLayout a32 = mmaOperandLayout(0, {16, 8}, 32, {1, 1}); // m16n8k8
  LinearLayout b32 = mmaOperandLayout(1, {8, 8}, 32, {1, 1});
  LinearLayout a8 = mmaOperandLayout(0, {16, 32}, 8, {1, 1}); // m16n8k32
  LinearLayout b8 = mmaOperandLayout(1, {32, 8}, 8, {1, 1});
  for (int32_t lane = 0; lane < 32; ++lane) {
    const int32_t g = lane / 4, t = lane % 4;
    for (int32_t r = 0; r < 4; ++r)
      EXPECT_EQ(at(a32, r, lane), (Coords{g + 8 * (r & 1), t + 4 * (r >> 1)})) << lane << " a" << r;
    for (int32_t r = 0; r < 2; ++r)
      EXPECT_EQ(at(b32, r, lane), (Coords{t + 4 * r, g})) << lane << " b" << r;
    for (int32_t r = 0; r < 16; ++r)
      EXPECT_EQ(at(a8, r, lane), (Coords{g + 8 * ((r >> 2) & 1), 4 * t + (r & 3) + 16 * (r >> 3)}))
          << lane << " a" << r;
    for (int32_t r = 0; r < 8; ++r)
      EXPECT_EQ(at(b8, r, lane), (Coords{4 * t + (r & 3) + 16 * (r >> 2), g})) << lane << " b" << r;
  }
}

TEST(MmaLayout, WarpsTileTheAccumulatorAndShareOperands) {
  LinearLayout c = mmaAccumulatorLayout({64, 64}, {2, 2});
  EXPECT_TRUE(c.isSurjective());
  EXPECT_TRUE(c.isInjective());
  EXPECT_EQ(c.inDimSize("register"), 64 * 64 / 128);
  // Warp 1 is the next column of warps (N), warp 2 the next row (M).
  EXPECT_EQ(at(c, 0, 0, 1), (Coords{0, 8}));
  EXPECT_EQ(at(c, 0, 0, 2), (Coords{16, 0}));
  LinearLayout a = mmaOperandLayout(0, {64, 32}, 16, {2, 2});
  LinearLayout b = mmaOperandLayout(1, {32, 64}, 16, {2, 2});
  EXPECT_TRUE(a.isSurjective());
  EXPECT_TRUE(b.isSurjective());
  EXPECT_EQ(a.freeBits("warp"), std::vector<int>{0}); // A: same in the warps along N
  EXPECT_EQ(b.freeBits("warp"), std::vector<int>{1}); // B: same in the warps along M
  // A warp's accumulator rows are the rows of its A fragment, its columns
  // those of its B fragment.
  for (int32_t w = 0; w < 4; ++w) {
    EXPECT_EQ(at(c, 0, 0, w)[0], at(a, 0, 0, w)[0]) << "warp " << w;
    EXPECT_EQ(at(c, 0, 0, w)[1], at(b, 0, 0, w)[1]) << "warp " << w;
  }
  // Smaller than the warps' reach: duplicates, not phantom elements.
  LinearLayout small = mmaAccumulatorLayout({16, 8}, {2, 2});
  EXPECT_TRUE(small.isSurjective());
  EXPECT_EQ(small.freeBits("warp"), (std::vector<int>{0, 1}));
}

// Dot chains (attention's P = softmax(Q K^T) feeding P V): with warps along
// M only, the accumulator of an [M, N] dot holds, after a cast to 16 bits,
// exactly the registers of the next dot's A operand with K = N - no
// exchange between threads, not even a register move.
TEST(MmaLayout, AccumulatorIsTheNextDotsSixteenBitOperandA) {
  for (auto [M, N, warps] : {std::tuple{64, 32, 4}, {128, 64, 8}, {16, 16, 1}, {64, 128, 4}})
    EXPECT_EQ(mmaAccumulatorLayout({M, N}, {warps, 1}), mmaOperandLayout(0, {M, N}, 16, {warps, 1}))
        << M << "x" << N << ", " << warps << " warps";
  // Warps along N hold different K columns of A: not the same layout.
  EXPECT_NE(mmaAccumulatorLayout({64, 64}, {2, 2}), mmaOperandLayout(0, {64, 64}, 16, {2, 2}));
}

// A column to broadcast along N (expand_dims of a row statistic): each
// thread holds the rows its accumulator registers hold.
TEST(MmaLayout, BroadcastColumnHoldsEachThreadsRows) {
  LinearLayout col = mmaAccumulatorLayout({64, 1}, {4, 1}), full = mmaAccumulatorLayout({64, 32}, {4, 1});
  for (int32_t warp = 0; warp < 4; ++warp)
    for (int32_t lane = 0; lane < 32; ++lane)
      for (int32_t r = 0; r < 4; ++r) {
        auto row = col.apply({{"register", r & 2}, {"lane", lane}, {"warp", warp}});
        auto elem = full.apply({{"register", r}, {"lane", lane}, {"warp", warp}});
        EXPECT_EQ(row[0], elem[0]);
        EXPECT_EQ(row[1], 0);
      }
}

TEST(MmaLayout, BadShapesAreClearErrors) {
  auto message = [](auto &&f) {
    try {
      f();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_THAT(message([] { mmaAccumulatorLayout({8, 8}, {1, 1}); }),
              ::testing::AllOf(::testing::HasSubstr("multiple of 16 x 8"), ::testing::HasSubstr("got 8 x 8")));
  EXPECT_THAT(message([] { mmaOperandLayout(0, {16, 8}, 16, {1, 1}); }),
              ::testing::HasSubstr("operand A tile 16 x 8 is not a multiple of 16 x 16"));
  EXPECT_THAT(message([] { mmaOperandLayout(1, {16, 8}, 4, {1, 1}); }),
              ::testing::HasSubstr("8-, 16- or 32-bit operands, not 4-bit"));
  EXPECT_THAT(message([] { mmaAccumulatorLayout({48, 8}, {1, 1}); }),
              ::testing::HasSubstr("powers of two, got 48"));
}

/// ldmatrix semantics (PTX ISA): lane 8j+r gives the address of row r of
/// matrix j; thread t receives, in register j, row t/4 and columns
/// 2*(t%4)+{0,1} of that matrix - transposed with .trans.
TEST(MmaLayout, LdmatrixAddressesProduceTheOperandFragment) {
  struct Case {
    const char *what;
    LinearLayout operand;
    bool trans;
    int alongRow; // the dimension a 16-byte row runs along
  };
  std::vector<Case> cases = {
      {"A [M,K], K contiguous", mmaOperandLayout(0, {16, 16}, 16, {1, 1}), false, 1},
      {"A [M,K], M contiguous (trans)", mmaOperandLayout(0, {16, 16}, 16, {1, 1}), true, 0},
      {"B [K,N], K contiguous", mmaOperandLayout(1, {16, 16}, 16, {1, 1}), false, 0},
      {"B [K,N], N contiguous (trans)", mmaOperandLayout(1, {16, 16}, 16, {1, 1}), true, 1},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    LinearLayout addr = ldmatrixAddressLayout(c.operand, 4, c.trans);
    for (int32_t j = 0; j < 4; ++j)
      for (int32_t t = 0; t < 32; ++t)
        for (int32_t e = 0; e < 2; ++e) {
          const int32_t row = c.trans ? 2 * (t % 4) + e : t / 4;
          const int32_t col = c.trans ? t / 4 : 2 * (t % 4) + e;
          Coords expect = addr.apply({{"lane", 8 * j + row}});
          expect[size_t(c.alongRow)] += col;
          ASSERT_EQ(at(c.operand, 2 * j + e, t), expect) << "matrix " << j << " thread " << t;
        }
  }
  // ldmatrix moves 16-bit elements: a tf32 or i8 fragment is refused.
  EXPECT_THROW(ldmatrixAddressLayout(mmaOperandLayout(0, {16, 8}, 32, {1, 1}), 4, false), Error);
  EXPECT_THROW(ldmatrixAddressLayout(mmaOperandLayout(0, {16, 32}, 8, {1, 1}), 4, false), Error);
}

struct SwizzleCase {
  const char *what;
  SharedTile tile;
  LinearLayout store;  // the distributed layout that fills the tile, 16 B per thread
  LinearLayout reader; // ldmatrix addresses
};

TEST(SharedSwizzle, DerivedSwizzlesMakeStoresAndLdmatrixConflictFree) {
  std::vector<SwizzleCase> cases;
  // bf16 A tiles [BM, BK], K contiguous, filled by 4 warps with 8-element
  // vectors and read by ldmatrix.x4 (non-trans): 32-, 64- and 128-byte rows.
  for (int32_t bk : {16, 32, 64}) {
    const int32_t lanesK = bk / 8;
    cases.push_back({"A bf16 K-contiguous", SharedTile{{128, bk}, 1, 16, {}},
                     blockedLayout({128, bk}, {1, 8}, {32 / lanesK, lanesK}, {4, 1}, {1, 0}),
                     ldmatrixAddressLayout(mmaOperandLayout(0, {16, 16}, 16, {1, 1}), 4, false)});
  }
  // bf16 B tiles [BK, BN], N contiguous (row-major B), read with .trans.
  for (int32_t bn : {64, 128}) {
    const int32_t lanesN = std::min(bn / 8, 32);
    cases.push_back({"B bf16 N-contiguous", SharedTile{{32, bn}, 1, 16, {}},
                     blockedLayout({32, bn}, {1, 8}, {32 / lanesN, lanesN}, {4, 1}, {1, 0}),
                     ldmatrixAddressLayout(mmaOperandLayout(1, {16, 16}, 16, {1, 1}), 4, true)});
  }
  for (SwizzleCase &c : cases) {
    SCOPED_TRACE(c.tile.toString());
    SharedAccess store = vectorAccess("store", c.store, 8, 16);
    SharedAccess read{"ldmatrix", c.reader};
    ConflictCount plainRead = bankConflicts(c.tile, read);
    SharedTile swizzled = deriveSwizzle(c.tile, {store, read});
    ConflictCount s = bankConflicts(swizzled, store), r = bankConflicts(swizzled, read);
    std::printf("[swizzle] %-22s %-60s unswizzled ldmatrix worst %d wavefronts -> store %d, "
                "ldmatrix %d (%lld + %lld phases)\n",
                c.what, swizzled.toString().c_str(), plainRead.worst, s.worst, r.worst,
                (long long)s.phases, (long long)r.phases);
    // Unswizzled, the 8 rows an ldmatrix phase reads share bank groups
    // whenever rows are shorter than... any multiple of 128 bytes apart.
    EXPECT_GT(plainRead.worst, 1);
    EXPECT_EQ(s.extraWavefronts, 0);
    EXPECT_EQ(r.extraWavefronts, 0);
    // Swizzling permutes chunks within rows: still a bijection onto the tile.
    std::set<int64_t> offsets;
    for (int32_t i = 0; i < c.tile.shape[0]; ++i)
      for (int32_t j = 0; j < c.tile.shape[1]; ++j)
        offsets.insert(swizzled.offset(i, j));
    EXPECT_EQ(int64_t(offsets.size()), int64_t(c.tile.shape[0]) * c.tile.shape[1]);
    EXPECT_EQ(*offsets.rbegin(), int64_t(c.tile.shape[0]) * c.tile.shape[1] * 2 - 2);
    // The lowering addresses the tile through offsetLayout(): same places.
    LinearLayout asLayout = swizzled.offsetLayout();
    for (int32_t i = 0; i < c.tile.shape[0]; ++i)
      for (int32_t j = 0; j < c.tile.shape[1]; ++j)
        ASSERT_EQ(int64_t(asLayout.apply({{"dim0", i}, {"dim1", j}})[0]) * 2, swizzled.offset(i, j))
            << i << ", " << j;
  }
}

/// An epilogue's accumulator (mma.sync's C fragment, warps along M as on
/// wgmma) stored into the tile a TMA store stages it in: a row-major tile
/// whose rows span a multiple of 128 bytes puts a warp's 8 rows on the same
/// banks (8-way for bf16);
/// tmaStoreTile's 128-byte swizzle spreads bf16 over all 32 banks and
/// halves f32's conflicts (2-way: TMA's swizzle is fixed).
TEST(SharedSwizzle, TmaStoreTilesTakeTheAccumulatorWithFewConflicts) {
  struct Case {
    int32_t M, N, warps, bits, worstPlain, worstSwizzled;
  };
  for (Case c : {Case{128, 128, 4, 16, 8, 1}, Case{128, 256, 8, 16, 8, 1}, Case{64, 64, 4, 16, 8, 1},
                 Case{128, 64, 4, 32, 4, 2}}) {
    SCOPED_TRACE(fmt::format("{}x{} {}-bit, {} warps", c.M, c.N, c.bits, c.warps));
    const LinearLayout acc = mmaAccumulatorLayout({c.M, c.N}, {c.warps, 1});
    const SharedAccess store = vectorAccess("store", acc, 2, c.bits); // two columns a register pair
    std::optional<SharedTile> tile = tmaStoreTile({c.M, c.N}, c.bits);
    ASSERT_TRUE(tile);
    EXPECT_EQ(tile->rowBytes(), 128);
    EXPECT_EQ(tmaSwizzleBytes(*tile), 128);
    EXPECT_EQ(bankConflicts(SharedTile{{c.M, c.N}, 1, c.bits, {}}, store).worst, c.worstPlain);
    EXPECT_EQ(bankConflicts(*tile, store).worst, c.worstSwizzled);
  }
  EXPECT_FALSE(tmaStoreTile({128, 8}, 16)) << "16-byte rows take no swizzle";
  EXPECT_FALSE(tmaStoreTile({4, 64}, 16)) << "fewer than 8 rows";
  EXPECT_FALSE(tmaStoreTile({100, 64}, 16)) << "not a power of two";
}

/// A C block wider than two 128-byte column blocks is staged two at a time
/// when each register's block is the same in every thread (an accumulator:
/// lanes and warps stay inside 8 columns): 32 KiB for 128x256 f32, block b
/// in slot b % 2 - the offsets of the whole tile, wrapped. A layout whose
/// lanes run across the blocks stages the whole tile.
TEST(SharedSwizzle, TmaStoreStagingKeepsTwoBlocksOfAnAccumulator) {
  for (int bits : {32, 16}) {
    SCOPED_TRACE(bits);
    const LinearLayout acc = mmaAccumulatorLayout({128, 256}, {8, 1});
    std::optional<SharedTile> whole = tmaStoreTile({128, 256}, bits);
    ASSERT_TRUE(whole);
    const SharedTile staged = tmaStoreStaging(*whole, acc);
    EXPECT_EQ(staged.residentBlocks, 2);
    EXPECT_EQ(staged.blocks(), 256 * bits / 8 / 128);
    EXPECT_EQ(whole->bytes(), 128 * 256 * bits / 8);
    EXPECT_EQ(staged.bytes(), 2 * 128 * 128);
    const LinearLayout wrapped = staged.offsetLayout();
    for (int32_t i = 0; i < 128; i += 3)
      for (int32_t j = 0; j < 256; ++j) {
        const int64_t slotBytes = 128 * 128, at = whole->offset(i, j);
        const int64_t want = at % (2 * slotBytes);
        ASSERT_EQ(staged.offset(i, j), want) << i << ", " << j;
        ASSERT_EQ(int64_t(wrapped.apply({{"dim0", i}, {"dim1", j}})[0]) * bits / 8, want) << i << ", " << j;
      }
    // Every register's block, the same in all threads.
    for (int32_t r = 0; r < acc.inDimSize("register"); ++r)
      EXPECT_EQ(tmaStoreBlockOf(acc, staged, r), acc.apply({{"register", r}})[1] / staged.blockElements);
  }
  // Two blocks or fewer: nothing to gain.
  EXPECT_EQ(tmaStoreStaging(*tmaStoreTile({128, 64}, 16), mmaAccumulatorLayout({128, 64}, {4, 1})).residentBlocks, 0);
  // Lanes across the columns (a row-major blocked layout, 4 elements a lane
  // along 128 columns, a warp a row): a lane's register lands in different blocks.
  const LinearLayout acrossColumns = LinearLayout::fromBases(
      {{"register", {{0, 1}, {0, 2}}}, {"lane", {{0, 4}, {0, 8}, {0, 16}, {0, 32}, {0, 64}}}, {"warp", {{1, 0}, {2, 0}, {4, 0}}}},
      {{"dim0", 8}, {"dim1", 128}});
  ASSERT_TRUE(tmaStoreTile({8, 128}, 32));
  EXPECT_EQ(tmaStoreStaging(*tmaStoreTile({8, 128}, 32), acrossColumns).residentBlocks, 0);
}

TEST(SharedSwizzle, OffsetLayoutOfAColumnMajorTile) {
  SharedTile tile{{64, 32}, 0, 16, {1, 2, 4}};
  LinearLayout l = tile.offsetLayout();
  for (int32_t i = 0; i < 64; ++i)
    for (int32_t j = 0; j < 32; ++j)
      ASSERT_EQ(int64_t(l.apply({{"dim0", i}, {"dim1", j}})[0]) * 2, tile.offset(i, j));
  EXPECT_THROW((SharedTile{{48, 32}, 1, 16, {}}.offsetLayout()), Error);
}

TEST(SharedSwizzle, NarrowAccessesRunInLongerPhases) {
  // 8-byte accesses: 16 lanes a phase. Lanes 0-15 along a 128-byte row
  // cover all 32 banks once (one wavefront); down a column they stack.
  SharedTile tile{{64, 64}, 1, 16, {}};
  LinearLayout along = LinearLayout::fromBases(
      {{"lane", {{0, 4}, {0, 8}, {0, 16}, {0, 32}, {1, 0}}}}, {{"dim0", 64}, {"dim1", 64}});
  ConflictCount c = bankConflicts(tile, {"row", along, 8});
  EXPECT_EQ(c.phases, 2);
  EXPECT_EQ(c.worst, 1);
  LinearLayout down = LinearLayout::fromBases(
      {{"lane", {{1, 0}, {2, 0}, {4, 0}, {8, 0}, {16, 0}}}}, {{"dim0", 64}, {"dim1", 64}});
  EXPECT_EQ(bankConflicts(tile, {"column", down, 8}).worst, 16);
  EXPECT_THROW(bankConflicts(tile, {"bad", down, 32}), Error);
}

TEST(SharedSwizzle, CountsConflictsOfAPlainColumnRead) {
  // 32 lanes each reading 16 bytes down a column of a 128-byte-row tile:
  // every phase hits one bank group 8 times.
  SharedTile tile{{64, 64}, 1, 16, {}};
  LinearLayout column = LinearLayout::fromBases(
      {{"lane", {{1, 0}, {2, 0}, {4, 0}, {8, 0}, {16, 0}}}}, {{"dim0", 64}, {"dim1", 64}});
  ConflictCount c = bankConflicts(tile, {"column", column});
  EXPECT_EQ(c.phases, 4);
  EXPECT_EQ(c.worst, 8);
  EXPECT_EQ(c.extraWavefronts, 4 * 7);
}

} // namespace

// The GEMM epilogue's exchange (ExchangeToLLVM): the bf16 accumulator's
// pairs (4 bytes) in, 16-byte rows of the blocked layout out for 128-bit
// global stores. Unswizzled the pair stores conflict (rows 256 bytes apart
// share banks); the derived swizzle makes both sides conflict-free.
TEST(SharedSwizzle, EpilogueExchangeIsConflictFree) {
  for (auto [warpsM, warpsN] : {std::pair{2, 2}, std::pair{4, 2}}) {
    const int32_t warps = warpsM * warpsN;
    SharedTile tile{{128, 128}, 1, 16, {}};
    LinearLayout acc = mmaAccumulatorLayout({128, 128}, {warpsM, warpsN});
    LinearLayout rows = blockedLayout({128, 128}, {1, 8}, {2, 16}, {warps, 1}, {1, 0});
    SharedAccess store = vectorAccess("store", acc, 2, 16), load = vectorAccess("load", rows, 8, 16);
    EXPECT_GT(bankConflicts(tile, store).worst, 1);
    SharedTile swizzled = deriveSwizzle(tile, {store, load});
    SCOPED_TRACE(swizzled.toString());
    EXPECT_EQ(bankConflicts(swizzled, store).extraWavefronts, 0);
    EXPECT_EQ(bankConflicts(swizzled, load).extraWavefronts, 0);
  }
}
