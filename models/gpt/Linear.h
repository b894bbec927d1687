//===- Linear.h - GPT-2's linear layers in the DSL ------------*- C++ -*-===//
//
// The linear layers' GEMMs, forward and backward: y = x w + b (GELU fused),
// dx = dy w^T (GELU's backward fused for the MLP's c_proj), dw = x^T dy, the
// tied LM head and its input gradient - each through pointers (cp.async
// rings on tensor cores) and through tensor descriptors (TMA rings feeding
// wgmma on sm_90a), one program a tile or persistent (forEachOutputTile).
// Elementwise helpers (GELU) come from Kernels.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "examples/kernels.h"
#include "examples/stream_k.h"
#include "models/gpt/Kernels.h"

namespace tegula::gpt::kernels {

namespace detail {
/// Runs `body(m0, n0)` for the [BM, BN] output tiles of an [M, N] GEMM this
/// program owns. GROUP_M = 0: one tile, (program_id(0), program_id(1)) - a
/// 2-D grid of every tile. GROUP_M > 0: persistent programs (a 1-D grid, the
/// SM count) walk the tiles pid, pid + programs, ... in groups of GROUP_M
/// row blocks, column by column, so that tiles running together share
/// operand blocks in L2; warp specialised, the producer loads the next
/// tile's stages during this tile's epilogue (on the H100 of 2026-11-26 the
/// persistent warp-specialised bf16 GEMM ran GPT-2's shapes 1.1-1.5x faster
/// than one program a tile).
template <class Body>
void forEachOutputTile(const tl::scalar<int32_t> &M, const tl::scalar<int32_t> &N, int BM, int BN, int groupM,
                       Body body) {
  if (groupM == 0) {
    body(tl::program_id(0) * BM, tl::program_id(1) * BN);
    return;
  }
  tl::tensor tiles_m = (M + (BM - 1)) / BM, tiles_n = (N + (BN - 1)) / BN;
  for (auto t : tl::range(tl::program_id(0), tiles_m * tiles_n, tl::num_programs(0))) {
    auto [tile_m, tile_n] = examples::groupedTile(t, tiles_m, tiles_n * groupM, groupM);
    body(tile_m * BM, tile_n * BN);
  }
}
} // namespace detail

namespace detail {
/// Stores the [BM, BN] block `value` at (m0, n0) of c [M, N] (row-major),
/// clipped at the edges.
template <class T>
void storeBlock(tl::ptr<T> c, const tl::tensor &value, const tl::scalar<int32_t> &M, const tl::scalar<int32_t> &N,
                const tl::tensor &m0, const tl::tensor &n0, int BM, int BN) {
  tl::tensor rm = m0 + tl::arange(0, BM), rn = n0 + tl::arange(0, BN);
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), value, (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
}

/// a b's [BM, BN] block at (m0, n0), a [M, K] and b [K, N] read through
/// pointers, K stepped BK at a time (f32 accumulation at P).
template <class T>
tl::tensor abProduct(tl::ptr<T> a, tl::ptr<T> b, const tl::scalar<int32_t> &M, const tl::scalar<int32_t> &N,
                     const tl::scalar<int32_t> &K, const tl::tensor &m0, const tl::tensor &n0, int BM, int BN, int BK,
                     tl::precision P) {
  tl::tensor rm = m0 + tl::arange(0, BM), rn = n0 + tl::arange(0, BN), rk = tl::arange(0, BK);
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK, acc)) {
    tl::tensor ka = k + rk;
    tl::tensor a_tile = tl::load(a + rm.expand_dims(1) * K + ka.expand_dims(0),
                                 (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K), 0.0f);
    tl::tensor b_tile = tl::load(b + ka.expand_dims(1) * N + rn.expand_dims(0),
                                 (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), 0.0f);
    acc = tl::dot(a_tile, b_tile, acc, P);
  }
  return acc;
}

