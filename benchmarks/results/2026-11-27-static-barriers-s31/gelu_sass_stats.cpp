#include "models/gpt/Kernels.h"
#include "models/gpt/Linear.h"
#include "models/gpt/Model.h"
#include <cstdio>
using namespace tegula;
namespace k = tegula::gpt::kernels;
#ifdef BEFORE
template <> inline constexpr bool tegula::gpt::kernels::detail::kApproxTanh<tegula::bfloat16> = false;
#endif
static int count(const std::string &s, const char *w) { int n = 0; for (size_t p = s.find(w); p != std::string::npos; p = s.find(w, p + 1)) ++n; return n; }
static void stats(const char *name, const CompiledKernel &c) {
  std::string s = c.sass();
  std::printf("%-22s regs %3d spill %d instrs %5d MUFU %4d (TANH %d EX2 %d RCP %d) SHFL %3d BAR %3d\n", name, c.registers, c.spill_bytes, count(s, " ;") + count(s, ";\n"), count(s, "MUFU"), count(s, "MUFU.TANH"), count(s, "MUFU.EX2"), count(s, "MUFU.RCP"), count(s, "SHFL"), count(s, "BAR.SYNC"));
}
int main() {
  using T = tegula::bfloat16;
  constexpr tl::precision P = tl::precision::ieee;
  for (const char *chip : {"sm_90a", "sm_80"}) {
    std::printf("-- %s\n", chip);
    std::vector<T> t(16); std::vector<float> f(16);
    const gpt::GptModel::Tiles tiles = gpt::GptModel::gpu_tiles(dtype_of_v<T>, chip);
    const bool hopper = std::string(chip) == "sm_90a";
    auto fwd = hopper ? kernel("matmul_bias_fwd", k::matmul_bias_fwd_tma<T, P>, {"x", "w", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK", "GROUP_M"})
                      : kernel("matmul_bias_fwd", k::matmul_bias_fwd<T, P>, {"x", "w", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK", "GROUP_M"});
    stats("c_fc fwd + GELU", fwd.compile({t, t, t, t, t, 8192, 3072, 768, true, tiles.bm, tiles.bn, tiles.bk, tiles.group_m}, {.chip = chip, .num_warps = tiles.linear_warps, .num_stages = tiles.linear_stages, .warp_specialize = hopper}));
    auto dxg = hopper ? kernel("matmul_bwd_dx_gelu", k::matmul_bwd_dx_gelu_tma<T, P>, {"dy", "w", "pre", "dpre", "partial", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"})
                      : kernel("matmul_bwd_dx_gelu", k::matmul_bwd_dx_gelu<T, P>, {"dy", "w", "pre", "dpre", "partial", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"});
    stats("c_proj dx + GELU bwd", dxg.compile({t, t, t, t, f, 8192, 768, 3072, tiles.geluDx()[0], tiles.geluDx()[1], tiles.geluDx()[2], tiles.group_m}, {.chip = chip, .num_warps = tiles.geluDx()[3], .num_stages = tiles.geluDx()[4], .warp_specialize = hopper}));
  }
}
