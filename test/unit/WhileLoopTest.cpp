// WhileLoopTest.cpp - tl::while_ (scf.while): loops whose trip count the
// data decides - a binary search, a reduction in the condition and the body,
// a spin lock taken with atomic_cas, a K loop of dots through the tensor-core
// layouts - on the interpreter, the simulator (sm_80 and sm_90a) and the GPU
// when there is one; and the mistakes, named at the user's line.
#include "ErrorTestUtil.h"
#include "F16GemmCheck.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <vector>

using namespace tegula;
using tegula::testing::backendsWithTheGpu;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

/// Program p finds where keys[p] goes in `sorted` (std::lower_bound) and
/// how many halvings that took.
void lower_bound(tl::ptr<int32_t> sorted, tl::ptr<int32_t> keys, tl::ptr<int32_t> out, tl::scalar<int32_t> n) {
  tl::tensor p = tl::program_id(0);
  tl::tensor key = tl::load(keys + p);
  tl::tensor lo = tl::full({}, 0, tl::i32), hi = n, steps = tl::full({}, 0, tl::i32);
  tl::while_([&] { return lo < hi; },
             [&] {
               tl::tensor mid = (lo + hi) / 2;
               tl::tensor below = tl::load(sorted + mid) < key;
               lo = tl::where(below, mid + 1, lo);
               hi = tl::where(below, hi, mid);
               steps = steps + 1;
             },
             lo, hi, steps);
  tl::store(out + 2 * p, lo);
  tl::store(out + 2 * p + 1, steps);
}

TEST(WhileLoop, BinarySearchRunsAsManyIterationsAsTheDataNeeds) {
  std::vector<int32_t> sorted = {1, 3, 3, 7, 10, 12, 20, 21, 40, 41, 42};
  const int n = int(sorted.size());
  std::vector<int32_t> keys = {-5, 1, 3, 4, 12, 41, 42, 100, 20};
  auto k = kernel("lower_bound", lower_bound, {"sorted", "keys", "out", "n"});
  for (Backend backend : backendsWithTheGpu("tl::while_")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<int32_t> out(2 * keys.size(), -1);
    k({.grid = {uint32_t(keys.size())}, .backend = backend}, sorted, keys, out, n);
    for (size_t i = 0; i < keys.size(); ++i) {
      EXPECT_EQ(out[2 * i], std::lower_bound(sorted.begin(), sorted.end(), keys[i]) - sorted.begin()) << keys[i];
      EXPECT_GE(out[2 * i + 1], 3);
      EXPECT_LE(out[2 * i + 1], 4); // ceil(log2(12))
    }
    // An empty array: the condition is false at once, the carried values stay.
    std::fill(out.begin(), out.end(), -1);
    k({.grid = {1}, .backend = backend}, sorted, keys, out, 0);
    EXPECT_EQ(out[0], 0);
    EXPECT_EQ(out[1], 0);
  }
}

/// Halves a tile until its largest magnitude is at most `limit`, counting
/// the halvings: a cross-warp reduction in the condition, another (the sum)
/// in the body, so both regions exchange through shared memory.
void halve_until(tl::ptr<float> x, tl::ptr<float> out, tl::ptr<int32_t> count, tl::scalar<float> limit,
                 tl::constant<int> B) {
  tl::tensor offs = tl::arange(0, B);
  tl::tensor v = tl::load(x + offs);
  tl::tensor n = tl::full({}, 0, tl::i32), total = tl::full({}, 0.0f, tl::f32);
  tl::while_([&] { return tl::max(tl::abs(v), 0) > limit; },
             [&] {
               v = v * 0.5f;
               total = total + tl::sum(v, 0);
               n = n + 1;
             },
             v, n, total);
  tl::store(out + offs, v);
  tl::store(out + B, total);
  tl::store(count, n);
}

TEST(WhileLoop, ReductionsInTheConditionAndTheBody) {
  const int B = 512;
  std::vector<float> x = tegula::testing::random_vector<float>(B, -1, 1);
  x[123] = 200.0f; // 200 -> 0.78: eight halvings to get under 1
  auto largest = [](const std::vector<float> &v) {
    float m = 0;
    for (float e : v)
      m = std::max(m, std::abs(e));
    return m;
  };
  std::vector<float> want(x);
  double want_total = 0;
  int want_n = 0;
  while (largest(want) > 1.0f) {
    for (float &e : want)
      e *= 0.5f, want_total += e;
    ++want_n;
  }
  ASSERT_EQ(want_n, 8);
  auto k = kernel("halve_until", halve_until, {"x", "out", "count", "limit", "B"});
  for (Backend backend : backendsWithTheGpu("tl::while_ with reductions")) {
    for (int warps : {1, 4}) {
      SCOPED_TRACE(fmt::format("{} at {} warps", tegula::testing::backend_name(backend), warps));
      std::vector<float> out(B + 1, NAN);
      std::vector<int32_t> count(1, -1);
      k({.grid = {1}, .num_warps = warps, .backend = backend}, x, out, count, 1.0f, B);
      EXPECT_EQ(count[0], want_n);
      for (int i = 0; i < B; ++i)
        ASSERT_EQ(out[i], want[i]) << i; // halving is exact
      EXPECT_NEAR(out[B], want_total, 1e-3 * (1 + std::abs(want_total)));
    }
  }
}