/// dx = dy w^T's [BM, BK] block at (m0, k0), dy [M, N] and w [K, N] read
/// through pointers, N stepped BN at a time (f32 accumulation at P).
template <class T>
tl::tensor dxProduct(tl::ptr<T> dy, tl::ptr<T> w, const tl::scalar<int32_t> &M, const tl::scalar<int32_t> &N,
                     const tl::scalar<int32_t> &K, const tl::tensor &m0, const tl::tensor &k0, int BM, int BK, int BN,
                     tl::precision P) {
  tl::tensor rm = m0 + tl::arange(0, BM), rk = k0 + tl::arange(0, BK), rn = tl::arange(0, BN);
  tl::tensor acc = tl::zeros({BM, BK}, tl::f32);
  for (auto n : tl::range(0, N, BN, acc)) {
    tl::tensor na = n + rn;
    tl::tensor g = tl::load(dy + rm.expand_dims(1) * N + na.expand_dims(0),
                            (rm.expand_dims(1) < M) & (na.expand_dims(0) < N), 0.0f);
    tl::tensor wt = tl::load(w + rk.expand_dims(0) * N + na.expand_dims(1), // w^T tile [BN, BK]
                             (na.expand_dims(1) < N) & (rk.expand_dims(0) < K), 0.0f);
    acc = tl::dot(g, wt, acc, P);
  }
  return acc;
}

/// acc + x^T dy's [BK, BN] block at (k0, n0) over rows [m_begin, m_end),
/// x [M, K] and dy [M, N] read through pointers BM rows at a time.
template <class T>
tl::tensor dwProduct(tl::ptr<T> x, tl::ptr<T> dy, const tl::scalar<int32_t> &M, const tl::scalar<int32_t> &N,
                     const tl::scalar<int32_t> &K, const tl::tensor &k0, const tl::tensor &n0, tl::operand m_begin,
                     tl::operand m_end, tl::tensor acc, int BK, int BN, int BM, tl::precision P) {
  tl::tensor rk = k0 + tl::arange(0, BK), rn = n0 + tl::arange(0, BN), rm = tl::arange(0, BM);
  for (auto m : tl::range(m_begin, m_end, BM, acc)) {
    tl::tensor ma = m + rm;
    tl::tensor xt = tl::load(x + ma.expand_dims(0) * K + rk.expand_dims(1), // x^T tile [BK, BM]
                             (rk.expand_dims(1) < K) & (ma.expand_dims(0) < M), 0.0f);
    tl::tensor g = tl::load(dy + ma.expand_dims(1) * N + rn.expand_dims(0),
                            (ma.expand_dims(1) < M) & (rn.expand_dims(0) < N), 0.0f);
    acc = tl::dot(xt, g, acc, P);
  }
  return acc;
}

/// GELU's backward on the [BM, BK] block at (m0, k0) of [M, K]: its
/// output's gradient `acc` times gelu'(pre) (both f32), returned as T; its
/// column sums go to partial[m0 / BM, k0 ...] (the bias gradient's first
/// pass) - of the values as stored, which c_fc's weight gradient reads too.
template <class T>
tl::tensor geluBwdBlock(const tl::tensor &acc, const tl::tensor &pre, tl::ptr<float> partial,
                        const tl::scalar<int32_t> &K, const tl::tensor &m0, const tl::tensor &k0, int BM, int BK) {
  tl::tensor g = (acc * gelu_grad(pre, kApproxTanh<T>)).to(dtype_of_v<T>);
  tl::tensor rk = k0 + tl::arange(0, BK);
  tl::store(partial + m0 / BM * K + rk, tl::sum(g.to(tl::f32), 0), rk < K);
  return g;
}

/// dw's [BK, BN] block at (k0, n0): where it goes, and which of it is in range.
struct GradientTile {
  tl::tensor out, mask;
};
inline GradientTile gradientTile(tl::ptr<float> dw, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                                 const tl::tensor &k0, const tl::tensor &n0, int BK, int BN) {
  tl::tensor rk = k0 + tl::arange(0, BK), rn = n0 + tl::arange(0, BN);
  return {dw + rk.expand_dims(1) * N + rn.expand_dims(0), (rk.expand_dims(1) < K) & (rn.expand_dims(0) < N)};
}

/// Program (j, i)'s [BK, BN] block of a weight gradient dw [K, N] (f32) -
/// row block i, column block j: where it goes, and what it starts from - the
/// gradient so far (`accumulate`: micro-batches add up) or zeros. The grid
/// is (N blocks, K blocks), N fastest: the programs of one row block run
/// side by side and read x's column stripe from L2 together. Launched K
/// fastest, wte's gradient (x = dlogits, [B T, 50304], 824 MB in bf16; 2358
/// tiles, 18 waves on 132 SMs) read each stripe from DRAM once per column
/// block, 6 times in all, and ran at half the tensor cores' rate.
struct GradientBlock {
  tl::tensor k0, n0, out, mask, acc;
};
inline GradientBlock gradientBlock(tl::ptr<float> dw, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                                   bool accumulate, int BK, int BN) {
  GradientBlock g{tl::program_id(1) * BK, tl::program_id(0) * BN, {}, {}, {}};
  GradientTile at = gradientTile(dw, N, K, g.k0, g.n0, BK, BN);
  g.out = at.out, g.mask = at.mask;
  g.acc = accumulate ? tl::load(g.out, g.mask, 0.0f) : tl::zeros({BK, BN}, tl::f32);
  return g;
}
} // namespace detail

