// SharedOperandRingTest.cpp - a loaded tile that feeds two dots (as it is and
// transposed, as attention's backward reads q and k) is pipelined through one
// ring that both dots read (pipeline-dot-operands: cp.async, or TMA for a
// descriptor load on sm_90a), on mma.sync
// (sm_80) and wgmma (sm_90a) code: against the interpreter on a ragged K, at
// 2-4 stages, in the simulator (its race detector watches the ring) and on a
// GPU when there is one.
#include "ChipTargets.h"
#include "TestKernels.h"
#include "TestUtil.h"

#include <gmock/gmock.h>

using namespace tegula;
using namespace tegula::testing;

namespace {

/// acc1 = sum_k a b_k, acc2 = sum_k a b_k^T over K / BK row blocks b_k of b
/// (rows past K masked to zero): b_k is loaded once per iteration and read by
/// both dots.
void two_dots(tl::ptr<bfloat16> a, tl::ptr<bfloat16> b, tl::ptr<float> c1, tl::ptr<float> c2,
              tl::scalar<int32_t> K, tl::constant<int> BK) {
  tl::tensor r = tl::arange(0, BK);
  tl::tensor at = tl::load(a + r.expand_dims(1) * BK + r.expand_dims(0));
  tl::tensor acc1 = tl::zeros({BK, BK}, tl::f32), acc2 = tl::zeros({BK, BK}, tl::f32);
  for (auto k : tl::range(0, K, BK.value, acc1, acc2)) {
    tl::tensor rows = k + r;
    tl::tensor bk = tl::load(b + rows.expand_dims(1) * BK + r.expand_dims(0), rows.expand_dims(1) < K, 0.0f);
    acc1 = tl::dot(at, bk, acc1);
    acc2 = tl::dot(at, bk.trans(), acc2);
  }
  tl::tensor offs = r.expand_dims(1) * BK + r.expand_dims(0);
  tl::store(c1 + offs, acc1);
  tl::store(c2 + offs, acc2);
}

class SharedOperandRing : public ChipTargetTest {};

TEST_P(SharedOperandRing, TwoDotsReadOneStreamedTile) {
  const int BK = 64;
  for (bool descriptor : {false, true}) {
    auto k = descriptor ? kernel("two_dots_tma", two_dots_tma, {"a", "b", "c1", "c2", "K", "BK"})
                        : kernel("two_dots", two_dots, {"a", "b", "c1", "c2", "K", "BK"});
    for (int K : {64, 200}) {
      auto a = random_vector<bfloat16>(BK * BK), b = random_vector<bfloat16>(size_t(K) * BK);
      auto want1 = poisoned<float>(BK * BK), want2 = poisoned<float>(BK * BK);
      k({.grid = {1}, .backend = Backend::Interp}, a, b, want1, want2, K, BK);
      for (int stages : {2, 3, 4}) {
        SCOPED_TRACE(fmt::format("{}, K={}, {} stages", descriptor ? "descriptor" : "pointers", K, stages));
        auto got1 = poisoned<float>(BK * BK), got2 = poisoned<float>(BK * BK);
        LaunchOptions t = target({1}, 4);
        t.num_stages = stages;
        k(t, a, b, got1, got2, K, BK);
        EXPECT_LT(rel_error(got1, to_double(want1)), 1e-5);
        EXPECT_LT(rel_error(got2, to_double(want2)), 1e-5);
      }
    }
  }
}

/// Warp specialised (sm_90a): a producer warpgroup fills the shared TMA
/// ring once per iteration; the consumers wait for the stage once, run both
/// dots and release it after both wgmma groups complete.
TEST_P(SharedOperandRing, WarpSpecializedTwoDotsShareOneRing) {
  const int BK = 64;
  auto k = kernel("two_dots_tma_ws", two_dots_tma, {"a", "b", "c1", "c2", "K", "BK"});
  for (int K : {64, 200, 448}) {
    auto a = random_vector<bfloat16>(BK * BK), b = random_vector<bfloat16>(size_t(K) * BK);
    auto want1 = poisoned<float>(BK * BK), want2 = poisoned<float>(BK * BK);
    k({.grid = {1}, .backend = Backend::Interp}, a, b, want1, want2, K, BK);
    for (int stages : {2, 3}) {
      SCOPED_TRACE(fmt::format("K={}, {} stages", K, stages));
      auto got1 = poisoned<float>(BK * BK), got2 = poisoned<float>(BK * BK);
      LaunchOptions t = target({1}, 4);
      t.num_stages = stages;
      t.warp_specialize = true;
      k(t, a, b, got1, got2, K, BK);
      EXPECT_LT(rel_error(got1, to_double(want1)), 1e-5);
      EXPECT_LT(rel_error(got2, to_double(want2)), 1e-5);
    }
  }
  std::vector<bfloat16> x(256 * 64);
  std::vector<float> y(64 * 64);
  CompiledKernel c = k.compile({x, x, y, y, 256, 64},
                               {.chip = GetParam().chip, .num_stages = 3, .warp_specialize = true, .assemble = false});
  if (GetParam().chip == "sm_90a") {
    EXPECT_EQ(c.producer_warps, 4);
    // One ring filled by the producer: one TMA copy per iteration.
    size_t copies = 0;
    for (size_t p = c.ptx.find("cp.async.bulk.tensor"); p != std::string::npos;
         p = c.ptx.find("cp.async.bulk.tensor", p + 1))
      ++copies;
    EXPECT_EQ(copies, 1u);
  } else {
    EXPECT_EQ(c.producer_warps, 0) << "no TMA, no producer";
  }
}

TEST_P(SharedOperandRing, OneRingIsFilledPerIteration) {
  auto k = kernel("two_dots", two_dots, {"a", "b", "c1", "c2", "K", "BK"});
  std::vector<bfloat16> x(256 * 64);
  std::vector<float> y(64 * 64);
  CompiledKernel c = k.compile({x, x, y, y, 256, 64}, {.chip = GetParam().chip, .num_stages = 3, .assemble = false});
  // The prologue's two iterations and the loop's one: 64 rows x 128 bytes,
  // 16 bytes a copy, 4 warps - 4 copies a thread per iteration, 12 in all
  // (two rings would double them).
  size_t copies = 0;
  for (size_t p = c.ptx.find("cp.async.cg.shared.global"); p != std::string::npos;
       p = c.ptx.find("cp.async.cg.shared.global", p + 1))
    ++copies;
  EXPECT_EQ(copies, 12u);
  if (GetParam().chip == "sm_90a")
    EXPECT_THAT(c.ptx, ::testing::HasSubstr("wgmma.mma_async"));
  else
    EXPECT_THAT(c.ptx, ::testing::HasSubstr("mma.sync.aligned.m16n8k16"));
}

TEGULA_INSTANTIATE_CHIP_TARGETS(SharedOperandRing);

} // namespace
