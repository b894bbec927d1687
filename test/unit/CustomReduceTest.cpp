// CustomReduceTest.cpp - tl::reduce with a combine function of the user's:
// a product along either axis, a largest magnitude to a scalar, and a value
// and its index reduced together, against host references in the
// interpreter, the simulator (4 warps: the lanes' butterflies and the warps'
// shared-memory step both run the combiner) and on the GPU when there is
// one; its mistakes at the user's line.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>

#include <cmath>
#include <cstdint>

using namespace tegula;
using tegula::testing::backendsWithTheGpu;
using tegula::testing::errorOf;
using tegula::testing::random_vector;

namespace {

constexpr int R = 16, C = 128;

/// Rows' and columns' products, the largest |x|, and each row's largest
/// value with the smallest index among equals (as (value, index) pairs).
void custom_reductions(tl::ptr<float> x, tl::ptr<float> rowProducts, tl::ptr<float> colProducts,
                       tl::ptr<float> largest, tl::ptr<float> rowMax, tl::ptr<int32_t> rowArg,
                       tl::ptr<int32_t> colArg, tl::ptr<int32_t> rowZero) {
  tl::tensor r = tl::arange(0, R), c = tl::arange(0, C);
  tl::tensor v = tl::load(x + r.expand_dims(1) * C + c.expand_dims(0));
  auto times = [](tl::tensor a, tl::tensor b) { return a * b; };
  tl::store(rowProducts + r, tl::reduce(v, 1, times));
  tl::store(colProducts + c, tl::reduce(v, 0, times));
  tl::tensor flat = tl::load(x + tl::arange(0, C));
  tl::store(largest, tl::reduce(flat, 0, [](tl::tensor a, tl::tensor b) { return tl::maximum(tl::abs(a), tl::abs(b)); }));
  auto largerFirst = [](const std::vector<tl::tensor> &acc, const std::vector<tl::tensor> &next) {
    tl::tensor takeNext = (next[0] > acc[0]) | ((next[0] == acc[0]) & (next[1] < acc[1]));
    return std::vector<tl::tensor>{tl::where(takeNext, next[0], acc[0]), tl::where(takeNext, next[1], acc[1])};
  };
  std::vector<tl::tensor> best = tl::reduce({v, c.expand_dims(0) + tl::zeros({R, C}, tl::i32)}, 1, largerFirst);
  tl::store(rowMax + r, best[0]);
  tl::store(rowArg + r, best[1]);
  // Down the columns: across the warps too.
  tl::store(colArg + c, tl::reduce({v, r.expand_dims(1) + tl::zeros({R, C}, tl::i32)}, 0, largerFirst)[1]);
  // A returned value that folds to a literal (canonicalization moves the
  // constant out of the combiner): every row's second result is 0.
  std::vector<tl::tensor> folded = tl::reduce(
      {v, c.expand_dims(0) + tl::zeros({R, C}, tl::i32)}, 1,
      [](const std::vector<tl::tensor> &acc, const std::vector<tl::tensor> &next) {
        return std::vector<tl::tensor>{acc[0] + next[0], acc[1] * 0};
      });
  tl::store(rowZero + r, folded[1]);
}

TEST(CustomReduce, CombineFunctionsOfTheUsers) {
  // Values near 1 keep the 128-long products finite; a few repeats give the
  // (value, index) reduction ties to break.
  std::vector<float> x = random_vector<float>(size_t(R * C), 0.9f, 1.1f);
  for (int i = 0; i < R; ++i)
    x[size_t(i * C + 7)] = x[size_t(i * C + 90)] = 1.25f; // row i's largest, twice
  x[5] = -3.0f;                                           // the largest magnitude, negative
  auto k = kernel("custom_reductions", custom_reductions);
  for (Backend backend : backendsWithTheGpu("tl::reduce with a combine function")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> rowProducts(R), colProducts(C), largest(1), rowMax(R);
    std::vector<int32_t> rowArg(R, -1), colArg(C, -1), rowZero(R, -1);
    k({.grid = {1}, .num_warps = 4, .backend = backend}, x, rowProducts, colProducts, largest, rowMax, rowArg,
      colArg, rowZero);
    EXPECT_EQ(rowZero, std::vector<int32_t>(R, 0));
    for (int i = 0; i < R; ++i) {
      double p = 1;
      for (int j = 0; j < C; ++j)
        p *= x[size_t(i * C + j)];
      EXPECT_NEAR(rowProducts[size_t(i)], p, 1e-5 * std::abs(p)) << "row " << i;
      EXPECT_EQ(rowMax[size_t(i)], 1.25f) << "row " << i;
      EXPECT_EQ(rowArg[size_t(i)], 7) << "row " << i << ": the smaller of two equal maxima's indices";
    }
    for (int j = 0; j < C; ++j) {
      double p = 1;
      int arg = 0;
      for (int i = 0; i < R; ++i) {
        p *= x[size_t(i * C + j)];
        arg = x[size_t(i * C + j)] > x[size_t(arg * C + j)] ? i : arg;
      }
      EXPECT_NEAR(colProducts[size_t(j)], p, 1e-5 * std::abs(p)) << "column " << j;
      EXPECT_EQ(colArg[size_t(j)], arg) << "column " << j;
    }
    EXPECT_EQ(largest[0], 3.0f);
  }
  // The GPU code through ptxas, where one is installed.
  for (const char *chip : {"sm_80", "sm_90a"}) {
    const CompiledKernel c = k.compile({x, std::vector<float>(R), std::vector<float>(C), std::vector<float>(1),
                                        std::vector<float>(R), std::vector<int32_t>(R), std::vector<int32_t>(C),
                                        std::vector<int32_t>(R)},
                                       {.chip = chip, .num_warps = 4});
    EXPECT_NE(c.ptx.find("shfl.sync.bfly"), std::string::npos) << chip;
    EXPECT_NE(c.ptx.find("bar.sync"), std::string::npos) << chip << ": no reduction across the warps";
    EXPECT_NE(c.ptx.find("mul.rn.f32"), std::string::npos) << chip << ": the combiner's product";
  }
}

/// Each column's largest value and its smallest row among equals, over a
/// [64, 8] tile: at 4 warps its rows run over 16 lanes and the warps, so
/// the lanes split each thread's columns between them before the warps'
/// shared-memory step (the reduce-scatter), then a butterfly finishes.
void column_argmax(tl::ptr<float> x, tl::ptr<float> colMax, tl::ptr<int32_t> colArg) {
  tl::tensor r = tl::arange(0, 64), c = tl::arange(0, 8);
  tl::tensor v = tl::load(x + r.expand_dims(1) * 8 + c.expand_dims(0));
  auto largerFirst = [](const std::vector<tl::tensor> &acc, const std::vector<tl::tensor> &next) {
    tl::tensor takeNext = (next[0] > acc[0]) | ((next[0] == acc[0]) & (next[1] < acc[1]));
    return std::vector<tl::tensor>{tl::where(takeNext, next[0], acc[0]), tl::where(takeNext, next[1], acc[1])};
  };
  std::vector<tl::tensor> best = tl::reduce({v, r.expand_dims(1) + tl::zeros({64, 8}, tl::i32)}, 0, largerFirst);
  tl::store(colMax + c, best[0]);
  tl::store(colArg + c, best[1]);
}

TEST(CustomReduce, ColumnArgmaxAcrossLanesAndWarps) {
  std::vector<float> x = random_vector<float>(64 * 8, -1.0f, 1.0f);
  for (int j = 0; j < 8; ++j) // column j's largest, twice: rows 9 j and 63 - 2 j
    x[size_t((9 * j % 64) * 8 + j)] = x[size_t((63 - 2 * j) * 8 + j)] = 2.0f + float(j);
  auto k = kernel("column_argmax", column_argmax);
  for (Backend backend : backendsWithTheGpu("a column argmax")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> colMax(8);
    std::vector<int32_t> colArg(8, -1);
    k({.grid = {1}, .num_warps = 4, .backend = backend}, x, colMax, colArg);
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(colMax[size_t(j)], 2.0f + float(j)) << "column " << j;
      EXPECT_EQ(colArg[size_t(j)], std::min(9 * j % 64, 63 - 2 * j)) << "column " << j;
    }
  }
}

