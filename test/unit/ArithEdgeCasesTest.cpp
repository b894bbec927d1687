// ArithEdgeCasesTest.cpp - what LLVM leaves undefined, the DSL defines, and
// every backend computes alike: integer division by zero and INT_MIN / -1,
// shifts by the width or more, float-to-integer conversions out of range
// (the define-arith-edge-cases pass); a 16-bit dot accumulator rounded once;
// a tl::range step known only at run time
// that is not positive; dot accumulators no thread can hold; launch numbers
// that do not fit their parameter.
#include "ErrorTestUtil.h"
#include "TestUtil.h"
#include "tegula/tegula.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace tegula;
using tegula::testing::backendsWithTheGpu;
using tegula::testing::errorOf;
using ::testing::HasSubstr;

namespace {

void divide(tl::ptr<int32_t> x, tl::ptr<int32_t> y, tl::ptr<int32_t> out) {
  tl::tensor offs = tl::arange(0, 8);
  tl::tensor a = tl::load(x + offs), b = tl::load(y + offs);
  tl::store(out + offs, a / b);
  tl::store(out + 8 + offs, a % b);
  tl::store(out + 16 + offs, a / 0);  // literal divisors: folded by the compiler
  tl::store(out + 24 + offs, a % 0);
  tl::store(out + 32 + offs, a / -1);
}

/// x / 0 = -1 and x % 0 = x; INT_MIN / -1 wraps to INT_MIN with remainder 0:
/// the GPU's div/rem, which the simulator's host code used to die on (SIGFPE)
/// and LLVM folded a literal 0 to anything.
TEST(ArithEdgeCases, IntegerDivisionByZeroAndMinusOneAreDefined) {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  std::vector<int32_t> x = {7, -7, kMin, kMin, 5, 0, kMin, 123}, y = {0, 0, 0, -1, -1, 0, 3, -5};
  for (Backend backend : backendsWithTheGpu("integer division edge cases")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<int32_t> out(40, 42);
    kernel("divide", divide)({.grid = {1}, .backend = backend}, x, y, out);
    std::vector<int32_t> quotient(out.begin(), out.begin() + 8), remainder(out.begin() + 8, out.begin() + 16);
    EXPECT_EQ(quotient, (std::vector<int32_t>{-1, -1, -1, kMin, -5, -1, kMin / 3, -24}));
    EXPECT_EQ(remainder, (std::vector<int32_t>{7, -7, kMin, 0, 0, 0, kMin % 3, 3}));
    EXPECT_EQ(std::vector<int32_t>(out.begin() + 16, out.begin() + 24), std::vector<int32_t>(8, -1));
    EXPECT_EQ(std::vector<int32_t>(out.begin() + 24, out.begin() + 32), x);
    EXPECT_EQ(std::vector<int32_t>(out.begin() + 32, out.end()),
              (std::vector<int32_t>{-7, 7, kMin, kMin, -5, 0, kMin, -123}));
  }
}

void divide64(tl::ptr<int64_t> x, tl::ptr<int64_t> y, tl::ptr<int64_t> out) {
  tl::tensor offs = tl::arange(0, 4);
  tl::tensor a = tl::load(x + offs), b = tl::load(y + offs);
  tl::store(out + offs, a / b);
  tl::store(out + 4 + offs, a % b);
}

TEST(ArithEdgeCases, SixtyFourBitDivisionToo) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> x = {kMin, kMin, 9, -9}, y = {-1, 0, 0, 4};
  for (Backend backend : backendsWithTheGpu("64-bit division edge cases")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<int64_t> out(8, 42);
    kernel("divide64", divide64)({.grid = {1}, .backend = backend}, x, y, out);
    EXPECT_EQ(out, (std::vector<int64_t>{kMin, -1, -1, -2, 0, kMin, 9, -1}));
  }
}

void shift(tl::ptr<int32_t> x, tl::ptr<int32_t> n, tl::ptr<int32_t> out) {
  tl::tensor offs = tl::arange(0, 8);
  tl::tensor a = tl::load(x + offs), s = tl::load(n + offs);
  tl::store(out + offs, a << s);
  tl::store(out + 8 + offs, a >> s);
  tl::store(out + 16 + offs, a >> 40); // a literal count past the width
}

