// LinearLayoutTest.cpp - the layout algebra: construction, application,
// products, composition, inversion, conversion plans and vector widths.
#include "compiler/layout/LinearLayout.h"
#include "tegula/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace tegula;
using namespace tegula::layout;

namespace {

using Ins = std::vector<std::pair<std::string, int32_t>>;

/// Every (register, lane, warp) slot of `l` and the element it holds.
std::vector<std::pair<Ins, std::vector<int32_t>>> allSlots(const LinearLayout &l) {
  std::vector<std::pair<Ins, std::vector<int32_t>>> out;
  for (int32_t r = 0; r < l.inDimSize("register"); ++r)
    for (int32_t ln = 0; ln < l.inDimSize("lane"); ++ln)
      for (int32_t w = 0; w < l.inDimSize("warp"); ++w) {
        Ins in = {{"register", r}, {"lane", ln}, {"warp", w}};
        out.push_back({in, l.apply(in)});
      }
  return out;
}

TEST(LinearLayout, Identity1D) {
  auto l = LinearLayout::identity1D(8, "register", "dim0");
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(l.apply({{"register", i}}), std::vector<int32_t>{i});
  EXPECT_TRUE(l.isInjective());
  EXPECT_TRUE(l.isSurjective());
}

TEST(LinearLayout, ProductConcatenatesBitsOfSharedDims) {
  // 4 registers then 8 lanes along one dimension: element = lane * 4 + reg.
  auto l = LinearLayout::identity1D(4, "register", "dim0") *
           LinearLayout::identity1D(8, "lane", "dim0");
  EXPECT_EQ(l.outDimSize("dim0"), 32);
  for (int r = 0; r < 4; ++r)
    for (int ln = 0; ln < 8; ++ln)
      EXPECT_EQ(l.apply({{"register", r}, {"lane", ln}})[0], ln * 4 + r);
}

TEST(LinearLayout, ZerosMeanDuplicates) {
  auto l = LinearLayout::identity1D(4, "register", "dim0") *
           LinearLayout::zeros1D(2, "warp", "dim0");
  EXPECT_EQ(l.apply({{"register", 3}, {"warp", 1}}), std::vector<int32_t>{3});
  EXPECT_FALSE(l.isInjective());
  EXPECT_TRUE(l.isSurjective());
  EXPECT_EQ(l.freeBits("warp"), std::vector<int>{0});
}

TEST(LinearLayout, BlockedLayoutCoversATileExactlyOnce) {
  // 64x64 tile, 4 warps, each thread 1x4 contiguous along dim1 (row-major).
  auto l = blockedLayout({64, 64}, {1, 4}, {8, 4}, {4, 1}, {1, 0});
  EXPECT_TRUE(l.isSurjective());
  EXPECT_TRUE(l.isInjective());
  std::set<std::vector<int32_t>> seen;
  for (auto &[in, coord] : allSlots(l))
    EXPECT_TRUE(seen.insert(coord).second) << "element held twice";
  EXPECT_EQ(seen.size(), 64u * 64u);
  EXPECT_EQ(l.contiguousRegisters("dim1"), 4); // 128-bit f32 vectors
  EXPECT_EQ(l.contiguousRegisters("dim0"), 1);
  // Lane 1 holds columns 4..7 of row 0; lane 4 starts row 1; warp 1 row 8.
  EXPECT_EQ(l.apply({{"lane", 1}}), (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(l.apply({{"lane", 4}}), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(l.apply({{"warp", 1}}), (std::vector<int32_t>{8, 0}));
  // One pass covers 32x16: 4 contiguous registers, then repeats along the
  // fastest dim (columns 16, 32, 48), then along rows (row 32): 32 registers.
  EXPECT_EQ(l.inDimSize("register"), 32);
  EXPECT_EQ(l.apply({{"register", 4}}), (std::vector<int32_t>{0, 16}));
  EXPECT_EQ(l.apply({{"register", 16}}), (std::vector<int32_t>{32, 0}));
}

TEST(LinearLayout, BlockedLayoutSmallerThanOnePassDuplicates) {
  // 128 elements over 4 warps x 32 lanes x 4 registers = 512 slots.
  auto l = blockedLayout({128}, {4}, {32}, {4}, {0});
  EXPECT_EQ(l.outDimSize("dim0"), 128);
  EXPECT_TRUE(l.isSurjective());
  EXPECT_FALSE(l.isInjective());
  EXPECT_EQ(l.freeBits("warp"), (std::vector<int>{0, 1})); // all warps hold the same data
  EXPECT_EQ(l.contiguousRegisters("dim0"), 4);
}

TEST(LinearLayout, BlockedLayoutLargerThanOnePassRepeats) {
  auto l = blockedLayout({1024}, {4}, {32}, {4}, {0});
  EXPECT_EQ(l.inDimSize("register"), 8);
  EXPECT_EQ(l.contiguousRegisters("dim0"), 4);
  EXPECT_EQ(l.apply({{"register", 4}})[0], 512);
  EXPECT_TRUE(l.isInjective() && l.isSurjective());
}

TEST(LinearLayout, ComposeWithInverseIsIdentity) {
  auto l = blockedLayout({32, 16}, {2, 2}, {4, 8}, {4, 1}, {1, 0});
  auto inv = l.invert();
  auto round = l.compose(inv);
  for (auto &[in, coord] : allSlots(l)) {
    std::vector<int32_t> back = round.apply(in);
    EXPECT_EQ(back, (std::vector<int32_t>{in[0].second, in[1].second, in[2].second}));
    EXPECT_EQ(l.apply({{"register", inv.apply({{"dim0", coord[0]}, {"dim1", coord[1]}})[0]},
                       {"lane", inv.apply({{"dim0", coord[0]}, {"dim1", coord[1]}})[1]},
                       {"warp", inv.apply({{"dim0", coord[0]}, {"dim1", coord[1]}})[2]}}),
              coord);
  }
}

TEST(LinearLayout, InvertRejectsNonBijections) {
  auto l = blockedLayout({128}, {4}, {32}, {4}, {0});
  EXPECT_THROW(l.invert(), Error);
}

TEST(LinearLayout, InvertAndComposeMapsSlotsToTheSameElement) {
  auto a = blockedLayout({64, 64}, {1, 4}, {8, 4}, {4, 1}, {1, 0});
  auto b = blockedLayout({64, 64}, {4, 1}, {4, 8}, {1, 4}, {0, 1}); // column-major threads
  auto plan = a.invertAndCompose(b);
  for (auto &[in, coord] : allSlots(a)) {
    std::vector<int32_t> slot = plan.apply(in);
    EXPECT_EQ(b.apply({{"register", slot[0]}, {"lane", slot[1]}, {"warp", slot[2]}}), coord);
  }
}

TEST(LinearLayout, ConversionPlans) {
  auto a = blockedLayout({128}, {4}, {32}, {1}, {0});
  EXPECT_EQ(classifyConversion(a, a), ConversionKind::None);

  // The same elements per thread in another register order.
  auto swapped = LinearLayout::fromBases(
      {{"register", {{2}, {1}}}, {"lane", {{4}, {8}, {16}, {32}, {64}}}, {"warp", {}}},
      {{"dim0", 128}});
  EXPECT_EQ(classifyConversion(a, swapped), ConversionKind::Registers);

  // One warp: elements move between lanes but stay in the warp.
  auto strided = blockedLayout({64}, {1}, {32}, {1}, {0});
  auto paired = blockedLayout({64}, {2}, {32}, {1}, {0});
  EXPECT_EQ(classifyConversion(strided, paired), ConversionKind::Warp);

  // Rows across warps vs columns across warps: a transpose through shared memory.
  auto rows = blockedLayout({32, 32}, {1, 1}, {1, 32}, {4, 1}, {1, 0});
  auto cols = blockedLayout({32, 32}, {1, 1}, {32, 1}, {1, 4}, {0, 1});
  EXPECT_EQ(classifyConversion(rows, cols), ConversionKind::SharedMem);
  EXPECT_STREQ(toString(ConversionKind::SharedMem), "shared-memory");
}

TEST(LinearLayout, SliceDropsADimensionForReductions) {
  auto l = blockedLayout({16, 64}, {1, 4}, {2, 16}, {4, 1}, {1, 0});
  auto s = l.sliceOut("dim1");
  ASSERT_EQ(s.outDims().size(), 1u);
  EXPECT_EQ(s.outDimSize("dim0"), 16);
  // Lanes along dim1 now hold the same row: their bits are free.
  EXPECT_EQ(s.freeBits("lane"), (std::vector<int>{0, 1, 2, 3}));
  for (auto &[in, coord] : allSlots(l))
    EXPECT_EQ(s.apply(in)[0], coord[0]);
}

TEST(LinearLayout, TransposeOutsPermutesCoordinates) {
  auto l = blockedLayout({8, 4}, {1, 1}, {8, 4}, {1, 1}, {1, 0});
  auto t = l.transposeOuts({"dim1", "dim0"});
  for (auto &[in, coord] : allSlots(l))
    EXPECT_EQ(t.apply(in), (std::vector<int32_t>{coord[1], coord[0]}));
}

TEST(LinearLayout, BadInputsAreErrors) {
  EXPECT_THROW(LinearLayout::identity1D(6, "register", "dim0"), Error);
  EXPECT_THROW(blockedLayout({64}, {4, 1}, {32}, {1}, {0}), Error);
  auto l = LinearLayout::identity1D(8, "register", "dim0");
  EXPECT_THROW(l.apply({{"register", 8}}), Error);
  EXPECT_THROW(l.compose(LinearLayout::identity1D(4, "dim0", "x")), Error);
  try {
    LinearLayout::fromBases({{"register", {{9}}}}, {{"dim0", 8}});
    FAIL();
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("basis coordinate 9 of 'register' is outside dim0"));
  }
}

} // namespace
