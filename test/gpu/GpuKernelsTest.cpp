// GpuKernelsTest.cpp - every example kernel on the GPU against the
// interpreter, on fresh random inputs with ragged sizes. Without a CUDA
// driver each test is skipped with the reason (never counted as passed).
#include "TestUtil.h"
#include "examples/kernels.h"
#include "runtime/CudaDriver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

using namespace tegula;
using namespace tegula::testing;

namespace {

class Gpu : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!runtime::Driver::available(&why))
      GTEST_SKIP() << "no GPU: " << why;
  }
};

LaunchOptions on(Backend b, Grid g, int warps = 4) {
  return {.grid = g, .num_warps = warps, .backend = b};
}

TEST_F(Gpu, VectorAdd) {
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  for (int n : {1, 1000, 1023, 1025, 4096, 100003}) {
    SCOPED_TRACE(fmt::format("n={}", n));
    auto x = random_vector<float>(size_t(n)), y = random_vector<float>(size_t(n));
    auto a = poisoned<float>(size_t(n)), b = poisoned<float>(size_t(n));
    Grid g{uint32_t(cdiv(n, 1024))};
    k(on(Backend::Interp, g), x, y, a, n, 1024);
    k(on(Backend::GPU, g), x, y, b, n, 1024);
    EXPECT_EQ(rel_error(b, to_double(a)), 0.0);
  }
}

TEST_F(Gpu, SoftmaxAndGelu) {
  auto sm = kernel("softmax", examples::softmax<float>, {"x", "out", "n_cols", "BLOCK"});
  auto ge = kernel("gelu", examples::gelu<float>, {"x", "out", "n", "BLOCK"});
  for (int cols : {17, 1000, 1024, 1025}) {
    SCOPED_TRACE(fmt::format("cols={}", cols));
    int block = 1 << int(std::ceil(std::log2(cols)));
    const int rows = 7;
    auto x = random_vector<float>(size_t(rows * cols), -5, 5);
    auto a = poisoned<float>(x.size()), b = poisoned<float>(x.size());
    sm(on(Backend::Interp, {rows}), x, a, cols, block);
    sm(on(Backend::GPU, {rows}), x, b, cols, block);
    EXPECT_LT(rel_error(b, to_double(a)), 1e-5);
    int n = rows * cols;
    ge(on(Backend::Interp, {uint32_t(cdiv(n, 512))}), x, a, n, 512);
    ge(on(Backend::GPU, {uint32_t(cdiv(n, 512))}), x, b, n, 512);
    EXPECT_LT(rel_error(b, to_double(a)), 1e-5);
  }
}

TEST_F(Gpu, LayerNorm) {
  auto k = kernel("layernorm", examples::layernorm<float>,
                  {"x", "weight", "bias", "y", "mean", "rstd", "n_cols", "eps", "BLOCK"});
  for (int cols : {64, 1000, 1025}) {
    SCOPED_TRACE(fmt::format("cols={}", cols));
    const int rows = 5;
    auto x = random_vector<float>(size_t(rows * cols), -2, 3);
    auto w = random_vector<float>(size_t(cols)), b = random_vector<float>(size_t(cols));
    auto y1 = poisoned<float>(x.size()), y2 = poisoned<float>(x.size());
    auto m1 = poisoned<float>(rows), m2 = poisoned<float>(rows), r1 = poisoned<float>(rows),
         r2 = poisoned<float>(rows);
    k(on(Backend::Interp, {rows}), x, w, b, y1, m1, r1, cols, 1e-5f, 256);
    k(on(Backend::GPU, {rows}), x, w, b, y2, m2, r2, cols, 1e-5f, 256);
    EXPECT_LT(rel_error(y2, to_double(y1)), 1e-5);
    EXPECT_LT(rel_error(m2, to_double(m1)), 1e-5);
    EXPECT_LT(rel_error(r2, to_double(r1)), 1e-5);
  }
}

TEST_F(Gpu, MatmulFma) {
  auto k = kernel("matmul", examples::matmul<float>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  struct Shape { int M, N, K; };
  for (Shape s : {Shape{65, 33, 100}, Shape{128, 64, 64}, Shape{1, 17, 31}}) {
    SCOPED_TRACE(fmt::format("M={} N={} K={}", s.M, s.N, s.K));
    auto a = random_vector<float>(size_t(s.M * s.K)), b = random_vector<float>(size_t(s.K * s.N));
    auto c1 = poisoned<float>(size_t(s.M * s.N)), c2 = poisoned<float>(size_t(s.M * s.N));
    Grid g{uint32_t(cdiv(s.M, 32)), uint32_t(cdiv(s.N, 32))};
    k(on(Backend::Interp, g), a, b, c1, s.M, s.N, s.K, 32, 32, 16);
    k(on(Backend::GPU, g), a, b, c2, s.M, s.N, s.K, 32, 32, 16);
    EXPECT_LT(rel_error(c2, to_double(c1)), 1e-5);
  }
}

TEST_F(Gpu, RowSumAtomicAndTranspose) {
  auto rs = kernel("row_sum_atomic", examples::row_sum_atomic, {"x", "out", "n_cols", "BLOCK"});
  auto tr = kernel("transpose", examples::transpose<float>, {"x", "out", "M", "N", "BM", "BN"});
  for (int cols : {1000, 1025}) {
    const int rows = 6;
    auto x = random_vector<float>(size_t(rows * cols));
    std::vector<float> s1(rows, 0.0f), s2(rows, 0.0f);
    Grid g{rows, uint32_t(cdiv(cols, 256))};
    rs(on(Backend::Interp, g), x, s1, cols, 256);
    rs(on(Backend::GPU, g), x, s2, cols, 256);
    EXPECT_LT(rel_error(s2, to_double(s1)), 1e-5);
    auto t1 = poisoned<float>(x.size()), t2 = poisoned<float>(x.size());
    Grid tg{uint32_t(cdiv(rows, 32)), uint32_t(cdiv(cols, 32))};
    tr(on(Backend::Interp, tg), x, t1, rows, cols, 32, 32);
    tr(on(Backend::GPU, tg), x, t2, rows, cols, 32, 32);
    EXPECT_EQ(rel_error(t2, to_double(t1)), 0.0);
  }
}

TEST(GpuWithoutDriver, AskingForTheGpuSaysSo) {
  if (runtime::Driver::available())
    GTEST_SKIP() << "a CUDA driver is present; this test covers machines without one";
  auto k = kernel("vector_add", examples::vector_add, {"x", "y", "out", "n", "BLOCK"});
  std::vector<float> x(16), y(16), out(16);
  try {
    k({.grid = {1}, .backend = Backend::GPU}, x, y, out, 16, 16);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("no CUDA driver"));
  }
}

} // namespace