/// Counts of the width or more, or negative: `<<` gives 0 and `>>` (signed)
/// the sign, as PTX's shl/shr clamp the count. x86 takes the count modulo
/// 32, so the simulator answered otherwise.
TEST(ArithEdgeCases, ShiftsByTheWidthOrMoreClamp) {
  std::vector<int32_t> x = {1, -8, -8, 5, 0x40000000, -1, 3, -3}, n = {32, 33, 100, -1, 1, 31, 0, 2};
  for (Backend backend : backendsWithTheGpu("shift edge cases")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<int32_t> out(24, 42);
    kernel("shift", shift)({.grid = {1}, .backend = backend}, x, n, out);
    EXPECT_EQ(std::vector<int32_t>(out.begin(), out.begin() + 8),
              (std::vector<int32_t>{0, 0, 0, 0, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::min(),
                                    3, -12}));
    EXPECT_EQ(std::vector<int32_t>(out.begin() + 8, out.begin() + 16),
              (std::vector<int32_t>{0, -1, -1, 0, 0x20000000, -1, 3, -1}));
    EXPECT_EQ(std::vector<int32_t>(out.begin() + 16, out.end()), (std::vector<int32_t>{0, -1, -1, 0, 0, -1, 0, -1}));
  }
}

void to_ints(tl::ptr<float> x, tl::ptr<int32_t> i32, tl::ptr<int8_t> i8, tl::ptr<int16_t> i16) {
  tl::tensor offs = tl::arange(0, 8);
  tl::tensor v = tl::load(x + offs);
  tl::store(i32 + offs, v.to(tl::i32));
  tl::store(i8 + offs, v.to(tl::i8));
  tl::store(i16 + offs, v.to(tl::f16).to(tl::i16)); // from f16: 65504 saturates an i16
}

/// Out of range saturates and NaN gives 0, whatever the widths: PTX's
/// cvt.rzi for i32, where narrower results used to wrap (1000 -> -24 in i8)
/// and x86's cvttss2si gave INT_MIN for anything out of range.
TEST(ArithEdgeCases, FloatToIntegerSaturatesAndNanIsZero) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {1000.0f, -1000.0f, inf, -inf, NAN, 3e9f, -127.9f, 65504.0f};
  for (Backend backend : backendsWithTheGpu("float-to-integer saturation")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<int32_t> i32(8, 42);
    std::vector<int8_t> i8(8, 42);
    std::vector<int16_t> i16(8, 42);
    kernel("to_ints", to_ints)({.grid = {1}, .backend = backend}, x, i32, i8, i16);
    const int32_t hi = std::numeric_limits<int32_t>::max(), lo = std::numeric_limits<int32_t>::min();
    EXPECT_EQ(i32, (std::vector<int32_t>{1000, -1000, hi, lo, 0, hi, -127, 65504}));
    EXPECT_EQ(i8, (std::vector<int8_t>{127, -128, 127, -128, 0, 127, -127, 127}));
    EXPECT_EQ(i16, (std::vector<int16_t>{1000, -1000, 32767, -32768, 0, 32767, -127, 32767}));
  }
}

void stepped(tl::ptr<int32_t> out, tl::scalar<int32_t> n, tl::scalar<int32_t> step) {
  tl::tensor acc = tl::zeros({1}, tl::i32);
  for (auto i : tl::range(0, n, step, acc)) // the runtime-step line
    acc = acc + i;
  tl::store(out + tl::arange(0, 1), acc);
}

/// A step known only at launch is checked there: 0 spun forever in the
/// simulator (and would on the GPU), a negative step ran until the counter
/// wrapped. The check names the kernel's line.
TEST(ArithEdgeCases, ARuntimeRangeStepThatIsNotPositiveIsReported) {
  auto k = kernel("stepped", stepped, {"out", "n", "step"});
  for (Backend backend : {Backend::Interp, Backend::Sim}) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<int32_t> out(1);
    k({.grid = {1}, .backend = backend}, out, 10, 3);
    EXPECT_EQ(out[0], 0 + 3 + 6 + 9);
    for (int32_t bad : {0, -2}) {
      std::string err = tegula::testing::error_of([&] { k({.grid = {1}, .backend = backend}, out, 10, bad); });
      EXPECT_THAT(err, HasSubstr("tl::range step must be positive"));
      EXPECT_THAT(err, HasSubstr("ArithEdgeCasesTest.cpp"));
    }
  }
}

void persistent(tl::ptr<int32_t> out, tl::scalar<int32_t> tiles) {
  for (auto t : tl::range(tl::program_id(0), tiles, tl::num_programs(0)))
    tl::store(out + t, t * 2);
}