/// y = x @ w + b for x [M, K], w [K, N] (Hugging Face's Conv1D layout: [in,
/// out]), b [N]; with `gelu`, y = gelu_tanh(x @ w + b) and the
/// pre-activation is also stored in `pre` (the GELU backward needs it).
/// One program per BM x BN tile of y; f32 accumulation (tensor cores for
/// 16-bit T, and for f32 at P = tf32). The linear layers' kernels all take P.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bias_fwd(tl::ptr<T> x, tl::ptr<T> w, tl::ptr<T> b, tl::ptr<T> y, tl::ptr<T> pre,
                     tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                     tl::constant<bool> gelu, tl::constant<int> BM, tl::constant<int> BN,
                     tl::constant<int> BK, tl::constant<int> GROUP_M) {
  detail::forEachOutputTile(M, N, BM.value, BN.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor n0) {
    tl::tensor rm = m0 + tl::arange(0, BM), rn = n0 + tl::arange(0, BN);
    tl::tensor acc = detail::abProduct(x, w, M, N, K, m0, n0, BM.value, BN.value, BK.value, P);
    acc = acc + tl::load(b + rn, rn < N, 0.0f).to(tl::f32).expand_dims(0);
    tl::tensor mask = (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N);
    tl::tensor offs = rm.expand_dims(1) * N + rn.expand_dims(0);
    if (gelu.value) {
      tl::store(pre + offs, acc, mask);
      acc = detail::gelu(acc, detail::kApproxTanh<T>);
    }
    tl::store(y + offs, acc, mask);
  });
}

/// dx = dy @ w^T for dy [M, N], w [K, N]: dx [M, K], looping over N. Also
/// the tied LM head: logits = x @ wte^T.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dx(tl::ptr<T> dy, tl::ptr<T> w, tl::ptr<T> dx, tl::scalar<int32_t> M,
                   tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                   tl::constant<int> BK, tl::constant<int> BN, tl::constant<int> GROUP_M) {
  detail::forEachOutputTile(M, K, BM.value, BK.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor k0) {
    detail::storeBlock(dx, detail::dxProduct(dy, w, M, N, K, m0, k0, BM.value, BK.value, BN.value, P), M, K, m0, k0,
                       BM.value, BK.value);
  });
}

/// The MLP's c_proj input gradient with GELU's backward fused: dpre = (dy
/// w^T) * gelu'(pre) for pre [M, K] (c_fc's output before GELU), and the
/// column sums of each [BM, BK] tile of dpre into partial[m0 / BM, cols] -
/// c_fc's bias gradient, first pass (column_sums adds the M / BM rows). The
/// GELU input gradient never goes to memory (a separate gelu_bwd read it,
/// and pre, and wrote dpre: 3 passes over [B T, 4C]).
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dx_gelu(tl::ptr<T> dy, tl::ptr<T> w, tl::ptr<T> pre, tl::ptr<T> dpre, tl::ptr<float> partial,
                        tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                        tl::constant<int> BK, tl::constant<int> BN, tl::constant<int> GROUP_M) {
  detail::forEachOutputTile(M, K, BM.value, BK.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor k0) {
    tl::tensor rm = m0 + tl::arange(0, BM), rk = k0 + tl::arange(0, BK);
    tl::tensor mask = (rm.expand_dims(1) < M) & (rk.expand_dims(0) < K);
    tl::tensor at = rm.expand_dims(1) * K + rk.expand_dims(0);
    tl::tensor acc = detail::dxProduct(dy, w, M, N, K, m0, k0, BM.value, BK.value, BN.value, P);
    tl::store(dpre + at,
              detail::geluBwdBlock<T>(acc, tl::load(pre + at, mask, 0.0f).to(tl::f32), partial, K, m0, k0,
                                      BM.value, BK.value),
              mask);
  });
}

