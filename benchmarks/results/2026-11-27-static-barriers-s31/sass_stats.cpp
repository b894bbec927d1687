#include "models/gpt/Attention.h"
#include "models/gpt/Kernels.h"
#include "models/gpt/Linear.h"
#include "models/gpt/Model.h"
#include <cstdio>
using namespace tegula;
namespace k = tegula::gpt::kernels;
static int count(const std::string &s, const char *w) { int n = 0; for (size_t p = s.find(w); p != std::string::npos; p = s.find(w, p + 1)) ++n; return n; }
static void stats(const char *name, const CompiledKernel &c) {
  std::string s = c.sass();
  std::printf("%-22s regs %3d spill %d instrs %5d SHFL %4d STS %4d LDS %4d BAR %3d SEL %4d\n", name, c.registers, c.spill_bytes, count(s, " ;") + count(s, ";\n"), count(s, "SHFL"), count(s, "STS"), count(s, "LDS"), count(s, "BAR.SYNC"), count(s, "SEL "));
}
int main() {
  using T = tegula::bfloat16;
  constexpr tl::precision P = tl::precision::ieee;
  const char *chip = "sm_90a";
  std::vector<T> t(16); std::vector<float> f(16);
  const gpt::GptModel::Tiles tiles = gpt::GptModel::gpu_tiles(dtype_of_v<T>, chip);
  const int C = 768, D = 64, W = tiles.attention_warps, own = tiles.attention_bwd_block, step = tiles.attention_bwd_step;
  std::vector<std::string> bwdParams = {"qkv", "dout", "lse", "delta", "dqkv", "q_off", "k_off", "v_off", "stride", "H", "T", "scale", "D", "BM", "BN", "rows", "partial", "bias_sums"};
  std::vector<Arg> dkdvArgs = {t, t, f, f, t, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, D, step, own, 8192, f, true};
  std::vector<Arg> dqArgs = {t, t, f, f, t, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, D, own, step, 8192, f, true};
  CompileOptions co{.chip = chip, .num_warps = W, .warp_specialize = true};
  stats("attention_bwd_dkdv", kernel("attention_bwd_dkdv", k::attention_bwd_dkdv_tma<T, P>, bwdParams).compile(dkdvArgs, co));
  stats("attention_bwd_dq", kernel("attention_bwd_dq", k::attention_bwd_dq_tma<T, P>, bwdParams).compile(dqArgs, co));
  auto dxg = kernel("matmul_bwd_dx_gelu", k::matmul_bwd_dx_gelu_tma<T, P>, {"dy", "w", "pre", "dpre", "partial", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"});
  stats("matmul_bwd_dx_gelu", dxg.compile({t, t, t, t, f, 8192, 768, 3072, tiles.geluDx()[0], tiles.geluDx()[1], tiles.geluDx()[2], tiles.group_m}, {.chip = chip, .num_warps = tiles.geluDx()[3], .num_stages = tiles.geluDx()[4], .warp_specialize = true}));
  auto ln = kernel("layernorm_bwd", k::layernorm_bwd<T>, {"dy", "x", "w", "mean", "rstd", "dres", "dx", "partial_w", "partial_b", "partial_o", "rows", "C", "residual", "out_sums", "ROWS", "BR", "BLOCK"});
  stats("layernorm_bwd", ln.compile({t, t, t, f, f, t, t, f, f, f, 8192, 768, true, true, tiles.ln_bwd_rows, tiles.ln_bwd_tile_rows, 1024}, {.chip = chip, .num_warps = tiles.ln_bwd_warps}));
}
