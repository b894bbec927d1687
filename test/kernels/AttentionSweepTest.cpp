// AttentionSweepTest.cpp - randomly drawn flash-attention configurations
// (examples::attention_fwd with pointer loads; attention_fwd_descriptors -
// K and V through TMA rings on sm_90a - plain or warp specialised), compiled
// and run in the simulator against the interpreter: bf16 or f16, causal or
// not, heads, a ragged sequence length, head size, BM x BN, warps, chip. A
// fixed seed, each draw printed; TEGULA_ATTENTION_SWEEP_SEED and _COUNT draw
// others. With a driver the same kinds of draws (another seed) run on the
// GPU too (TEGULA_ATTENTION_SWEEP_GPU_SEED, _COUNT).
#include "Sweep.h"
#include "TestUtil.h"
#include "examples/kernels.h"
#include "tegula/tegula.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

using namespace tegula;
using namespace tegula::testing;

namespace {

struct Draw {
  bool descriptors, warpSpecialize, f16, causal;
  bool pingPong = false; // with warpSpecialize at 4 warps: two programs per CTA
  std::string chip;
  int heads, seq, dim, bm, bn, warps;
  std::string describe() const {
    return fmt::format("{}{} {} {} {}heads {} T={} d={} tile {}x{} warps {}", descriptors ? "descriptors" : "pointers",
                       pingPong ? " pp" : warpSpecialize ? " ws" : "", f16 ? "f16" : "bf16", chip, causal ? "causal " : "", heads, seq,
                       dim, bm, bn, warps);
  }
};

Draw drawOne(std::mt19937 &rng) {
  auto pick = [&](std::initializer_list<int> values) {
    return *(values.begin() + std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng));
  };
  Draw d;
  d.descriptors = pick({0, 1});
  d.warpSpecialize = d.descriptors && pick({0, 1});
  d.f16 = pick({0, 1});
  d.causal = pick({0, 1});
  d.chip = pick({0, 1}) ? "sm_90a" : "sm_80";
  d.heads = pick({1, 2, 3});
  d.dim = pick({16, 32, 64});
  d.bm = pick({16, 32, 64, 128});
  d.bn = pick({16, 32, 64});
  // Warps along the query rows, 16 each at most (the dot chain's layout).
  d.warps = std::min(pick({1, 2, 4, 8}), std::max(1, d.bm / 16));
  if (d.warpSpecialize) { // drawn where it applies: TMA rings feeding wgmma
    d.chip = "sm_90a";
    d.warps = pick({4, 8});
    d.bm = std::max(d.bm, 16 * d.warps);
    d.pingPong = d.warps == 4 && pick({0, 1});
  }
  d.seq = std::uniform_int_distribution<int>(1, 3 * std::max(d.bm, d.bn) + 7)(rng);
  return d;
}

template <class T> void runDraw(const Draw &d, const std::string &name, const SweepTarget &target) {
  const size_t n = size_t(d.heads) * size_t(d.seq) * size_t(d.dim);
  auto q = random_vector<T>(n), k = random_vector<T>(n), v = random_vector<T>(n);
  auto want = poisoned<T>(n), got = poisoned<T>(n);
  const float scale = 1.0f / std::sqrt(float(d.dim));
  const Grid g{uint32_t(cdiv(d.seq, d.bm)), uint32_t(d.heads)};
  const LaunchOptions interp{.grid = g, .backend = Backend::Interp};
  const LaunchOptions tested{.grid = g, .num_warps = d.warps, .backend = target.backend,
                          .warp_specialize = d.warpSpecialize, .ping_pong = d.pingPong,
                          .chip = target.chipFor(d.chip)};
  if (d.descriptors) {
    auto kern = kernel(name, examples::attention_fwd_descriptors<T>,
                       {"q", "k", "v", "out", "seq_len", "rows", "scale", "D", "BM", "BN", "causal"});
    for (auto [opts, out] : {std::pair{&interp, &want}, std::pair{&tested, &got}})
      kern(*opts, q, k, v, *out, d.seq, d.heads * d.seq, scale, d.dim, d.bm, d.bn, d.causal);
    if (d.warpSpecialize) {
      const CompiledKernel c =
          kern.compile({q, k, v, got, d.seq, d.heads * d.seq, scale, d.dim, d.bm, d.bn, d.causal},
                       {.chip = d.chip, .num_warps = d.warps, .warp_specialize = true, .ping_pong = d.pingPong,
                        .assemble = false});
      EXPECT_EQ(c.producer_warps, 4) << "warp_specialize was asked for and did not apply";
      EXPECT_EQ(c.programs_per_cta, d.pingPong ? 2 : 1) << "ping_pong was asked for and did not apply";
    }
  } else {
    auto kern = kernel(name, examples::attention_fwd<T>,
                       {"q", "k", "v", "out", "seq_len", "scale", "D", "BM", "BN", "causal"});
    for (auto [opts, out] : {std::pair{&interp, &want}, std::pair{&tested, &got}})
      kern(*opts, q, k, v, *out, d.seq, scale, d.dim, d.bm, d.bn, d.causal);
  }
  EXPECT_LT(rel_error(got, to_double(want)), tolerance<T>());
}

void sweep(const SweepPlan &plan, const SweepTarget &target) {
  std::mt19937 rng(plan.seed);
  for (int i = 0; i < plan.count; ++i) {
    const Draw d = drawOne(rng);
    std::printf("[attention sweep] %2d: %s on the %s\n", i, d.describe().c_str(), target.name());
    std::fflush(stdout);
    SCOPED_TRACE(d.describe());
    const std::string name = fmt::format("attention_sweep_{}", i);
    if (d.f16)
      runDraw<float16>(d, name, target);
    else
      runDraw<bfloat16>(d, name, target);
  }
}

TEST(AttentionSweep, RandomConfigurationsMatchTheInterpreter) {
  sweep(sweep_plan("attention sweep", "TEGULA_ATTENTION_SWEEP", 20261123u, 24), SweepTarget::sim());
}

TEST(AttentionSweep, RandomConfigurationsMatchTheInterpreterOnTheGpu) {
  std::string why;
  auto gpu = SweepTarget::gpu(&why);
  if (!gpu)
    GTEST_SKIP() << "no GPU: " << why;
  sweep(sweep_plan("attention sweep", "TEGULA_ATTENTION_SWEEP_GPU", 20261124u, 48), *gpu);
}

} // namespace
