// kernels.h - example kernels written in Tegula's tile language.
//
// They are the shared test corpus: the interpreter tests check them against
// naive C++ references, and the GPU backend and simulator run the same
// functions. Each is a plain C++ function over tl:: values.
#pragma once

#include "tegula/tegula.h"

#include <cmath>
#include <utility>

namespace tegula::examples {

/// out[i] = x[i] + y[i] for i < n; one program per BLOCK elements.
inline void vector_add(tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out,
                       tl::scalar<int32_t> n, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::tensor sum = tl::load(x + offs, mask) + tl::load(y + offs, mask);
  tl::store(out + offs, sum, mask);
}

/// Row softmax of an n_rows x n_cols row-major matrix; one program per row,
/// BLOCK >= n_cols (the tail is masked with -inf so it adds nothing).
template <class T>
void softmax(tl::ptr<T> x, tl::ptr<T> out, tl::scalar<int32_t> n_cols,
             tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor cols = tl::arange(0, BLOCK);
  tl::tensor mask = cols < n_cols;
  tl::tensor offs = row * n_cols + cols;
  tl::tensor v = tl::load(x + offs, mask, -INFINITY).to(tl::f32);
  tl::tensor e = tl::exp(v - tl::max(v, 0));
  tl::store(out + offs, e / tl::sum(e, 0), mask);
}

/// LayerNorm forward over rows of n_cols, in BLOCK-wide chunks with dynamic
/// loops; saves each row's mean and 1/std for the backward pass.
template <class T>
void layernorm(tl::ptr<T> x, tl::ptr<T> weight, tl::ptr<T> bias, tl::ptr<T> y,
               tl::ptr<float> mean_out, tl::ptr<float> rstd_out, tl::scalar<int32_t> n_cols,
               tl::scalar<float> eps, tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor base = row * n_cols;
  tl::tensor cols0 = tl::arange(0, BLOCK);

  tl::tensor acc = tl::zeros({BLOCK}, tl::f32);
  for (auto c : tl::range(0, n_cols, BLOCK, acc)) {
    tl::tensor cols = c + cols0;
    acc = acc + tl::load(x + base + cols, cols < n_cols, 0.0f).to(tl::f32);
  }
  tl::tensor mean = tl::sum(acc, 0) / n_cols.to(tl::f32);

  tl::tensor var_acc = tl::zeros({BLOCK}, tl::f32);
  for (auto c : tl::range(0, n_cols, BLOCK, var_acc)) {
    tl::tensor cols = c + cols0;
    tl::tensor mask = cols < n_cols;
    tl::tensor d = tl::where(mask, tl::load(x + base + cols, mask, 0.0f).to(tl::f32) - mean, 0.0f);
    var_acc = var_acc + d * d;
  }
  tl::tensor rstd = tl::rsqrt(tl::sum(var_acc, 0) / n_cols.to(tl::f32) + eps);
  tl::store(mean_out + row, mean);
  tl::store(rstd_out + row, rstd);

  for (auto c : tl::range(0, n_cols, BLOCK)) {
    tl::tensor cols = c + cols0;
    tl::tensor mask = cols < n_cols;
    tl::tensor w = tl::load(weight + cols, mask).to(tl::f32);
    tl::tensor b = tl::load(bias + cols, mask).to(tl::f32);
    tl::tensor v = tl::load(x + base + cols, mask).to(tl::f32);
    tl::store(y + base + cols, (v - mean) * rstd * w + b, mask);
  }
}

/// GELU, tanh approximation (GPT-2's "gelu_new").
template <class T>
void gelu(tl::ptr<T> x, tl::ptr<T> out, tl::scalar<int32_t> n, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::tensor v = tl::load(x + offs, mask, 0.0f).to(tl::f32);
  const float k = 0.7978845608028654f; // sqrt(2 / pi)
  tl::tensor inner = k * (v + 0.044715f * v * v * v);
  tl::store(out + offs, 0.5f * v * (1.0f + tl::tanh(inner)), mask);
}

/// C = A @ B for row-major A (M x K), B (K x N), C (M x N); one program per
/// BM x BN tile of C, looping over K in BK steps with an f32 accumulator.
/// `P`: the precision of f32 products (tf32 / tf32x3 run on tensor cores).
template <class T, tl::precision P = tl::precision::ieee>
void matmul(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c, tl::scalar<int32_t> M,
            tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
            tl::constant<int> BN, tl::constant<int> BK) {
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM); // rows of C
  tl::tensor rn = tl::program_id(1) * BN + tl::arange(0, BN); // cols of C
  tl::tensor rk = tl::arange(0, BK);
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK.value, acc)) {
    tl::tensor ka = k + rk;
    tl::tensor a_tile = tl::load(a + rm.expand_dims(1) * K + ka.expand_dims(0),
                                 (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K), 0.0f);
    tl::tensor b_tile = tl::load(b + ka.expand_dims(1) * N + rn.expand_dims(0),
                                 (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), 0.0f);
    acc = tl::dot(a_tile, b_tile, acc, P);
  }
  tl::tensor mask = (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N);
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc, mask);
}