void persistent_clusters(tl::ptr<int32_t> out, tl::scalar<int32_t> tiles) {
  tl::tensor first = tl::program_id(0) / tl::cluster_size();
  for (auto t : tl::range(first, tiles, tl::num_programs(0) / tl::cluster_size()))
    tl::store(out + t * tl::cluster_size() + tl::program_id(0) % tl::cluster_size(), t);
}

/// The persistent loop's step, the program count (or the count of clusters),
/// is known positive: no check is traced (the pipelining passes see the loop
/// as the user wrote it).
TEST(ArithEdgeCases, AProgramCountStepNeedsNoCheck) {
  auto k = kernel("persistent", persistent, {"out", "tiles"});
  std::vector<int32_t> out(10, -1);
  k({.grid = {3}}, out, 10);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(out[size_t(i)], 2 * i);
  EXPECT_THAT(k.ir({out, 10}), ::testing::Not(HasSubstr("tile.assert")));
  auto clustered = kernel("persistent_clusters", persistent_clusters, {"out", "tiles"});
  std::vector<int32_t> pairs(10, -1);
  clustered({.grid = {4}, .cluster_size = 2}, pairs, 5);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(pairs[size_t(i)], i / 2);
  EXPECT_THAT(clustered.ir({pairs, 5}), ::testing::Not(HasSubstr("tile.assert")));
}

constexpr int kCountedLoopLine = __LINE__ + 3;
template <int STEP> void counted(tl::ptr<int32_t> out, tl::scalar<int32_t> lo, tl::scalar<int32_t> hi) {
  tl::tensor n = tl::zeros({}, tl::i32);
  for ([[maybe_unused]] auto i : tl::range(lo, hi, STEP, n))
    n = n + 1;
  tl::store(out, n);
}
void counted_literal(tl::ptr<int32_t> out) {
  tl::tensor n = tl::zeros({}, tl::i32);
  for ([[maybe_unused]] auto i : tl::range(2147483000, 2147483640, 1024, n))
    n = n + 1;
  tl::store(out, n);
}
template <int LO, int HI, int STEP> void counted_wrapping(tl::ptr<int32_t> out) {
  tl::tensor n = tl::zeros({}, tl::i32);
  FAILS_ON_NEXT_LINE();
  for ([[maybe_unused]] auto i : tl::range(LO, HI, STEP, n))
    n = n + 1;
  tl::store(out, n);
}
void counted_down_literal(tl::ptr<int32_t> out) {
  tl::tensor n = tl::zeros({}, tl::i32);
  FAILS_ON_NEXT_LINE();
  for ([[maybe_unused]] auto i : tl::range(-2147483640, INT32_MIN, -3, n))
    n = n + 1;
  tl::store(out, n);
}

