// AttentionTest.cpp - GPT-2's causal flash attention (models/gpt/Attention.h)
// forward and backward on a fused qkv buffer, in the interpreter and the
// simulator: against a double-precision reference (softmax attention and its
// gradients) and, for the gradients, finite differences of the forward.
#include "TestUtil.h"
#include "gpt/GptTestUtil.h"
#include "models/gpt/Attention.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <random>
#include <tuple>

using namespace tegula;
using namespace tegula::testing;
namespace k = tegula::gpt::kernels;

namespace {

/// A problem and the blocks it runs at: the forward's (BM queries, BN keys a
/// step), the backward's (a program owns `own` rows - keys in dkdv, queries in
/// dq - and steps through the others `step` at a time).
struct Shape {
  int B, H, T, D, BM, BN, own, step;
  int C() const { return H * D; }
};
constexpr Shape kSmall{2, 2, 37, 16, 16, 16, 16, 16};

struct Reference {
  std::vector<double> o, lse, dqkv;
};

/// Softmax attention per (b, h) in double, and the gradients of sum(o * dout).
Reference reference(const Shape &shape, const std::vector<double> &qkv, const std::vector<double> &dout,
                    double scale) {
  const int B = shape.B, H = shape.H, T = shape.T, D = shape.D, C = shape.C();
  Reference r{std::vector<double>(B * T * C), std::vector<double>(B * H * T), std::vector<double>(qkv.size(), 0.0)};
  auto at = [&](int b, int t, int which, int h, int d) { return size_t((b * T + t) * 3 * C + which * C + h * D + d); };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      std::vector<double> P(T * T, 0.0), dP(T * T, 0.0);
      for (int i = 0; i < T; ++i) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j <= i; ++j) {
          double s = 0;
          for (int d = 0; d < D; ++d) s += qkv[at(b, i, 0, h, d)] * qkv[at(b, j, 1, h, d)];
          P[size_t(i * T + j)] = s * scale;
          mx = std::max(mx, s * scale);
        }
        for (int j = 0; j <= i; ++j) sum += (P[size_t(i * T + j)] = std::exp(P[size_t(i * T + j)] - mx));
        for (int j = 0; j <= i; ++j) P[size_t(i * T + j)] /= sum;
        r.lse[size_t((b * H + h) * T + i)] = mx + std::log(sum);
        for (int d = 0; d < D; ++d) {
          double o = 0;
          for (int j = 0; j <= i; ++j) o += P[size_t(i * T + j)] * qkv[at(b, j, 2, h, d)];
          r.o[size_t((b * T + i) * C + h * D + d)] = o;
        }
      }
      for (int i = 0; i < T; ++i) {
        double rowDot = 0;
        for (int j = 0; j <= i; ++j) {
          double g = 0;
          for (int d = 0; d < D; ++d) g += dout[size_t((b * T + i) * C + h * D + d)] * qkv[at(b, j, 2, h, d)];
          dP[size_t(i * T + j)] = g;
          rowDot += g * P[size_t(i * T + j)];
        }
        for (int j = 0; j <= i; ++j) {
          const double p = P[size_t(i * T + j)], ds = p * (dP[size_t(i * T + j)] - rowDot);
          for (int d = 0; d < D; ++d) {
            r.dqkv[at(b, j, 2, h, d)] += p * dout[size_t((b * T + i) * C + h * D + d)];
            r.dqkv[at(b, i, 0, h, d)] += ds * qkv[at(b, j, 1, h, d)] * scale;
            r.dqkv[at(b, j, 1, h, d)] += ds * qkv[at(b, i, 0, h, d)] * scale;
          }
        }
      }
    }
  return r;
}

class GptAttention : public tegula::testing::GptBackendTest {
protected:
  LaunchOptions on(Grid g) const { return {.grid = g, .num_warps = 4, .backend = GetParam()}; }
};

/// The backward through tensor descriptors (attention_bwd_{dkdv,dq}_tma, as
/// GptModel runs bf16) or pointer loads.
enum class Loads { Pointers, Descriptors };