/// Tile t's (row, column) of tiles in the persistent GEMMs' grouped order:
/// GROUP_M rows of tiles at a time, column by column, so that the tiles
/// running together share A's row blocks and B's column blocks in L2
/// (`per_group`: tiles_n * GROUP_M; GROUP_M a constant or a scalar).
inline std::pair<tl::tensor, tl::tensor> groupedTile(const tl::tensor &t, const tl::tensor &tiles_m,
                                                     const tl::tensor &per_group, tl::operand group_m) {
  tl::tensor first_m = t / per_group * group_m;
  tl::tensor group_rows = tl::minimum(tiles_m - first_m, group_m);
  tl::tensor in_group = t % per_group;
  return {first_m + in_group % group_rows, in_group / group_rows};
}

/// The same GEMM as a persistent kernel: launch any number of programs (one
/// per SM fills the GPU once); each walks the output tiles pid, pid +
/// programs, ... in grouped order - GROUP_M row blocks at a time, column by
/// column - so that the tiles running together share A's row blocks and B's
/// column blocks in L2.
template <class T>
void matmul_persistent(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c, tl::scalar<int32_t> M,
                       tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                       tl::constant<int> BN, tl::constant<int> BK, tl::constant<int> GROUP_M) {
  tl::tensor tiles_m = (M + (BM.value - 1)) / BM;
  tl::tensor tiles_n = (N + (BN.value - 1)) / BN;
  tl::tensor per_group = tiles_n * GROUP_M;
  tl::tensor rk = tl::arange(0, BK);
  for (auto t : tl::range(tl::program_id(0), tiles_m * tiles_n, tl::num_programs(0))) {
    auto [tile_m, tile_n] = groupedTile(t, tiles_m, per_group, GROUP_M);
    tl::tensor rm = tile_m * BM + tl::arange(0, BM);
    tl::tensor rn = tile_n * BN + tl::arange(0, BN);
    tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
    for (auto k : tl::range(0, K, BK.value, acc)) {
      tl::tensor ka = k + rk;
      tl::tensor a_tile = tl::load(a + rm.expand_dims(1) * K + ka.expand_dims(0),
                                   (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K), 0.0f);
      tl::tensor b_tile = tl::load(b + ka.expand_dims(1) * N + rn.expand_dims(0),
                                   (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), 0.0f);
      acc = tl::dot(a_tile, b_tile, acc);
    }
    tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc,
              (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
  }
}

/// The GEMM through tensor descriptors: A (M x K), B (K x N) and C (M x N),
/// row-major with leading dimensions lda, ldb, ldc, are read and written a
/// block at a time (TMA on sm_90a). Blocks over the edges read as zeros and
/// are clipped when stored, so no masks are written. TMA wants the leading
/// dimensions to span multiples of 16 bytes (pad the rows if they do not).
template <class T, tl::precision P = tl::precision::ieee>
void matmul_descriptors(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c, tl::scalar<int32_t> M,
                        tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::scalar<int32_t> lda,
                        tl::scalar<int32_t> ldb, tl::scalar<int32_t> ldc, tl::constant<int> BM,
                        tl::constant<int> BN, tl::constant<int> BK) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {lda, 1}, {BM, BK});
  auto b_desc = tl::make_tensor_descriptor(b, {K, N}, {ldb, 1}, {BK, BN});
  auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {ldc, 1}, {BM, BN});
  tl::tensor m0 = tl::program_id(0) * BM, n0 = tl::program_id(1) * BN;
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK.value, acc))
    acc = tl::dot(a_desc.load({m0, k}), b_desc.load({k, n0}), acc, P);
  c_desc.store({m0, n0}, acc);
}

