// LoopBoundsTest.cpp - loops whose counters come near their type's limits,
// where compiled code counts in the bounds' type and the interpreter in 64
// (or 128) bits: a pipelined K loop near INT32_MAX copies only the
// iterations it runs (its look-ahead wraps), a K loop with i64 bounds is
// pipelined as an i32 one is, and an i64 counter that would pass INT64_MAX
// is reported by the interpreter and stops the compiled kernel. Against a
// double reference on the interpreter and the simulator as sm_80 and sm_90a
// code (the GPU when there is one, where a trap cannot end the process's
// context: those cases run on the CPU backends only).
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>

#include <climits>

using namespace tegula;
using tegula::testing::backendsWithTheGpu;
using ::testing::HasSubstr;

namespace {

/// c = a[16, K] b[K, 16] over a K loop from lo to hi by 32 whose counter
/// only counts (the operands' pointers are carried): (hi - lo) / 32 blocks.
template <class Counter>
void counted_gemm(tl::ptr<float16> a, tl::ptr<float16> b, tl::ptr<float> c, tl::scalar<Counter> lo,
                  tl::scalar<Counter> hi, tl::scalar<int32_t> K) {
  tl::tensor m = tl::arange(0, 16), n = tl::arange(0, 16), kk = tl::arange(0, 32);
  tl::tensor pa = a + m.expand_dims(1) * K + kk.expand_dims(0);
  tl::tensor pb = b + kk.expand_dims(1) * 16 + n.expand_dims(0);
  tl::tensor acc = tl::zeros({16, 16}, tl::f32);
  for ([[maybe_unused]] auto k : tl::range(lo, hi, 32, acc, pa, pb)) {
    acc = tl::dot(tl::load(pa), tl::load(pb), acc);
    pa = pa + 32;
    pb = pb + 32 * 16;
  }
  tl::store(c + m.expand_dims(1) * 16 + n.expand_dims(0), acc);
}

/// The product of `blocks` K blocks of 32 (the buffers hold at least one).
template <class Counter> void expectCountedGemm(Kernel &k, Counter lo, Counter hi, int blocks, int stages) {
  const int K = std::max(blocks, 1) * 32;
  auto a = tegula::testing::random_vector<float16>(size_t(16 * K));
  auto b = tegula::testing::random_vector<float16>(size_t(K * 16));
  std::vector<double> want(256, 0.0);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      for (int q = 0; q < blocks * 32; ++q)
        want[size_t(i * 16 + j)] += double(float(a[size_t(i * K + q)])) * double(float(b[size_t(q * 16 + j)]));
  for (Backend backend : backendsWithTheGpu("loops near the counter's limit"))
    for (const char *chip : {"sm_80", "sm_90a"}) {
      if (backend != Backend::Sim && std::string(chip) == "sm_90a")
        continue;
      SCOPED_TRACE(fmt::format("{} to {}, {} stages, {} {}", lo, hi, stages, tegula::testing::backend_name(backend),
                               chip));
      std::vector<float> c(256, -1.0f);
      LaunchOptions o{.grid = {1}, .num_stages = stages, .backend = backend};
      if (backend == Backend::Sim)
        o.chip = chip;
      k(o, a, b, c, lo, hi, K);
      EXPECT_LT(tegula::testing::rel_error(c, want), 1e-5);
    }
}

/// i64 counters: a loop whose step would carry the counter past INT64_MAX.
void near_int64_max(tl::ptr<int64_t> out, tl::scalar<int64_t> lo, tl::scalar<int64_t> hi) {
  tl::tensor n = tl::zeros({}, tl::i64);
  for ([[maybe_unused]] auto i : tl::range(lo, hi, 5, n))
    n = n + 1;
  tl::store(out, n);
}
constexpr int kNearInt64MaxLine = __LINE__ - 4;

} // namespace

/// The pipeliner's copies of iterations ahead, and the prologue's, ask
/// whether that iteration runs without overflow (iv - lb against ub - lb,
/// unsigned): `lb + 2 step < ub` wrapped near INT32_MAX and copied past the
/// operands' ends, also for a loop of no iterations (lo > hi).
TEST(LoopBounds, APipelinedLoopNearInt32MaxCopiesOnlyItsIterations) {
  auto k = kernel("counted_gemm", counted_gemm<int32_t>, {"a", "b", "c", "lo", "hi", "K"});
  for (int stages : {2, 3, 4}) {
    expectCountedGemm<int32_t>(k, 0, 96, 3, stages);
    expectCountedGemm<int32_t>(k, INT_MAX - 100, INT_MAX - 31, 3, stages); // the last counter + 32 = INT_MAX - 4
    expectCountedGemm<int32_t>(k, INT_MAX - 40, INT_MAX - 30, 1, stages);
    expectCountedGemm<int32_t>(k, INT_MAX - 10, 5, 0, stages);
  }
}

/// The advice for a counter that would wrap: i64 bounds. Such a K loop is
/// pipelined as an i32 one (its stage and phase numbers truncated, not
/// index_cast, which refused i64), near INT32_MAX and past it.
TEST(LoopBounds, AGemmLoopWithI64BoundsIsPipelined) {
  auto k = kernel("counted_gemm", counted_gemm<int64_t>, {"a", "b", "c", "lo", "hi", "K"});
  std::vector<float16> x(16 * 96);
  std::vector<float> y(256);
  const std::string ptx = k.compile({x, x, y, int64_t(0), int64_t(96), 96}, {.chip = "sm_80", .assemble = false}).ptx;
  EXPECT_THAT(ptx, HasSubstr("cp.async"));
  for (int stages : {1, 3}) {
    expectCountedGemm<int64_t>(k, 0, 96, 3, stages);
    expectCountedGemm<int64_t>(k, int64_t(INT_MAX) - 40, int64_t(INT_MAX) + 56, 3, stages);
  }
}

TEST(LoopBounds, AnI64CounterThatWouldPassInt64MaxIsReported) {
  auto k = kernel("near_int64_max", near_int64_max, {"out", "lo", "hi"});
  std::vector<int64_t> out(1, -1);
  for (Backend backend : backendsWithTheGpu("an i64 loop near INT64_MAX")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    k({.grid = {1}, .backend = backend}, out, INT64_MAX - 12, INT64_MAX - 4); // 2 iterations, the last + 5 = MAX - 2
    EXPECT_EQ(out[0], 2);
  }
  // 9 below the maximum by 5: the second iteration's counter + 5 passes it.
  const std::string interp = tegula::testing::error_of(
      [&] { k({.grid = {1}, .backend = Backend::Interp}, out, INT64_MAX - 9, INT64_MAX); });
  EXPECT_THAT(interp, HasSubstr("this loop's i64 counter passes 9223372036854775807 after its last iteration"));
  EXPECT_THAT(interp, HasSubstr(fmt::format("LoopBoundsTest.cpp:{}", kNearInt64MaxLine)));
  for (const char *chip : {"sm_80", "sm_90a"}) {
    out[0] = -1;
    const std::string sim = tegula::testing::error_of(
        [&] { k({.grid = {1}, .backend = Backend::Sim, .chip = chip}, out, INT64_MAX - 9, INT64_MAX); });
    EXPECT_THAT(sim, HasSubstr(fmt::format("the kernel stopped: {}:{}: this loop's i64 counter would pass "
                                           "9223372036854775807",
                                           __FILE__, kNearInt64MaxLine)))
        << chip;
    EXPECT_EQ(out[0], -1) << chip;
  }
}