/// P: the dots' precision (GptModel's f32 runs them at tf32).
template <class E, tl::precision P = tl::precision::ieee>
void forwardAndBackward(const LaunchOptions &base, double tol, const Shape &shape = kSmall,
                        Loads loads = Loads::Pointers) {
  const int B = shape.B, H = shape.H, T = shape.T, D = shape.D, C = shape.C(), BM = shape.BM, BN = shape.BN;
  auto qkv = random_vector<E>(B * T * 3 * C), dout = random_vector<E>(B * T * C);
  const float scale = 1.0f / std::sqrt(float(D));
  Reference ref = reference(shape, to_double(qkv), to_double(dout), scale);
  auto fwd = kernel("attention_fwd", k::attention_fwd<E, P>,
                    {"qkv", "o", "lse", "q_off", "k_off", "v_off", "stride", "H", "T", "scale", "first_block", "D",
                     "BM", "BN", "diagonal_mask_only"});
  auto o = poisoned<E>(B * T * C);
  auto lse = poisoned<float>(B * H * T);
  LaunchOptions opts = base;
  opts.grid = {uint32_t(cdiv(T, BM)), uint32_t(B * H)};
  fwd(opts, qkv, o, lse, 0, C, 2 * C, 3 * C, H, T, scale, 0, D, BM, BN, true);
  EXPECT_LT(rel_error(o, ref.o), tol);
  EXPECT_LT(rel_error(lse, ref.lse), 1e-5);

  auto delta = poisoned<float>(B * H * T);
  auto dqkv = poisoned<E>(qkv.size());
  auto pre = kernel("attention_bwd_delta", k::attention_bwd_delta<E>, {"o", "dout", "delta", "H", "T", "D", "BM"});
  const std::vector<std::string> bwdParams = {"qkv", "dout", "lse", "delta", "dqkv", "q_off", "k_off", "v_off",
                                              "stride", "H", "T", "scale", "D", "BM", "BN", "partial", "bias_sums"};
  std::vector<std::string> tmaParams = bwdParams;
  tmaParams.insert(tmaParams.end() - 2, "rows");
  const bool descriptors = loads == Loads::Descriptors;
  auto dkdv = descriptors ? kernel("attention_bwd_dkdv_tma", k::attention_bwd_dkdv_tma<E, P>, tmaParams)
                          : kernel("attention_bwd_dkdv", k::attention_bwd_dkdv<E, P>, bwdParams);
  auto dq = descriptors ? kernel("attention_bwd_dq_tma", k::attention_bwd_dq_tma<E, P>, tmaParams)
                        : kernel("attention_bwd_dq", k::attention_bwd_dq<E, P>, bwdParams);
  LaunchOptions steps = opts, owned = opts;
  steps.grid = {uint32_t(cdiv(T, shape.step)), uint32_t(B * H)};
  owned.grid = {uint32_t(cdiv(T, shape.own)), uint32_t(B * H)};
  pre(steps, o, dout, delta, H, T, D, shape.step);
  std::vector<Arg> common = {qkv, dout, lse, delta, dqkv, 0, C, 2 * C, 3 * C, H, T, scale, D};
  // With the column sums of what they write: a row of partials per `own`
  // rows of a sequence (the last ragged), 3C columns.
  const int blocks = B * int(cdiv(T, shape.own));
  auto partial = poisoned<float>(size_t(blocks) * 3 * C);
  auto launch = [&](const Kernel &kern, int bm, int bn) {
    std::vector<Arg> args = common;
    args.push_back(bm), args.push_back(bn);
    if (descriptors)
      args.push_back(B * T);
    args.push_back(partial), args.push_back(true);
    kern.launch(owned, args);
  };
  launch(dkdv, shape.step, shape.own);
  launch(dq, shape.own, shape.step);
  EXPECT_LT(rel_error(dqkv, ref.dqkv), tol * 2);
  // The partials add up to the column sums of dqkv as stored (the QKV
  // projection's bias gradient), and near the exact ones.
  std::vector<double> got(size_t(3 * C), 0.0), stored(size_t(3 * C), 0.0), exact(size_t(3 * C), 0.0);
  for (int r = 0; r < blocks; ++r)
    for (int c = 0; c < 3 * C; ++c) got[size_t(c)] += partial[size_t(r) * 3 * C + size_t(c)];
  for (int r = 0; r < B * T; ++r)
    for (int c = 0; c < 3 * C; ++c) {
      stored[size_t(c)] += double(dqkv[size_t(r) * 3 * C + size_t(c)]);
      exact[size_t(c)] += ref.dqkv[size_t(r) * 3 * C + size_t(c)];
    }
  EXPECT_LT(rel_error(got, stored), 1e-5);
  EXPECT_LT(rel_error(got, exact), tol * 2);

  if constexpr (std::is_same_v<E, float> && P == tl::precision::ieee) { // finite differences of the forward
    auto loss = [&](const std::vector<float> &x) {
      auto oo = poisoned<float>(B * T * C);
      auto ll = poisoned<float>(B * H * T);
      fwd({.grid = opts.grid, .backend = Backend::Interp}, x, oo, ll, 0, C, 2 * C, 3 * C, H, T, scale, 0, D, BM,
          BN, true);
      double l = 0;
      for (size_t i = 0; i < oo.size(); ++i) l += double(oo[i]) * dout[i];
      return l;
    };
    std::mt19937 pick(5);
    for (int s = 0; s < 8; ++s) {
      const size_t i = pick() % qkv.size();
      const float h = 1e-2f;
      auto xp = qkv, xm = qkv;
      xp[i] += h, xm[i] -= h;
      EXPECT_NEAR(dqkv[i], (loss(xp) - loss(xm)) / (2 * h), 2e-2 * (1 + std::abs(dqkv[i]))) << "element " << i;
    }
  }
}

