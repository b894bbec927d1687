//===- ModelKernels.h - the kernels GptModel launches ---------*- C++ -*-===//
//
// Internal to models/gpt: the kernel objects of Kernels.h and Attention.h
// that Model.cpp (forward), Backward.cpp, Optimizer.cpp and Generate.cpp
// (decoding) launch, traced once per shape specialisation and reused.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "examples/kernels.h"
#include "models/gpt/Attention.h"
#include "models/gpt/Kernels.h"
#include "models/gpt/Linear.h"
#include "models/gpt/Model.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <memory>
#include <string>
#include <type_traits>

namespace tegula::gpt {

inline int pow2AtLeast(int n) { return int(std::bit_ceil(unsigned(std::max(n, 1)))); }

/// attention_fwd with attention_fwd_tma's signature (`rows` = B * T,
/// unused): one call site for both.
template <class E, tl::precision P>
void attentionFwdPointers(tl::ptr<E> qkv, tl::ptr<E> o, tl::ptr<float> lse, tl::scalar<int32_t> q_off,
                          tl::scalar<int32_t> k_off, tl::scalar<int32_t> v_off, tl::scalar<int32_t> stride,
                          tl::scalar<int32_t> H, tl::scalar<int32_t> T, tl::scalar<float> scale,
                          tl::scalar<int32_t> first_block, tl::constant<int> D, tl::constant<int> BM,
                          tl::constant<int> BN, tl::scalar<int32_t>, tl::constant<bool> diagonal_mask_only) {
  kernels::attention_fwd<E, P>(qkv, o, lse, q_off, k_off, v_off, stride, H, T, scale, first_block, D, BM, BN,
                               diagonal_mask_only);
}

/// attention_bwd_dkdv / attention_bwd_dq with the descriptor kernels'
/// signature (`rows` unused).
template <class E, tl::precision P, bool Dq>
void attentionBwdPointers(tl::ptr<E> qkv, tl::ptr<E> dout, tl::ptr<float> lse, tl::ptr<float> delta, tl::ptr<E> dqkv,
                          tl::scalar<int32_t> q_off, tl::scalar<int32_t> k_off, tl::scalar<int32_t> v_off,
                          tl::scalar<int32_t> stride, tl::scalar<int32_t> H, tl::scalar<int32_t> T,
                          tl::scalar<float> scale, tl::constant<int> D, tl::constant<int> BM, tl::constant<int> BN,
                          tl::scalar<int32_t>, tl::ptr<float> partial, tl::constant<bool> bias_sums) {
  if constexpr (Dq)
    kernels::attention_bwd_dq<E, P>(qkv, dout, lse, delta, dqkv, q_off, k_off, v_off, stride, H, T, scale, D, BM, BN,
                                    partial, bias_sums);
  else
    kernels::attention_bwd_dkdv<E, P>(qkv, dout, lse, delta, dqkv, q_off, k_off, v_off, stride, H, T, scale, D, BM,
                                      BN, partial, bias_sums);
}

/// The kernel objects, traced once per shape specialisation and reused: one
/// set per storage type T of the weights and activations (f32, or bf16 with
/// f32 master weights) and precision P of f32 dots (tf32 puts them on tensor
/// cores; 16-bit T runs on tensor cores whatever P is).
struct GptModel::Kernels {
  /// The set for `storage` (f32 or bf16) and `precision`.
  static std::unique_ptr<Kernels> make(DType storage, tl::precision precision) {
    if (storage == DType::bf16)
      return make<bfloat16, tl::precision::ieee>();
    switch (precision) {
    case tl::precision::tf32: return make<float, tl::precision::tf32>();
    case tl::precision::tf32x3: return make<float, tl::precision::tf32x3>();
    default: return make<float, tl::precision::ieee>();
    }
  }