void returnsATile(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::reduce(v, 0, [](tl::tensor a, tl::tensor) { return tl::zeros({4}, tl::f32) + a; }));
}
void loadsInside(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::reduce(v, 0, [&](tl::tensor a, tl::tensor b) { return a + b + tl::load(o); }));
}
void capturesAValue(tl::ptr<float> o, tl::scalar<float> scale) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::reduce(v, 0, [&](tl::tensor a, tl::tensor b) { return (a + b) * scale; }));
}
void returnsAValueFromOutside(tl::ptr<float> o, tl::scalar<float> scale) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::reduce(v, 0, [&](tl::tensor, tl::tensor) { return scale; }));
}
void loopsInside(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  auto repeated = [](tl::tensor a, tl::tensor b) {
    for (auto i : tl::range(0, 2, 1, a))
      a = a + b;
    return a;
  };
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::reduce(v, 0, repeated));
}
void returnsAnotherType(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::reduce(v, 0, [](tl::tensor a, tl::tensor b) { return (a + b).to(tl::f64); }).to(tl::f32));
}
void returnsTooFew(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  auto first = [](const std::vector<tl::tensor> &a, const std::vector<tl::tensor> &) { return std::vector{a[0]}; };
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::reduce({v, v}, 0, first)[0]);
}
void shapesDiffer(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4)), w = tl::load(o + tl::arange(0, 2));
  auto both = [](const std::vector<tl::tensor> &a, const std::vector<tl::tensor> &) { return a; };
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::reduce({v, w}, 0, both)[0]);
}

