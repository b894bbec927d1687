// WgmmaSimTest.cpp - Hopper's wgmma in the simulator: the compiler's
// shared-memory placement of wgmma operands (layout/WgmmaOperands.h) read
// back through the simulator's independent decoding of matrix descriptors
// (simulator/Wgmma.h, written from the PTX ISA's canonical layouts).
#include "compiler/layout/WgmmaOperands.h"
#include "simulator/Wgmma.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

using namespace tegula;

namespace {

/// Every element of every instruction operand (m64 x k16 slices of A, k16 x
/// N slices of B) is where the descriptor says it is.
TEST(WgmmaSim, DescriptorsAddressTheCompilersTiles) {
  struct Case { int operand; std::vector<int32_t> shape; int contiguous; };
  const std::vector<Case> cases = {
      {0, {64, 16}, 1},  {0, {64, 32}, 1},  {0, {128, 64}, 1}, {0, {64, 128}, 1}, // A K-major
      {0, {64, 32}, 0},  {0, {128, 64}, 0},                                        // A M-major
      {1, {16, 32}, 1},  {1, {32, 64}, 1},  {1, {64, 128}, 1}, {1, {16, 256}, 1}, // B N-major
      {1, {32, 64}, 0},  {1, {64, 128}, 0}, {1, {128, 32}, 0},                     // B K-major
  };
  for (const Case &c : cases) {
    auto plan = layout::planWgmmaOperandTile(c.operand, c.shape, c.contiguous, 16);
    ASSERT_TRUE(plan) << c.operand << " " << c.shape[0] << "x" << c.shape[1];
    SCOPED_TRACE(fmt::format("{} {} -> {}", c.operand ? "B" : "A", plan->tile.toString(),
                             plan->kMajor ? "K-major" : "MN-major"));
    const int kDim = c.operand == 0 ? 1 : 0, mnDim = 1 - kDim;
    const int32_t K = c.shape[size_t(kDim)], MN = c.shape[size_t(mnDim)];
    const int32_t instrMN = c.operand == 0 ? 64 : std::min(MN, 256);
    const int64_t base = 4096; // a multiple of the swizzle period
    int checked = 0;
    for (int32_t mn0 = 0; mn0 < MN; mn0 += instrMN)
      for (int32_t k0 = 0; k0 < K; k0 += 16) {
        const uint64_t desc =
            plan->descriptorBase() | uint64_t((base + plan->instructionOffset(mn0, k0)) >> 4);
        for (int32_t mn = 0; mn < instrMN; ++mn)
          for (int32_t k = 0; k < 16; ++k) {
            const int32_t d0 = kDim == 0 ? k0 + k : mn0 + mn, d1 = kDim == 0 ? mn0 + mn : k0 + k;
            const int64_t want = base + plan->tile.offset(d0, d1);
            const int64_t got = sim::wgmmaElementOffset(desc, plan->kMajor, 2, mn, k);
            ASSERT_EQ(got, want) << "element (" << d0 << ", " << d1 << ") of the instruction at "
                                 << mn0 << ", " << k0;
            ++checked;
          }
      }
    EXPECT_EQ(checked, MN * K);
  }
}

} // namespace
