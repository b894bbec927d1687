// GpuConfigsTest.cpp - every GPT-2 kernel at the tile sizes GptModel uses on
// the GPU (124M: C = 768, head size 64, tf32 dots) compiles
// through ptxas for sm_80 and sm_90a without spilling; registers are printed.
// (The simulator tests run smaller blocks.)
#include "models/gpt/Attention.h"
#include "models/gpt/Kernels.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

using namespace tegula;
namespace k = tegula::gpt::kernels;

namespace {

class GptGpuConfigs : public ::testing::TestWithParam<const char *> {};

void check(const Kernel &kern, const std::vector<Arg> &args, const char *chip, int warps = 4) {
  CompiledKernel c = kern.compile(args, {.chip = chip, .num_warps = warps});
  std::printf("[gpt %s] %-28s %3d registers, %5d B shared, %d B spilled\n", chip, kern.name().c_str(), c.registers,
              c.shared_bytes + c.dynamic_shared_bytes, c.spill_bytes);
  EXPECT_NE(c.ptx.find(".entry"), std::string::npos);
  EXPECT_EQ(c.spill_bytes, 0) << kern.name();
}

TEST_P(GptGpuConfigs, EveryKernelCompilesAtTheModelsTileSizes) {
  const char *chip = GetParam();
  std::vector<float> f(16);
  std::vector<int32_t> i(16);
  // Attention as GptModel runs it on the GPU: 32-row blocks at 8 warps (f32
  // with tf32 dots at 64-row blocks and 4 warps spills kilobytes).
  const int C = 768, D = 64, Bk = 32, W = 8;
  check(kernel("attention_fwd", k::attention_fwd<float, tl::precision::tf32>,
               {"qkv", "o", "lse", "q_off", "k_off", "v_off", "stride", "H", "T", "scale", "first_block", "D", "BM", "BN"}),
        {f, f, f, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, 0, D, Bk, Bk}, chip, W);
  check(kernel("attention_bwd_dkdv", k::attention_bwd_dkdv<float, tl::precision::tf32>,
               {"qkv", "dout", "lse", "delta", "dqkv", "q_off", "k_off", "v_off", "stride", "H", "T", "scale", "D", "BM", "BN"}),
        {f, f, f, f, f, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, D, Bk, Bk}, chip, W);
  check(kernel("attention_bwd_dq", k::attention_bwd_dq<float, tl::precision::tf32>,
               {"qkv", "dout", "lse", "delta", "dqkv", "q_off", "k_off", "v_off", "stride", "H", "T", "scale", "D", "BM", "BN"}),
        {f, f, f, f, f, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, D, Bk, Bk}, chip, W);
  check(kernel("matmul_bias_fwd", k::matmul_bias_fwd<float, tl::precision::tf32>,
               {"x", "w", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK"}),
        {f, f, f, f, f, 8192, 3072, 768, true, 64, 64, 32}, chip);
  check(kernel("matmul_bwd_dx", k::matmul_bwd_dx<float, tl::precision::tf32>, {"dy", "w", "dx", "M", "N", "K", "BM", "BK", "BN"}),
        {f, f, f, 8192, 3072, 768, 64, 64, 32}, chip);
  check(kernel("matmul_bwd_dw", k::matmul_bwd_dw<float, tl::precision::tf32>,
               {"x", "dy", "dw", "M", "N", "K", "accumulate", "BK", "BN", "BM"}),
        {f, f, f, 8192, 3072, 768, true, 64, 64, 32}, chip);
  check(kernel("layernorm_fwd", k::layernorm_fwd<float>, {"x", "w", "b", "y", "mean", "rstd", "C", "eps", "BLOCK"}),
        {f, f, f, f, f, f, C, 1e-5f, 1024}, chip);
  check(kernel("layernorm_bwd_dx", k::layernorm_bwd_dx<float>, {"dy", "x", "w", "mean", "rstd", "dx", "C", "BLOCK"}),
        {f, f, f, f, f, f, C, 1024}, chip);
  check(kernel("cross_entropy_fwd", k::cross_entropy_fwd, {"logits", "targets", "losses", "V", "Vp", "BLOCK"}),
        {f, i, f, 50257, 50304, 1024}, chip);
  check(kernel("cross_entropy_bwd", k::cross_entropy_bwd,
               {"logits", "targets", "losses", "dlosses", "dlogits", "V", "Vp", "BLOCK"}),
        {f, i, f, f, f, 50257, 50304, 1024}, chip);
  check(kernel("adamw", k::adamw, {"params", "grads", "m", "v", "lr", "beta1", "beta2", "eps", "weight_decay", "bias1",
                                   "bias2", "grad_scale", "n", "BLOCK"}),
        {f, f, f, f, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.1f, 0.05f, 1.0f, int64_t(124000000), 1024}, chip);
}

INSTANTIATE_TEST_SUITE_P(Chips, GptGpuConfigs, ::testing::Values("sm_80", "sm_90a"),
                         [](const auto &info) { return std::string(info.param); });

} // namespace
