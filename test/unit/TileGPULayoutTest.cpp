// TileGPULayoutTest.cpp - tilegpu layout encodings as linear layouts, and
// the default layout choice.
#include "compiler/Registration.h"
#include "compiler/layout/MmaLayouts.h"
#include "dialects/tilegpu/TileGPUDialect.h"
#include "tegula/error.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <set>

using namespace tegula;
using namespace tegula::tilegpu;

namespace {

/// Every thread (4 warps) holds, in the slice `rows`, exactly the rows it
/// held in the 2-D parent `full`.
void expectSameRowsPerThread(const layout::LinearLayout &full, const layout::LinearLayout &rows) {
  for (int32_t l = 0; l < 32; ++l)
    for (int32_t w = 0; w < 4; ++w) {
      std::set<int32_t> parentRows, sliceRows;
      for (int32_t r = 0; r < full.inDimSize("register"); ++r)
        parentRows.insert(full.apply({{"register", r}, {"lane", l}, {"warp", w}})[0]);
      for (int32_t r = 0; r < rows.inDimSize("register"); ++r)
        sliceRows.insert(rows.apply({{"register", r}, {"lane", l}, {"warp", w}})[0]);
      EXPECT_EQ(sliceRows, parentRows) << "lane " << l << " warp " << w;
    }
}

class TileGPULayout : public ::testing::Test {
protected:
  TileGPULayout() {
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }
  mlir::MLIRContext ctx;
};

TEST_F(TileGPULayout, BlockedEncodingIsTheBlockedLinearLayout) {
  auto enc = BlockedEncodingAttr::get(&ctx, {1, 4}, {8, 4}, {4, 1}, {1, 0});
  EXPECT_EQ(toLinearLayout(enc, {64, 64}),
            layout::blockedLayout({64, 64}, {1, 4}, {8, 4}, {4, 1}, {1, 0}));
  EXPECT_EQ(enc.getNumWarps(), 4);
}

TEST_F(TileGPULayout, MmaEncodingsAreTheTensorCoreLinearLayouts) {
  auto mma = MmaEncodingAttr::get(&ctx, {2, 2});
  EXPECT_EQ(mma.getNumWarps(), 4);
  EXPECT_EQ(toLinearLayout(mma, {64, 128}), layout::mmaAccumulatorLayout({64, 128}, {2, 2}));
  auto a = DotOperandEncodingAttr::get(&ctx, 0, mma, 16);
  auto b = DotOperandEncodingAttr::get(&ctx, 1, mma, 16);
  EXPECT_EQ(toLinearLayout(a, {64, 32}), layout::mmaOperandLayout(0, {64, 32}, 16, {2, 2}));
  EXPECT_EQ(toLinearLayout(b, {32, 128}), layout::mmaOperandLayout(1, {32, 128}, 16, {2, 2}));
  // A row reduction of the accumulator: each thread keeps exactly its rows
  // (two per instruction tile), the 4 lanes of a quad and the warps along N
  // hold the same rows.
  auto rows = toLinearLayout(SliceEncodingAttr::get(&ctx, 1, mma), {64});
  auto full = toLinearLayout(mma, {64, 128});
  EXPECT_TRUE(rows.isSurjective());
  EXPECT_EQ(rows.freeBits("lane"), (std::vector<int>{0, 1}));
  EXPECT_EQ(rows.freeBits("warp"), (std::vector<int>{0}));
  expectSameRowsPerThread(full, rows);
  // Too small for one instruction per warp row: a clear error.
  EXPECT_THROW(toLinearLayout(mma, {8, 8}), Error);
}

TEST_F(TileGPULayout, SliceHoldsTheParentsRows) {
  auto parent = BlockedEncodingAttr::get(&ctx, {1, 4}, {8, 4}, {4, 1}, {1, 0});
  auto slice = SliceEncodingAttr::get(&ctx, 1, parent);
  auto full = toLinearLayout(parent, {64, 64});
  auto rows = toLinearLayout(slice, {64});
  ASSERT_EQ(rows.outDims().size(), 1u);
  EXPECT_EQ(rows.outDims()[0].name, "dim0");
  // Every thread holds, in the slice, exactly the rows it held in the parent.
  expectSameRowsPerThread(full, rows);
  EXPECT_TRUE(rows.isSurjective());
  // The 4 lanes along dim1 now hold the same row.
  EXPECT_EQ(rows.freeBits("lane"), (std::vector<int>{0, 1}));
}

TEST_F(TileGPULayout, DefaultLayouts) {
  auto v = defaultBlockedEncoding(&ctx, {1024}, 4);
  EXPECT_EQ(v.getSizePerThread(), llvm::ArrayRef<int32_t>({4})); // 128-bit f32 access
  EXPECT_EQ(v.getThreadsPerWarp(), llvm::ArrayRef<int32_t>({32}));
  EXPECT_EQ(v.getWarpsPerCTA(), llvm::ArrayRef<int32_t>({4}));
  auto m = defaultBlockedEncoding(&ctx, {16, 64}, 4);
  EXPECT_EQ(m.getSizePerThread(), llvm::ArrayRef<int32_t>({1, 4}));
  EXPECT_EQ(m.getThreadsPerWarp(), llvm::ArrayRef<int32_t>({2, 16}));
  EXPECT_EQ(m.getWarpsPerCTA(), llvm::ArrayRef<int32_t>({4, 1}));
  EXPECT_EQ(m.getOrder(), llvm::ArrayRef<int32_t>({1, 0}));
  auto narrow = defaultBlockedEncoding(&ctx, {64, 8}, 8);
  EXPECT_EQ(narrow.getSizePerThread(), llvm::ArrayRef<int32_t>({1, 2})); // 512 elements, 256 threads
  EXPECT_EQ(narrow.getThreadsPerWarp(), llvm::ArrayRef<int32_t>({8, 4}));
  auto small = defaultBlockedEncoding(&ctx, {128}, 4); // one element per thread
  EXPECT_EQ(small.getSizePerThread(), llvm::ArrayRef<int32_t>({1}));
  EXPECT_EQ(narrow.getWarpsPerCTA(), llvm::ArrayRef<int32_t>({8, 1}));
  // Every default layout covers its tile.
  for (auto [shape, warps] : std::vector<std::pair<std::vector<int64_t>, int>>{
           {{1024}, 4}, {{16, 64}, 4}, {{64, 8}, 8}, {{8}, 4}, {{2, 2}, 1}, {{128, 128}, 8}}) {
    auto enc = defaultBlockedEncoding(&ctx, shape, warps);
    EXPECT_EQ(enc.getNumWarps(), warps);
    EXPECT_TRUE(toLinearLayout(enc, shape).isSurjective());
  }
}

} // namespace
