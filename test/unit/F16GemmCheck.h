// F16GemmCheck.h - C = A B (f16 in, f32 out) for a test GEMM kernel taking
// (a, b, c, M, N, K, BM, BN, BK): the control-flow tests' check that a loop
// of dots runs right through the tensor-core lowerings.
#pragma once

#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tegula::testing {

/// acc + A[rm, k + rk] B[k + rk, rn] of row-major M x K and K x N operands,
/// masked at the edges: one K step of the test GEMMs' loops.
inline tl::tensor accumulateKBlock(const tl::tensor &acc, const tl::ptr<float16> &a, const tl::ptr<float16> &b,
                                   const tl::tensor &rm, const tl::tensor &rn, const tl::tensor &k,
                                   const tl::tensor &rk, const tl::tensor &M, const tl::tensor &N, const tl::tensor &K) {
  tl::tensor ka = k + rk;
  tl::tensor at = tl::load(a + rm.expand_dims(1) * K + ka.expand_dims(0),
                           (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K), 0.0f);
  tl::tensor bt = tl::load(b + ka.expand_dims(1) * N + rn.expand_dims(0),
                           (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), 0.0f);
  return tl::dot(at, bt, acc);
}

/// Runs `k` on fresh random M x K and K x N inputs at 64 x 64 x 32 blocks and
/// 4 warps with `numStages` on the interpreter, the simulator as sm_80
/// (mma.sync) and sm_90a (wgmma), and the GPU when there is one; each C is
/// within 1e-3 of a double reference and none is NaN.
inline void expectF16GemmOnEveryBackend(Kernel &k, int M, int N, int K, int numStages) {
  const std::vector<float16> a = random_vector<float16>(size_t(M) * K), b = random_vector<float16>(size_t(K) * N);
  std::vector<double> want(size_t(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int p = 0; p < K; ++p)
        want[size_t(i) * N + j] += double(float(a[size_t(i) * K + p])) * double(float(b[size_t(p) * N + j]));
  struct Target {
    Backend backend;
    const char *chip;
  };
  std::vector<Target> targets = {{Backend::Interp, ""}, {Backend::Sim, "sm_80"}, {Backend::Sim, "sm_90a"}};
  if (gpu_available())
    targets.push_back({Backend::GPU, ""});
  for (const Target &t : targets) {
    SCOPED_TRACE(fmt::format("{} {}", backend_name(t.backend),
                             t.chip));
    std::vector<float> c(size_t(M) * N, NAN);
    k({.grid = {uint32_t((M + 63) / 64), uint32_t((N + 63) / 64)}, .num_warps = 4, .num_stages = numStages,
       .backend = t.backend, .chip = t.chip},
      a, b, c, M, N, K, 64, 64, 32);
    double worst = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      ASSERT_FALSE(std::isnan(c[i])) << i;
      worst = std::max(worst, std::abs(c[i] - want[i]));
    }
    EXPECT_LT(worst, 1e-3);
  }
}

/// `k`'s code for `chip` at the blocks expectF16GemmOnEveryBackend runs
/// (assembled by ptxas when `assemble`), for checks of what it compiles to.
inline CompiledKernel compileF16Gemm(Kernel &k, int M, int N, int K, const char *chip, bool assemble = false) {
  std::vector<float16> a(size_t(M) * K), b(size_t(K) * N);
  std::vector<float> c(size_t(M) * N);
  return k.compile({a, b, c, M, N, K, 64, 64, 32}, {.chip = chip, .assemble = assemble});
}

} // namespace tegula::testing
