// ExampleKernelsTest.cpp - every example kernel, run in the interpreter,
// against a naive double-precision C++ reference on fresh random inputs,
// with ragged sizes that need masks, in f32 and bf16.
#include "TestUtil.h"
#include "examples/kernels.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

using namespace tegula;
using namespace tegula::testing;

namespace {

LaunchOptions interp(Grid g) { return {.grid = g, .backend = Backend::Interp}; }

template <class T> class ExampleKernel : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, bfloat16, float16>;
TYPED_TEST_SUITE(ExampleKernel, FloatTypes);

//===----------------------------------------------------------------------===//
// vector_add
//===----------------------------------------------------------------------===//

TEST(ExampleKernels, VectorAddRaggedSizes) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  for (int n : {1, 1000, 1023, 1024, 1025, 4097}) {
    for (int block : {256, 1024}) {
      SCOPED_TRACE(fmt::format("n={} BLOCK={}", n, block));
      auto x = random_vector<float>(n), y = random_vector<float>(n);
      auto out = poisoned<float>(n);
      k(interp({uint32_t(cdiv(n, block))}), x, y, out, n, block);
      for (int i = 0; i < n; ++i)
        ASSERT_EQ(out[i], x[i] + y[i]) << "element " << i;
    }
  }
  // One per BLOCK value, and per whether n is divisible by 16 (1024 is) or
  // is 1 (traced as the constant, as Triton specialises it).
  EXPECT_EQ(k.num_specializations(), 6u);
}

//===----------------------------------------------------------------------===//
// softmax
//===----------------------------------------------------------------------===//

TYPED_TEST(ExampleKernel, SoftmaxRows) {
  using T = TypeParam;
  auto k = kernel("softmax", examples::softmax<T>, {"x", "out", "n_cols", "BLOCK"});
  for (int cols : {17, 1000, 1023, 1024, 1025}) {
    SCOPED_TRACE(fmt::format("cols={}", cols));
    const int rows = 3;
    int block = 1 << int(std::ceil(std::log2(cols)));
    auto x = random_vector<T>(size_t(rows * cols), -5, 5);
    auto out = poisoned<T>(size_t(rows * cols));
    k(interp({rows}), x, out, cols, block);
    std::vector<double> ref(static_cast<size_t>(rows * cols));
    for (int r = 0; r < rows; ++r) {
      double mx = -INFINITY, s = 0;
      for (int c = 0; c < cols; ++c) mx = std::max(mx, double(float(x[r * cols + c])));
      for (int c = 0; c < cols; ++c) s += std::exp(double(float(x[r * cols + c])) - mx);
      for (int c = 0; c < cols; ++c)
        ref[size_t(r * cols + c)] = std::exp(double(float(x[r * cols + c])) - mx) / s;
    }
    EXPECT_LT(rel_error(out, ref), tolerance<T>());
  }
}

//===----------------------------------------------------------------------===//
// layernorm
//===----------------------------------------------------------------------===//

TYPED_TEST(ExampleKernel, LayerNormForward) {
  using T = TypeParam;
  auto k = kernel("layernorm", examples::layernorm<T>,
                  {"x", "weight", "bias", "y", "mean", "rstd", "n_cols", "eps", "BLOCK"});
  for (int cols : {64, 1000, 1023, 1025}) {
    SCOPED_TRACE(fmt::format("cols={}", cols));
    const int rows = 3;
    const float eps = 1e-5f;
    auto x = random_vector<T>(size_t(rows * cols), -2, 3);
    auto w = random_vector<T>(size_t(cols)), b = random_vector<T>(size_t(cols));
    auto y = poisoned<T>(size_t(rows * cols));
    auto mean = poisoned<float>(rows), rstd = poisoned<float>(rows);
    k(interp({rows}), x, w, b, y, mean, rstd, cols, eps, 256);
    std::vector<double> refY(size_t(rows * cols)), refMean(rows), refRstd(rows);
    for (int r = 0; r < rows; ++r) {
      double m = 0, v = 0;
      for (int c = 0; c < cols; ++c) m += double(float(x[r * cols + c]));
      m /= cols;
      for (int c = 0; c < cols; ++c) {
        double d = double(float(x[r * cols + c])) - m;
        v += d * d;
      }
      double rs = 1.0 / std::sqrt(v / cols + eps);
      refMean[size_t(r)] = m, refRstd[size_t(r)] = rs;
      for (int c = 0; c < cols; ++c)
        refY[size_t(r * cols + c)] =
            (double(float(x[r * cols + c])) - m) * rs * double(float(w[c])) + double(float(b[c]));
    }
    EXPECT_LT(rel_error(y, refY), tolerance<T>());
    EXPECT_LT(rel_error(mean, refMean), 1e-5);
    EXPECT_LT(rel_error(rstd, refRstd), 1e-5);
  }
}