/// dw (+)= x^T @ dy for x [M, K], dy [M, N]: dw [K, N] (f32), looping over M;
/// deterministic (no atomics). Also the tied LM head's wte gradient. Grid:
/// (N blocks, K blocks), see gradientBlock.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dw(tl::ptr<T> x, tl::ptr<T> dy, tl::ptr<float> dw, tl::scalar<int32_t> M,
                   tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<bool> accumulate,
                   tl::constant<int> BK, tl::constant<int> BN, tl::constant<int> BM) {
  detail::GradientBlock g = detail::gradientBlock(dw, N, K, accumulate.value, BK.value, BN.value);
  tl::store(g.out, detail::dwProduct(x, dy, M, N, K, g.k0, g.n0, 0, M, g.acc, BK.value, BN.value, BM.value, P),
            g.mask);
}

//===----------------------------------------------------------------------===//
// The linear layers through tensor descriptors: the same signatures and
// results as matmul_bias_fwd / matmul_bwd_dx / matmul_bwd_dw (and a plain
// GEMM), with every 16-bit operand block read through a descriptor - TMA
// rings feeding wgmma on sm_90a (warp specialised on request), masked loads
// elsewhere. Row strides must span multiples of 16 bytes and bases be
// 16-byte aligned (GPT-2's are: every width is a multiple of n_embd; the
// transposed activations' rows are B T long, which GptModel checks). P: the
// precision of f32 operands' dots - at tf32, blocks whose rows run along
// the dot's K feed wgmma from TMA rings whose tensor maps round to tf32.
//===----------------------------------------------------------------------===//

namespace detail {
/// The linear layers' epilogue: acc + b, stored through y's descriptor;
/// with `gelu`, the sum is stored through pre's first and y gets its GELU.
template <class T>
void biasGeluStore(tl::tensor acc, tl::ptr<T> b, tl::ptr<T> y, tl::ptr<T> pre, tl::scalar<int32_t> M,
                   tl::scalar<int32_t> N, bool withGelu, int BM, int BN, const tl::tensor &m0, const tl::tensor &n0) {
  tl::tensor rn = n0 + tl::arange(0, BN);
  acc = acc + tl::load(b + rn, rn < N, 0.0f).to(tl::f32).expand_dims(0);
  if (withGelu) {
    tl::make_tensor_descriptor(pre, {M, N}, {N, 1}, {BM, BN}).store({m0, n0}, acc);
    acc = gelu(acc, kApproxTanh<T>);
  }
  tl::make_tensor_descriptor(y, {M, N}, {N, 1}, {BM, BN}).store({m0, n0}, acc);
}

/// The K loop of a GEMM whose operands both run along K: a's [BM, BK]
/// blocks at row m0 times b's [BN, BK] blocks at row n0, transposed - the
/// [BM, BN] block of a b^T (f32 accumulation at precision P).
inline tl::tensor kMajorProduct(const tl::tensor_descriptor &a, const tl::tensor_descriptor &b,
                                const tl::tensor &m0, const tl::tensor &n0, tl::scalar<int32_t> K, int BM, int BN,
                                int BK, tl::precision P) {
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK, acc))
    acc = tl::dot(a.load({m0, k}), b.load({n0, k}).trans(), acc, P);
  return acc;
}
} // namespace detail

/// matmul_bias_fwd with x, w, y and pre through descriptors.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bias_fwd_tma(tl::ptr<T> x, tl::ptr<T> w, tl::ptr<T> b, tl::ptr<T> y, tl::ptr<T> pre,
                         tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                         tl::constant<bool> gelu, tl::constant<int> BM, tl::constant<int> BN, tl::constant<int> BK,
                         tl::constant<int> GROUP_M) {
  auto x_desc = tl::make_tensor_descriptor(x, {M, K}, {K, 1}, {BM, BK});
  auto w_desc = tl::make_tensor_descriptor(w, {K, N}, {N, 1}, {BK, BN});
  detail::forEachOutputTile(M, N, BM.value, BN.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor n0) {
    tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
    for (auto k : tl::range(0, K, BK.value, acc))
      acc = tl::dot(x_desc.load({m0, k}), w_desc.load({k, n0}), acc, P);
    detail::biasGeluStore(acc, b, y, pre, M, N, gelu.value, BM.value, BN.value, m0, n0);
  });
}