/// matmul_persistent through tensor descriptors: one program per SM walks
/// the output tiles in grouped order; each tile's K loop reads TMA rings on
/// sm_90a and its C block leaves through a TMA store.
template <class T>
void matmul_persistent_descriptors(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c, tl::scalar<int32_t> M,
                                   tl::scalar<int32_t> N, tl::scalar<int32_t> K,
                                   tl::constant<int> BM, tl::constant<int> BN, tl::constant<int> BK,
                                   tl::constant<int> GROUP_M) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto b_desc = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
  tl::tensor tiles_m = (M + (BM.value - 1)) / BM;
  tl::tensor tiles_n = (N + (BN.value - 1)) / BN;
  tl::tensor per_group = tiles_n * GROUP_M;
  for (auto t : tl::range(tl::program_id(0), tiles_m * tiles_n, tl::num_programs(0))) {
    auto [tile_m, tile_n] = groupedTile(t, tiles_m, per_group, GROUP_M);
    tl::tensor m0 = tile_m * BM, n0 = tile_n * BN;
    tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
    for (auto k : tl::range(0, K, BK.value, acc))
      acc = tl::dot(a_desc.load({m0, k}), b_desc.load({k, n0}), acc);
    c_desc.store({m0, n0}, acc);
  }
}

/// The output tiles of a persistent GEMM run in thread-block clusters, as
/// BM x BN tiles' origins (m0, n0): cluster c (programs C*c .. C*c + C-1,
/// C = tl::cluster_size()) walks rows of C vertically adjacent tiles in
/// groupedTile's order, c, c + clusters, ...; the program of rank r takes
/// the r-th tile of each, so a cluster's programs share B's column block.
template <class Tile>
void forEachClusterTile(const tl::tensor &M, const tl::tensor &N, int BM, int BN, int GROUP_M, Tile tile) {
  tl::tensor ctas = tl::cluster_size();
  tl::tensor rank = tl::program_id(0) % ctas, cluster = tl::program_id(0) / ctas;
  tl::tensor cluster_rows = (M + (ctas * BM - 1)) / (ctas * BM);
  tl::tensor tiles_n = (N + (BN - 1)) / BN;
  for (auto t : tl::range(cluster, cluster_rows * tiles_n, tl::num_programs(0) / ctas)) {
    auto [row, tile_n] = groupedTile(t, cluster_rows, tiles_n * GROUP_M, GROUP_M);
    tile((row * ctas + rank) * BM, tile_n * BN);
  }
}

/// matmul_persistent_descriptors for thread-block clusters
/// (LaunchOptions::cluster_size = C; launch a multiple of C programs, one
/// per SM): the programs of a cluster - consecutive program ids - compute C
/// vertically adjacent tiles of C, so they read the same block of B at every
/// step, and say so (tl::multicast): warp specialised on sm_90a, each block
/// of B is fetched from global memory once per cluster, each CTA copying 1/C
/// of its rows into all of them. The tile order is grouped as
/// matmul_persistent_descriptors', in rows of clusters. Rows past M (the
/// last cluster row's) read zeros and are not stored. Any cluster size,
/// 1 included, computes the same C on every backend.
template <class T>
void matmul_persistent_cluster(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> c, tl::scalar<int32_t> M,
                               tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                               tl::constant<int> BN, tl::constant<int> BK, tl::constant<int> GROUP_M) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto b_desc = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
  auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
  forEachClusterTile(M, N, BM.value, BN.value, GROUP_M.value, [&](const tl::tensor &m0, const tl::tensor &n0) {
    tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
    for (auto k : tl::range(0, K, BK.value, acc))
      acc = tl::dot(a_desc.load({m0, k}), b_desc.load({k, n0}, tl::multicast), acc);
    c_desc.store({m0, n0}, acc);
  });
}

/// C (Acc, M x N) = A Bᵀ with A [M, K] and B [N, K] row-major (both K
/// contiguous: the "TN" layout fp8 and int8 GEMMs use, cuBLASLt's too), read
/// through tensor descriptors; Acc is f32, or i32 for int8 operands. With
/// 8-bit operands on sm_90a the tiles go through TMA rings straight into
/// wgmma k32 (docs/hopper.md); K and the row strides must span multiples of
/// 16 bytes. P: f32 operands' precision (tf32 runs on wgmma too, the rings'
/// tensor maps rounding each element to tf32 as it lands).
template <class T, class Acc = float, tl::precision P = tl::precision::ieee>
void matmul_tn(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<Acc> c, tl::scalar<int32_t> M,
               tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
               tl::constant<int> BN, tl::constant<int> BK) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto b_desc = tl::make_tensor_descriptor(b, {N, K}, {K, 1}, {BN, BK});
  auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
  tl::tensor m0 = tl::program_id(0) * BM, n0 = tl::program_id(1) * BN;
  tl::tensor acc = tl::zeros({BM, BN}, dtype_of_v<Acc>);
  for (auto k : tl::range(0, K, BK.value, acc))
    acc = tl::dot(a_desc.load({m0, k}), b_desc.load({n0, k}).trans(), acc, P);
  c_desc.store({m0, n0}, acc);
}