//===----------------------------------------------------------------------===//
// GELU (tanh form)
//===----------------------------------------------------------------------===//

TYPED_TEST(ExampleKernel, GeluTanh) {
  using T = TypeParam;
  auto k = kernel("gelu", examples::gelu<T>, {"x", "out", "n", "BLOCK"});
  for (int n : {1000, 1023, 1025}) {
    SCOPED_TRACE(fmt::format("n={}", n));
    auto x = random_vector<T>(size_t(n), -4, 4);
    auto out = poisoned<T>(size_t(n));
    k(interp({uint32_t(cdiv(n, 512))}), x, out, n, 512);
    std::vector<double> ref(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      double v = double(float(x[i]));
      ref[size_t(i)] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    }
    EXPECT_LT(rel_error(out, ref), tolerance<T>());
  }
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

TYPED_TEST(ExampleKernel, MatmulDynamicK) {
  using T = TypeParam;
  auto k = kernel("matmul", examples::matmul<T>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  struct Shape { int M, N, K; };
  for (Shape s : {Shape{65, 33, 100}, Shape{64, 64, 64}, Shape{1, 17, 31}, Shape{40, 100, 17}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={}", s.M, s.N, s.K));
    auto a = random_vector<T>(size_t(s.M * s.K)), b = random_vector<T>(size_t(s.K * s.N));
    auto c = poisoned<T>(size_t(s.M * s.N));
    const int BM = 32, BN = 32, BK = 16;
    k(interp({uint32_t(cdiv(s.M, BM)), uint32_t(cdiv(s.N, BN))}), a, b, c, s.M, s.N, s.K, BM,
      BN, BK);
    std::vector<double> ref(static_cast<size_t>(s.M * s.N));
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < s.N; ++n) {
        double acc = 0;
        for (int kk = 0; kk < s.K; ++kk)
          acc += double(float(a[m * s.K + kk])) * double(float(b[kk * s.N + n]));
        ref[size_t(m * s.N + n)] = acc;
      }
    EXPECT_LT(rel_error(c, ref), tolerance<T>());
  }
}

/// Persistent: fewer programs than tiles (each takes several, in grouped
/// order), a ragged last group, and more programs than tiles.
TYPED_TEST(ExampleKernel, MatmulPersistentGroupedOrder) {
  using T = TypeParam;
  auto k = kernel("matmul_persistent", examples::matmul_persistent<T>,
                  {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK", "GROUP_M"});
  struct Shape { int M, N, K, programs; };
  for (Shape s : {Shape{100, 70, 40, 3}, Shape{33, 129, 17, 5}, Shape{16, 16, 16, 4}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={} programs={}", s.M, s.N, s.K, s.programs));
    auto a = random_vector<T>(size_t(s.M * s.K)), b = random_vector<T>(size_t(s.K * s.N));
    auto c = poisoned<T>(size_t(s.M * s.N));
    k(interp({uint32_t(s.programs)}), a, b, c, s.M, s.N, s.K, 16, 32, 16, 2);
    std::vector<double> ref(static_cast<size_t>(s.M * s.N));
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < s.N; ++n) {
        double acc = 0;
        for (int kk = 0; kk < s.K; ++kk)
          acc += double(float(a[m * s.K + kk])) * double(float(b[kk * s.N + n]));
        ref[size_t(m * s.N + n)] = acc;
      }
    EXPECT_LT(rel_error(c, ref), tolerance<T>());
  }
}

//===----------------------------------------------------------------------===//
// row sum with atomic_add
//===----------------------------------------------------------------------===//

TEST(ExampleKernels, RowSumAtomicAdd) {
  auto k = kernel("row_sum_atomic", examples::row_sum_atomic, {"x", "out", "n_cols", "BLOCK"});
  for (int cols : {1000, 1023, 1025}) {
    SCOPED_TRACE(fmt::format("cols={}", cols));
    const int rows = 5, block = 256;
    auto x = random_vector<float>(size_t(rows * cols));
    std::vector<float> out(rows, 0.0f); // an accumulator: starts at zero
    k(interp({rows, uint32_t(cdiv(cols, block))}), x, out, cols, block);
    std::vector<double> ref(rows, 0.0);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        ref[size_t(r)] += x[size_t(r * cols + c)];
    EXPECT_LT(rel_error(out, ref), 1e-5);
  }
}

//===----------------------------------------------------------------------===//
// dropout (tl::rand)
//===----------------------------------------------------------------------===//

TEST(ExampleKernels, DropoutKeepsAboutOneMinusPScaledAndRegeneratesItsMask) {
  auto k = kernel("dropout", examples::dropout, {"x", "out", "n", "p", "seed", "BLOCK"});
  const int n = 10007;
  const float p = 0.3f;
  auto x = random_vector<float>(n, 0.5f, 1.5f); // no zeros: a zero output is a dropped element
  std::vector<float> out = poisoned<float>(n), again = poisoned<float>(n), other = poisoned<float>(n);
  k(interp({uint32_t(cdiv(n, 1024))}), x, out, n, p, int64_t(1234), 1024);
  k(interp({uint32_t(cdiv(n, 256))}), x, again, n, p, int64_t(1234), 256);
  k(interp({uint32_t(cdiv(n, 1024))}), x, other, n, p, int64_t(1235), 1024);
  EXPECT_EQ(out, again) << "the same seed, the same mask - whatever the block";
  int kept = 0, differ = 0;
  for (int i = 0; i < n; ++i) {
    if (out[size_t(i)] != 0.0f) {
      ++kept;
      ASSERT_FLOAT_EQ(out[size_t(i)], x[size_t(i)] / (1.0f - p)) << i;
    }
    differ += (out[size_t(i)] == 0.0f) != (other[size_t(i)] == 0.0f);
  }
  // Binomial(10007, 0.7): standard deviation 46.
  EXPECT_NEAR(kept, 0.7 * n, 250);
  EXPECT_GT(differ, n / 4) << "another seed, another mask";
}

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

TYPED_TEST(ExampleKernel, Transpose2D) {
  using T = TypeParam;
  auto k = kernel("transpose", examples::transpose<T>, {"x", "out", "M", "N", "BM", "BN"});
  struct Shape { int M, N; };
  for (Shape s : {Shape{100, 37}, Shape{64, 64}, Shape{1025, 3}}) {
    SCOPED_TRACE(fmt::format("M={} N={}", s.M, s.N));
    auto x = random_vector<T>(size_t(s.M * s.N));
    auto out = poisoned<T>(size_t(s.M * s.N));
    k(interp({uint32_t(cdiv(s.M, 32)), uint32_t(cdiv(s.N, 16))}), x, out, s.M, s.N, 32, 16);
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < s.N; ++n)
        ASSERT_EQ(float(out[size_t(n * s.M + m)]), float(x[size_t(m * s.N + n)]))
            << "at m=" << m << " n=" << n;
  }
}

//===----------------------------------------------------------------------===//
// attention (two chained dots with an online softmax between them)
//===----------------------------------------------------------------------===//

TYPED_TEST(ExampleKernel, AttentionForward) {
  using T = TypeParam;
  auto k = kernel("attention_fwd", examples::attention_fwd<T>,
                  {"q", "k", "v", "out", "seq_len", "scale", "D", "BM", "BN", "causal"});
  for (bool causal : {false, true})
    for (int seq : {1, 37, 64, 100}) {
      SCOPED_TRACE(fmt::format("T={} causal={}", seq, causal));
      const int heads = 2, dim = 32, BM = 32, BN = 16;
      const size_t n = size_t(heads * seq * dim);
      auto q = random_vector<T>(n), kk = random_vector<T>(n), v = random_vector<T>(n);
      auto out = poisoned<T>(n);
      const float scale = 1.0f / std::sqrt(float(dim));
      k(interp({uint32_t(cdiv(seq, BM)), uint32_t(heads)}), q, kk, v, out, seq, scale, dim, BM,
        BN, causal);
      EXPECT_LT(rel_error(out, attention_reference(q, kk, v, heads, seq, dim, scale, causal)),
                tolerance<T>());
    }
}

} // namespace