/// matmul_bias_fwd with the weight transposed: wt [N, K] (w^T, K-major)
/// instead of w [K, N] - both operands run along K, the order wgmma reads
/// tf32 in, so f32 layers at tf32 run on wgmma through TMA rings (GptModel
/// keeps the transposed copy of its f32 weights for them).
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bias_fwd_tn_tma(tl::ptr<T> x, tl::ptr<T> wt, tl::ptr<T> b, tl::ptr<T> y, tl::ptr<T> pre,
                            tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                            tl::constant<bool> gelu, tl::constant<int> BM, tl::constant<int> BN,
                            tl::constant<int> BK, tl::constant<int> GROUP_M) {
  auto x_desc = tl::make_tensor_descriptor(x, {M, K}, {K, 1}, {BM, BK});
  auto wt_desc = tl::make_tensor_descriptor(wt, {N, K}, {K, 1}, {BN, BK});
  detail::forEachOutputTile(M, N, BM.value, BN.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor n0) {
    tl::tensor acc = detail::kMajorProduct(x_desc, wt_desc, m0, n0, K, BM.value, BN.value, BK.value, P);
    detail::biasGeluStore(acc, b, y, pre, M, N, gelu.value, BM.value, BN.value, m0, n0);
  });
}

/// out = in^T for in [R, C] (f32, row-major): out [C, R]. One program per
/// [BR, BC] tile, read along C and written along R (the compiler turns the
/// tile around through shared memory).
inline void transpose(tl::ptr<float> in, tl::ptr<float> out, tl::scalar<int32_t> R, tl::scalar<int32_t> C,
                      tl::constant<int> BR, tl::constant<int> BC) {
  tl::tensor rr = tl::program_id(0) * BR + tl::arange(0, BR);
  tl::tensor cc = tl::program_id(1) * BC + tl::arange(0, BC);
  tl::tensor t = tl::load(in + rr.expand_dims(1) * C + cc.expand_dims(0),
                          (rr.expand_dims(1) < R) & (cc.expand_dims(0) < C), 0.0f);
  tl::store(out + cc.expand_dims(1) * R + rr.expand_dims(0), t.trans(),
            (cc.expand_dims(1) < C) & (rr.expand_dims(0) < R));
}

/// matmul_bwd_dx (dx = dy w^T; the tied LM head) through descriptors: w's
/// [BK, BN] blocks are read as stored and transposed for the dot.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dx_tma(tl::ptr<T> dy, tl::ptr<T> w, tl::ptr<T> dx, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
                       tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BK, tl::constant<int> BN,
                       tl::constant<int> GROUP_M) {
  auto dy_desc = tl::make_tensor_descriptor(dy, {M, N}, {N, 1}, {BM, BN});
  auto w_desc = tl::make_tensor_descriptor(w, {K, N}, {N, 1}, {BK, BN});
  auto dx_desc = tl::make_tensor_descriptor(dx, {M, K}, {K, 1}, {BM, BK});
  detail::forEachOutputTile(M, K, BM.value, BK.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor k0) {
    dx_desc.store({m0, k0}, detail::kMajorProduct(dy_desc, w_desc, m0, k0, N, BM.value, BK.value, BN.value, P));
  });
}

/// matmul_bwd_dx_gelu with dy, w, pre and dpre through descriptors (pre's
/// block through pointers took a 64-bit address a register, and spilled).
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dx_gelu_tma(tl::ptr<T> dy, tl::ptr<T> w, tl::ptr<T> pre, tl::ptr<T> dpre, tl::ptr<float> partial,
                            tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                            tl::constant<int> BM, tl::constant<int> BK, tl::constant<int> BN,
                            tl::constant<int> GROUP_M) {
  auto dy_desc = tl::make_tensor_descriptor(dy, {M, N}, {N, 1}, {BM, BN});
  auto w_desc = tl::make_tensor_descriptor(w, {K, N}, {N, 1}, {BK, BN});
  auto pre_desc = tl::make_tensor_descriptor(pre, {M, K}, {K, 1}, {BM, BK});
  auto dpre_desc = tl::make_tensor_descriptor(dpre, {M, K}, {K, 1}, {BM, BK});
  detail::forEachOutputTile(M, K, BM.value, BK.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor k0) {
    tl::tensor acc = detail::kMajorProduct(dy_desc, w_desc, m0, k0, N, BM.value, BK.value, BN.value, P);
    dpre_desc.store({m0, k0}, detail::geluBwdBlock<T>(acc, pre_desc.load({m0, k0}).to(tl::f32), partial, K, m0,
                                                      k0, BM.value, BK.value));
  });
}