  // Forward.
  // linearTn, transpose: f32 at tf32, the linear layers with their weights
  // transposed (K-major: wgmma through TMA rings), and the transpose that
  // keeps that copy.
  // residualLayernorm: a residual connection and the LayerNorm after it.
  Kernel embedding, layernorm, residualLayernorm, linear, linearTn, transpose, attention, residual, lmHead,
      crossEntropy;
  // Backward.
  // matmulDwTn: the weight gradient from x^T and dy^T (f32 at tf32);
  // matmulDxGelu: the MLP's c_proj dx with GELU's backward and c_fc's bias
  // partial sums fused.
  // matmulDwStreamK: the weight gradient as a stream-K GEMM (one program
  // an SM; GptModel's default where it does not read x^T and dy^T).
  // columnSums(OfBlocks): the bias and LayerNorm parameter gradients'
  // second pass, over partials the kernels that wrote their inputs left
  // (attentionDkdv/Dq: the QKV projection's bias).
  Kernel crossEntropyBwd, matmul, matmulDx, matmulDxGelu, matmulDw, matmulDwStreamK, matmulDwTn, columnSums,
      columnSumsOfBlocks, layernormBwd, attentionDelta, attentionDkdv, attentionDq, embeddingTokens,
      embeddingPositions;
  // Optimiser (f32 master weights; adamwMixed also writes the T copy) and fills.
  Kernel adamw, adamwMixed, sumOfSquares, sumAll, fill;

private:
  static void fillKernel(tl::ptr<float> out, tl::scalar<float> value, tl::scalar<int64_t> n,
                         tl::constant<int> BLOCK) {
    tl::tensor offs = tl::program_id(0).to(tl::i64) * BLOCK + tl::arange(0, BLOCK);
    tl::store(out + offs, tl::full({BLOCK}, value, tl::f32), offs < n);
  }

