// CompositeOpsTest.cpp - tl::clamp, sigmoid, softmax, umulhi, cdiv, join,
// split, interleave, cat, sort and flip against host references, in the interpreter, the simulator and on the GPU when
// there is one; their mistakes at the user's line.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <bit>
#include <cstring>

using namespace tegula;
using tegula::testing::backendsWithTheGpu;
using tegula::testing::errorOf;
using tegula::testing::random_vector;
using tegula::testing::rng;

namespace {

void composites(tl::ptr<float> x, tl::ptr<float> clamped, tl::ptr<float> sig, tl::ptr<float> rows,
                tl::ptr<float> cols, tl::ptr<float> flat, tl::ptr<int32_t> a, tl::ptr<int32_t> b,
                tl::ptr<int32_t> hi, tl::ptr<int32_t> up) {
  tl::tensor r = tl::arange(0, 8), c = tl::arange(0, 16);
  tl::tensor at = r.expand_dims(1) * 16 + c.expand_dims(0);
  tl::tensor v = tl::load(x + at);
  tl::store(clamped + at, tl::clamp(v, -0.5f, 0.75f));
  tl::store(sig + at, tl::sigmoid(v));
  tl::store(rows + at, tl::softmax(v * 4.0f, 1));
  tl::store(cols + at, tl::softmax(v * 4.0f, 0));
  tl::store(flat + c, tl::softmax(tl::load(x + c), 0));
  tl::tensor i = tl::arange(0, 128);
  tl::tensor av = tl::load(a + i), bv = tl::load(b + i);
  tl::store(hi + i, tl::umulhi(av, bv));
  tl::store(up + i, tl::cdiv((av & 0xffff) + 1, (bv & 0xff) + 1));
}

TEST(CompositeOps, MatchHostReferences) {
  std::vector<float> x = random_vector<float>(128, -2, 2);
  x[3] = NAN; // clamp and sigmoid keep NaN
  std::vector<int32_t> a(128), b(128);
  for (int i = 0; i < 128; ++i)
    a[size_t(i)] = int32_t(rng()()), b[size_t(i)] = int32_t(rng()());
  a[0] = -1, b[0] = -1; // 0xffffffff^2: high word 0xfffffffe
  auto k = kernel("composites", composites);
  for (Backend backend : backendsWithTheGpu("clamp, sigmoid, softmax, umulhi, cdiv")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> clamped(128), sig(128), rows(128), cols(128), flat(16);
    std::vector<int32_t> hi(128), up(128);
    std::vector<float> xs = x;
    xs[3] = 0.25f; // softmax rows without the NaN
    k({.grid = {1}, .backend = backend}, xs, clamped, sig, rows, cols, flat, a, b, hi, up);
    std::vector<float> xn = x;
    std::vector<float> clampedN(128), sigN(128), rowsN(128), colsN(128), flatN(16);
    k({.grid = {1}, .backend = backend}, xn, clampedN, sigN, rowsN, colsN, flatN, a, b, hi, up);
    EXPECT_TRUE(std::isnan(clampedN[3]) && std::isnan(sigN[3])) << "NaN stays NaN";
    for (int i = 0; i < 128; ++i) {
      const float v = xs[size_t(i)];
      EXPECT_EQ(clamped[size_t(i)], std::min(std::max(v, -0.5f), 0.75f)) << i;
      EXPECT_NEAR(sig[size_t(i)], 1 / (1 + std::exp(-double(v))), 1e-6) << i;
      const uint64_t p = uint64_t(uint32_t(a[size_t(i)])) * uint32_t(b[size_t(i)]);
      EXPECT_EQ(uint32_t(hi[size_t(i)]), uint32_t(p >> 32)) << i;
      const int32_t num = (a[size_t(i)] & 0xffff) + 1, den = (b[size_t(i)] & 0xff) + 1;
      EXPECT_EQ(up[size_t(i)], (num + den - 1) / den) << i;
    }
    for (int r = 0; r < 8; ++r) { // softmax along rows (axis 1) and columns (axis 0)
      double sum = 0;
      for (int c = 0; c < 16; ++c)
        sum += std::exp(4.0 * xs[size_t(r * 16 + c)]);
      for (int c = 0; c < 16; ++c)
        EXPECT_NEAR(rows[size_t(r * 16 + c)], std::exp(4.0 * xs[size_t(r * 16 + c)]) / sum, 1e-6);
    }
    for (int c = 0; c < 16; ++c) {
      double sum = 0, flatSum = 0;
      for (int r = 0; r < 8; ++r)
        sum += std::exp(4.0 * xs[size_t(r * 16 + c)]);
      for (int j = 0; j < 16; ++j)
        flatSum += std::exp(double(xs[size_t(j)]));
      for (int r = 0; r < 8; ++r)
        EXPECT_NEAR(cols[size_t(r * 16 + c)], std::exp(4.0 * xs[size_t(r * 16 + c)]) / sum, 1e-6);
      EXPECT_NEAR(flat[size_t(c)], std::exp(double(xs[size_t(c)])) / flatSum, 1e-6);
    }
  }
}

// join / split / interleave / cat move values exactly: -0.0, NaN and
// infinities come back bit for bit (f32), and i8 too.
void pairs(tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> joined, tl::ptr<float> first, tl::ptr<float> second,
           tl::ptr<float> woven, tl::ptr<float> stacked, tl::ptr<int8_t> bytes, tl::ptr<int8_t> bytesWoven,
           tl::ptr<float> scalars) {
  tl::tensor r = tl::arange(0, 4), c = tl::arange(0, 32);
  tl::tensor at = r.expand_dims(1) * 32 + c.expand_dims(0);
  tl::tensor a = tl::load(x + at), b = tl::load(y + at);
  tl::tensor j = tl::join(a, b); // [4, 32, 2]
  tl::store(joined + at.expand_dims(2) * 2 + tl::arange(0, 2).expand_dims(0).expand_dims(0), j);
  auto [p, q] = tl::split(j);
  tl::store(first + at, q); // swapped on purpose: split's halves come back in order
  tl::store(second + at, p);
  tl::tensor w = tl::interleave(a, b); // [4, 64]
  tl::store(woven + r.expand_dims(1) * 64 + tl::arange(0, 64).expand_dims(0), w);
  tl::tensor s = tl::cat(a, b); // [8, 32]
  tl::store(stacked + tl::arange(0, 8).expand_dims(1) * 32 + c.expand_dims(0), s);
  tl::tensor i8 = tl::load(bytes + c);
  tl::store(bytesWoven + tl::arange(0, 64), tl::interleave(i8, i8 + 1));
  // Two scalars: a [2] tile, and split back to scalars.
  auto [s0, s1] = tl::split(tl::join(tl::load(x), tl::load(y)));
  tl::store(scalars, s1);
  tl::store(scalars + 1, s0);
}

TEST(CompositeOps, JoinSplitInterleaveAndCatMoveValuesExactly) {
  std::vector<float> x = random_vector<float>(128), y = random_vector<float>(128);
  x[1] = -0.0f, x[2] = NAN, y[3] = INFINITY, y[4] = -INFINITY;
  std::vector<int8_t> bytes(32);
  for (int i = 0; i < 32; ++i)
    bytes[size_t(i)] = int8_t(i * 7 - 100);
  auto bitsOf = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  auto k = kernel("pairs", pairs);
  for (Backend backend : backendsWithTheGpu("join, split, interleave, cat")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> joined(256), first(128), second(128), woven(256), stacked(256), scalars(2);
    std::vector<int8_t> bytesWoven(64);
    k({.grid = {1}, .backend = backend}, x, y, joined, first, second, woven, stacked, bytes, bytesWoven, scalars);
    for (int e = 0; e < 128; ++e) {
      const int row = e / 32, col = e % 32;
      EXPECT_EQ(bitsOf(joined[size_t(2 * e)]), bitsOf(x[size_t(e)])) << e;
      EXPECT_EQ(bitsOf(joined[size_t(2 * e + 1)]), bitsOf(y[size_t(e)])) << e;
      EXPECT_EQ(bitsOf(first[size_t(e)]), bitsOf(y[size_t(e)])) << e;
      EXPECT_EQ(bitsOf(second[size_t(e)]), bitsOf(x[size_t(e)])) << e;
      EXPECT_EQ(bitsOf(woven[size_t(row * 64 + 2 * col)]), bitsOf(x[size_t(e)])) << e;
      EXPECT_EQ(bitsOf(woven[size_t(row * 64 + 2 * col + 1)]), bitsOf(y[size_t(e)])) << e;
      EXPECT_EQ(bitsOf(stacked[size_t(e)]), bitsOf(x[size_t(e)])) << e;
      EXPECT_EQ(bitsOf(stacked[size_t(128 + e)]), bitsOf(y[size_t(e)])) << e;
    }
    for (int i = 0; i < 32; ++i) {
      EXPECT_EQ(bytesWoven[size_t(2 * i)], bytes[size_t(i)]) << i;
      EXPECT_EQ(bytesWoven[size_t(2 * i + 1)], int8_t(bytes[size_t(i)] + 1)) << i;
    }
    EXPECT_EQ(scalars[0], y[0]);
    EXPECT_EQ(bitsOf(scalars[1]), bitsOf(x[0]));
  }
}

void sorts(tl::ptr<float> x, tl::ptr<float> up, tl::ptr<float> down, tl::ptr<int32_t> n, tl::ptr<int32_t> nUp) {
  tl::tensor r = tl::arange(0, 4), c = tl::arange(0, 64);
  tl::tensor at = r.expand_dims(1) * 64 + c.expand_dims(0);
  tl::tensor v = tl::load(x + at);
  tl::store(up + at, tl::sort(v));
  tl::store(down + at, tl::sort(v, 1, /*descending=*/true));
  tl::tensor i = tl::arange(0, 128);
  tl::store(nUp + i, tl::sort(tl::load(n + i)));
}

TEST(CompositeOps, SortOrdersEachRow) {
  std::vector<float> x = random_vector<float>(256);
  for (int e = 0; e < 256; e += 9)
    x[size_t(e)] = 0.5f; // repeats
  x[7] = INFINITY, x[70] = -INFINITY;
  // NaN is above every number (as torch sorts): last rising, first falling;
  // the numbers around it stay in order.
  x[2 * 64 + 40] = NAN;
  x[3 * 64 + 3] = NAN, x[3 * 64 + 50] = NAN;
  auto bits = [](const std::vector<float> &v) {
    std::vector<uint32_t> b(v.size());
    for (size_t e = 0; e < v.size(); ++e)
      b[e] = std::bit_cast<uint32_t>(v[e]);
    return b;
  };
  auto nanLast = [](float a, float b) { return !std::isnan(a) && (std::isnan(b) || a < b); };
  std::vector<int32_t> n(128);
  for (int e = 0; e < 128; ++e)
    n[size_t(e)] = int32_t(rng()() % 50) - 25;
  auto k = kernel("sorts", sorts);
  for (Backend backend : backendsWithTheGpu("sort")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> up(256), down(256);
    std::vector<int32_t> nUp(128);
    k({.grid = {1}, .backend = backend}, x, up, down, n, nUp);
    for (int row = 0; row < 4; ++row) {
      std::vector<float> want(x.begin() + row * 64, x.begin() + row * 64 + 64);
      std::sort(want.begin(), want.end(), nanLast);
      EXPECT_EQ(bits(std::vector<float>(up.begin() + row * 64, up.begin() + row * 64 + 64)), bits(want))
          << "row " << row;
      std::reverse(want.begin(), want.end());
      EXPECT_EQ(bits(std::vector<float>(down.begin() + row * 64, down.begin() + row * 64 + 64)), bits(want))
          << "row " << row;
    }
    std::vector<int32_t> want = n;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(nUp, want);
  }
  for (const char *chip : {"sm_80", "sm_90a"}) { // through ptxas, where one is installed
    std::vector<float> up(256), down(256);
    std::vector<int32_t> nUp(128);
    const CompiledKernel c = k.compile({x, up, down, n, nUp}, {.chip = chip});
    if (!c.cubin.empty()) {
      std::printf("[ptxas] sorts %s: %d registers, %d B spilled\n", chip, c.registers, c.spill_bytes);
      EXPECT_EQ(c.spill_bytes, 0) << chip;
    }
  }
}

void flips(tl::ptr<float> x, tl::ptr<float> rowsFlipped, tl::ptr<float> colsFlipped, tl::ptr<int32_t> n,
           tl::ptr<int32_t> nFlipped) {
  tl::tensor r = tl::arange(0, 8), c = tl::arange(0, 32);
  tl::tensor at = r.expand_dims(1) * 32 + c.expand_dims(0);
  tl::tensor v = tl::load(x + at);
  tl::store(rowsFlipped + at, tl::flip(v, 0));
  tl::store(colsFlipped + at, tl::flip(v, -1));
  tl::tensor i = tl::arange(0, 256);
  tl::store(nFlipped + i, tl::flip(tl::load(n + i), 0));
}

TEST(CompositeOps, FlipReversesOneDimension) {
  std::vector<float> x = random_vector<float>(256);
  std::vector<int32_t> n(256);
  for (auto &e : n)
    e = int32_t(rng()());
  auto k = kernel("flips", flips);
  for (Backend backend : backendsWithTheGpu("flip")) {
    SCOPED_TRACE(fmt::format("backend {}", int(backend)));
    std::vector<float> rows(256, NAN), cols(256, NAN);
    std::vector<int32_t> nFlipped(256);
    k({.grid = {1}, .backend = backend}, x, rows, cols, n, nFlipped);
    for (int row = 0; row < 8; ++row)
      for (int col = 0; col < 32; ++col) {
        ASSERT_EQ(rows[size_t(row * 32 + col)], x[size_t((7 - row) * 32 + col)]) << row << "," << col;
        ASSERT_EQ(cols[size_t(row * 32 + col)], x[size_t(row * 32 + 31 - col)]) << row << "," << col;
      }
    for (int e = 0; e < 256; ++e)
      ASSERT_EQ(nFlipped[size_t(e)], n[size_t(255 - e)]) << e;
  }
}

/// Triton's swizzle2d over a 7 x 5 grid in groups of 3 rows (the last has
/// one): tiles of i and j, and the program's own (i, j) as scalars.
void swizzled(tl::ptr<int32_t> tiles, tl::ptr<int32_t> scalars) {
  tl::tensor k = tl::arange(0, 64), in = k < 35;
  auto [i, j] = tl::swizzle2d(k / 5, k % 5, 7, 5, 3);
  tl::store(tiles + 2 * k, i, in);
  tl::store(tiles + 2 * k + 1, j, in);
  auto [si, sj] = tl::swizzle2d(tl::program_id(0), tl::program_id(1), tl::num_programs(0), tl::num_programs(1), 3);
  tl::tensor at = 2 * (tl::program_id(0) * 5 + tl::program_id(1));
  tl::store(scalars + at, si);
  tl::store(scalars + at + 1, sj);
  tl::store(scalars + 70 + at, tl::zeros_like(si) + tl::full_like(sj, 7));
}

TEST(CompositeOps, Swizzle2dWalksGroupsOfRowsColumnByColumn) {
  // Triton's definition, on the host.
  auto reference = [](int i, int j, int rows, int cols, int group) {
    const int ij = i * cols + j, size = group * cols, first = ij / size * group;
    const int height = std::min(rows - first, group), in = ij % size;
    return std::pair{first + in % height, in / height};
  };
  auto k = kernel("swizzled", swizzled);
  for (Backend backend : backendsWithTheGpu("swizzle2d")) {
    std::vector<int32_t> tiles(70, -1), scalars(140, -1);
    k({.grid = {7, 5}, .backend = backend}, tiles, scalars);
    std::vector<bool> seen(35, false);
    for (int i = 0; i < 7; ++i)
      for (int j = 0; j < 5; ++j) {
        const auto [wi, wj] = reference(i, j, 7, 5, 3);
        const size_t at = size_t(2 * (i * 5 + j));
        ASSERT_EQ(tiles[at], wi) << i << ", " << j;
        ASSERT_EQ(tiles[at + 1], wj) << i << ", " << j;
        ASSERT_EQ(scalars[at], wi) << i << ", " << j;
        ASSERT_EQ(scalars[at + 1], wj) << i << ", " << j;
        ASSERT_EQ(scalars[70 + at], 7) << "zeros_like + full_like";
        seen[size_t(wi * 5 + wj)] = true;
      }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; })) << "a permutation of the grid";
    // Column-major within a group: (0,0) (1,0) (2,0) (0,1) ... are visited first.
    EXPECT_EQ(tiles[2], 1);
    EXPECT_EQ(tiles[3], 0);
  }
}