/// matmul_bwd_dw (dw (+)= x^T dy, f32) with x and dy through descriptors:
/// x's [BM, BK] blocks are read as stored and transposed for the dot.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dw_tma(tl::ptr<T> x, tl::ptr<T> dy, tl::ptr<float> dw, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
                       tl::scalar<int32_t> K, tl::constant<bool> accumulate, tl::constant<int> BK,
                       tl::constant<int> BN, tl::constant<int> BM) {
  auto x_desc = tl::make_tensor_descriptor(x, {M, K}, {K, 1}, {BM, BK});
  auto dy_desc = tl::make_tensor_descriptor(dy, {M, N}, {N, 1}, {BM, BN});
  detail::GradientBlock g = detail::gradientBlock(dw, N, K, accumulate.value, BK.value, BN.value);
  for (auto m : tl::range(0, M, BM.value, g.acc))
    g.acc = tl::dot(x_desc.load({m, g.k0}).trans(), dy_desc.load({m, g.n0}), g.acc, P);
  tl::store(g.out, g.acc, g.mask);
}

/// matmul_bwd_dw with both operands transposed - xt [K, M] (x^T) and dyt
/// [N, M] (dy^T), each running along the dot's contraction over M, the order
/// wgmma reads tf32 in: dw [K, N] (+)= xt dyt^T. GptModel transposes x and dy
/// for it in f32 at tf32.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dw_tn_tma(tl::ptr<T> xt, tl::ptr<T> dyt, tl::ptr<float> dw, tl::scalar<int32_t> M,
                          tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<bool> accumulate,
                          tl::constant<int> BK, tl::constant<int> BN, tl::constant<int> BM) {
  auto xt_desc = tl::make_tensor_descriptor(xt, {K, M}, {M, 1}, {BK, BM});
  auto dyt_desc = tl::make_tensor_descriptor(dyt, {N, M}, {M, 1}, {BN, BM});
  detail::GradientBlock g = detail::gradientBlock(dw, N, K, accumulate.value, BK.value, BN.value);
  for (auto m : tl::range(0, M, BM.value, g.acc))
    g.acc = tl::dot(xt_desc.load({g.k0, m}), dyt_desc.load({g.n0, m}).trans(), g.acc, P);
  tl::store(g.out, g.acc, g.mask);
}

//===----------------------------------------------------------------------===//
// The weight gradients as stream-K GEMMs (examples/stream_k.h): GPT-2's
// have 36-144 output tiles of 128 x 128, each B T rows long - one wave or
// two, partly idle, on 132 SMs. Their tiles' M steps, laid end to end, are
// split evenly over one program per SM; a tile spanning several programs is
// added up by the last to arrive, in program order, so the result is
// deterministic. `partials` (streamKPartialFloats) and `arrivals` (one
// counter a tile, zero; left zero) are the launch's workspace.
//===----------------------------------------------------------------------===//

namespace detail {
/// dw's [BK, BN] tiles in stream-K order: `product(k0, n0, m_begin, m_end,
/// start)` is start + x^T dy's block over rows [m_begin, m_end) (multiples
/// of BM). Accumulating, the run that starts a tile's rows starts from the
/// gradient so far - read before its loop, where only the accumulator is
/// live (added at the end, beside the finished sum, a 128 x 256 tile spilled
/// 236 B) - so a tile adds up as one program a tile's does: the gradient so
/// far, then its rows in order.
template <class Product>
void streamKGradient(tl::ptr<float> dw, tl::ptr<float> partials, tl::ptr<int32_t> arrivals, tl::scalar<int32_t> M,
                     tl::scalar<int32_t> N, tl::scalar<int32_t> K, bool accumulate, int BK, int BN, int BM,
                     Product product) {
  tl::tensor tiles_k = (K + (BK - 1)) / BK, tiles_n = (N + (BN - 1)) / BN, steps = (M + (BM - 1)) / BM;
  // Column by column (one group of every row of tiles): the tiles sharing
  // dy's column block - the larger operand - are neighbours in the runs,
  // so their programs read its rows a few steps apart, from L2.
  constexpr int kEveryRow = 1 << 16;
  examples::forEachStreamKTile(
      tiles_k, tiles_n, steps, BK, BN, kEveryRow, partials, arrivals,
      [&](const tl::tensor &k0, const tl::tensor &n0, const tl::tensor &first, const tl::tensor &end) {
        tl::tensor start = tl::zeros({BK, BN}, tl::f32);
        if (accumulate) {
          GradientTile g = gradientTile(dw, N, K, k0, n0, BK, BN);
          start = tl::load(g.out, g.mask & (first == 0), 0.0f);
        }
        return product(k0, n0, first * BM, end * BM, start);
      },
      [&](const tl::tensor &k0, const tl::tensor &n0, const tl::tensor &acc, const tl::tensor &done) {
        GradientTile g = gradientTile(dw, N, K, k0, n0, BK, BN);
        tl::store(g.out, acc, g.mask & done);
      });
}
} // namespace detail