TEST_P(GptAttention, CausalForwardAndBackwardF32) { forwardAndBackward<float>(on({1}), 1e-5); }
TEST_P(GptAttention, CausalForwardAndBackwardBf16) { forwardAndBackward<bfloat16>(on({1}), 2e-2); }

// The backward at the tiles GptModel gives bf16 on sm_90a - dkdv owning 128
// keys and stepping through 64 queries, dq the other way round, 8 warps, all
// eight dots on wgmma - as Hopper code in the simulator, on a ragged T that
// spans several blocks of each.
TEST(GptAttentionHopperTiles, Bf16BackwardInTheSimulator) {
  const Shape shape{1, 2, 200, 64, 64, 64, 128, 64};
  forwardAndBackward<bfloat16>({.grid = {1}, .num_warps = 8, .backend = Backend::Sim, .chip = "sm_90a"}, 2e-2, shape);
}

// f32 at tf32, as GptModel runs f32 on the GPU, at its tiles (32 by 32, 8
// warps) as sm_80 and sm_90a code in the simulator: every key, value, query
// and output-gradient block arrives through a cp.async ring - attention's P
// and dS move into tf32's A fragments by a conversion of their own, and q
// (dkdv) or k (dq), which two dots read in different orders, fill one ring.
class GptAttentionF32Tiles : public ::testing::TestWithParam<const char *> {};
TEST_P(GptAttentionF32Tiles, Tf32InTheSimulator) {
  const Shape shape{1, 2, 100, 64, 32, 32, 32, 32};
  // tf32 keeps 10 of f32's 23 mantissa bits: about 1e-3 of each product.
  forwardAndBackward<float, tl::precision::tf32>(
      {.grid = {1}, .num_warps = 8, .backend = Backend::Sim, .chip = GetParam()}, 5e-3, shape);
  std::vector<float> x(100 * 3 * 128), r(2 * 100);
  const std::vector<std::string> params = {"qkv", "dout", "lse", "delta", "dqkv", "q_off", "k_off", "v_off", "stride",
                                           "H", "T", "scale", "D", "BM", "BN", "partial", "bias_sums"};
  auto dkdv = kernel("attention_bwd_dkdv", k::attention_bwd_dkdv<float, tl::precision::tf32>, params);
  auto dq = kernel("attention_bwd_dq", k::attention_bwd_dq<float, tl::precision::tf32>, params);
  for (const Kernel *kern : {&dkdv, &dq}) {
    const CompiledKernel c = kern->compile({x, x, r, r, x, 0, 128, 256, 384, 2, 100, 0.125f, 64, 32, 32, r, true},
                                           {.chip = GetParam(), .num_warps = 8, .assemble = false});
    const std::string ptx = c.ptx;
    size_t copies = 0;
    for (size_t at = ptx.find("cp.async.cg"); at != std::string::npos; at = ptx.find("cp.async.cg", at + 1))
      ++copies;
    // Both blocks of each iteration (q and do, or k and v), in 3 stages.
    EXPECT_GE(copies, 4u) << kern->name() << ": its blocks are not pipelined";
  }
}
// 64-row blocks at 4 warps (one of the tiles gpt2-attention tries): on
// sm_90a the scores q k^T run on wgmma (tf32, q staged once before the loop,
// k from its ring) and P v on mma.sync (a chained dot: its tf32 A, P,
// computed in the loop, has no way into wgmma's registers; mma.sync converts
// it and pipelines v alone).
TEST_P(GptAttentionF32Tiles, Tf32WithWarpgroupScoresInTheSimulator) {
  const Shape shape{1, 2, 100, 64, 64, 32, 32, 32};
  forwardAndBackward<float, tl::precision::tf32>(
      {.grid = {1}, .num_warps = 4, .backend = Backend::Sim, .chip = GetParam()}, 5e-3, shape);
}
INSTANTIATE_TEST_SUITE_P(Chips, GptAttentionF32Tiles, ::testing::Values("sm_80", "sm_90a"),
                         [](const ::testing::TestParamInfo<const char *> &info) { return std::string(info.param); });

