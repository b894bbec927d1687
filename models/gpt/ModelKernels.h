//===- ModelKernels.h - the kernels GptModel launches ---------*- C++ -*-===//
//
// Internal to models/gpt: the kernel objects of Kernels.h and Attention.h
// that Model.cpp (forward, backward, step) and Generate.cpp (decoding) launch,
// traced once per shape specialisation and reused.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "examples/kernels.h"
#include "models/gpt/Attention.h"
#include "models/gpt/Kernels.h"
#include "models/gpt/Model.h"

#include <algorithm>
#include <bit>

namespace tegula::gpt {

inline int pow2AtLeast(int n) { return int(std::bit_ceil(unsigned(std::max(n, 1)))); }

/// The kernel objects, traced once per shape specialisation and reused.
struct GptModel::Kernels {
  /// The linear layers' and attention's dots at `precision` (f32 storage:
  /// tf32 puts them on tensor cores; ieee is exact).
  explicit Kernels(tl::precision precision)
      : linear(pick<Linear>(precision)), lmHead(pick<LmHead>(precision)), attention(pick<Attention>(precision)),
        matmulDx(pick<MatmulDx>(precision)), matmulDw(pick<MatmulDw>(precision)),
        attentionDkdv(pick<AttentionDkdv>(precision)), attentionDq(pick<AttentionDq>(precision)),
        matmul(pick<Matmul>(precision)) {}
  template <class Maker> static Kernel pick(tl::precision p) {
    switch (p) {
    case tl::precision::tf32: return Maker::template make<tl::precision::tf32>();
    case tl::precision::tf32x3: return Maker::template make<tl::precision::tf32x3>();
    default: return Maker::template make<tl::precision::ieee>();
    }
  }
  struct Linear {
    template <tl::precision P> static Kernel make() {
      return kernel("gpt_matmul_bias_fwd", kernels::matmul_bias_fwd<float, P>,
                    {"x", "w", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK"});
    }
  };
  struct LmHead {
    template <tl::precision P> static Kernel make() {
      return kernel("gpt_lm_head", kernels::matmul_bwd_dx<float, P>, {"x", "wte", "logits", "M", "C", "V", "BM", "BV", "BC"});
    }
  };
  struct Attention {
    template <tl::precision P> static Kernel make() {
      return kernel("gpt_attention_fwd", kernels::attention_fwd<float, P>,
                    {"qkv", "o", "lse", "q_off", "k_off", "v_off", "stride", "H", "T", "scale", "first_block", "D",
                     "BM", "BN"});
    }
  };
  struct MatmulDx {
    template <tl::precision P> static Kernel make() {
      return kernel("gpt_matmul_bwd_dx", kernels::matmul_bwd_dx<float, P>,
                    {"dy", "w", "dx", "M", "N", "K", "BM", "BK", "BN"});
    }
  };
  struct MatmulDw {
    template <tl::precision P> static Kernel make() {
      return kernel("gpt_matmul_bwd_dw", kernels::matmul_bwd_dw<float, P>,
                    {"x", "dy", "dw", "M", "N", "K", "accumulate", "BK", "BN", "BM"});
    }
  };
  struct AttentionDkdv {
    template <tl::precision P> static Kernel make() {
      return kernel("gpt_attention_bwd_dkdv", kernels::attention_bwd_dkdv<float, P>,
                    {"qkv", "dout", "lse", "delta", "dqkv", "q_off", "k_off", "v_off", "stride", "H", "T", "scale",
                     "D", "BM", "BN"});
    }
  };
  struct AttentionDq {
    template <tl::precision P> static Kernel make() {
      return kernel("gpt_attention_bwd_dq", kernels::attention_bwd_dq<float, P>,
                    {"qkv", "dout", "lse", "delta", "dqkv", "q_off", "k_off", "v_off", "stride", "H", "T", "scale",
                     "D", "BM", "BN"});
    }
  };
  struct Matmul {
    template <tl::precision P> static Kernel make() {
      return kernel("gpt_matmul", examples::matmul<float, P>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
    }
  };
  Kernel linear, lmHead, attention, matmulDx, matmulDw, attentionDkdv, attentionDq, matmul;

  Kernel embedding = kernel("gpt_embedding_fwd", kernels::embedding_fwd<float>,
                            {"tokens", "wte", "wpe", "out", "T", "C", "BLOCK"});
  Kernel layernorm = kernel("gpt_layernorm_fwd", kernels::layernorm_fwd<float>,
                            {"x", "w", "b", "y", "mean", "rstd", "C", "eps", "BLOCK"});
  Kernel residual = kernel("gpt_residual", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  Kernel crossEntropy = kernel("gpt_cross_entropy_fwd", kernels::cross_entropy_fwd,
                               {"logits", "targets", "losses", "V", "Vp", "BLOCK"});
  // Backward and optimiser.
  Kernel crossEntropyBwd = kernel("gpt_cross_entropy_bwd", kernels::cross_entropy_bwd,
                                  {"logits", "targets", "losses", "dlosses", "dlogits", "V", "Vp", "BLOCK"});
  Kernel fill = kernel("gpt_fill", fillKernel, {"out", "value", "n", "BLOCK"});
  Kernel biasBwd = kernel("gpt_bias_bwd", kernels::bias_bwd<float>, {"dy", "db", "M", "N", "accumulate", "BLOCK"});
  Kernel layernormDx = kernel("gpt_layernorm_bwd_dx", kernels::layernorm_bwd_dx<float>,
                              {"dy", "x", "w", "mean", "rstd", "dx", "C", "BLOCK"});
  Kernel layernormDwdb = kernel("gpt_layernorm_bwd_dwdb", kernels::layernorm_bwd_dwdb<float>,
                                {"dy", "x", "mean", "rstd", "dw", "db", "rows", "C", "accumulate", "BLOCK"});
  Kernel geluBwd = kernel("gpt_gelu_bwd", kernels::gelu_bwd<float>, {"x", "dy", "dx", "n", "BLOCK"});
  Kernel attentionDelta = kernel("gpt_attention_bwd_delta", kernels::attention_bwd_delta<float>,
                                 {"o", "dout", "delta", "H", "T", "D", "BM"});
  Kernel embeddingTokens = kernel("gpt_embedding_bwd_tokens", kernels::embedding_bwd_tokens,
                                  {"tokens", "dout", "dwte", "C", "BLOCK"});
  Kernel embeddingPositions = kernel("gpt_embedding_bwd_positions", kernels::embedding_bwd_positions,
                                     {"dout", "dwpe", "batch", "T", "C", "accumulate", "BLOCK"});
  Kernel adamw = kernel("gpt_adamw", kernels::adamw,
                        {"params", "grads", "m", "v", "lr", "beta1", "beta2", "eps", "weight_decay", "bias1",
                         "bias2", "grad_scale", "n", "BLOCK"});
  Kernel sumOfSquares = kernel("gpt_sum_of_squares", kernels::sum_of_squares, {"x", "partial", "n", "BLOCK"});
  Kernel sumAll = kernel("gpt_sum_all", kernels::sum_all, {"x", "out", "n", "BLOCK"});

  static void fillKernel(tl::ptr<float> out, tl::scalar<float> value, tl::scalar<int64_t> n,
                         tl::constant<int> BLOCK) {
    tl::tensor offs = tl::program_id(0).to(tl::i64) * BLOCK + tl::arange(0, BLOCK);
    tl::store(out + offs, tl::full({BLOCK}, value, tl::f32), offs < n);
  }
};

} // namespace tegula::gpt