  template <class T, tl::precision P> static std::unique_ptr<Kernels> make() {
    using namespace kernels;
    // 16-bit storage: the linear layers and attention (forward and
    // backward) read their operands through tensor descriptors (TMA rings on
    // sm_90a); f32 keeps pointer loads, except at tf32 in the GEMMs whose
    // operands both run along K (dx = dy w^T - also dlogits wte, through
    // wte's transpose -, the LM head, linearTn, the forward through the
    // transposed weights, and matmulDwTn, the weight gradients through x^T
    // and dy^T): wgmma reads tf32 K-major only, and TMA rounds as it copies.
    auto pick = [](auto pointers, auto descriptors) {
      if constexpr (std::is_same_v<T, float>)
        return pointers;
      else
        return descriptors;
    };
    auto pickKMajor = [](auto pointers, auto descriptors) {
      if constexpr (std::is_same_v<T, float> && P != tl::precision::tf32)
        return pointers;
      else
        return descriptors;
    };
    // Kernel names say the storage type: profiles and the kernel cache keep them apart.
    const std::string t = std::is_same_v<T, float> ? "" : "_bf16";
    auto name = [&](const char *base) { return fmt::format("gpt_{}{}", base, t); };
    const std::vector<std::string> attentionBwdParams = {"qkv",    "dout", "lse", "delta", "dqkv",
                                                         "q_off",  "k_off", "v_off", "stride", "H",
                                                         "T",      "scale", "D",     "BM",     "BN", "rows",
                                                         "partial", "bias_sums"};
    return std::unique_ptr<Kernels>(new Kernels{
        .embedding =
            kernel(name("embedding_fwd"), embedding_fwd<T>, {"tokens", "wte", "wpe", "out", "T", "C", "BLOCK"}),
        .layernorm = kernel(name("layernorm_fwd"), layernorm_fwd<T>,
                            {"x", "w", "b", "y", "mean", "rstd", "rows", "C", "eps", "ROWS", "BLOCK", "CHUNKS"}),
        .residualLayernorm = kernel(name("residual_layernorm_fwd"), residual_layernorm_fwd<T>,
                                    {"x", "a", "res", "w", "b", "y", "mean", "rstd", "rows", "C", "eps", "ROWS",
                                     "BLOCK", "CHUNKS"}),
        .linear = kernel(name("matmul_bias_fwd"), pick(matmul_bias_fwd<T, P>, matmul_bias_fwd_tma<T, P>),
                         {"x", "w", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK", "GROUP_M"}),
        .linearTn = kernel(name("matmul_bias_fwd_tn"), matmul_bias_fwd_tn_tma<T, P>,
                           {"x", "wt", "b", "y", "pre", "M", "N", "K", "gelu", "BM", "BN", "BK", "GROUP_M"}),
        .transpose = kernel("gpt_transpose", kernels::transpose, {"in", "out", "R", "C", "BR", "BC"}),
        .attention = kernel(name("attention_fwd"), pick(attentionFwdPointers<T, P>, attention_fwd_tma<T, P>),
                            {"qkv", "o", "lse", "q_off", "k_off", "v_off", "stride", "H", "T", "scale", "first_block",
                             "D", "BM", "BN", "rows", "diagonal_mask_only"}),
        .residual = kernel(name("residual"), residual_add<T>, {"x", "y", "out", "n", "BLOCK"}),
        .lmHead = kernel(name("lm_head"), pickKMajor(matmul_bwd_dx<T, P>, matmul_bwd_dx_tma<T, P>),
                         {"x", "wte", "logits", "M", "C", "V", "BM", "BV", "BC", "GROUP_M"}),
        .crossEntropy = kernel(name("cross_entropy_fwd"), cross_entropy_fwd<T>,
                               {"logits", "targets", "losses", "lse", "V", "Vp", "BLOCK"}),
        .crossEntropyBwd = kernel(name("cross_entropy_bwd"), cross_entropy_bwd<T>,
                                  {"logits", "targets", "lse", "dlosses", "dlogits", "V", "Vp", "BLOCK"}),
        .matmul = kernel(name("matmul"), pick(kernels::matmul<T, P>, matmul_tma<T, P>),
                         {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"}),
        .matmulDx = kernel(name("matmul_bwd_dx"), pickKMajor(matmul_bwd_dx<T, P>, matmul_bwd_dx_tma<T, P>),
                           {"dy", "w", "dx", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"}),
        .matmulDxGelu = kernel(name("matmul_bwd_dx_gelu"),
                               pickKMajor(matmul_bwd_dx_gelu<T, P>, matmul_bwd_dx_gelu_tma<T, P>),
                               {"dy", "w", "pre", "dpre", "partial", "M", "N", "K", "BM", "BK", "BN", "GROUP_M"}),
        .matmulDw = kernel(name("matmul_bwd_dw"), pick(matmul_bwd_dw<T, P>, matmul_bwd_dw_tma<T, P>),
                           {"x", "dy", "dw", "M", "N", "K", "accumulate", "BK", "BN", "BM"}),
        .matmulDwStreamK = kernel(name("matmul_bwd_dw_stream_k"),
                                  pick(matmul_bwd_dw_stream_k<T, P>, matmul_bwd_dw_stream_k_tma<T, P>),
                                  {"x", "dy", "dw", "partials", "arrivals", "M", "N", "K", "accumulate", "BK", "BN",
                                   "BM"}),
        .matmulDwTn = kernel(name("matmul_bwd_dw_tn"), matmul_bwd_dw_tn_tma<T, P>,
                             {"xt", "dyt", "dw", "M", "N", "K", "accumulate", "BK", "BN", "BM"}),
        .columnSums = kernel("gpt_column_sums", column_sums, {"partial", "out", "P", "N", "accumulate", "BR", "BC"}),
        .columnSumsOfBlocks = kernel("gpt_column_sums_of_blocks", column_sums_of_blocks,
                                     {"partial", "out_0", "out_1", "out_2", "P", "N", "accumulate", "BR", "BC"}),
        .layernormBwd = kernel(name("layernorm_bwd"), layernorm_bwd<T>,
                               {"dy", "x", "w", "mean", "rstd", "dres", "dx", "partial_w", "partial_b", "partial_o",
                                "rows", "C", "residual", "out_sums", "ROWS", "BR", "BLOCK", "CHUNKS"}),
        .attentionDelta = kernel(name("attention_bwd_delta"), attention_bwd_delta<T>,
                                 {"o", "dout", "delta", "H", "T", "D", "BM"}),
        .attentionDkdv = kernel(name("attention_bwd_dkdv"),
                                pick(attentionBwdPointers<T, P, false>, attention_bwd_dkdv_tma<T, P>), attentionBwdParams),
        .attentionDq = kernel(name("attention_bwd_dq"), pick(attentionBwdPointers<T, P, true>, attention_bwd_dq_tma<T, P>),
                              attentionBwdParams),
        .embeddingTokens = kernel(name("embedding_bwd_tokens"), embedding_bwd_tokens<T>,
                                  {"tokens", "dout", "dwte", "C", "BLOCK"}),
        .embeddingPositions = kernel(name("embedding_bwd_positions"), embedding_bwd_positions<T>,
                                     {"dout", "dwpe", "batch", "T", "C", "accumulate", "BLOCK"}),
        .adamw = kernel("gpt_adamw", kernels::adamw,
                        {"params", "grads", "m", "v", "lr", "beta1", "beta2", "eps", "weight_decay", "bias1", "bias2",
                         "grad_scale", "n", "BLOCK"}),
        .adamwMixed = kernel(name("adamw_mixed"), adamw_mixed<T>,
                             {"params", "params_lp", "grads", "m", "v", "lr", "beta1", "beta2", "eps", "weight_decay",
                              "bias1", "bias2", "grad_scale", "n", "seed", "BLOCK", "STOCHASTIC"}),
        .sumOfSquares = kernel("gpt_sum_of_squares", sum_of_squares, {"x", "partial", "n", "BLOCK"}),
        .sumAll = kernel("gpt_sum_all", sum_all, {"x", "out", "n", "BLOCK"}),
        .fill = kernel("gpt_fill", fillKernel, {"out", "value", "n", "BLOCK"}),
    });
  }
};

} // namespace tegula::gpt