/// matmul_tn as a persistent kernel: `num_programs` programs (the SM
/// count) walk the M x N tiles in GROUP_M-row groups for L2 reuse, as
/// matmul_persistent_descriptors does; warp specialised, the producer fills
/// the next tile's stages during this tile's epilogue.
template <class T, class Acc = float, tl::precision P = tl::precision::ieee>
void matmul_tn_persistent(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<Acc> c, tl::scalar<int32_t> M,
                          tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                          tl::constant<int> BN, tl::constant<int> BK, tl::constant<int> GROUP_M) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto b_desc = tl::make_tensor_descriptor(b, {N, K}, {K, 1}, {BN, BK});
  auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
  tl::tensor tiles_m = (M + (BM.value - 1)) / BM;
  tl::tensor tiles_n = (N + (BN.value - 1)) / BN;
  tl::tensor per_group = tiles_n * GROUP_M;
  for (auto t : tl::range(tl::program_id(0), tiles_m * tiles_n, tl::num_programs(0))) {
    auto [tile_m, tile_n] = groupedTile(t, tiles_m, per_group, GROUP_M);
    tl::tensor m0 = tile_m * BM, n0 = tile_n * BN;
    tl::tensor acc = tl::zeros({BM, BN}, dtype_of_v<Acc>);
    for (auto k : tl::range(0, K, BK.value, acc))
      acc = tl::dot(a_desc.load({m0, k}), b_desc.load({n0, k}).trans(), acc, P);
    c_desc.store({m0, n0}, acc);
  }
}

/// matmul_tn_persistent for thread-block clusters, as
/// matmul_persistent_cluster is matmul_persistent_descriptors': the
/// cluster's programs compute vertically adjacent tiles and multicast B
/// ([N, K], K-major - the fp8 and int8 GEMMs').
template <class T, class Acc = float, tl::precision P = tl::precision::ieee>
void matmul_tn_persistent_cluster(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<Acc> c, tl::scalar<int32_t> M,
                                  tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                                  tl::constant<int> BN, tl::constant<int> BK, tl::constant<int> GROUP_M) {
  auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
  auto b_desc = tl::make_tensor_descriptor(b, {N, K}, {K, 1}, {BN, BK});
  auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
  forEachClusterTile(M, N, BM.value, BN.value, GROUP_M.value, [&](const tl::tensor &m0, const tl::tensor &n0) {
    tl::tensor acc = tl::zeros({BM, BN}, dtype_of_v<Acc>);
    for (auto k : tl::range(0, K, BK.value, acc))
      acc = tl::dot(a_desc.load({m0, k}), b_desc.load({n0, k}, tl::multicast).trans(), acc, P);
    c_desc.store({m0, n0}, acc);
  });
}

/// fp8 quantisation with a per-tensor scale: q = (x * scale) as F8 (nearest
/// even, saturating at the format's largest finite value), and back:
/// x' = q / scale in f32. (F8: tegula::float8_e4m3 or float8_e5m2.)
template <class F8>
void quantize_fp8(tl::ptr<float> x, tl::ptr<F8> q, tl::scalar<float> scale, tl::scalar<int32_t> n,
                  tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::store(q + offs, (tl::load(x + offs, mask, 0.0f) * scale).to(dtype_of_v<F8>), mask);
}
template <class F8>
void dequantize_fp8(tl::ptr<F8> q, tl::ptr<float> x, tl::scalar<float> scale, tl::scalar<int32_t> n,
                    tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::store(x + offs, tl::load(q + offs, mask).to(tl::f32) / scale, mask);
}

/// Dropout without a mask in memory (Triton's "low-memory dropout"): each
/// element is kept with probability 1 - p, scaled by 1 / (1 - p), where
/// tl::rand(seed, its index) >= p - so the backward pass regenerates the
/// same mask from (seed, index) instead of reading one.
inline void dropout(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n, tl::scalar<float> p,
                    tl::scalar<int64_t> seed, tl::constant<int> BLOCK) {
  tl::tensor offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = offs < n;
  tl::tensor keep = tl::rand(seed, offs) >= p;
  tl::store(out + offs, tl::where(keep, tl::load(x + offs, mask) / (1.0f - p), 0.0f), mask);
}