/// An i32 counter that the step carries past INT32_MAX after the last
/// iteration would wrap in compiled code and the loop go on (Triton's do):
/// the interpreter, which counts in 64 bits, says so at the loop; compiled,
/// the kernel stops before the loop (guard-loop-counters: its report names
/// the line, which the simulator and the GPU's runtime quote - the GPU's
/// not run here: a trap ends the process's context). Loops that end short of it run alike, and so does a
/// literal loop of one iteration (its body inlined); literal bounds that
/// wrap are an error at compile time; counting down to INT32_MIN cannot be
/// negated into an i32 counter: an error at the line.
TEST(ArithEdgeCases, AnI32CounterThatWouldWrapIsReported) {
  auto up = kernel("counted", counted<1024>, {"out", "lo", "hi"});
  auto up64 = kernel("counted", counted<64>, {"out", "lo", "hi"});
  auto down = kernel("counted", counted<-3>, {"out", "lo", "hi"});
  for (Backend backend : tegula::testing::backendsWithTheGpu("loops near INT32_MAX")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<int32_t> out(1, -1);
    auto run = [&](Kernel &k, int32_t lo, int32_t hi) {
      out[0] = -1;
      k({.grid = {1}, .backend = backend}, out, lo, hi);
      return out[0];
    };
    EXPECT_EQ(run(up, 0, 10000), 10);
    EXPECT_EQ(run(up64, 2147483000, 2147483640), 10); // ends at 2147483640: no wrap
    EXPECT_EQ(run(up, 2147483640, 2147483000), 0);
    EXPECT_EQ(run(down, 10, -1), 4); // 10, 7, 4, 1
  }
  std::vector<int32_t> out(1, -1);
  for (auto [lo, hi] : {std::pair{2147483000, 2147483640}, std::pair{2147482000, 2147483647}}) {
    SCOPED_TRACE(fmt::format("{} to {}", lo, hi));
    std::string err = tegula::testing::error_of([&] { up({.grid = {1}, .backend = Backend::Interp}, out, lo, hi); });
    EXPECT_THAT(err, HasSubstr(fmt::format("this loop's i32 counter passes 2147483647 after its last iteration ({} "
                                           "to {} by 1024): it would wrap around and the loop go on",
                                           lo, hi)));
    EXPECT_THAT(err, HasSubstr("ArithEdgeCasesTest.cpp"));
    for (const char *chip : {"sm_80", "sm_90a"}) {
      out[0] = -1;
      err = tegula::testing::error_of(
          [&] { up({.grid = {2}, .backend = Backend::Sim, .chip = chip}, out, lo, hi); });
      // The kernel's report (the GPU's runtime reads the same one).
      EXPECT_THAT(err, HasSubstr(fmt::format("the kernel stopped: {}:{}: this loop's i32 counter would pass 2147483647 "
                                             "after its last iteration, wrap around and the loop go on; give the "
                                             "loop i64 bounds (x.to(tl::i64)) (pid (0, 0, 0))",
                                             __FILE__, kCountedLoopLine)))
          << chip;
      EXPECT_EQ(out[0], -1) << chip << ": the loop ran";
    }
  }
  // The check runs once before the loop, and only near INT32_MAX: a bound
  // within a step of it whose last counter stays below runs (above), and
  // the compiled loop holds no trap.
  std::vector<int32_t> probe(1);
  const std::string ptx = up.compile({probe, 0, 10}, {.chip = "sm_90a", .assemble = false}).ptx;
  EXPECT_EQ(tegula::testing::occurrences(ptx, "trap;"), 1);
  // Literal bounds that wrap: an error where the kernel compiles (and in
  // the interpreter); counting down, in the bounds the user wrote.
  auto wrapping = kernel("counted_wrapping", counted_wrapping<2147482000, 2147483647, 1024>, {"out"});
  auto wrappingDown = kernel("counted_wrapping", counted_wrapping<-2147482000, -2147483647, -1024>, {"out"});
  for (auto [k, what] : {std::pair{&wrapping, "this loop's i32 counter passes 2147483647 after its last iteration "
                                              "(2147482000 to 2147483647 by 1024)"},
                         std::pair{&wrappingDown, "this loop's i32 counter passes -2147483647 after its last iteration "
                                                  "(-2147482000 to -2147483647 by -1024)"}}) {
    tegula::testing::expectAtMarkedLine(
        tegula::testing::error_of([&] { (*k)({.grid = {1}, .backend = Backend::Sim}, out); }),
        "ArithEdgeCasesTest.cpp", what);
    const std::string interp = tegula::testing::error_of([&] { (*k)({.grid = {1}, .backend = Backend::Interp}, out); });
    EXPECT_THAT(interp, HasSubstr(what));
    EXPECT_THAT(interp, HasSubstr(fmt::format("ArithEdgeCasesTest.cpp:{}", tegula::testing::g_line)));
  }
  // Literal bounds of one iteration: canonicalisation inlines the body, so
  // no counter is left to wrap on any backend.
  auto literal = kernel("counted_literal", counted_literal, {"out"});
  for (Backend backend : tegula::testing::backendsWithTheGpu("a one-iteration literal loop")) {
    out[0] = -1;
    literal({.grid = {1}, .backend = backend}, out);
    EXPECT_EQ(out[0], 1) << tegula::testing::backend_name(backend);
  }
  tegula::testing::expectAtMarkedLine(tegula::testing::errorOf(kernel("k", counted_down_literal), {out}),
                                      "ArithEdgeCasesTest.cpp", "tl::range counting down from or to -2147483648");
}

void huge_dot(tl::ptr<float> a, tl::ptr<float> c) {
  tl::tensor r = tl::arange(0, 256).expand_dims(1) * 256 + tl::arange(0, 256).expand_dims(0);
  tl::tensor x = tl::load(a + r);
  tl::store(c + r, tl::dot(x, x)); // the huge-dot line
}

