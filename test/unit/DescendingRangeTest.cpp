// DescendingRangeTest.cpp - tl::range with a literal negative step counts
// down as Python's range does (traced as an ascending scf.for over -i): the
// order of the visits, empty loops, runtime bounds (down to INT32_MIN,
// where the counter is i64), and a GEMM whose K loop
// runs backwards through the software pipeliner on sm_80 and sm_90a.
#include "ErrorTestUtil.h"
#include "F16GemmCheck.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace tegula;
using tegula::testing::backendsWithTheGpu;
using ::testing::HasSubstr;

namespace {

/// Each loop writes the indices it visits, in order, into its own 16-slot
/// row of `out` (the count carried), and the count into `counts`.
void visits(tl::ptr<int32_t> out, tl::ptr<int32_t> counts, tl::scalar<int32_t> n, tl::scalar<int32_t> lo,
            tl::scalar<int32_t> hi) {
  tl::tensor count = tl::full({}, 0, tl::i32);
  for (auto i : tl::range(n - 1, -1, -1, count)) { // n-1 ... 0
    tl::store(out + count, i);
    count = count + 1;
  }
  tl::store(counts, count);
  count = tl::full({}, 0, tl::i32);
  for (auto i : tl::range(10, 0, -3, count)) { // 10 7 4 1
    tl::store(out + 16 + count, i);
    count = count + 1;
  }
  tl::store(counts + 1, count);
  count = tl::full({}, 0, tl::i32);
  for (auto i : tl::range(lo, hi, -4, count)) { // runtime bounds; none when lo <= hi
    tl::store(out + 32 + count, i);
    count = count + 1;
  }
  tl::store(counts + 2, count);
  count = tl::full({}, 0, tl::i64);
  for (auto i : tl::range(5000000002LL, 4999999999LL, -1, count)) { // i64 bounds
    tl::store(out + 48 + count, (i - 5000000000LL).to(tl::i32));
    count = count + 1;
  }
  tl::store(counts + 3, count.to(tl::i32));
}

TEST(DescendingRange, VisitsFromTheStartDownToTheEndExclusive) {
  auto k = kernel("visits", visits, {"out", "counts", "n", "lo", "hi"});
  for (Backend backend : backendsWithTheGpu("descending tl::range")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<int32_t> out(64, -99), counts(4, -1);
    k({.grid = {1}, .backend = backend}, out, counts, 5, 7, -6);
    EXPECT_EQ(counts, (std::vector<int32_t>{5, 4, 4, 3}));
    EXPECT_EQ(std::vector<int32_t>(out.begin(), out.begin() + 6), (std::vector<int32_t>{4, 3, 2, 1, 0, -99}));
    EXPECT_EQ(std::vector<int32_t>(out.begin() + 16, out.begin() + 21), (std::vector<int32_t>{10, 7, 4, 1, -99}));
    EXPECT_EQ(std::vector<int32_t>(out.begin() + 32, out.begin() + 37), (std::vector<int32_t>{7, 3, -1, -5, -99}));
    EXPECT_EQ(std::vector<int32_t>(out.begin() + 48, out.begin() + 52), (std::vector<int32_t>{2, 1, 0, -99}));
    // Nothing to visit: n = 0, and lo <= hi.
    std::fill(out.begin(), out.end(), -99);
    k({.grid = {1}, .backend = backend}, out, counts, 0, 3, 3);
    EXPECT_EQ(counts[0], 0);
    EXPECT_EQ(counts[2], 0);
    EXPECT_EQ(out[0], -99);
    EXPECT_EQ(out[32], -99);
  }
}

/// Runtime i32 bounds at INT32_MIN, which an i32 counter of -i cannot
/// hold: the loop counts in i64 (its index i32), as Python's range would.
TEST(DescendingRange, RuntimeBoundsReachInt32Min) {
  auto k = kernel("visits", visits, {"out", "counts", "n", "lo", "hi"});
  struct Case {
    int32_t lo, hi;
    std::vector<int32_t> visited;
  };
  const int32_t min = INT32_MIN;
  for (const Case &c : {Case{min + 9, min, {min + 9, min + 5, min + 1}}, Case{min + 3, min, {min + 3}},
                        Case{min, INT32_MAX, {}}, Case{min, min, {}}, Case{INT32_MAX, INT32_MAX - 9,
                        {INT32_MAX, INT32_MAX - 4, INT32_MAX - 8}}})
    for (Backend backend : backendsWithTheGpu("descending tl::range at INT32_MIN")) {
      SCOPED_TRACE(fmt::format("{} to {}, {}", c.lo, c.hi, tegula::testing::backend_name(backend)));
      std::vector<int32_t> out(64, -99), counts(4, -1);
      k({.grid = {1}, .backend = backend}, out, counts, 1, c.lo, c.hi);
      EXPECT_EQ(counts[2], int32_t(c.visited.size()));
      EXPECT_EQ(std::vector<int32_t>(out.begin() + 32, out.begin() + 32 + std::ptrdiff_t(c.visited.size())),
                c.visited);
      EXPECT_EQ(out[32 + c.visited.size()], -99);
    }
}

void zero_step(tl::ptr<int32_t> out) {
  for (auto i : tl::range(0, 4, 0)) // line checked
    tl::store(out + i, i);
}

TEST(DescendingRange, AStepOfZeroIsAnErrorAtTheLine) {
  const int line = __LINE__ - 5;
  std::vector<int32_t> out(4);
  const std::string err = tegula::testing::error_of([&] { kernel("zero_step", zero_step)({.grid = {1}}, out); });
  EXPECT_THAT(err, HasSubstr(fmt::format("DescendingRangeTest.cpp:{}", line)));
  EXPECT_THAT(err, HasSubstr("tl::range step must not be 0"));
}

/// C = A B with the K blocks taken last to first: the pipeliner prefetches
/// the blocks of the next (lower) k.
void matmul_backwards(tl::ptr<float16> a, tl::ptr<float16> b, tl::ptr<float> c, tl::scalar<int32_t> M,
                      tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN,
                      tl::constant<int> BK) {
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rn = tl::program_id(1) * BN + tl::arange(0, BN);
  tl::tensor rk = tl::arange(0, BK);
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  tl::tensor last = (K - 1) / BK * BK;
  for (auto k : tl::range(last, -1, -BK.value, acc))
    acc = tegula::testing::accumulateKBlock(acc, a, b, rm, rn, k, rk, M, N, K);
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc,
            (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
}

TEST(DescendingRange, AGemmWhoseKLoopRunsBackwardsIsPipelined) {
  // Ragged: the first K block visited (64..79 of BK = 32) is partial. K and N
  // multiples of 16 keep the rows 16-byte aligned: the loads go through cp.async.
  const int M = 72, N = 48, K = 80;
  auto k = kernel("matmul_backwards", matmul_backwards, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  tegula::testing::expectF16GemmOnEveryBackend(k, M, N, K, /*numStages=*/3);
  // On the tensor cores, the next (lower) K block in flight while one is multiplied.
  const std::string sm80 = tegula::testing::compileF16Gemm(k, M, N, K, "sm_80").ptx;
  EXPECT_THAT(sm80, HasSubstr("mma.sync"));
  EXPECT_THAT(sm80, HasSubstr("cp.async.wait_group"));
  const std::string sm90 = tegula::testing::compileF16Gemm(k, M, N, K, "sm_90a").ptx;
  EXPECT_THAT(sm90, HasSubstr("wgmma.mma_async"));
}

} // namespace