// The backward through tensor descriptors (what GptModel runs in bf16): at
// the small blocks in the interpreter and the simulator (sm_80 code: masked
// loads), and at sm_90a's tiles as Hopper code (TMA rings, q / do / k each
// one ring two wgmma dots read) on a batch of two ragged sequences, whose
// blocks run into the next sequence's rows.
TEST_P(GptAttention, CausalBackwardThroughDescriptorsBf16) {
  forwardAndBackward<bfloat16>(on({1}), 2e-2, kSmall, Loads::Descriptors);
}
TEST(GptAttentionHopperTiles, Bf16BackwardThroughTmaInTheSimulator) {
  const Shape shape{2, 2, 200, 64, 64, 64, 128, 64};
  forwardAndBackward<bfloat16>({.grid = {1}, .num_warps = 8, .backend = Backend::Sim, .chip = "sm_90a"}, 2e-2, shape,
                               Loads::Descriptors);
}

// Warp specialised: a producer warpgroup fills q / do (dkdv) or k / v (dq)
// rings that two wgmma dots each read; the consumers release a stage once
// every dot of the iteration has completed.
TEST(GptAttentionHopperTiles, Bf16BackwardWarpSpecializedInTheSimulator) {
  const Shape shape{2, 2, 200, 64, 64, 64, 128, 64};
  forwardAndBackward<bfloat16>(
      {.grid = {1}, .num_warps = 8, .backend = Backend::Sim, .warp_specialize = true, .chip = "sm_90a"}, 2e-2,
      shape, Loads::Descriptors);
  std::vector<bfloat16> x(2 * 200 * 3 * 128);
  std::vector<float> r(2 * 2 * 200);
  std::vector<std::string> params = {"qkv", "dout", "lse", "delta", "dqkv", "q_off", "k_off", "v_off", "stride",
                                     "H", "T", "scale", "D", "BM", "BN", "rows", "partial", "bias_sums"};
  const CompileOptions ws{.chip = "sm_90a", .num_warps = 8, .warp_specialize = true};
  auto dkdv = kernel("attention_bwd_dkdv_tma", k::attention_bwd_dkdv_tma<bfloat16>, params);
  auto dq = kernel("attention_bwd_dq_tma", k::attention_bwd_dq_tma<bfloat16>, params);
  for (auto [kern, bm, bn] : {std::tuple{&dkdv, 64, 128}, std::tuple{&dq, 128, 64}}) {
    CompiledKernel c =
        kern->compile({x, x, r, r, x, 0, 128, 256, 384, 2, 200, 0.125f, 64, bm, bn, 400, r, true}, ws);
    std::printf("[attention bwd ws] %s: %d registers, %d spilled bytes, producer warps %d\n",
                kern->name().c_str(), c.registers, c.spill_bytes, c.producer_warps);
    EXPECT_EQ(c.producer_warps, 4) << kern->name() << " was not warp specialised";
    EXPECT_EQ(c.spill_bytes, 0) << kern->name();
  }
}