/// out[row] += sum of x[row, chunk] for each BLOCK-wide chunk of a row; the
/// chunks of a row run in different programs and meet through atomic_add.
inline void row_sum_atomic(tl::ptr<float> x, tl::ptr<float> out, tl::scalar<int32_t> n_cols,
                           tl::constant<int> BLOCK) {
  tl::tensor row = tl::program_id(0);
  tl::tensor cols = tl::program_id(1) * BLOCK + tl::arange(0, BLOCK);
  tl::tensor mask = cols < n_cols;
  tl::tensor part = tl::sum(tl::load(x + row * n_cols + cols, mask, 0.0f), 0);
  tl::atomic_add(out + row, part);
}

/// out (N x M) = transpose of x (M x N), BM x BN tiles.
template <class T>
void transpose(tl::ptr<T> x, tl::ptr<T> out, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
               tl::constant<int> BM, tl::constant<int> BN) {
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rn = tl::program_id(1) * BN + tl::arange(0, BN);
  tl::tensor mask = (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N);
  tl::tensor v = tl::load(x + rm.expand_dims(1) * N + rn.expand_dims(0), mask);
  tl::store(out + rn.expand_dims(1) * M + rm.expand_dims(0), v.trans(), mask.trans());
}

/// Flash-attention forward (FlashAttention-2's loop, written as a user
/// would): q, k, v, out are [BH, T, D] row-major; one program per BM query
/// rows (axis 0) of one batch*head (axis 1). Each BN-key block: S = Q K^T *
/// scale (masked past T and, when `causal`, above the diagonal), an online
/// softmax (running row max m and sum l), acc = acc * exp(m_old - m) + P V.
/// The two dots chain: P is the first dot's result after elementwise math.
/// As FlashAttention and Triton's tutorial do, the scores are kept in base-2
/// units (scale * log2 e folded into S) and the softmax uses exp2: one
/// ex2.approx an element on a GPU where exp is libdevice's nine
/// instructions - half the softmax's work, which is what keeps the tensor
/// cores waiting. The result is the same softmax.
template <class T>
void attention_fwd(tl::ptr<T> q, tl::ptr<T> k, tl::ptr<T> v, tl::ptr<T> out,
                   tl::scalar<int32_t> seq_len, tl::scalar<float> scale, tl::constant<int> D,
                   tl::constant<int> BM, tl::constant<int> BN, tl::constant<bool> causal) {
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM); // query rows
  tl::tensor rd = tl::arange(0, D);
  tl::tensor base = tl::program_id(1) * seq_len * D;
  tl::tensor q_tile = tl::load(q + base + rm.expand_dims(1) * D + rd.expand_dims(0),
                               rm.expand_dims(1) < seq_len, 0.0f);
  tl::tensor m = tl::full({BM}, -INFINITY, tl::f32);
  tl::tensor l = tl::zeros({BM}, tl::f32);
  tl::tensor acc = tl::zeros({BM, D}, tl::f32);
  // Causal: keys past this block's last query row contribute nothing.
  tl::tensor end = causal.value ? tl::minimum((tl::program_id(0) + 1) * BM, seq_len)
                                : tl::tensor(seq_len);
  for (auto start : tl::range(0, end, BN.value, m, l, acc)) {
    tl::tensor rn = start + tl::arange(0, BN); // key rows
    tl::tensor k_tile = tl::load(k + base + rn.expand_dims(1) * D + rd.expand_dims(0),
                                 rn.expand_dims(1) < seq_len, 0.0f); // [BN, D], rows as stored
    tl::tensor s = tl::dot(q_tile, k_tile.trans()) * (scale * tl::log2e);
    tl::tensor valid = rn.expand_dims(0) < seq_len;
    if (causal.value)
      valid = valid & (rn.expand_dims(0) <= rm.expand_dims(1));
    s = tl::where(valid, s, -INFINITY);
    tl::tensor m_new = tl::maximum(m, tl::max(s, 1));
    tl::tensor p = tl::exp2(s - m_new.expand_dims(1));
    tl::tensor alpha = tl::exp2(m - m_new);
    l = l * alpha + tl::sum(p, 1);
    tl::tensor v_tile = tl::load(v + base + rn.expand_dims(1) * D + rd.expand_dims(0),
                                 rn.expand_dims(1) < seq_len, 0.0f); // [BN, D]
    acc = tl::dot(p.to(dtype_of_v<T>), v_tile, acc * alpha.expand_dims(1));
    m = m_new;
  }
  tl::store(out + base + rm.expand_dims(1) * D + rd.expand_dims(0),
            (acc / l.expand_dims(1)).to(dtype_of_v<T>), rm.expand_dims(1) < seq_len);
}

