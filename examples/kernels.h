// kernels.h - example kernels written in Tegula's tile language.
//
// They are the shared test corpus: the interpreter tests check them against
// naive C++ references, and the GPU backend and simulator run the same
// functions. Each is a plain C++ function over tl:: values.
#pragma once

#include "tegula/tegula.h"

#include <cmath>

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

} // namespace tegula::examples