void flipScalar(tl::ptr<float> o) {
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::flip(tl::load(o), 0));
}
void flipBadDim(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::flip(v, 1));
}

void joinMismatch(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::split(tl::join(v, v.to(tl::f16)).to(tl::f32)).first);
}
void sortPointers(tl::ptr<float> o) {
  tl::tensor p = o + tl::arange(0, 4);
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::load(tl::sort(p)));
}
void splitOddDimension(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::split(v).first);
}

void intSigmoid(tl::ptr<int32_t> o) {
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::sigmoid(tl::load(o)));
}
void floatUmulhi(tl::ptr<float> o) {
  tl::tensor v = tl::load(o + tl::arange(0, 4));
  FAILS_ON_NEXT_LINE();
  tl::store(o + tl::arange(0, 4), tl::umulhi(v, v).to(tl::f32));
}
void floatCdiv(tl::ptr<float> o) {
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::cdiv(tl::load(o), 2));
}

void floatSwizzle(tl::ptr<float> o) {
  FAILS_ON_NEXT_LINE();
  auto [i, j] = tl::swizzle2d(tl::load(o), 0, 4, 4, 2);
  tl::store(o, i.to(tl::f32) + j.to(tl::f32));
}
void pointerZeros(tl::ptr<float> o) {
  tl::tensor p = o + tl::arange(0, 4);
  FAILS_ON_NEXT_LINE();
  tl::store(p, tl::zeros_like(p).to(tl::f32));
}