/// Each program takes a lock (atomic_cas in the condition until it gets 0),
/// increments a plain counter, and releases it: the counter ends at the
/// program count only if the lock excludes.
void locked_increment(tl::ptr<int32_t> lock, tl::ptr<int32_t> counter, tl::ptr<int32_t> spins) {
  tl::tensor tries = tl::full({}, 0, tl::i32);
  tl::while_([&] { return tl::atomic_cas(lock, 0, 1, tl::memory_order::acquire) != 0; },
             [&] { tries = tries + 1; }, tries);
  tl::store(counter, tl::load(counter) + 1);
  tl::atomic_xchg(lock, 0, tl::memory_order::release);
  tl::atomic_add(spins, tries, tl::memory_order::relaxed);
}

TEST(WhileLoop, ASpinLockTakenWithAtomicCas) {
  auto k = kernel("locked_increment", locked_increment, {"lock", "counter", "spins"});
  for (Backend backend : backendsWithTheGpu("a tl::while_ spin lock")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<int32_t> lock(1, 0), counter(1, 0), spins(1, 0);
    k({.grid = {64}, .backend = backend}, lock, counter, spins);
    EXPECT_EQ(counter[0], 64);
    EXPECT_EQ(lock[0], 0);
    EXPECT_GE(spins[0], 0);
  }
}

/// C = A B with the K loop as a while loop: the accumulator carried through
/// scf.while takes the tensor cores' layouts (mma.sync on sm_80, wgmma on
/// sm_90a) across the loop.
void matmul_while(tl::ptr<float16> a, tl::ptr<float16> b, tl::ptr<float> c, tl::scalar<int32_t> M,
                  tl::scalar<int32_t> N, tl::scalar<int32_t> K, tl::constant<int> BM, tl::constant<int> BN,
                  tl::constant<int> BK) {
  tl::tensor rm = tl::program_id(0) * BM + tl::arange(0, BM);
  tl::tensor rn = tl::program_id(1) * BN + tl::arange(0, BN);
  tl::tensor rk = tl::arange(0, BK);
  tl::tensor acc = tl::zeros({BM, BN}, tl::f32);
  tl::tensor k = tl::full({}, 0, tl::i32);
  tl::while_([&] { return k < K; },
             [&] {
               acc = tegula::testing::accumulateKBlock(acc, a, b, rm, rn, k, rk, M, N, K);
               k = k + BK.value;
             },
             acc, k);
  tl::store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc,
            (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
}

TEST(WhileLoop, DotsAccumulateAcrossAWhileLoopOnTheTensorCores) {
  const int M = 72, N = 48, K = 80;
  auto k = kernel("matmul_while", matmul_while, {"a", "b", "c", "M", "N", "K", "BM", "BN", "BK"});
  tegula::testing::expectF16GemmOnEveryBackend(k, M, N, K, /*numStages=*/3);
  EXPECT_THAT(tegula::testing::compileF16Gemm(k, M, N, K, "sm_80").ptx, HasSubstr("mma.sync"));
  EXPECT_THAT(tegula::testing::compileF16Gemm(k, M, N, K, "sm_90a").ptx, HasSubstr("wgmma.mma_async"));
  if (!tegula::testing::have_ptxas()) {
    std::printf("[tegula test] no ptxas: the PTX above was not assembled\n");
    return;
  }
  for (const char *chip : {"sm_80", "sm_90a"}) {
    CompiledKernel ck = tegula::testing::compileF16Gemm(k, M, N, K, chip, /*assemble=*/true);
    EXPECT_FALSE(ck.cubin.empty()) << chip;
    EXPECT_EQ(ck.spill_bytes, 0) << chip;
  }
}

void tile_condition(tl::ptr<int32_t> out) {
  tl::tensor v = tl::arange(0, 4);
  tl::while_([&] { return v < 3; }, [&] { v = v + 1; }, v);
  tl::store(out + tl::arange(0, 4), v);
}

void used_after(tl::ptr<int32_t> out) {
  tl::tensor i = tl::full({}, 0, tl::i32), twice;
  tl::while_([&] { return i < 3; },
             [&] {
               twice = i * 2;
               i = i + 1;
             },
             i);
  tl::store(out, twice);
}

void changed_type(tl::ptr<int32_t> out) {
  tl::tensor i = tl::full({}, 0, tl::i32);
  tl::while_([&] { return i < 3; }, [&] { i = i.to(tl::f32) + 1.0f; }, i);
  tl::store(out, i);
}

TEST(WhileLoop, MistakesAreNamedAtTheLine) {
  std::vector<int32_t> out(4);
  EXPECT_THAT(tegula::testing::error_of([&] { kernel("tile_condition", tile_condition)({.grid = {1}}, out); }),
              AllOf(HasSubstr("WhileLoopTest.cpp:"),
                    HasSubstr("tl::while_ needs a scalar boolean condition"), HasSubstr("reduce a tile first")));
  EXPECT_THAT(tegula::testing::error_of([&] { kernel("used_after", used_after)({.grid = {1}}, out); }),
              HasSubstr("this value was computed inside a tl::while_ loop"));
  EXPECT_THAT(tegula::testing::error_of([&] { kernel("changed_type", changed_type)({.grid = {1}}, out); }),
              HasSubstr("carried variable #0 of tl::while_ changed type in the loop body from i32 to f32"));
}

} // namespace