TEST(CustomReduce, MistakesAreNamedAtTheUsersLine) {
  using tegula::testing::expectAtMarkedLine;
  std::vector<float> f(4);
  expectAtMarkedLine(errorOf(kernel("returns_a_tile", returnsATile), {f}), "CustomReduceTest.cpp",
                     "tl::reduce: the combine function returned a [4] tile where a scalar was due");
  expectAtMarkedLine(errorOf(kernel("loads_inside", loadsInside), {f}), "CustomReduceTest.cpp",
                     "tl::reduce: the combine function may use only elementwise operations on its arguments");
  expectAtMarkedLine(errorOf(kernel("captures_a_value", capturesAValue), {f, 2.0f}), "CustomReduceTest.cpp",
                     "tl::reduce: the combine function uses a value from outside it");
  expectAtMarkedLine(errorOf(kernel("returns_a_value_from_outside", returnsAValueFromOutside), {f, 2.0f}),
                     "CustomReduceTest.cpp", "tl::reduce: the combine function uses a value from outside it");
  expectAtMarkedLine(errorOf(kernel("loops_inside", loopsInside), {f}), "CustomReduceTest.cpp",
                     "tl::reduce: the combine function may use only elementwise operations on its arguments, not "
                     "'scf.for'");
  expectAtMarkedLine(errorOf(kernel("returns_another_type", returnsAnotherType), {f}), "CustomReduceTest.cpp",
                     "tl::reduce: the combine function returned f64 for tile 0 of f32");
  expectAtMarkedLine(errorOf(kernel("returns_too_few", returnsTooFew), {f}), "CustomReduceTest.cpp",
                     "tl::reduce: the combine function returned 1 value for 2 tiles");
  expectAtMarkedLine(errorOf(kernel("shapes_differ", shapesDiffer), {f}), "CustomReduceTest.cpp",
                     "tl::reduce: tile 1 has shape [2], tile 0 [4]");
}

} // namespace