TEST(CompositeOps, MistakesAreNamedAtTheUsersLine) {
  std::vector<int32_t> i(4);
  std::vector<float> f(4);
  tegula::testing::expectAtMarkedLine(errorOf(kernel("int_sigmoid", intSigmoid), {i}), "CompositeOpsTest.cpp",
                                      "tl::sigmoid needs a floating-point tile, got i32");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("flip_scalar", flipScalar), {f}), "CompositeOpsTest.cpp",
                                      "tl::flip takes a tile, got a scalar");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("flip_bad_dim", flipBadDim), {f}), "CompositeOpsTest.cpp",
                                      "tl::flip: dim 1 is not a dimension of tensor<4xf32>");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("float_umulhi", floatUmulhi), {f}), "CompositeOpsTest.cpp",
                                      "tl::umulhi takes i32 tiles (unsigned words' bits), got tensor<4xf32>");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("float_cdiv", floatCdiv), {f}), "CompositeOpsTest.cpp",
                                      "tl::cdiv divides integers");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("join_mismatch", joinMismatch), {f}), "CompositeOpsTest.cpp",
                                      "tl::join takes two tiles of one shape and type, got tensor<4xf32> and "
                                      "tensor<4xf16>");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("split_odd", splitOddDimension), {f}), "CompositeOpsTest.cpp",
                                      "tl::split takes a tile whose last dimension is 2, got tensor<4xf32>");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("sort_pointers", sortPointers), {f}), "CompositeOpsTest.cpp",
                                      "tl::sort takes numbers or booleans, got");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("float_swizzle", floatSwizzle), {f}), "CompositeOpsTest.cpp",
                                      "tl::swizzle2d takes integers");
  tegula::testing::expectAtMarkedLine(errorOf(kernel("pointer_zeros", pointerZeros), {f}), "CompositeOpsTest.cpp",
                                      "tl::zeros_like needs a tile of numbers, got");
}

} // namespace
