// ScanTest.cpp - tl::cumsum, tl::cumprod and tl::associative_scan: running
// sums along either axis of a 2-D tile and along a 1-D one whose scan spans
// registers, lanes and warps; reversed; counting booleans; a product; a
// linear recurrence (a combine function that does not commute, of two tiles
// together) and a running maximum - against host references in the
// interpreter, the simulator (sm_80 and sm_90a code, 4 warps) and on the GPU
// when there is one; the PTX through ptxas; mistakes at the user's line.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>

#include <cmath>
#include <cstdint>

using namespace tegula;
using tegula::testing::errorOf;
using tegula::testing::random_vector;

namespace {

constexpr int R = 16, C = 128, N = 1024;

struct Outputs {
  std::vector<float> rowSums, colSums, rowSumsBack, colSumsBack, flatSums, rowProducts, recurrence, runningMax;
  std::vector<int32_t> counts;
  Outputs()
      : rowSums(R * C), colSums(R * C), rowSumsBack(R * C), colSumsBack(R * C), flatSums(N), rowProducts(R * C),
        recurrence(R * C), runningMax(R * C), counts(R * C, -1) {}
};

void scans(tl::ptr<float> x, tl::ptr<float> a, tl::ptr<float> rowSums, tl::ptr<float> colSums,
           tl::ptr<float> rowSumsBack, tl::ptr<float> colSumsBack, tl::ptr<float> flatSums,
           tl::ptr<float> rowProducts, tl::ptr<float> recurrence, tl::ptr<float> runningMax,
           tl::ptr<int32_t> counts) {
  tl::tensor r = tl::arange(0, R), c = tl::arange(0, C);
  tl::tensor at = r.expand_dims(1) * C + c.expand_dims(0);
  tl::tensor v = tl::load(x + at);
  tl::store(rowSums + at, tl::cumsum(v, 1));
  tl::store(colSums + at, tl::cumsum(v, 0));
  tl::store(rowSumsBack + at, tl::cumsum(v, 1, /*reverse=*/true));
  tl::store(colSumsBack + at, tl::cumsum(v, -2, /*reverse=*/true));
  tl::tensor i = tl::arange(0, N);
  tl::store(flatSums + i, tl::cumsum(tl::load(x + i)));
  tl::store(rowProducts + at, tl::cumprod(tl::load(a + at), 1));
  // h_t = a_t h_{t-1} + v_t along each row, as (a, v) pairs: the combine of
  // (a1, b1) then (a2, b2) is (a1 a2, b1 a2 + b2) - associative, not
  // commutative.
  auto affine = [](const std::vector<tl::tensor> &first, const std::vector<tl::tensor> &then) {
    return std::vector<tl::tensor>{first[0] * then[0], tl::fma(first[1], then[0], then[1])};
  };
  tl::store(recurrence + at, tl::associative_scan({tl::load(a + at), v}, 1, affine)[1]);
  tl::store(runningMax + at,
            tl::associative_scan(v, 0, [](tl::tensor p, tl::tensor q) { return tl::maximum(p, q); }));
  tl::store(counts + at, tl::cumsum(v > 0.0f, 1)); // i1 counts in i32
}

std::vector<Arg> argsOf(std::vector<float> &x, std::vector<float> &a, Outputs &o) {
  return {x, a, o.rowSums, o.colSums, o.rowSumsBack, o.colSumsBack, o.flatSums, o.rowProducts, o.recurrence,
          o.runningMax, o.counts};
}

TEST(Scan, RunningSumsProductsAndCombineFunctions) {
  std::vector<float> x = random_vector<float>(size_t(R * C)), a = random_vector<float>(size_t(R * C), 0.9f, 1.1f);
  auto k = kernel("scans", scans);
  struct Run {
    Backend backend;
    const char *chip;
  };
  std::vector<Run> runs = {{Backend::Interp, "sm_80"}, {Backend::Sim, "sm_80"}, {Backend::Sim, "sm_90a"}};
  if (gpu_available())
    runs.push_back({Backend::GPU, nullptr});
  else
    std::printf("[tegula test] no CUDA driver: scans checked in the interpreter and simulator only\n");
  auto X = [&](int i, int j) { return double(x[size_t(i * C + j)]); };
  auto A = [&](int i, int j) { return double(a[size_t(i * C + j)]); };
  for (const Run &run : runs) {
    SCOPED_TRACE(fmt::format("backend {} {}", int(run.backend), run.chip ? run.chip : "this GPU"));
    Outputs o;
    LaunchOptions opts{.grid = {1}, .num_warps = 4, .backend = run.backend};
    if (run.chip)
      opts.chip = run.chip;
    k.launch(opts, argsOf(x, a, o));
    for (int i = 0; i < R; ++i) {
      double sum = 0, back = 0, product = 1, h = 0;
      int count = 0;
      for (int j = 0; j < C; ++j) {
        const size_t e = size_t(i * C + j), eb = size_t(i * C + C - 1 - j);
        sum += X(i, j), back += X(i, C - 1 - j), product *= A(i, j), h = A(i, j) * h + X(i, j);
        count += X(i, j) > 0;
        ASSERT_NEAR(o.rowSums[e], sum, 1e-5 * (1 + std::abs(sum))) << i << "," << j;
        ASSERT_NEAR(o.rowSumsBack[eb], back, 1e-5 * (1 + std::abs(back))) << i << "," << C - 1 - j;
        ASSERT_NEAR(o.rowProducts[e], product, 1e-5 * std::abs(product)) << i << "," << j;
        ASSERT_NEAR(o.recurrence[e], h, 1e-5 * (1 + std::abs(h))) << i << "," << j;
        ASSERT_EQ(o.counts[e], count) << i << "," << j;
      }
    }
    for (int j = 0; j < C; ++j) {
      double sum = 0, back = 0, best = -INFINITY;
      for (int i = 0; i < R; ++i) {
        sum += X(i, j), back += X(R - 1 - i, j), best = std::max(best, X(i, j));
        ASSERT_NEAR(o.colSums[size_t(i * C + j)], sum, 1e-5 * (1 + std::abs(sum))) << i << "," << j;
        ASSERT_NEAR(o.colSumsBack[size_t((R - 1 - i) * C + j)], back, 1e-5 * (1 + std::abs(back)))
            << R - 1 - i << "," << j;
        ASSERT_EQ(o.runningMax[size_t(i * C + j)], float(best)) << i << "," << j;
      }
    }
    double sum = 0;
    for (int e = 0; e < N; ++e) {
      sum += double(x[size_t(e)]);
      ASSERT_NEAR(o.flatSums[size_t(e)], sum, 1e-4 * (1 + std::abs(sum))) << e;
    }
  }
  // The GPU code through ptxas (where one is installed): lanes exchange
  // with indexed shuffles, warps through shared memory.
  for (const char *chip : {"sm_80", "sm_90a"}) {
    Outputs o;
    const CompiledKernel c = k.compile(argsOf(x, a, o), {.chip = chip, .num_warps = 4});
    EXPECT_NE(c.ptx.find("shfl.sync.idx"), std::string::npos) << chip;
    EXPECT_NE(c.ptx.find("bar.sync"), std::string::npos) << chip << ": no scan across the warps";
    if (!c.cubin.empty())
      EXPECT_EQ(c.spill_bytes, 0) << chip;
  }
}

// Small tiles (fewer elements than lanes: copies of each element) and other
// element types: bf16 sums in f32, i32 products, a reversed 1-D scan.
void small_scans(tl::ptr<bfloat16> x, tl::ptr<float> sums, tl::ptr<int32_t> n, tl::ptr<int32_t> products,
                 tl::ptr<float> back) {
  tl::tensor i = tl::arange(0, 8);
  tl::store(sums + i, tl::cumsum(tl::load(x + i)));
  tl::store(products + i, tl::cumprod(tl::load(n + i), 0));
  tl::store(back + i, tl::cumsum(tl::load(x + i).to(tl::f32), 0, true));
}

TEST(Scan, SmallTilesAndOtherTypes) {
  std::vector<bfloat16> x(8);
  std::vector<int32_t> n = {1, 2, -3, 1, 2, 2, -1, 3};
  for (int e = 0; e < 8; ++e)
    x[size_t(e)] = bfloat16(0.5f * float(e) - 1.0f);
  auto k = kernel("small_scans", small_scans);
  for (Backend backend : tegula::testing::backendsWithTheGpu("small scans")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> sums(8), back(8);
    std::vector<int32_t> products(8);
    k({.grid = {1}, .num_warps = 2, .backend = backend}, x, sums, n, products, back);
    float s = 0, b = 0;
    int32_t p = 1;
    for (int e = 0; e < 8; ++e) {
      s += float(x[size_t(e)]), p *= n[size_t(e)], b += float(x[size_t(7 - e)]);
      EXPECT_EQ(sums[size_t(e)], s) << e;
      EXPECT_EQ(products[size_t(e)], p) << e;
      EXPECT_EQ(back[size_t(7 - e)], b) << 7 - e;
    }
  }
}

void scansAPointer(tl::ptr<float> o) {
  tl::tensor p = o + tl::arange(0, 4);
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::load(tl::cumsum(p)));
}
void scanAxisOutOfRange(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::cumprod(v, 1));
}
void scanCombineReturnsATile(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::associative_scan(v, 0, [](tl::tensor a, tl::tensor) { return tl::zeros({4}, tl::f32) + a; }));
}
void scanCombineCaptures(tl::ptr<float> o, tl::scalar<float> scale) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::associative_scan(v, 0, [&](tl::tensor a, tl::tensor b) { return a + b * scale; }));
}

TEST(Scan, MistakesAreNamedAtTheUsersLine) {
  using tegula::testing::expectAtMarkedLine;
  std::vector<float> f(4);
  expectAtMarkedLine(errorOf(kernel("scans_a_pointer", scansAPointer), {f}), "ScanTest.cpp",
                     "tl::cumsum is not defined for pointers");
  expectAtMarkedLine(errorOf(kernel("axis_out_of_range", scanAxisOutOfRange), {f}), "ScanTest.cpp",
                     "tl::cumprod axis 1 is out of range for a [4] tile");
  expectAtMarkedLine(errorOf(kernel("returns_a_tile", scanCombineReturnsATile), {f}), "ScanTest.cpp",
                     "tl::associative_scan: the combine function returned a [4] tile where a scalar was due");
  expectAtMarkedLine(errorOf(kernel("captures", scanCombineCaptures), {f, 2.0f}), "ScanTest.cpp",
                     "tl::associative_scan: the combine function uses a value from outside it");
}

} // namespace
