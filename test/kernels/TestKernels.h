// TestKernels.h - kernels the kernel tests share (not examples for users).
#pragma once

#include "tegula/tl.h"

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

} // namespace tegula::testing