/// A 256x256 f32 accumulator on 4 warps needs 512 registers a thread, twice
/// what a thread has: it used to lower into 1.7 MB of PTX and minutes of
/// compiling, mostly spills. Refused before any pass, naming the line and
/// the warps that would do (a little past 255 still compiles).
TEST(ArithEdgeCases, AnAccumulatorNoThreadCanHoldIsRefusedEarly) {
  auto k = kernel("huge_dot", huge_dot);
  std::vector<float> a, c;
  for (int warps : {2, 4}) {
    std::string err = tegula::testing::error_of(
        [&] { (void)k.compile({a, c}, {.chip = "sm_80", .num_warps = warps, .assemble = false}); });
    EXPECT_THAT(err, HasSubstr("kernel 'huge_dot': the dot at "));
    EXPECT_THAT(err, HasSubstr("ArithEdgeCasesTest.cpp"));
    EXPECT_THAT(err, HasSubstr(fmt::format("accumulates a 256x256 f32 tile: {} registers a thread over {} warps",
                                           65536 / (warps * 32), warps)));
    EXPECT_THAT(err, HasSubstr("more than twice the 255 a thread has"));
    EXPECT_THAT(err, HasSubstr("or num_warps=8"));
  }
  // The simulator lowers the same code: refused there too, before any pass.
  std::vector<float> a1(65536), c1(65536);
  EXPECT_THAT(tegula::testing::error_of([&] { k({.grid = {1}, .backend = Backend::Sim}, a1, c1); }),
              HasSubstr("512 registers a thread over 4 warps"));
}

void dot16(tl::ptr<bfloat16> a, tl::ptr<bfloat16> b, tl::ptr<bfloat16> c) {
  tl::tensor ra = tl::arange(0, 32).expand_dims(1) * 256 + tl::arange(0, 256).expand_dims(0);
  tl::tensor rb = tl::arange(0, 256).expand_dims(1) * 32 + tl::arange(0, 32).expand_dims(0);
  tl::tensor rc = tl::arange(0, 32).expand_dims(1) * 32 + tl::arange(0, 32).expand_dims(0);
  tl::store(c + rc, tl::dot(tl::load(a + ra), tl::load(b + rb), tl::load(c + rc)));
}

/// A bf16 accumulator sums in f32 and rounds once: the compiled code used to
/// round after every product (an FMA chain in bf16: at a sum of 64, each
/// product under 0.25 vanished), where the interpreter rounds once.
TEST(ArithEdgeCases, ASixteenBitAccumulatorRoundsOnce) {
  std::vector<float> af = tegula::testing::random_vector<float>(32 * 256, 0.0f, 1.0f),
                     bf = tegula::testing::random_vector<float>(256 * 32, 0.0f, 1.0f),
                     cf = tegula::testing::random_vector<float>(32 * 32, 0.0f, 8.0f);
  std::vector<bfloat16> a(af.begin(), af.end()), b(bf.begin(), bf.end());
  for (Backend backend : backendsWithTheGpu("a bf16 accumulator")) {
    SCOPED_TRACE(tegula::testing::backend_name(backend));
    std::vector<bfloat16> c(cf.begin(), cf.end());
    kernel("dot16", dot16)({.grid = {1}, .backend = backend}, a, b, c);
    for (int i = 0; i < 32; ++i)
      for (int j = 0; j < 32; ++j) {
        double want = double(float(bfloat16(cf[size_t(i * 32 + j)])));
        for (int k = 0; k < 256; ++k)
          want += double(float(a[size_t(i * 256 + k)])) * double(float(b[size_t(k * 32 + j)]));
        // Rounded once to bf16 (8 significant bits), after f32 sums.
        ASSERT_NEAR(float(c[size_t(i * 32 + j)]), want, want * std::ldexp(1.0, -8) * 1.01) << i << ", " << j;
      }
  }
}

TEST(ArithEdgeCases, LaunchNumbersThatDoNotFitAreRefused) {
  auto k = kernel("numbers", +[](tl::ptr<float> out, tl::scalar<int64_t> n, tl::scalar<float> f) {
    tl::store(out, n.to(tl::f32) + f);
  }, {"out", "n", "f"});
  std::vector<float> out(1);
  EXPECT_THAT(errorOf(k, {out, ~0UL, 1.0f}),
              HasSubstr("argument 'n' (#1) of kernel 'numbers' is 18446744073709551615, which does not fit in i64"));
  EXPECT_THAT(errorOf(k, {out, 1L, 1e300}),
              HasSubstr("argument 'f' (#2) of kernel 'numbers' is 1e+300, which rounds past the largest finite f32"));
  // Infinities and NaN are what they say; the largest float is fine.
  k({.grid = {1}}, out, 2L, double(std::numeric_limits<float>::max()));
  EXPECT_EQ(out[0], std::numeric_limits<float>::max());
  k({.grid = {1}}, out, 2L, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isinf(out[0]));
}

} // namespace