// ---- keep_dims and reductions over every element ---------------------------

namespace {

/// Softmax of each row written with keep_dims (Triton's spelling), a
/// custom reduction and argmax kept as columns, and reductions over every
/// element of the tile (Triton's axis=None), including a 1-D tile kept as [1].
void kept_reductions(tl::ptr<float> x, tl::ptr<float> softmax, tl::ptr<float> rowProducts, tl::ptr<int32_t> colArg,
                     tl::ptr<float> total, tl::ptr<float> largest, tl::ptr<int32_t> where, tl::ptr<float> rowSum1) {
  tl::tensor r = tl::arange(0, R), c = tl::arange(0, C);
  tl::tensor at = r.expand_dims(1) * C + c.expand_dims(0);
  tl::tensor v = tl::load(x + at);
  tl::tensor e = tl::exp(v - tl::max(v, 1, true));
  tl::store(softmax + at, e / tl::sum(e, -1, /*keep_dims=*/true));
  tl::tensor products = tl::reduce(v, 1, [](tl::tensor a, tl::tensor b) { return a * b; }, true); // [R, 1]
  tl::store(rowProducts + r.expand_dims(1), products);
  tl::store(colArg + c.expand_dims(0), tl::argmax(v, 0, true)); // [1, C]
  tl::store(total, tl::sum(v));
  tl::store(largest, tl::max(v));
  tl::store(where, tl::argmax(v));
  tl::store(rowSum1 + tl::arange(0, 1), tl::sum(tl::load(x + c), 0, true)); // a 1-D tile's sum kept: [1]
}

} // namespace

TEST(CustomReduce, KeepDimsAndReductionsOverEveryElement) {
  std::vector<float> x = random_vector<float>(size_t(R) * C, -2, 2);
  auto k = kernel("kept_reductions", kept_reductions);
  for (Backend backend : backendsWithTheGpu("keep_dims")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> softmax(size_t(R) * C, NAN), products(R, NAN), total(1, NAN), largest(1, NAN), rowSum1(1, NAN);
    std::vector<int32_t> colArg(C, -1), where(1, -1);
    k({.grid = {1}, .backend = backend}, x, softmax, products, colArg, total, largest, where, rowSum1);
    double all = 0, best = -INFINITY;
    int bestAt = -1;
    for (int i = 0; i < R; ++i) {
      double m = -INFINITY, s = 0, p = 1;
      for (int j = 0; j < C; ++j)
        m = std::max(m, double(x[size_t(i * C + j)]));
      for (int j = 0; j < C; ++j)
        s += std::exp(double(x[size_t(i * C + j)]) - m), p *= x[size_t(i * C + j)];
      for (int j = 0; j < C; ++j)
        EXPECT_NEAR(softmax[size_t(i * C + j)], std::exp(double(x[size_t(i * C + j)]) - m) / s, 1e-6) << i << "," << j;
      EXPECT_NEAR(products[size_t(i)], p, std::abs(p) * 1e-4 + 1e-30) << i;
    }
    for (int j = 0; j < C; ++j) {
      int arg = 0;
      for (int i = 1; i < R; ++i)
        if (x[size_t(i * C + j)] > x[size_t(arg * C + j)])
          arg = i;
      EXPECT_EQ(colArg[size_t(j)], arg) << j;
    }
    for (int i = 0; i < R * C; ++i) {
      all += x[size_t(i)];
      if (x[size_t(i)] > best)
        best = x[size_t(i)], bestAt = i;
    }
    EXPECT_NEAR(total[0], all, 1e-3);
    EXPECT_EQ(largest[0], float(best));
    EXPECT_EQ(where[0], bestAt);
    double first = 0;
    for (int j = 0; j < C; ++j)
      first += x[size_t(j)];
    EXPECT_NEAR(rowSum1[0], first, 1e-4);
  }
}