/// matmul_bwd_dw as a stream-K GEMM, x and dy through pointers.
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dw_stream_k(tl::ptr<T> x, tl::ptr<T> dy, tl::ptr<float> dw, tl::ptr<float> partials,
                            tl::ptr<int32_t> arrivals, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
                            tl::scalar<int32_t> K, tl::constant<bool> accumulate, tl::constant<int> BK,
                            tl::constant<int> BN, tl::constant<int> BM) {
  detail::streamKGradient(
      dw, partials, arrivals, M, N, K, accumulate.value, BK.value, BN.value, BM.value,
      [&](const tl::tensor &k0, const tl::tensor &n0, const tl::tensor &m_begin, const tl::tensor &m_end,
          const tl::tensor &start) {
        return detail::dwProduct(x, dy, M, N, K, k0, n0, m_begin, m_end, start, BK.value, BN.value, BM.value, P);
      });
}

/// matmul_bwd_dw_stream_k with x and dy through descriptors (TMA rings
/// feeding wgmma on sm_90a; warp specialised, the producer runs ahead
/// across the tiles of a program's run).
template <class T, tl::precision P = tl::precision::ieee>
void matmul_bwd_dw_stream_k_tma(tl::ptr<T> x, tl::ptr<T> dy, tl::ptr<float> dw, tl::ptr<float> partials,
                                tl::ptr<int32_t> arrivals, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
                                tl::scalar<int32_t> K, tl::constant<bool> accumulate, tl::constant<int> BK,
                                tl::constant<int> BN, tl::constant<int> BM) {
  auto x_desc = tl::make_tensor_descriptor(x, {M, K}, {K, 1}, {BM, BK});
  auto dy_desc = tl::make_tensor_descriptor(dy, {M, N}, {N, 1}, {BM, BN});
  detail::streamKGradient(
      dw, partials, arrivals, M, N, K, accumulate.value, BK.value, BN.value, BM.value,
      [&](const tl::tensor &k0, const tl::tensor &n0, const tl::tensor &m_begin, const tl::tensor &m_end,
          const tl::tensor &start) {
        tl::tensor acc = start;
        for (auto m : tl::range(m_begin, m_end, BM.value, acc))
          acc = tl::dot(x_desc.load({m, k0}).trans(), dy_desc.load({m, n0}), acc, P);
        return acc;
      });
}

/// c = a b ([M, K] x [K, N], row-major) - the tied LM head's input gradient
/// (dlogits wte) - over the tiles forEachOutputTile gives this program.
template <class T, tl::precision P = tl::precision::ieee>
void matmul(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
            tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN, tl::constant<int> BK,
            tl::constant<int> GROUP_M) {
  detail::forEachOutputTile(M, N, BM.value, BN.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor n0) {
    detail::storeBlock(c, detail::abProduct(a, b, M, N, K, m0, n0, BM.value, BN.value, BK.value, P), M, N, m0, n0,
                       BM.value, BN.value);
  });
}

/// matmul through descriptors (TMA rings feeding wgmma on sm_90a).
template <class T, tl::precision P = tl::precision::ieee>
void matmul_tma(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
                tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN, tl::constant<int> BK,
                tl::constant<int> GROUP_M) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto b_desc = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
  detail::forEachOutputTile(M, N, BM.value, BN.value, GROUP_M.value, [&](tl::tensor m0, tl::tensor n0) {
    tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
    for (auto k : tl::range(0, K, BK.value, acc))
      acc = tl::dot(a_desc.load({m0, k}), b_desc.load({k, n0}), acc, P);
    c_desc.store({m0, n0}, acc);
  });
}

} // namespace tegula::gpt::kernels