// The forward through tensor descriptors (attention_fwd_tma, what GptModel
// runs in bf16) at sm_90a's tiles - 128 x 128, 8 warps, TMA rings feeding
// wgmma - warp specialised, its two consumer warpgroups taking turns
// issuing their dots (TEGULA_WARPGROUP_TURNS=1; GptModel's default has no
// turns, checked at the model's level), on a batch of two ragged sequences;
// masking only the blocks that need it and every block alike. Query blocks
// run longest first.
TEST(GptAttentionHopperTiles, Bf16ForwardWarpSpecializedTakesTurnsInTheSimulator) {
  const Shape shape{2, 2, 200, 64, 128, 128, 128, 64};
  const int B = shape.B, H = shape.H, T = shape.T, D = shape.D, C = shape.C();
  auto qkv = random_vector<bfloat16>(size_t(B * T * 3 * C));
  const float scale = 1.0f / std::sqrt(float(D));
  const Reference ref = reference(shape, to_double(qkv), std::vector<double>(size_t(B * T * C), 0.0), scale);
  auto fwd = kernel("attention_fwd_tma", k::attention_fwd_tma<bfloat16>,
                    {"qkv", "o", "lse", "q_off", "k_off", "v_off", "stride", "H", "T", "scale", "first_block", "D",
                     "BM", "BN", "rows", "diagonal_mask_only"});
  ScopedEnv turns("TEGULA_WARPGROUP_TURNS", "1");
  for (bool diagonalOnly : {true, false}) {
    SCOPED_TRACE(diagonalOnly ? "diagonal blocks masked" : "every block masked");
    auto o = poisoned<bfloat16>(size_t(B * T * C));
    auto lse = poisoned<float>(size_t(B * H * T));
    const std::vector<Arg> args = {qkv, o, lse, 0, C, 2 * C, 3 * C, H, T, scale, 0, D, 128, 128, B * T, diagonalOnly};
    const CompiledKernel c = fwd.compile(args, {.chip = "sm_90a", .num_warps = 8, .warp_specialize = true});
    EXPECT_EQ(c.producer_warps, 4);
    EXPECT_NE(c.ptx.find("tegula_turn:"), std::string::npos) << "the warpgroups take no turns";
    if (!c.cubin.empty())
      EXPECT_EQ(c.spill_bytes, 0) << c.ptxas_log;
    fwd({.grid = {uint32_t(cdiv(T, 128)), uint32_t(B * H)},
         .num_warps = 8,
         .backend = Backend::Sim,
         .warp_specialize = true,
         .chip = "sm_90a"},
        qkv, o, lse, 0, C, 2 * C, 3 * C, H, T, scale, 0, D, 128, 128, B * T, diagonalOnly);
    EXPECT_LT(rel_error(o, ref.o), 2e-2);
    EXPECT_LT(rel_error(lse, ref.lse), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, GptAttention, tegula::testing::gptBackends(), tegula::testing::gptBackendName);

} // namespace
