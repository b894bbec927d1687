// HintsTest.cpp - tl::multiple_of and tl::max_contiguous: promises about
// offsets the axis analysis cannot prove (a start loaded from memory, a
// modulo) make the accesses through them 16-byte vectors; the kernels stay
// right on every backend; a false promise is an error at its line in the
// interpreter; malformed ones are refused when traced.
#include "ErrorTestUtil.h"
#include "F16GemmCheck.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace tegula;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using tegula::testing::backendsWithTheGpu;

namespace {

constexpr int kRow = 1024;
int g_startPromiseLine = 0, g_runPromiseLine = 0; // set while tracing: where errors must point

/// Copies row `pid` of a ragged array: its elements start at starts[pid]
/// (a multiple of 4 - or not, for the false promise), `lengths[pid]` long
/// (a multiple of 4: the mask is constant over each vector).
template <bool PROMISE>
void raggedCopy(tl::ptr<float> x, tl::ptr<float> y, tl::ptr<int32_t> starts, tl::ptr<int32_t> lengths) {
  tl::tensor start = tl::load(starts + tl::program_id(0)), length = tl::load(lengths + tl::program_id(0));
  if constexpr (PROMISE) {
    g_startPromiseLine = __LINE__ + 1;
    start = tl::multiple_of(start, 4);
    length = tl::multiple_of(length, 4);
  }
  tl::tensor i = tl::arange(0, kRow);
  tl::tensor mask = i < length;
  tl::store(y + start + i, tl::load(x + start + i, mask) * 2.0f, mask);
}

/// Triton's matmul-tutorial promise: offsets wrapped into [0, n) by a
/// modulo are still runs of BLOCK starting at multiples of BLOCK (true when
/// n is a multiple of BLOCK).
void wrappedScale(tl::ptr<float> x, tl::ptr<float> y, tl::scalar<int32_t> n) {
  tl::tensor offs = (tl::program_id(0) * 1024 + tl::arange(0, 1024)) % n;
  g_runPromiseLine = __LINE__ + 1;
  offs = tl::max_contiguous(tl::multiple_of(offs, 1024), 1024);
  tl::store(y + tl::program_id(0) * 1024 + tl::arange(0, 1024), tl::load(x + offs) + 1.0f);
}

} // namespace

TEST(Hints, APromisedLoadedStartMakesVectorsAndStaysRight) {
  const std::vector<int32_t> starts = {0, 1040, 2080, 4096}, lengths = {1024, 800, 4, 0};
  std::vector<float> x = tegula::testing::random_vector<float>(5200);
  auto promised = kernel("ragged_copy", raggedCopy<true>, {"x", "y", "starts", "lengths"});
  for (Backend backend : backendsWithTheGpu("tl::multiple_of")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<float> y(5200, -1.0f);
    promised({.grid = {4}, .backend = backend}, x, y, starts, lengths);
    for (size_t row = 0; row < starts.size(); ++row)
      for (int i = 0; i < kRow; ++i) {
        const size_t at = size_t(starts[row] + i);
        if (i < lengths[row])
          ASSERT_EQ(y[at], 2.0f * x[at]) << row << ", " << i;
        else if (at < y.size() && (row + 1 == starts.size() || int(at) < starts[row + 1]))
          ASSERT_EQ(y[at], -1.0f) << "masked off: " << row << ", " << i;
      }
  }
  // The promise is what makes the accesses 128-bit.
  std::vector<float> y(5200);
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    const std::string with = promised.compile({x, y, starts, lengths}, {.chip = chip, .assemble = false}).ptx;
    const std::string without = kernel("ragged_copy", raggedCopy<false>)
                                    .compile({x, y, starts, lengths}, {.chip = chip, .assemble = false})
                                    .ptx;
    EXPECT_THAT(with, AllOf(HasSubstr("ld.global.v4.b32"), HasSubstr("st.global.v4.b32")));
    EXPECT_THAT(without, AllOf(Not(HasSubstr("ld.global.v4")), Not(HasSubstr("st.global.v4"))));
  }
}

TEST(Hints, WrappedOffsetsPromisedContiguousAreVectorsAndStayRight) {
  const int n = 2048;
  std::vector<float> x = tegula::testing::random_vector<float>(size_t(n));
  auto k = kernel("wrapped_scale", wrappedScale, {"x", "y", "n"});
  for (Backend backend : backendsWithTheGpu("tl::max_contiguous")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<float> y = tegula::testing::poisoned<float>(3 * 1024);
    k({.grid = {3}, .backend = backend}, x, y, n);
    for (int i = 0; i < 3 * 1024; ++i)
      ASSERT_EQ(y[size_t(i)], x[size_t(i % n)] + 1.0f) << i;
  }
  std::vector<float> y(3 * 1024);
  EXPECT_THAT(k.compile({x, y, n}, {.chip = "sm_80", .assemble = false}).ptx, HasSubstr("ld.global.v4.b32"));
}

TEST(Hints, AFalsePromiseIsAnErrorAtItsLineInTheInterpreter) {
  std::vector<float> x(5200), y(5200);
  // A start of 6 is not a multiple of 4.
  const std::vector<int32_t> starts = {0, 6}, lengths = {4, 4};
  const std::string misaligned = tegula::testing::error_of(
      [&] { kernel("ragged_copy", raggedCopy<true>)({.grid = {2}}, x, y, starts, lengths); });
  EXPECT_THAT(misaligned, AllOf(HasSubstr("tl::multiple_of promised a multiple of 4, but the value is 6"),
                                HasSubstr(fmt::format("HintsTest.cpp:{}", g_startPromiseLine)),
                                HasSubstr("program (1, 0, 0)")));
  // n = 1000 wraps the offsets inside a run of 1024.
  const std::string wrapped = tegula::testing::error_of(
      [&] { kernel("wrapped_scale", wrappedScale)({.grid = {3}}, x, y, 1000); });
  EXPECT_THAT(wrapped, AllOf(HasSubstr("tl::max_contiguous promised runs of 1024 consecutive values along dimension "
                                       "0, but element 1000 (index [1000]) is 0 after 999"),
                             HasSubstr(fmt::format("HintsTest.cpp:{}", g_runPromiseLine))));
}

