// TestKernels.h - kernels the kernel tests share (not examples for users).
#pragma once

#include "tegula/tl.h"

#include <type_traits>

namespace tegula::testing {

/// C = A B with both operands stored transposed (A as K x M, B as N x K),
/// loaded as they lie and turned with .trans() in the kernel, as a user
/// would write it.
template <class T>
void matmul_transposed_operands(tl::ptr<T> at, tl::ptr<T> bt, tl::ptr<T> c, tl::scalar<int32_t> M,
                                tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                                tl::constant<int> BN, tl::constant<int> BK) {
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rn = tl::program_id(1) * BN + tl::arange(0, BN);
  tl::tensor rk = tl::arange(0, BK);
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK.value, acc)) {
    tl::tensor ka = k + rk;
    tl::tensor a_t = tl::load(at + ka.expand_dims(1) * M + rm.expand_dims(0),
                              (ka.expand_dims(1) < K) & (rm.expand_dims(0) < M), 0.0f);
    tl::tensor b_t = tl::load(bt + rn.expand_dims(1) * K + ka.expand_dims(0),
                              (rn.expand_dims(1) < N) & (ka.expand_dims(0) < K), 0.0f);
    acc = tl::dot(a_t.trans(), b_t.trans(), acc);
  }
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc,
            (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
}

/// The same product with A stored K x M but addressed as an M x K tile
/// directly (at + k * M + m): no .trans(), the tile's addresses simply run
/// along its dim 0 - what coalesce turns into a layout with dim 0 fastest.
template <class T>
void matmul_column_major_a(tl::ptr<T> at, tl::ptr<T> b, tl::ptr<T> c, tl::scalar<int32_t> M,
                           tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM,
                           tl::constant<int> BN, tl::constant<int> BK) {
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rn = tl::program_id(1) * BN + tl::arange(0, BN);
  tl::tensor rk = tl::arange(0, BK);
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK.value, acc)) {
    tl::tensor ka = k + rk;
    tl::tensor a_tile = tl::load(at + ka.expand_dims(0) * M + rm.expand_dims(1),
                                 (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K), 0.0f);
    tl::tensor b_tile = tl::load(b + ka.expand_dims(1) * N + rn.expand_dims(0),
                                 (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), 0.0f);
    acc = tl::dot(a_tile, b_tile, acc);
  }
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc,
            (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
}

/// How the operands are stored: NN - A [M, K], B [K, N] row-major; NT - B
/// stored [N, K] and addressed as its [K, N] transpose (K-major); TT - A
/// stored [K, M] and B [N, K], both loaded as stored and read through
/// .trans() (the rings hold them as loaded: A's rows along M, element reads;
/// B's along K, ldmatrix); TN - A stored [K, M] read through .trans(), B
/// [K, N] row-major: both run along M or N (a weight gradient, X^T dY).
enum class Storage { NN, NT, TT, TN };

/// C = A B.
template <class T, class Acc, tl::precision P, Storage S>
void gemm(tl::ptr<T> a, tl::ptr<T> b, tl::ptr<Acc> c, tl::scalar<int32_t> M, tl::scalar<int32_t> N,
          tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN, tl::constant<int> BK) {
  using Zero = std::conditional_t<std::is_floating_point_v<T>, float, int>;
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rn = tl::program_id(1) * BN + tl::arange(0, BN);
  tl::tensor rk = tl::arange(0, BK);
  tl::tensor acc = tl::zeros({BM, BN}, std::is_floating_point_v<Acc> ? tl::f32 : tl::i32);
  for (auto k : tl::range(0, K, BK.value, acc)) {
    tl::tensor ka = k + rk;
    constexpr bool aAlongM = S == Storage::TT || S == Storage::TN;
    tl::tensor m = rm.expand_dims(aAlongM ? 0 : 1), kk = ka.expand_dims(aAlongM ? 1 : 0);
    tl::tensor amask = (m < M) & (kk < K);
    tl::tensor at = aAlongM ? tl::load(a + kk * M + m, amask, Zero(0)).trans()
                            : tl::load(a + m * K + kk, amask, Zero(0));
    tl::tensor bt = S == Storage::NN || S == Storage::TN ? tl::load(b + ka.expand_dims(1) * N + rn.expand_dims(0),
                                                  (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), Zero(0))
                    : S == Storage::NT ? tl::load(b + rn.expand_dims(0) * K + ka.expand_dims(1),
                                                  (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), Zero(0))
                                       : tl::load(b + rn.expand_dims(1) * K + ka.expand_dims(0),
                                                  (rn.expand_dims(1) < N) & (ka.expand_dims(0) < K), Zero(0))
                                             .trans();
    acc = tl::dot(at, bt, acc, P);
  }
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc,
            (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
}

/// acc1 = sum_k a b_k, acc2 = sum_k a b_k^T over K / BK row blocks b_k of b,
/// read through a tensor descriptor (a TMA ring on sm_90a, masked loads in a
/// cp.async ring elsewhere): each block loaded once per iteration and read
/// by both dots, as attention's backward reads q and do.
inline void two_dots_tma(tl::ptr<bfloat16> a, tl::ptr<bfloat16> b, tl::ptr<float> c1, tl::ptr<float> c2,
                         tl::scalar<int32_t> K, tl::constant<int> BK) {
  tl::tensor r = tl::arange(0, BK);
  tl::tensor at = tl::load(a + r.expand_dims(1) * BK + r.expand_dims(0));
  auto rows = tl::make_tensor_descriptor(b, {K, BK}, {BK, 1}, {BK, BK});
  tl::tensor acc1 = tl::zeros({BK, BK}, tl::f32), acc2 = tl::zeros({BK, BK}, tl::f32);
  for (auto k : tl::range(0, K, BK.value, acc1, acc2)) {
    tl::tensor bk = rows.load({k, 0});
    acc1 = tl::dot(at, bk, acc1);
    acc2 = tl::dot(at, bk.trans(), acc2);
  }
  tl::tensor offs = r.expand_dims(1) * BK + r.expand_dims(0);
  tl::store(c1 + offs, acc1);
  tl::store(c2 + offs, acc2);
}

} // namespace tegula::testing
