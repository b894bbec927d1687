// GemmSweepTest.cpp - randomly drawn GEMM configurations, compiled and run in
// the simulator against the interpreter: operand type (bf16, f16, tf32, i8),
// storage order (NN, NT, TT), chip (sm_80 mma.sync, sm_90a wgmma where it
// fits), tile (BM, BN, BK), warps (1-8), stages (1-4) and a ragged problem
// size - the combinations no hand-written test lists. The seed is fixed (the
// same draws every run) and each draw prints itself, so a failure is
// reproducible from the log; TEGULA_GEMM_SWEEP_SEED and _COUNT draw others.
#include "TestKernels.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

using namespace tegula;
using namespace tegula::testing;

namespace {

enum class Operands { BF16, F16, TF32, I8 };
const char *nameOf(Operands o) {
  switch (o) {
  case Operands::BF16: return "bf16";
  case Operands::F16: return "f16";
  case Operands::TF32: return "tf32";
  case Operands::I8: return "i8";
  }
  return "?";
}
const char *nameOf(Storage s) { return s == Storage::NN ? "NN" : s == Storage::NT ? "NT" : "TT"; }

struct Draw {
  Operands operands;
  Storage storage;
  std::string chip;
  int bm, bn, bk, warps, stages, M, N, K;
  std::string describe() const {
    return fmt::format("{} {} {} tile {}x{}x{} warps {} stages {} M={} N={} K={}", nameOf(operands),
                       nameOf(storage), chip, bm, bn, bk, warps, stages, M, N, K);
  }
};

Draw drawOne(std::mt19937 &rng) {
  auto pick = [&](std::initializer_list<int> values) {
    return *(values.begin() + std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng));
  };
  Draw d;
  d.operands = Operands(pick({0, 1, 2, 3}));
  d.storage = Storage(pick({0, 1, 2}));
  d.chip = pick({0, 1}) ? "sm_90a" : "sm_80";
  d.bm = pick({16, 32, 64, 128});
  d.bn = pick({16, 32, 64, 128});
  d.bk = d.operands == Operands::I8 ? pick({32, 64}) : pick({16, 32, 64});
  // Keep the simulated work bounded: big tiles with few warps run slowly.
  d.warps = pick({1, 2, 4, 8});
  while (d.bm * d.bn / (32 * d.warps) > 128)
    d.warps *= 2;
  d.stages = pick({1, 2, 3, 4});
  d.M = std::uniform_int_distribution<int>(1, 2 * d.bm + 3)(rng);
  d.N = std::uniform_int_distribution<int>(1, 2 * d.bn + 3)(rng);
  d.K = std::uniform_int_distribution<int>(1, 3 * d.bk + 5)(rng);
  return d;
}

template <class T, class Acc, tl::precision P>
void runDraw(const Draw &d, const std::string &name) {
  const std::vector<std::string> params = {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"};
  Kernel k = d.storage == Storage::NN   ? kernel(name, gemm<T, Acc, P, Storage::NN>, params)
             : d.storage == Storage::NT ? kernel(name, gemm<T, Acc, P, Storage::NT>, params)
                                        : kernel(name, gemm<T, Acc, P, Storage::TT>, params);
  std::vector<T> a, b;
  if constexpr (std::is_same_v<T, int8_t>) {
    std::mt19937 rng(uint32_t(d.M * 131 + d.N * 17 + d.K));
    std::uniform_int_distribution<int> dist(-128, 127);
    a.resize(size_t(d.M * d.K));
    b.resize(size_t(d.K * d.N));
    for (auto &v : a) v = int8_t(dist(rng));
    for (auto &v : b) v = int8_t(dist(rng));
  } else {
    a = random_vector<T>(size_t(d.M * d.K));
    b = random_vector<T>(size_t(d.K * d.N));
  }
  const size_t n = size_t(d.M * d.N);
  std::vector<Acc> want(n, Acc(-1)), got(n, Acc(-1));
  if constexpr (std::is_floating_point_v<Acc>)
    want = poisoned<Acc>(n), got = poisoned<Acc>(n);
  Grid g{uint32_t(cdiv(d.M, d.bm)), uint32_t(cdiv(d.N, d.bn))};
  k({.grid = g, .backend = Backend::Interp}, a, b, want, d.M, d.N, d.K, d.bm, d.bn, d.bk);
  k({.grid = g, .num_warps = d.warps, .num_stages = d.stages, .backend = Backend::Sim, .chip = d.chip}, a, b,
    got, d.M, d.N, d.K, d.bm, d.bn, d.bk);
  if constexpr (std::is_floating_point_v<Acc>) {
    std::vector<double> ref(want.begin(), want.end());
    // The interpreter rounds tf32 operands alike and sums in double: what
    // is left is f32 accumulation order.
    EXPECT_LT(rel_error(got, ref), 1e-4);
  } else {
    EXPECT_EQ(got, want);
  }
}

TEST(GemmSweep, RandomConfigurationsMatchTheInterpreter) {
  const char *seedEnv = std::getenv("TEGULA_GEMM_SWEEP_SEED");
  const char *countEnv = std::getenv("TEGULA_GEMM_SWEEP_COUNT");
  const uint32_t seed = seedEnv ? uint32_t(std::strtoul(seedEnv, nullptr, 10)) : 20261123u;
  const int count = countEnv ? std::atoi(countEnv) : 40;
  std::mt19937 rng(seed);
  std::printf("[gemm sweep] seed %u, %d draws\n", seed, count);
  for (int i = 0; i < count; ++i) {
    const Draw d = drawOne(rng);
    std::printf("[gemm sweep] %2d: %s\n", i, d.describe().c_str());
    std::fflush(stdout);
    SCOPED_TRACE(d.describe());
    const std::string name = fmt::format("gemm_sweep_{}", i);
    switch (d.operands) {
    case Operands::BF16: runDraw<bfloat16, float, tl::precision::ieee>(d, name); break;
    case Operands::F16: runDraw<float16, float, tl::precision::ieee>(d, name); break;
    case Operands::TF32: runDraw<float, float, tl::precision::tf32>(d, name); break;
    case Operands::I8: runDraw<int8_t, int32_t, tl::precision::ieee>(d, name); break;
    }
  }
}

} // namespace
