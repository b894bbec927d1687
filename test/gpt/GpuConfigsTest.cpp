// GpuConfigsTest.cpp - every GPT-2 kernel at the tile sizes GptModel uses on
// the GPU (124M: C = 768, head size 64, tf32 dots) compiles
// through ptxas for sm_80 and sm_90a without spilling, in f32 (tf32 dots) and
// in bf16 (mixed precision); registers are printed.
// (The simulator tests run smaller blocks.)
#include "models/gpt/Attention.h"
#include "models/gpt/Kernels.h"
#include "models/gpt/Linear.h"
#include "models/gpt/Model.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <regex>
#include <type_traits>

using namespace tegula;
namespace k = tegula::gpt::kernels;

namespace {

class GptGpuConfigs : public ::testing::TestWithParam<const char *> {};

/// CTA barriers in a compiled kernel's machine code (its cubin's SASS).
int barriersIn(const CompiledKernel &c) {
  const std::string sass = c.sass();
  int barriers = 0;
  for (size_t at = sass.find("BAR.SYNC"); at != std::string::npos; at = sass.find("BAR.SYNC", at + 1))
    ++barriers;
  return barriers;
}

/// `scalarLoads` (when >= 0): a memory-bound kernel moves its tiles in
/// vectors - at least one vector load, and no more element-wise global
/// loads than its per-row scalars (a mean, a target, ...).
/// Compiled warp specialised, as GptModel launches by default (it changes
/// nothing where it does not apply). No spill beyond `maxSpill` bytes (0:
/// the model's own tiles).
CompiledKernel check(const Kernel &kern, const std::vector<Arg> &args, const char *chip, int warps = 4,
                     int scalarLoads = -1, int stages = 3, int maxSpill = 0) {
  CompiledKernel c =
      kern.compile(args, {.chip = chip, .num_warps = warps, .num_stages = stages, .warp_specialize = true});
  int barriers = -1; // CTA barriers in the machine code, where ptxas made one
  if (!c.cubin.empty())
    barriers = barriersIn(c);
  std::printf("[gpt %s] %-28s %3d registers, %5d B shared, %d B spilled, %d barriers%s\n", chip,
              kern.name().c_str(), c.registers, c.shared_bytes + c.dynamic_shared_bytes, c.spill_bytes, barriers,
              c.producer_warps ? ", warp specialised" : "");
  EXPECT_NE(c.ptx.find(".entry"), std::string::npos);
  EXPECT_LE(c.spill_bytes, maxSpill) << kern.name();
  EXPECT_LE(c.dynamic_shared_bytes, 227 * 1024) << kern.name() << ": more shared memory than an H100's";
  if (scalarLoads < 0)
    return c;
  // (Not the error report's address, which a kernel that stops reads then.)
  const std::regex load("ld\\.global(\\.v[248])?\\.[bfu]\\d+[^\\[\\n]*\\[(?!tegula_error_report_)");
  int vector = 0, scalar = 0;
  for (auto it = std::sregex_iterator(c.ptx.begin(), c.ptx.end(), load); it != std::sregex_iterator(); ++it)
    ++((*it)[1].matched ? vector : scalar);
  EXPECT_GT(vector, 0) << kern.name() << ": its tiles are loaded element by element";
  EXPECT_LE(scalar, scalarLoads) << kern.name() << ": element-wise loads beyond its per-row scalars";
  return c;
}

/// Every kernel GptModel launches with storage T (f32 with tf32 dots, or bf16
/// for mixed precision) at the GPU's tile sizes.
template <class T> void checkAll(const char *chip) {
  constexpr tl::precision P = std::is_same_v<T, float> ? tl::precision::tf32 : tl::precision::ieee;
  std::vector<T> t(16);   // storage-type buffers
  std::vector<float> f(16); // f32: statistics, gradients of weights, AdamW state
  std::vector<int32_t> i(16);
  // The tiles GptModel launches on the GPU with this storage type and chip
  // (f32's attention: 32-row blocks at 8 warps, and on sm_90a at tf32 the
  // forward at 64 queries x 32 keys on 4 warps and the backward owning 64
  // rows - 64 x 64 at 4 warps spills kilobytes; bf16: the forward at 128-row blocks and 8 warps on
  // sm_90a, 64-row blocks and 4 warps on sm_80; the backward at 128-row
  // blocks stepping 64 on sm_90a and 64 by 64 on sm_80, at 8 warps).
  const gpt::GptModel::Tiles tiles = gpt::GptModel::gpu_tiles(dtype_of_v<T>, chip);
  const int C = 768, D = 64, W = tiles.attention_warps;
  const int own = tiles.attention_bwd_block, step = tiles.attention_bwd_step;
  const int BM = tiles.bm, BN = tiles.bn, BK = tiles.bk, LW = tiles.linear_warps, LS = tiles.linear_stages;
  const int FB = tiles.attention_fwd_block, FW = tiles.attention_fwd_warps;
  const int FS = tiles.attention_fwd_step ? tiles.attention_fwd_step : FB; // keys a step
  const std::vector<std::string> fwdParams = {"qkv", "o", "lse", "q_off", "k_off", "v_off", "stride", "H",
                                              "T", "scale", "first_block", "D", "BM", "BN"};
  const std::vector<Arg> fwdArgs = {t, t, f, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, 0, D, FB, FS};
  const bool diagonalOnly = tiles.attention_fwd_diagonal_mask_only; // else every block masked
  if constexpr (std::is_same_v<T, float>) {
    std::vector<std::string> params = fwdParams;
    std::vector<Arg> args = fwdArgs;
    params.push_back("diagonal_mask_only"), args.push_back(diagonalOnly);
    check(kernel("attention_fwd", k::attention_fwd<T, P>, params), args, chip, FW);
  } else { // through descriptors: TMA rings feeding wgmma on sm_90a
    std::vector<std::string> params = fwdParams;
    std::vector<Arg> args = fwdArgs;
    params.push_back("rows"), args.push_back(8192);
    params.push_back("diagonal_mask_only"), args.push_back(diagonalOnly);
    const Kernel fwd = kernel("attention_fwd", k::attention_fwd_tma<T, P>, params);
    check(fwd, args, chip, FW);
    if (std::string(chip) == "sm_90a") {
      const std::string ptx = fwd.compile(args, {.chip = chip, .num_warps = FW, .assemble = false}).ptx;
      EXPECT_NE(ptx.find("cp.async.bulk.tensor.2d.shared::cluster"), std::string::npos);
      EXPECT_NE(ptx.find("wgmma.mma_async"), std::string::npos);
    }
  }
  // The backward: pointer loads for f32, tensor descriptors for bf16 (TMA
  // rings feeding wgmma on sm_90a; `rows` last).
  std::vector<std::string> bwdParams = {"qkv", "dout", "lse", "delta", "dqkv", "q_off", "k_off", "v_off",
                                        "stride", "H", "T", "scale", "D", "BM", "BN"};
  std::vector<Arg> dkdvArgs = {t, t, f, f, t, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, D, step, own};
  std::vector<Arg> dqArgs = {t, t, f, f, t, 0, C, 2 * C, 3 * C, 12, 1024, 0.125f, D, own, step};
  constexpr bool bf16 = !std::is_same_v<T, float>;
  if (bf16) {
    bwdParams.push_back("rows");
    dkdvArgs.push_back(8192), dqArgs.push_back(8192);
  }
  // With the column sums' partials (c_attn's bias), as GptModel launches them.
  bwdParams.push_back("partial"), bwdParams.push_back("bias_sums");
  for (std::vector<Arg> *args : {&dkdvArgs, &dqArgs})
    args->push_back(f), args->push_back(true);
  const Kernel dkdv = bf16 ? kernel("attention_bwd_dkdv", k::attention_bwd_dkdv_tma<T, P>, bwdParams)
                           : kernel("attention_bwd_dkdv", k::attention_bwd_dkdv<T, P>, bwdParams);
  const Kernel dq = bf16 ? kernel("attention_bwd_dq", k::attention_bwd_dq_tma<T, P>, bwdParams)
                         : kernel("attention_bwd_dq", k::attention_bwd_dq<T, P>, bwdParams);
  check(dkdv, dkdvArgs, chip, W);
  check(dq, dqArgs, chip, W);
  if (bf16 && std::string(chip) == "sm_90a") // all eight dots on wgmma, TMA rings; no producer, as GptModel
    for (auto [kern, args] : {std::pair{&dkdv, &dkdvArgs}, std::pair{&dq, &dqArgs}}) { // launches it by default
      const CompiledKernel c = kern->compile(*args, {.chip = chip, .num_warps = W});
      std::printf("[gpt %s] %-28s %3d registers, %5d B shared, %d B spilled, no producer\n", chip,
                  kern->name().c_str(), c.registers, c.shared_bytes + c.dynamic_shared_bytes, c.spill_bytes);
      EXPECT_EQ(c.spill_bytes, 0) << kern->name();
      const std::string &ptx = c.ptx;
      EXPECT_NE(ptx.find("wgmma.mma_async"), std::string::npos) << kern->name();
      EXPECT_NE(ptx.find("cp.async.bulk.tensor.2d.shared::cluster"), std::string::npos) << kern->name();
      EXPECT_EQ(ptx.find("mma.sync"), std::string::npos) << kern->name();
    }
  // The linear layers: tensor descriptors for bf16 (TMA rings feeding
  // wgmma on sm_90a); pointer loads for f32 (tf32 dots on sm_90a's wgmma
  // through K-major rings 4-byte copies fill where an operand runs along M or
  // N, mma.sync on sm_80), except the forward through the
  // transposed weights, dx, the LM head and the weight gradients through
  // the transposed activations, whose operands both run along K:
  // descriptors, and on sm_90a wgmma fed by TMA rings that round to tf32
  // as they land (GptModel's kernel set at tf32).
  constexpr bool descriptors = !std::is_same_v<T, float>;
  // On sm_90a the TMA-fed ones get a producer warpgroup - also inside the
  // persistent GEMMs' tile loop (group_m > 0; persistence without one was mixed).
  auto linear = [&](const char *name, auto pointers, auto tma, std::vector<std::string> params,
                    std::vector<Arg> args, bool kMajor = false, std::pair<int, int> warpsStages = {0, 0}) {
    const bool tmaKernel = descriptors || kMajor;
    const Kernel kern = tmaKernel ? kernel(name, tma, params) : kernel(name, pointers, params);
    int warps = kMajor ? tiles.kmajor()[3] : LW, stages = kMajor ? tiles.kmajor()[4] : LS;
    if (warpsStages.first)
      std::tie(warps, stages) = warpsStages;
    const CompiledKernel c = check(kern, args, chip, warps, -1, stages);
    if (tmaKernel && std::string(chip) == "sm_90a") {
      EXPECT_NE(c.ptx.find("cp.async.bulk.tensor.2d.shared::cluster"), std::string::npos) << name;
      EXPECT_NE(c.ptx.find("wgmma.mma_async"), std::string::npos) << name;
      EXPECT_EQ(c.producer_warps, 4) << name << ": not warp specialised";
    }
  };
  const int G = tiles.group_m; // the persistent GEMMs' tile groups (warp specialised)
  if constexpr (descriptors) { // without warp specialisation (set_warp_specialize(false)): one program a tile
    const std::vector<std::string> params = {"x", "w", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK",
                                             "GROUP_M"};
    const CompiledKernel c = kernel("matmul_bias_fwd", k::matmul_bias_fwd_tma<T, P>, params)
                                 .compile({t, t, t, t, t, 8192, 3072, 768, true, BM, BN, BK, 0},
                                          {.chip = chip, .num_warps = LW, .num_stages = LS});
    std::printf("[gpt %s] matmul_bias_fwd, not warp specialised: %d registers, %d B spilled\n", chip, c.registers,
                c.spill_bytes);
    EXPECT_EQ(c.spill_bytes, 0);
    EXPECT_EQ(c.producer_warps, 0);
    EXPECT_LE(c.dynamic_shared_bytes, 227 * 1024);
  }
  linear("matmul_bias_fwd", k::matmul_bias_fwd<T, P>, k::matmul_bias_fwd_tma<T, P>,
         {"x", "w", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK", "GROUP_M"},
         {t, t, t, t, t, 8192, 3072, 768, true, BM, BN, BK, G});
  const auto [KM, KN, KK, KW, KS] = tiles.kmajor();
  if constexpr (!descriptors) { // f32 at tf32: through transposed weights and activations, and the transpose
    linear("matmul_bias_fwd_tn", k::matmul_bias_fwd_tn_tma<T, P>, k::matmul_bias_fwd_tn_tma<T, P>,
           {"x", "wt", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK", "GROUP_M"},
           {t, t, t, t, t, 8192, 3072, 768, true, KM, KN, KK, G}, true);
    for (int dwBN : {tiles.kmajor_dw_bn ? tiles.kmajor_dw_bn : KN, (tiles.kmajor_dw_bn ? tiles.kmajor_dw_bn : KN) / 2})
      linear("matmul_bwd_dw_tn", k::matmul_bwd_dw_tn_tma<T, P>, k::matmul_bwd_dw_tn_tma<T, P>,
             {"xt", "dyt", "dw", "M", "N", "K", "accumulate", "BK", "BN", "BM"},
             {t, t, f, 8192, 3072, 768, true, KM, dwBN, KK}, true);
    check(kernel("transpose", k::transpose, {"in", "out", "R", "C", "BR", "BC"}), {f, f, 768, 3072, 32, 32}, chip);
  }
  linear("matmul_bwd_dx", k::matmul_bwd_dx<T, P>, k::matmul_bwd_dx_tma<T, P>,
         {"dy", "w", "dx", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"}, {t, t, t, 8192, 3072, 768, KM, KN, KK, G},
         true);
  linear("matmul_bwd_dx_gelu", k::matmul_bwd_dx_gelu<T, P>, k::matmul_bwd_dx_gelu_tma<T, P>,
         {"dy", "w", "pre", "dpre", "partial", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"},
         {t, t, t, t, f, 8192, 768, 3072, tiles.geluDx()[0], tiles.geluDx()[1], tiles.geluDx()[2], G}, true,
         {tiles.geluDx()[3], tiles.geluDx()[4]});
  // Tiles::gelu_ping_pong (off by default until a GPU has timed it): the
  // GELU GEMMs as ping-pong kernels at their tiles - two programs a CTA, 0
  // spills, both programs' buffers and the ring within an H100's 227 KiB.
  if (bf16 && std::string(chip) == "sm_90a") {
    const gpt::GptModel::Tiles pp = tiles.with("gelu_ping_pong=1");
    auto checkPingPong = [&](const Kernel &kern, const std::vector<Arg> &args, const std::array<int, 5> &tile) {
      const CompiledKernel c =
          kern.compile(args, {.chip = chip, .num_warps = tile[3], .num_stages = tile[4], .ping_pong = true});
      std::printf("[gpt %s] %-28s %3d registers, %5d B shared, %d B spilled, ping-pong\n", chip,
                  kern.name().c_str(), c.registers, c.shared_bytes + c.dynamic_shared_bytes, c.spill_bytes);
      EXPECT_EQ(c.programs_per_cta, 2) << kern.name();
      EXPECT_EQ(c.spill_bytes, 0) << kern.name();
      EXPECT_LE(c.shared_bytes + c.dynamic_shared_bytes, 227 * 1024) << kern.name();
    };
    const std::array<int, 5> fwdTile = pp.geluForward(), dxTile = pp.geluDx();
    checkPingPong(kernel("matmul_bias_fwd_pp", k::matmul_bias_fwd_tma<T, P>,
                         {"x", "w", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK", "GROUP_M"}),
                  {t, t, t, t, t, 8192, 3072, 768, true, fwdTile[0], fwdTile[1], fwdTile[2], G}, fwdTile);
    checkPingPong(kernel("matmul_bwd_dx_gelu_pp", k::matmul_bwd_dx_gelu_tma<T, P>,
                         {"dy", "w", "pre", "dpre", "partial", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"}),
                  {t, t, t, t, f, 8192, 768, 3072, dxTile[0], dxTile[1], dxTile[2], G}, dxTile);
  }
  const auto [HM, HN, HK, HW, HS] = tiles.head();
  linear("lm_head", k::matmul_bwd_dx<T, P>, k::matmul_bwd_dx_tma<T, P>,
         {"x", "wte", "logits", "M", "C", "V", "BM", "BV", "BC", "GROUP_M"},
         {t, t, t, 8192, 768, 50304, HM, HN, HK, G}, true, std::pair{HW, HS});
  // The weight gradients at full and half width (GptModel::dwBlockN).
  for (int dwBN : {BN, BN / 2})
    linear("matmul_bwd_dw", k::matmul_bwd_dw<T, P>, k::matmul_bwd_dw_tma<T, P>,
           {"x", "dy", "dw", "M", "N", "K", "accumulate", "BK", "BN", "BM"},
           {t, t, f, 8192, 3072, 768, true, BM, dwBN, BK}, false, {tiles.dw_warps ? tiles.dw_warps : LW, LS});
  // f32 at tf32 on sm_90a: x^T dy as stored (wte's gradient; the others with
  // dw_transposed off) on wgmma, both operands scattered into K-major rings
  // by 4-byte copies.
  if (!descriptors && std::string(chip) == "sm_90a") {
    const std::string ptx = kernel("matmul_bwd_dw", k::matmul_bwd_dw<T, P>,
                                   {"x", "dy", "dw", "M", "N", "K", "accumulate", "BK", "BN", "BM"})
                                .compile({t, t, f, 8192, 3072, 768, true, BM, BN, BK},
                                         {.chip = chip, .num_warps = tiles.dw_warps ? tiles.dw_warps : LW,
                                          .num_stages = LS, .assemble = false})
                                .ptx;
    EXPECT_NE(ptx.find("wgmma.mma_async"), std::string::npos);
    EXPECT_NE(ptx.find("cp.async.ca.shared.global"), std::string::npos);
    EXPECT_EQ(ptx.find("mma.sync"), std::string::npos);
  }
  // The weight gradients as stream-K GEMMs (GptModel's default), at full width.
  if (tiles.dw_stream_k)
    linear("matmul_bwd_dw_stream_k", k::matmul_bwd_dw_stream_k<T, P>, k::matmul_bwd_dw_stream_k_tma<T, P>,
           {"x", "dy", "dw", "partials", "arrivals", "M", "N", "K", "accumulate", "BK", "BN", "BM"},
           {t, t, f, f, i, 8192, 3072, 768, true, BM, BN, BK}, false, {tiles.dw_warps ? tiles.dw_warps : LW, LS});
  // The tuner's dw_bn=256 for the blocks' weight gradients (bf16 on sm_90a):
  // stream-K at 128 x 256, 0 spills where it stores. Where a micro-batch
  // adds into the gradient, the run starting a tile reads it before its
  // loop: one register spilled warp specialised (24 B, once a tile; 236 B
  // when the gradient so far was added to the finished sum), 0 without the
  // producer.
  if (bf16 && std::string(chip) == "sm_90a" && tiles.dw_stream_k) {
    const std::vector<std::string> params = {"x", "dy", "dw", "partials", "arrivals", "M", "N",
                                             "K", "accumulate", "BK", "BN", "BM"};
    const int dwBN = tiles.with("dw_bn=256").dw_bn, dwWarps = tiles.dw_warps ? tiles.dw_warps : LW;
    linear("matmul_bwd_dw_stream_k_256", k::matmul_bwd_dw_stream_k<T, P>, k::matmul_bwd_dw_stream_k_tma<T, P>,
           params, {t, t, f, f, i, 8192, 3072, 768, false, BM, dwBN, BK}, false, {dwWarps, LS});
    const Kernel kern = kernel("matmul_bwd_dw_stream_k_256", k::matmul_bwd_dw_stream_k_tma<T, P>, params);
    for (bool ws : {true, false}) {
      const CompiledKernel c = kern.compile({t, t, f, f, i, 8192, 3072, 768, true, BM, dwBN, BK},
                                            {.chip = chip, .num_warps = dwWarps, .num_stages = LS,
                                             .warp_specialize = ws});
      std::printf("[gpt %s] matmul_bwd_dw_stream_k_256, accumulating%s: %d registers, %d B spilled\n", chip,
                  ws ? "" : ", not warp specialised", c.registers, c.spill_bytes);
      EXPECT_LE(c.spill_bytes, ws ? 32 : 0);
    }
  }
  // wte's gradient at Tiles::head_dw_bn (bf16 on sm_90a: 256 wide, m64n256
  // wgmmas, dlogits read half as often as at 128); 0 spills at 8 warps,
  // warp specialised or not (set_warp_specialize(false), gpt2-train's plain
  // variant), and so the tuner's dw_bn=256 one program a tile, accumulating.
  if (tiles.head_dw_bn) {
    linear("matmul_bwd_dw_wte", k::matmul_bwd_dw<T, P>, k::matmul_bwd_dw_tma<T, P>,
           {"x", "dy", "dw", "M", "N", "K", "accumulate", "BK", "BN", "BM"},
           {t, t, f, 8192, 768, 50304, true, BM, tiles.head_dw_bn, BK}, false,
           {tiles.dw_warps ? tiles.dw_warps : LW, LS});
    const CompiledKernel c = kernel("matmul_bwd_dw_wte", k::matmul_bwd_dw_tma<T, P>,
                                    {"x", "dy", "dw", "M", "N", "K", "accumulate", "BK", "BN", "BM"})
                                 .compile({t, t, f, 8192, 768, 50304, true, BM, tiles.head_dw_bn, BK},
                                          {.chip = chip, .num_warps = tiles.dw_warps ? tiles.dw_warps : LW,
                                           .num_stages = LS});
    std::printf("[gpt %s] matmul_bwd_dw_wte, not warp specialised: %d registers, %d B spilled\n", chip,
                c.registers, c.spill_bytes);
    EXPECT_EQ(c.spill_bytes, 0);
    EXPECT_EQ(c.producer_warps, 0);
    EXPECT_LE(c.dynamic_shared_bytes, 227 * 1024);
  }
  if constexpr (descriptors) // the tied LM head's input gradient
    linear("matmul", k::matmul_tma<T, P>, k::matmul_tma<T, P>,
           {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"}, {t, t, t, 8192, 768, 50304, BM, BN, BK, G});
  const Kernel lnFwd = kernel("layernorm_fwd", k::layernorm_fwd<T>,
                              {"x", "w", "b", "y", "mean", "rstd", "rows", "C", "eps", "ROWS", "BLOCK", "CHUNKS"});
  const Kernel resLn = kernel("residual_layernorm_fwd", k::residual_layernorm_fwd<T>,
                              {"x", "a", "res", "w", "b", "y", "mean", "rstd", "rows", "C", "eps", "ROWS", "BLOCK",
                               "CHUNKS"});
  const int lnRows = tiles.ln_fwd_rows;
  const std::vector<Arg> lnFwdArgs = {t, t, t, t, f, f, 8192, C, 1e-5f, lnRows, 1024, 1},
                         resLnArgs = {t, t, t, t, t, t, f, f, 8192, C, 1e-5f, lnRows, 1024, 1};
  check(lnFwd, lnFwdArgs, chip, lnRows * tiles.row_warps, 0);
  check(resLn, resLnArgs, chip, lnRows * tiles.row_warps, 0);
  // One warp a row: both reductions are shuffles - no shared memory, no CTA
  // barrier in the machine code; also 4 and 8 rows a program (a warp each).
  EXPECT_EQ(tiles.row_warps, 1);
  struct RowKernel {
    const Kernel *kern;
    std::vector<Arg> args;
    int warps, chunks;
  };
  std::vector<RowKernel> rowKernels;
  for (int rowsAProgram : {lnRows, 4, 8})
    for (int chunks : {1, 3}) { // 1024 columns, or 768 as 3 x 256 (Tiles::ln_fwd_block)
      std::vector<Arg> a = lnFwdArgs, b = resLnArgs;
      a[9] = rowsAProgram, b[11] = rowsAProgram;
      a[10] = b[12] = chunks == 1 ? 1024 : 256;
      a[11] = b[13] = chunks;
      rowKernels.push_back({&lnFwd, a, rowsAProgram * tiles.row_warps, chunks});
      rowKernels.push_back({&resLn, b, rowsAProgram * tiles.row_warps, chunks});
    }
  for (const auto &[kern, args, warps, chunks] : rowKernels) {
    const CompiledKernel c = kern->compile(args, {.chip = chip, .num_warps = warps});
    std::printf("[gpt %s] %-24s %d warps, %d x %4d columns: %3d registers\n", chip, kern->name().c_str(), warps,
                chunks, chunks == 1 ? 1024 : 256, c.registers);
    EXPECT_EQ(c.spill_bytes, 0) << kern->name() << " at " << warps << " warps";
    EXPECT_EQ(c.shared_bytes + c.dynamic_shared_bytes, 0) << kern->name();
    if (c.cubin.empty())
      continue; // no ptxas: no machine code
    const std::string sass = c.sass();
    EXPECT_EQ(sass.find("BAR.SYNC"), std::string::npos) << kern->name();
    EXPECT_NE(sass.find("SHFL.BFLY"), std::string::npos) << kern->name();
  }
  // The backward in one pass: dx (+ the residual's gradient) and the column
  // sums' partials of dw, db and dx, at its tile (its row-tile's scalars:
  // the mean and rstd, loaded for the first block and, a block ahead, in the
  // loop) - in one block of 1024 columns, and as 3 x 256 (Tiles::ln_bwd_block:
  // no padding; fewer registers).
  const Kernel lnBwdKernel = kernel("layernorm_bwd", k::layernorm_bwd<T>,
                                    {"dy", "x", "w", "mean", "rstd", "dres", "dx", "partial_w", "partial_b",
                                     "partial_o", "rows", "C", "residual", "out_sums", "ROWS", "BR", "BLOCK", "CHUNKS"});
  int lnBwdRegisters[2] = {0, 0};
  for (int chunks : {1, 3}) {
    const CompiledKernel lnBwd = check(lnBwdKernel,
                                       {t, t, t, f, f, t, t, f, f, f, 8192, C, true, true, tiles.ln_bwd_rows,
                                        tiles.ln_bwd_tile_rows, chunks == 1 ? 1024 : 256, chunks},
                                       chip, tiles.ln_bwd_warps, 4);
    lnBwdRegisters[chunks == 3] = lnBwd.registers;
    // Its row's two sums across warps keep their partials in bytes of their
    // own, so neither waits before writing them (elide-scratch-barriers): two
    // barriers a row, not four - the chunks are added before the sums.
    if (!lnBwd.cubin.empty() && tiles.ln_bwd_tile_rows == 1) {
      const int barriers = barriersIn(lnBwd);
      EXPECT_EQ(barriers, 2) << "layernorm_bwd's barriers in " << chunks << " chunks";
    }
  }
  std::printf("[gpt %s] layernorm_bwd: %d registers in one block of 1024, %d in 3 x 256\n", chip, lnBwdRegisters[0],
              lnBwdRegisters[1]);
  if (lnBwdRegisters[0] > 0 && lnBwdRegisters[1] > 0)
    EXPECT_LE(lnBwdRegisters[1], lnBwdRegisters[0]) << "the chunks carry no padding";
  // gpt2-layers' other tiles for it (rows a step at 8 warps): no spill, and
  // at a warp a row (4 rows, 8 warps: 2 a row) its rows' statistics and
  // column sums stay out of shared memory but for the final sums across rows
  // (remove-layout-conversions): at most 7 barriers in the whole kernel.
  for (int tileRows : {2, 4})
    for (int chunks : {1, 3}) {
      const CompiledKernel c = check(lnBwdKernel,
                                     {t, t, t, f, f, t, t, f, f, f, 8192, C, true, true, tiles.ln_bwd_rows, tileRows,
                                      chunks == 1 ? 1024 : 256, chunks},
                                     chip, 8);
      if (c.cubin.empty())
        continue;
      const int barriers = barriersIn(c);
      // In chunks each chunk's three column sums across the rows are a
      // reduction of their own at the end (2 barriers each, once a program).
      EXPECT_LE(barriers, 7 + (chunks - 1) * 3 * 2)
          << "layernorm_bwd at " << tileRows << " rows a step in " << chunks << " chunks";
    }
  // A warp a row (4 rows a step on 4 warps) in chunks of 256 (tegula-gpt
  // tune's bf16 ln_bwd alternative): 16-byte loads, no barrier a row - each
  // row's sums are shuffles; only the column sums' final reductions, once a
  // program, cross warps. At the register limit (255) without a spill (in
  // one block of 1024 two thirds of a kilobyte - hence the chunks; f32's
  // inputs, twice the registers, spill a quarter of a kilobyte even in chunks).
  if (bf16) {
    const CompiledKernel c = check(lnBwdKernel,
                                   {t, t, t, f, f, t, t, f, f, f, 8192, C, true, true, tiles.ln_bwd_rows, 4, 256, 3},
                                   chip, 4);
    EXPECT_NE(c.ptx.find("ld.global.v4.b32"), std::string::npos) << "16-byte loads";
    if (!c.cubin.empty()) {
      const int barriers = barriersIn(c);
      EXPECT_LE(barriers, 3 * 3 * 2) << "layernorm_bwd at a warp a row: the column sums' reductions alone";
    }
  }
  check(kernel("cross_entropy_fwd", k::cross_entropy_fwd<T>,
               {"logits", "targets", "losses", "lse", "V", "Vp", "BLOCK"}),
        {t, i, f, f, 50257, 50304, 1024}, chip, 4, 2); // the target and its logit
  check(kernel("cross_entropy_bwd", k::cross_entropy_bwd<T>,
               {"logits", "targets", "lse", "dlosses", "dlogits", "V", "Vp", "BLOCK"}),
        {t, i, f, f, t, 50257, 50304, 1024}, chip, 4, 3); // target, lse, dloss
  // c_attn's bias gradient: whole [32, 128] tiles in vectors, then the
  // partials' sums (and the gradient accumulated so far, a column a thread).
  const int CR = tiles.column_rows, CT = tiles.column_tile_rows, CB = tiles.column_block;
  check(kernel("column_partial_sums", k::column_partial_sums<T>, {"dy", "partial", "M", "N", "ROWS", "BR", "BC"}),
        {t, f, 8192, 3 * C, CR, CT, CB}, chip, 4, 0);
  check(kernel("column_sums", k::column_sums, {"partial", "out", "P", "N", "accumulate", "BR", "BC"}),
        {f, f, 512, 4 * C, true, tiles.column_sum_rows, tiles.column_sum_block}, chip, 4, 1);
  check(kernel("column_sums_of_blocks", k::column_sums_of_blocks,
               {"partial", "out_0", "out_1", "out_2", "P", "N", "accumulate", "BR", "BC"}),
        {f, f, f, f, 512, C, true, tiles.column_sum_rows, tiles.column_sum_block}, chip, 4, 3);
  check(kernel("residual_add", k::residual_add<T>, {"x", "y", "out", "n", "BLOCK"}),
        {t, t, t, int64_t(8192) * C, 1024}, chip, 4, 0);
  if constexpr (std::is_same_v<T, float>)
    check(kernel("adamw", k::adamw, {"params", "grads", "m", "v", "lr", "beta1", "beta2", "eps", "weight_decay", "bias1",
                                     "bias2", "grad_scale", "n", "BLOCK"}),
          {f, f, f, f, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.1f, 0.05f, 1.0f, int64_t(124000000), 1024}, chip, 4, 0);
  else
    for (bool stochastic : {false, true})
      check(kernel("adamw_mixed", k::adamw_mixed<T>, {"params", "params_lp", "grads", "m", "v", "lr", "beta1", "beta2", "eps",
                                                    "weight_decay", "bias1", "bias2", "grad_scale", "n", "seed", "BLOCK",
                                                    "STOCHASTIC"}),
          {f, t, f, f, f, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.1f, 0.05f, 1.0f, int64_t(124000000), int64_t(7), 1024,
           stochastic},
          chip);
}

TEST_P(GptGpuConfigs, EveryKernelCompilesAtTheModelsTileSizes) { checkAll<float>(GetParam()); }

TEST_P(GptGpuConfigs, EveryBf16KernelCompilesAtTheModelsTileSizes) { checkAll<bfloat16>(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Chips, GptGpuConfigs, ::testing::Values("sm_80", "sm_90a"),
                         [](const auto &info) { return std::string(info.param); });

} // namespace