namespace {

/// Triton's matmul tutorial: rows and columns wrapped by a modulo (so the
/// last block rereads the first instead of masking), promised to be runs of
/// BM / BN from multiples of them - true when M and N are multiples.
template <bool HINTS>
void tutorial_matmul(tl::ptr<float16> a, tl::ptr<float16> b, tl::ptr<float> c, tl::scalar<int32_t> M,
                     tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN,
                     tl::constant<int> BK) {
  tl::tensor rm = (tl::program_id(0) * BM + tl::arange(0, BM)) % M;
  tl::tensor rn = (tl::program_id(1) * BN + tl::arange(0, BN)) % N;
  if constexpr (HINTS) {
    rm = tl::max_contiguous(tl::multiple_of(rm, BM.value), BM.value);
    rn = tl::max_contiguous(tl::multiple_of(rn, BN.value), BN.value);
  }
  tl::tensor rk = tl::arange(0, BK);
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  for (auto k : tl::range(0, K, BK.value, acc)) {
    tl::tensor ka = k + rk;
    tl::tensor at = tl::load(a + rm.expand_dims(1) * K + ka.expand_dims(0), ka.expand_dims(0) < K, 0.0f);
    tl::tensor bt = tl::load(b + ka.expand_dims(1) * N + rn.expand_dims(0), ka.expand_dims(1) < K, 0.0f);
    acc = tl::dot(at, bt, acc);
  }
  tl::tensor cm = tl::program_id(0) * BM + tl::arange(0, BM), cn = tl::program_id(1) * BN + tl::arange(0, BN);
  tl::store(c + cm.expand_dims(1) * N + cn.expand_dims(0), acc, (cm.expand_dims(1) < M) & (cn.expand_dims(0) < N));
}

} // namespace

TEST(Hints, TheMatmulTutorialsPromisesGiveItsLoads16Bytes) {
  auto hinted = kernel("tutorial_matmul", tutorial_matmul<true>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  tegula::testing::expectF16GemmOnEveryBackend(hinted, 128, 192, 96, 3);
  auto plain = kernel("tutorial_matmul", tutorial_matmul<false>, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  for (const char *chip : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(chip);
    const std::string with = tegula::testing::compileF16Gemm(hinted, 128, 192, 96, chip).ptx;
    const std::string without = tegula::testing::compileF16Gemm(plain, 128, 192, 96, chip).ptx;
    std::printf("[hints] %s: 16-byte cp.async with the promises %d, without %d\n", chip,
                int(with.find("cp.async.cg.shared.global") != std::string::npos),
                int(without.find("cp.async.cg.shared.global") != std::string::npos));
    EXPECT_THAT(with, HasSubstr("cp.async.cg.shared.global"));
    EXPECT_THAT(without, Not(HasSubstr("cp.async.cg.shared.global")));
  }
}

// ---- malformed promises, refused when traced -----------------------------

namespace {

void notAPowerOfTwo(tl::ptr<int32_t> o) {
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::multiple_of(tl::load(o), 12));
}
void ofFloats(tl::ptr<float> o) {
  tl::tensor i = tl::arange(0, 8);
  FAILS_ON_NEXT_LINE();
  tl::store(o + i, tl::multiple_of(tl::load(o + i), 4));
}
void tooManyValues(tl::ptr<int32_t> o) {
  tl::tensor i = tl::arange(0, 8);
  FAILS_ON_NEXT_LINE();
  tl::store(o + i, tl::max_contiguous(i, {8, 8}));
}
void runPastTheTile(tl::ptr<int32_t> o) {
  tl::tensor i = tl::arange(0, 8);
  FAILS_ON_NEXT_LINE();
  tl::store(o + i, tl::max_contiguous(i, 16));
}
void runsOfAScalar(tl::ptr<int32_t> o) {
  FAILS_ON_NEXT_LINE();
  tl::store(o, tl::max_contiguous(tl::load(o), 4));
}

} // namespace

TEST(Hints, MalformedPromisesAreNamedAtTheUsersLine) {
  using tegula::testing::errorOf;
  using tegula::testing::expectAtMarkedLine;
  std::vector<int32_t> i(8);
  std::vector<float> f(8);
  const std::string file = "HintsTest.cpp";
  expectAtMarkedLine(errorOf(kernel("k", notAPowerOfTwo), {i}), file, "tl::multiple_of's values are powers of two, got 12");
  expectAtMarkedLine(errorOf(kernel("k", ofFloats), {f}), file, "tl::multiple_of describes integer offsets, got f32");
  expectAtMarkedLine(errorOf(kernel("k", tooManyValues), {i}), file,
                     "tl::max_contiguous takes one value or one per dimension of tensor<8xi32>, got 2 values");
  expectAtMarkedLine(errorOf(kernel("k", runPastTheTile), {i}), file,
                     "tl::max_contiguous: a run of 16 along dimension 0 does not fit tensor<8xi32>");
  expectAtMarkedLine(errorOf(kernel("k", runsOfAScalar), {i}), file,
                     "tl::max_contiguous: a run of 4 along dimension 0 does not fit i32");
}