/// attention_fwd with K and V read through tensor descriptors over all heads'
/// rows ([rows = heads x seq_len, D]): on sm_90a TMA rings feed both dots.
/// Key rows past this head's end belong to the next head (or lie past the
/// tensor: zeros); their scores are masked to -inf, so they add nothing.
/// Key blocks wholly inside the sequence and below the causal diagonal are
/// not masked at all (a runtime tl::if_, as FlashAttention does).
template <class T>
void attention_fwd_descriptors(tl::ptr<T> q, tl::ptr<T> k, tl::ptr<T> v, tl::ptr<T> out,
                               tl::scalar<int32_t> seq_len, tl::scalar<int32_t> rows,
                               tl::scalar<float> scale, tl::constant<int> D, tl::constant<int> BM,
                               tl::constant<int> BN, tl::constant<bool> causal) {
  auto k_desc = tl::make_tensor_descriptor(k, {rows, D}, {D, 1}, {BN, D});
  auto v_desc = tl::make_tensor_descriptor(v, {rows, D}, {D, 1}, {BN, D});
  // Causal: the query blocks that see the most keys first - CTAs start in
  // program order, so the launch ends on short blocks (longest first, as
  // FlashAttention's schedulers order them).
  tl::tensor block = causal.value ? tl::num_programs(0) - 1 - tl::program_id(0) : tl::program_id(0);
  tl::tensor rm = block * BM + tl::arange(0, BM); // query rows
  tl::tensor rd = tl::arange(0, D);
  tl::tensor head = tl::program_id(1) * seq_len; // this head's first row
  tl::tensor q_tile = tl::load(q + (head + rm.expand_dims(1)) * D + rd.expand_dims(0),
                               rm.expand_dims(1) < seq_len, 0.0f);
  tl::tensor m = tl::full({BM}, -INFINITY, tl::f32);
  tl::tensor l = tl::zeros({BM}, tl::f32);
  tl::tensor acc = tl::zeros({BM, D}, tl::f32);
  tl::tensor first_row = block * BM;
  tl::tensor end = causal.value ? tl::minimum(first_row + BM, seq_len) : tl::tensor(seq_len);
  const tl::tensor c = scale * tl::log2e; // scores to base-2 units
  for (auto start : tl::range(0, end, BN.value, m, l, acc)) {
    // Raw scores; the softmax scales them in base 2 inside one fma an element
    // (exp2(s * c - m), m in base-2 units), as FlashAttention does.
    tl::tensor s = tl::dot(q_tile, k_desc.load({head + start, 0}).trans());
    // Only the blocks that reach past the diagonal (causal) or the sequence
    // mask their scores; the others skip the compares and selects.
    tl::tensor needs_mask = start + BN > (causal.value ? first_row : tl::tensor(seq_len));
    s = tl::if_(needs_mask, [&] {
      tl::tensor rn = start + tl::arange(0, BN); // key rows of this head
      tl::tensor valid = rn.expand_dims(0) < seq_len;
      if (causal.value)
        valid = valid & (rn.expand_dims(0) <= rm.expand_dims(1));
      return tl::where(valid, s, -INFINITY);
    }, [&] { return s; });
    tl::tensor m_new = tl::maximum(m, tl::max(s, 1) * c); // c > 0: the max of the scaled scores
    tl::tensor p = tl::exp2(tl::fma(s, c, -m_new.expand_dims(1)));
    tl::tensor alpha = tl::exp2(m - m_new);
    l = tl::fma(l, alpha, tl::sum(p, 1));
    acc = tl::dot(p.to(dtype_of_v<T>), v_desc.load({head + start, 0}), acc * alpha.expand_dims(1));
    m = m_new;
  }
  // One fast reciprocal a row and a multiply an element, where `acc / l`
  // is an exact division (and its slow path) an element.
  tl::store(out + (head + rm.expand_dims(1)) * D + rd.expand_dims(0),
            (acc * tl::fdiv(1.0f, l).expand_dims(1)).to(dtype_of_v<T>), rm.expand_dims(1) < seq_len);
}

} // namespace tegula::examples
